package dev.memfit.source;

import dev.memfit.PythonPeer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Path;
import java.util.SplittableRandom;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A mapped {@code .npy} that lets go of each batch's pages once copied (what a file larger than memory does) reads the
 * same values, in file order and shuffled, again and again: the pages come back from the page cache or the file.
 */
class NpySourceDropTest {

    @TempDir
    Path dir;

    @Test
    void rowsReadTheSameWhenEachBatchsPagesAreLetGo() {
        Path file = dir.resolve("rows.npy");
        int rows = 5_000;
        int columns = 700;   // 2,800-byte rows: batches start and end inside pages
        PythonPeer.run("import numpy as np, sys\n"
                + "np.save(sys.argv[1], np.arange(" + rows + " * " + columns + ", dtype=np.float32).reshape(" + rows
                + ", " + columns + "))\n", file.toString());
        try (NpySource source = NpySource.mapped(file); Arena arena = Arena.ofConfined()) {
            source.dropAfterReading(true);
            MemorySegment batch = arena.allocate(256L * columns * Float.BYTES);
            SplittableRandom random = new SplittableRandom(3);
            for (int pass = 0; pass < 3; pass++) {
                long[] indices = new long[256];
                for (int start = 0; start < rows; start += indices.length) {
                    for (int i = 0; i < indices.length; i++) {
                        indices[i] = pass == 1 ? random.nextLong(rows) : Math.min(rows - 1, start + i);
                    }
                    source.readBatch(indices, batch);
                    for (int i = 0; i < indices.length; i++) {
                        for (int j = 0; j < columns; j += 233) {
                            assertEquals((float) (indices[i] * columns + j),
                                    batch.getAtIndex(ValueLayout.JAVA_FLOAT, (long) i * columns + j),
                                    "pass " + pass + ", row " + indices[i] + ", column " + j);
                        }
                    }
                }
            }
        }
    }

    @Test
    void aMappedFileLargerThanTheMemoryLeftIsNotReadFromMemory() {
        Path file = dir.resolve("rows.npy");
        PythonPeer.run("import numpy as np, sys\n"
                + "np.save(sys.argv[1], np.zeros((1000, 256), dtype=np.float32))\n", file.toString());
        long bytes = 1000L * 256 * Float.BYTES;
        // a container of 1 GiB with all but half the file's size in use, then with plenty left
        var tight = new dev.memfit.ProcessMemory(64L << 30, 32L << 30, 1L << 30, (1L << 30) - bytes / 2);
        var roomy = new dev.memfit.ProcessMemory(64L << 30, 32L << 30, 1L << 30, 100L << 20);
        try (NpySource mapped = NpySource.mapped(file); NpySource loaded = NpySource.inMemory(file)) {
            assertFalse(mapped.readsFromMemory(tight), "its rows come from storage as they are touched");
            assertTrue(mapped.readsFromMemory(roomy), "the page cache keeps it");
            assertTrue(loaded.readsFromMemory(tight), "loaded rows are in memory whatever is left");
        }
    }
}
