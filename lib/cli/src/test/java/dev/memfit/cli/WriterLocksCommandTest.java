package dev.memfit.cli;

import blue.strategic.parquet.ParquetReader;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.memfit.PythonPeer;
import dev.memfit.io.storage.OutputLock;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@code memfit} commands run as separate processes against one output: one writer at a time, the other refused
 * with one line naming the holder's pid, and a folder that never validates with two inputs' cells.
 */
class WriterLocksCommandTest {

    @TempDir
    static Path dir;
    static Path first;
    static Path second;
    /** anndata's float64 sum of each input's X. */
    static double[] sums;

    @BeforeAll
    static void inputs() {
        first = dir.resolve("first.h5ad");
        second = dir.resolve("second.h5ad");
        // large enough that two runs started together overlap; different values and cell ids, the same shape
        sums = PythonPeer.run("""
                import sys, numpy as np, pandas as pd, scipy.sparse as sp, anndata as ad
                for seed, prefix, path in ((1, 'a', sys.argv[1]), (2, 'b', sys.argv[2])):
                    rng = np.random.default_rng(seed)
                    x = sp.random(8000, 300, density=0.1, format='csr', dtype=np.float32, random_state=seed)
                    x.data = np.ceil(x.data * 10).astype(np.float32)
                    obs = pd.DataFrame(index=[prefix + str(i) for i in range(x.shape[0])])
                    ad.AnnData(x, obs=obs, var=pd.DataFrame(index=['g%d' % j for j in range(x.shape[1])])).write_h5ad(path)
                    print(repr(float(ad.read_h5ad(path).X.sum(dtype=np.float64))))
                """, first, second).lines().mapToDouble(Double::parseDouble).toArray();
        assertEquals(2, sums.length);
    }

    private static CliRun inProcess(String... args) {
        return CliRun.of(args);
    }

