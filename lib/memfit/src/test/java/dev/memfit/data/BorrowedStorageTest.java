package dev.memfit.data;

import dev.memfit.io.storage.Storage;
import org.junit.jupiter.api.Test;

import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;

class BorrowedStorageTest {

    /**
     * A shared cache reached through {@code optCache} must hear a batch's announcement: it is what lets it fetch the
     * batch's blocks in parallel (the interface's default ignores it, so a wrapper that forgets it silently serialises
     * cold reads). Closing the borrowed view leaves the owner's storage open.
     */
    @Test
    void forwardsEveryCallButClose() {
        List<String> calls = new ArrayList<>();
        Storage owner = new Storage() {
            @Override
            public void read(Path file, long position, MemorySegment into) {
                calls.add("read " + file + " " + position + " " + into.byteSize());
            }

            @Override
            public void willRead(Path file, long position, long length) {
                calls.add("willRead " + file + " " + position + " " + length);
            }

            @Override
            public long size(Path file) {
                calls.add("size " + file);
                return 42;
            }

            @Override
            public String describe() {
                return "owner";
            }

            @Override
            public void close() {
                calls.add("close");
            }
        };
        Path object = Path.of("s3:/bucket/x.npy");
        try (Storage borrowed = new BorrowedStorage(owner)) {
            borrowed.willRead(object, 128, 4096);
            borrowed.read(object, 128, MemorySegment.ofArray(new byte[16]));
            assertEquals(42, borrowed.size(object));
            assertEquals("owner", borrowed.describe());
        }
        assertEquals(List.of("willRead s3:/bucket/x.npy 128 4096", "read s3:/bucket/x.npy 128 16",
                "size s3:/bucket/x.npy"), calls);
    }
}
