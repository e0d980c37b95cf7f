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
}