    /** Starts {@code memfit ARGS} as its own process (the JVM options of the launcher), output to files. */
    private static Process start(Path logs, String name, String... args) throws IOException {
        List<String> command = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "--enable-native-access=ALL-UNNAMED", "-Djava.awt.headless=true", "-Dai.djl.offline=true",
                "-cp", System.getProperty("java.class.path"), Main.class.getName()));
        command.addAll(List.of(args));
        return new ProcessBuilder(command).redirectOutput(logs.resolve(name + ".out").toFile())
                .redirectError(logs.resolve(name + ".err").toFile()).start();
    }

    private static int finish(Process process) throws InterruptedException {
        assertTrue(process.waitFor(5, TimeUnit.MINUTES), "the command finished");
        return process.exitValue();
    }

    /**
     * Whose cells a valid shard folder holds, "a" or "b", from its cell ids and the float64 sum of its cells as
     * {@code memfit inspect} reads them, against anndata's sum of that input (failing on a mix).
     */
    private static String whose(Path folder) throws IOException {
        List<String> ids = new ArrayList<>();
        try (Stream<Path> files = Files.list(folder)) {
            for (Path parquet : files.filter(f -> f.toString().endsWith(".parquet")).sorted().toList()) {
                try (Stream<String[]> rows = ParquetReader.streamContentToStrings(parquet.toFile())) {
                    rows.forEach(row -> ids.add(row[0].substring(row[0].indexOf('=') + 1)));
                }
            }
        }
        assertEquals(8000, ids.size());
        String prefix = ids.getFirst().substring(0, 1);
        assertTrue(ids.stream().allMatch(id -> id.startsWith(prefix)), folder + ": cell ids of both inputs");
        CliRun inspect = inProcess("inspect", folder.toString(), "--json");
        assertEquals(0, inspect.status(), inspect.err());
        double sum = new ObjectMapper().readTree(inspect.out()).get("sum").asDouble();
        assertEquals(prefix.equals("a") ? sums[0] : sums[1], sum, 0.0, folder + ": the cells' values are of input " + prefix);
        return prefix;
    }

    @Test
    void twoShardProcessesIntoOneFolderNeverLeaveMixedContent() throws Exception {
        Path out = dir.resolve("shards");
        Path logs = Files.createDirectories(dir.resolve("logs"));
        int refused = 0;
        for (int iteration = 0; iteration < 10; iteration++) {
            Process a = start(logs, "a" + iteration, "shard", first.toString(), "--output-dir", out.toString(),
                    "--shard-size", "1000");
            Process b = start(logs, "b" + iteration, "shard", second.toString(), "--output-dir", out.toString(),
                    "--shard-size", "1000");
            int statusA = finish(a);
            int statusB = finish(b);
            for (Process[] pair : new Process[][]{{a, b}, {b, a}}) {
                int status = pair[0] == a ? statusA : statusB;
                String name = (pair[0] == a ? "a" : "b") + iteration;
                String err = Files.readString(logs.resolve(name + ".err"));
                if (status != 0) {
                    refused++;
                    assertEquals(1, status, err);
                    assertEquals(List.of("memfit shard: another memfit process (pid " + pair[1].pid() + ") is writing "
                            + out.toAbsolutePath() + "; wait for it to finish or stop it, then run again"),
                            err.lines().filter(line -> !line.startsWith("WARNING")).toList());
                }
            }
            assertTrue(statusA == 0 || statusB == 0, "the run holding the lock finishes");
            CliRun validate = inProcess("validate", out.toString());
            assertEquals(0, validate.status(), validate.err());
            String holder = whose(out);
            assertTrue(holder.equals("a") || holder.equals("b"));
        }
        System.out.println("two shard processes: " + refused + " of 10 iterations refused one of them");
    }

    @Test
    void everyWriterRefusesAnOutputAnotherProcessHolds() throws Exception {
        Path logs = Files.createDirectories(dir.resolve("held-logs"));
        Path samples = dir.resolve("samples");
        assertEquals(0, inProcess("generate", "topics", "--documents", "20", "--terms", "8", "-o",
                dir.resolve("topics.npy").toString()).status());
        PythonPeer.run("""
                import sys, os, numpy as np
                os.makedirs(sys.argv[1], exist_ok=True)
                for i in range(5):
                    np.save(os.path.join(sys.argv[1], 'sample_%d.npy' % i), np.full((4, 4), i, np.float32))
                """, samples);
        long self = ProcessHandle.current().pid();
        Path folder = dir.resolve("held-shards");
        Path packed = dir.resolve("held.h5");
        Path processed = dir.resolve("held-processed.h5ad");
        Path atlas = dir.resolve("held-atlas.h5ad");
        Path topics = dir.resolve("held-topics.npy");
        Path subset = dir.resolve("held-subset.npy");
        Path particles = dir.resolve("held-particles");
        record Case(String name, Path output, boolean folder, String[] args) {
        }
        List<Case> cases = List.of(
                new Case("shard", folder, true, new String[]{"shard", first.toString(), "--output-dir", folder.toString()}),
                new Case("pack", packed, false, new String[]{"pack", samples.toString(), "-o", packed.toString()}),
                new Case("preprocess", processed, false, new String[]{"preprocess", "--input", first.toString(),
                        "--output", processed.toString(), "--hvg", "10"}),
                new Case("generate", atlas, false, new String[]{"generate", "atlas", "--cells", "100", "--genes", "20",
                        "-o", atlas.toString()}),
                new Case("generate", topics, false, new String[]{"generate", "topics", "--documents", "10", "--terms",
                        "5", "-o", topics.toString()}),
                new Case("select-random", subset, false, new String[]{"select-random", "100", "-n", "5", "-o",
                        subset.toString()}),
                new Case("generate", particles, true, new String[]{"generate", "particles", "--particles", "10",
                        "--size", "8", "-o", particles.toString()}));
        for (Case held : cases) {
            try (OutputLock lock = held.folder() ? OutputLock.acquireFolder(held.output()) : OutputLock.acquire(held.output())) {
                String name = held.output().getFileName().toString();
                assertEquals(1, finish(start(logs, name, held.args())), held.name());
                String err = Files.readString(logs.resolve(name + ".err"));
                List<String> lines = err.lines().filter(line -> !line.startsWith("WARNING")).toList();
                assertEquals(1, lines.size(), String.join(" ", held.args()) + ": " + err);
                assertTrue(lines.getFirst().startsWith("memfit ") && lines.getFirst().endsWith(": another memfit process (pid "
                        + self + ") is writing " + held.output().toAbsolutePath()
                        + "; wait for it to finish or stop it, then run again"), String.join(" ", held.args()) + ": " + err);
                assertFalse(Files.exists(held.output()) && !held.folder(), "nothing written to " + held.output());
                try (Stream<Path> files = Files.list(held.folder() ? held.output() : held.output().getParent())) {
                    assertEquals(List.of(), files.map(f -> f.getFileName().toString())
                            .filter(f -> f.endsWith(".partial")).toList(), "no temporary file left");
                }
                if (held.folder()) {
                    try (Stream<Path> files = Files.list(held.output())) {
                        assertEquals(List.of(OutputLock.FOLDER_LOCK), files.map(f -> f.getFileName().toString()).toList());
                    }
                }
            }
        }
    }

    @Test
    void shardRepairsADamagedShardAndSaysSo() throws IOException {
        Path out = dir.resolve("repair");
        assertEquals(0, inProcess("shard", first.toString(), "--output-dir", out.toString(), "--shard-size", "2000").status());
        try (RandomAccessFile file = new RandomAccessFile(out.resolve("shard_000003.parquet").toFile(), "rw")) {
            file.setLength(file.length() / 2);
        }
        CliRun invalid = inProcess("validate", out.toString());
        assertEquals(1, invalid.status());
        assertTrue(invalid.err().contains("shard_000003.parquet"), invalid.err());
        CliRun repair = inProcess("shard", first.toString(), "--output-dir", out.toString(), "--shard-size", "2000");
        assertEquals(0, repair.status(), repair.err());
        List<String> lines = repair.out().lines().toList();
        assertTrue(lines.getFirst().startsWith("repaired shard_000003 (shard_000003.parquet: expected ")
                && lines.getFirst().contains("(corrupt or replaced))"), repair.out());
        assertTrue(lines.get(1).startsWith("4 sparse shards (1 written now)"), repair.out());
        assertEquals(0, inProcess("validate", out.toString()).status());
        assertEquals("a", whose(out));

        // a larger shard size: the shards beyond the new count are removed, and the output says which
        CliRun resharded = inProcess("shard", first.toString(), "--output-dir", out.toString(), "--shard-size", "4000");
        assertEquals(0, resharded.status(), resharded.err());
        List<String> reshardedLines = resharded.out().lines().toList();
        assertTrue(reshardedLines.getFirst().startsWith("the shards already in " + out + " were not kept: shard_size 4000, "
                + "was 2000"), resharded.out());
        assertTrue(reshardedLines.get(1).startsWith("removed 8 stale file(s): shard_000002.data.npy, "), resharded.out());
        assertEquals(0, inProcess("validate", out.toString()).status());
        assertEquals("a", whose(out));
    }
}
