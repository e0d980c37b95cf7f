package dev.memfit.synthetic;

import dev.memfit.source.ArraySource;
import dev.memfit.io.npy.Npy;
import dev.memfit.io.npy.NpyArray;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.HashSet;
import java.util.Set;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

class ResamplingTest {

    @Test
    void everyOutputRowIsACopyOfAnInputRow(@TempDir Path dir) {
        float[][] rows = new float[10][3];
        for (int r = 0; r < 10; r++) {
            rows[r] = new float[]{r, r + 0.5f, -r};
        }
        try (ArraySource source = ArraySource.of("ten", rows)) {
            // A chunk of 7 rows: the last chunk is partial.
            Path out = Resampling.builder().setSource(source).setRows(100).optSeed(3).optChunkBytes(7 * 12)
                    .write(dir.resolve("big.npy"));
            try (NpyArray array = Npy.map(out)) {
                assertArrayEquals(new long[]{100, 3}, array.shape());
                Set<Integer> drawn = new HashSet<>();
                for (long r = 0; r < 100; r++) {
                    int original = (int) array.getDouble(r, 0);
                    assertEquals(original + 0.5, array.getDouble(r, 1), 0.0);
                    assertEquals(-original, array.getDouble(r, 2), 0.0);
                    drawn.add(original);
                }
                assertTrue(drawn.size() >= 9, "100 draws from 10 rows should hit nearly all: " + drawn);
            }
        }
    }
}
