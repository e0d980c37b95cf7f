package dev.memfit;

import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

/**
 * memcpy and memset on native segments, the JDK's copy and fill otherwise: the same bytes, the same bounds, a closed
 * arena refused.
 */
class NativeCopyTest {

    @Test
    void copiesExactlyTheRangeAskedFor() {
        try (Arena arena = Arena.ofShared()) {
            MemorySegment from = arena.allocate(10_000);
            for (int i = 0; i < 10_000; i++) {
                from.set(ValueLayout.JAVA_BYTE, i, (byte) (i * 7));
            }
            MemorySegment to = arena.allocate(10_000);
            NativeCopy.copy(from, 1_003, to, 17, 5_001);
            for (int i = 0; i < 10_000; i++) {
                byte expected = i >= 17 && i < 17 + 5_001 ? (byte) ((i - 17 + 1_003) * 7) : 0;
                assertEquals(expected, to.get(ValueLayout.JAVA_BYTE, i), "byte " + i);
            }
            // a heap destination takes the JDK's copy, with the same result
            byte[] heap = new byte[5_001];
            NativeCopy.copy(from, 1_003, MemorySegment.ofArray(heap), 0, 5_001);
            assertArrayEquals(to.asSlice(17, 5_001).toArray(ValueLayout.JAVA_BYTE), heap);
            assertThrows(IndexOutOfBoundsException.class, () -> NativeCopy.copy(from, 9_000, to, 0, 2_000), "past the source");
            assertThrows(IndexOutOfBoundsException.class, () -> NativeCopy.copy(from, 0, to, 9_000, 2_000), "past the target");
        }
    }

    @Test
    void aClosedArenasMemoryIsNeverTouched() {
        Arena arena = Arena.ofShared();
        MemorySegment from = arena.allocate(4_096);
        MemorySegment to = Arena.ofAuto().allocate(4_096);
        arena.close();
        assertThrows(IllegalStateException.class, () -> NativeCopy.copy(from, 0, to, 0, 4_096));
    }

    @Test
    void zeroesExactlyTheRangeAskedFor() {
        try (Arena arena = Arena.ofShared()) {
            MemorySegment native_ = arena.allocate(10_000);
            byte[] heap = new byte[10_000];
            for (int i = 0; i < 10_000; i++) {
                native_.set(ValueLayout.JAVA_BYTE, i, (byte) 5);
                heap[i] = 5;
            }
            NativeCopy.zero(native_, 1_003, 5_001);
            NativeCopy.zero(MemorySegment.ofArray(heap), 1_003, 5_001);
            for (int i = 0; i < 10_000; i++) {
                byte expected = i >= 1_003 && i < 1_003 + 5_001 ? 0 : (byte) 5;
                assertEquals(expected, native_.get(ValueLayout.JAVA_BYTE, i), "native byte " + i);
                assertEquals(expected, heap[i], "heap byte " + i);
            }
            assertThrows(IndexOutOfBoundsException.class, () -> NativeCopy.zero(native_, 9_000, 2_000), "past the end");
            assertThrows(IllegalArgumentException.class, () -> NativeCopy.zero(native_.asReadOnly(), 0, 8), "read-only, as the JDK refuses it");
        }
        Arena closed = Arena.ofShared();
        MemorySegment gone = closed.allocate(4_096);
        closed.close();
        assertThrows(IllegalStateException.class, () -> NativeCopy.zero(gone, 0, 4_096));
    }
}
