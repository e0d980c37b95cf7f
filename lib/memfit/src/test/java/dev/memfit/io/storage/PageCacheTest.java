package dev.memfit.io.storage;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The page cache seen from a file: eviction, residency, and read advice on a mapping. */
class PageCacheTest {

    @TempDir
    Path dir;

    @Test
    void aFileReadIsResidentUntilEvicted() throws IOException {
        Path file = dir.resolve("data.bin");
        Files.write(file, new byte[1 << 20]);
        Files.readAllBytes(file);
        assertEquals(1 << 20, PageCache.residentBytes(file), "just read: every page in the page cache");
        PageCache.evict(file);
        assertTrue(PageCache.residentBytes(file) < (1 << 20), "evicted: not every page is left");
    }

    @Test
    void aMappingTakesReadAdviceAtAnyOffsetAndHeapMemoryDoesNot() throws IOException {
        Path file = dir.resolve("data.bin");
        Files.write(file, new byte[3 * 4096 + 100]);
        try (FileChannel channel = FileChannel.open(file, StandardOpenOption.READ); Arena arena = Arena.ofConfined()) {
            MemorySegment mapping = channel.map(FileChannel.MapMode.READ_ONLY, 0, channel.size(), arena);
            MemorySegment rows = mapping.asSlice(128, 2 * 4096);   // an .npy's data: not page-aligned
            for (PageCache.ReadAdvice advice : PageCache.ReadAdvice.values()) {
                assertTrue(PageCache.advise(rows, advice), advice + " on a mapping");
            }
            assertEquals(0, rows.get(java.lang.foreign.ValueLayout.JAVA_BYTE, 10), "the mapping still reads");
        }
        assertFalse(PageCache.advise(MemorySegment.ofArray(new byte[4096]), PageCache.ReadAdvice.RANDOM),
                "heap memory is no mapping: nothing to advise");
    }
}
