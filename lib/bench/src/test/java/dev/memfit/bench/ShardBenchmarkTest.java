package dev.memfit.bench;

import dev.memfit.io.hdf5.H5adWriter;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.List;
import java.util.SplittableRandom;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@code ./memfit bench shards} on a small CSR {@code .h5ad}: every row measured for both layouts and both thread
 * counts, memfit's loader beside the C gather and the C loader (its {@code --window} hand-off). No speed is asserted.
 */
class ShardBenchmarkTest {

    @Test
    void memfitTheCGatherAndTheCLoaderAreMeasuredForBothLayouts(@TempDir Path dir) {
        String home = System.getProperty("memfit.home");
        // the C sources are in environment/bench of the project, two folders up from this module
        System.setProperty("memfit.home", Path.of("../..").toAbsolutePath().normalize().toString());
        try {
            Assumptions.assumeTrue(Baselines.compile(dir, "csr_gather").isPresent(), "needs gcc");
            measure(dir);
        } finally {
            if (home == null) {
                System.clearProperty("memfit.home");
            } else {
                System.setProperty("memfit.home", home);
            }
        }
    }

    private static void measure(Path dir) {
        int cells = 3_000;
        int genes = 200;
        Path file = dir.resolve("small.h5ad");
        String[] names = new String[genes];
        for (int g = 0; g < genes; g++) {
            names[g] = "g" + g;
        }
        SplittableRandom random = new SplittableRandom(4);
        int[] rowStarts = new int[cells + 1];
        int[] columns = new int[cells * 20];
        float[] values = new float[cells * 20];
        for (int c = 0; c < cells; c++) {
            for (int k = 0; k < 20; k++) {
                columns[c * 20 + k] = k * 10 + random.nextInt(10); // ascending, unique
                values[c * 20 + k] = 1 + random.nextInt(5);
            }
            rowStarts[c + 1] = (c + 1) * 20;
        }
        try (H5adWriter writer = H5adWriter.create(file, names)) {
            writer.appendSparse(cells, rowStarts, columns, values);
            writer.commit();
        }
        List<ShardBenchmark.Row> rows = ShardBenchmark.run(new ShardBenchmark.Settings(file, 1_000, 64, 2, List.of(1, 2), 3, true, 0.2));
        for (String layout : List.of("sparse", "dense")) {
            for (int threads : List.of(1, 2)) {
                for (String method : List.of("memfit loader over ShardStore", ShardBenchmark.C_LOADER,
                        layout.equals("sparse") ? "C mmap, zero + scatter CSR rows" : "C mmap+memcpy (first shard's rows)")) {
                    List<ShardBenchmark.Row> found = rows.stream().filter(r -> r.layout().equals(layout)
                            && r.threads() == threads && r.method().equals(method)).toList();
                    assertEquals(1, found.size(), layout + ", " + threads + " threads, " + method + ": " + rows);
                    assertTrue(found.getFirst().cellsPerSecond() > 0, found.toString());
                }
            }
        }
    }
}
