package dev.memfit.cli;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.memfit.PythonPeer;
import dev.memfit.data.Batch;
import dev.memfit.data.Datasets;
import dev.memfit.data.Loader;
import dev.memfit.InvalidFileException;
import dev.memfit.sample.Subsets;
import dev.memfit.synthetic.SyntheticParticles;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.HashSet;
import java.util.Set;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class SelectRandomAndInspectParticlesTest {

    private static String stdout(String... args) {
        PrintStream old = System.out;
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        try {
            System.setOut(new PrintStream(out, true, StandardCharsets.UTF_8));
            assertEquals(0, Main.execute(args));
        } finally {
            System.setOut(old);
        }
        return out.toString(StandardCharsets.UTF_8);
    }

    @Test
    void selectRandomWritesSortedDistinctIndicesNumpyReads(@TempDir Path dir) {
        Path file = dir.resolve("ind.npy");
        stdout("select-random", "100000", "-n", "5000", "-o", file.toString(), "--seed", "3");
        assertEquals("5000 int64 True True 0 99999", PythonPeer.run("""
                import sys, numpy as np
                a = np.load(sys.argv[1])
                print(len(a), a.dtype, bool((np.diff(a) > 0).all()), bool(abs(a.mean() - 50000) < 2000),
                      int(a.min() >= 0) * 0, int(a.max() < 100000) * 99999)
                """, file));
        long[] again = Subsets.random(100000, 5000, 3);
        assertEquals(again.length, Subsets.read(file, 100000).length);
        assertEquals(again[17], Subsets.read(file, 100000)[17]);
    }

    @Test
    void selectRandomChoosesFiveOfTenTrillion(@TempDir Path dir) {
        // Floyd's algorithm: O(k), where the one-pass selection sampling it replaced ran for hours
        Path file = dir.resolve("five.npy");
        assertTrue(stdout("select-random", "10000000000000", "-n", "5", "-o", file.toString(), "--seed", "9")
                .contains("wrote 5 of 10000000000000 indices"));
        assertEquals("5 int64 True True", PythonPeer.run("""
                import sys, numpy as np
                a = np.load(sys.argv[1])
                print(len(a), a.dtype, bool((np.diff(a) > 0).all()), bool(a.min() >= 0 and a.max() < 10**13))
                """, file));
        assertEquals(java.util.Arrays.toString(Subsets.random(10_000_000_000_000L, 5, 9)),
                java.util.Arrays.toString(Subsets.read(file, 10_000_000_000_000L)));
    }

    @Test
    void loaderTrainsOnTheSubsetOnly(@TempDir Path dir) {
        SyntheticParticles.Written written = SyntheticParticles.builder().setParticles(50).setSize(8).optPerStack(50)
                .optNoise(0).optMaxAngle(180).optSeed(1).write(dir);
        Path file = Subsets.write(dir.resolve("keep.npy"), new long[]{3, 7, 11, 40, 49});
        try (Loader subset = Datasets.particles(written.star()).lazy(2).optSubset(file).optBatchSize(5).build();
             Loader full = Datasets.particles(written.star()).eager().optBatchSize(50).build()) {
            float[] all = full.epoch(0).iterator().next().toFloatArray();
            Batch batch = subset.epoch(0).iterator().next();
            float[] values = batch.toFloatArray();
            long[] keep = {3, 7, 11, 40, 49};
            for (int i = 0; i < keep.length; i++) {
                for (int p = 0; p < 64; p++) {
                    assertEquals(all[(int) keep[i] * 64 + p], values[i * 64 + p], 0f);
                }
            }
            assertEquals(5, subset.samples());
        }
        Path bad = Subsets.write(dir.resolve("bad.npy"), new long[]{1, 50});
        InvalidFileException e = assertThrows(InvalidFileException.class,
                () -> Datasets.particles(written.star()).lazy(1).optSubset(bad).build());
        assertTrue(e.getMessage().contains("expected indices in [0, 50), found index 50 at position 1"), e.getMessage());
    }

    @Test
    void inspectStackAndStarAgreeWithMrcfile(@TempDir Path dir) throws Exception {
        SyntheticParticles.Written written = SyntheticParticles.builder().setParticles(30).setSize(12)
                .optPerStack(20).optNoise(0.2).optMaxAngle(180).optSeed(5).write(dir);
        String sums = PythonPeer.run("""
                import sys, mrcfile, numpy as np
                total = 0.0
                for name in sys.argv[1:]:
                    with mrcfile.open(name) as m:
                        total += float(m.data.sum(dtype=np.float64))
                print(repr(total))
                """, written.stacks().get(0), written.stacks().get(1));
        JsonNode star = new ObjectMapper().readTree(stdout("inspect", written.star().toString(), "--json"));
        assertEquals(30, star.get("images").asLong());
        assertEquals("[12,12]", star.get("image_shape").toString());
        assertTrue(star.get("format").asText().startsWith("RELION star, 2 stack(s)"));
        assertEquals(Double.parseDouble(sums), star.get("sum").asDouble(), 1e-6 * Math.abs(Double.parseDouble(sums)) + 1e-6);
        JsonNode stack = new ObjectMapper().readTree(stdout("inspect", written.stacks().getFirst().toString(), "--json"));
        assertEquals("MRC2014 mode 2", stack.get("format").asText());
        assertEquals(20, stack.get("images").asLong());
        assertEquals(3.0, stack.get("voxel_size").asDouble(), 1e-6);
        Set<String> keys = new HashSet<>();
        stack.fieldNames().forEachRemaining(keys::add);
        assertTrue(keys.contains("extended_header") && keys.contains("size_on_disk"), keys.toString());
    }

    @Test
    void estimatePrintsTheBreakdownAndAdvice() {
        Path sample = Path.of("..", "..", "data-samples", "topics-500x200.npy");
        String out = stdout("estimate", sample.toString(), "--model-params", "1000000", "--batch", "50", "--loading", "mapped");
        assertTrue(out.contains("500 samples of 800 bytes"), out);
        assertTrue(out.contains("data file mapping (address space)"), out);
        assertTrue(out.contains("adam state (2 per parameter, float32)"), out);
        assertTrue(out.contains("fits in half of the available RAM"), out);
        // without --loading, the estimate is of the advised strategy: 80 KB is in memory on any machine running this
        String advised = stdout("estimate", sample.toString(), "--batch", "50");
        assertTrue(advised.contains("loaded in memory"), advised);
        assertTrue(advised.contains("data held in memory"), advised);
    }
}
