package dev.memfit.cli;

import dev.memfit.PythonPeer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.regex.Pattern;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Bad input and a failing environment, command by command, as a user sees them: each row runs the CLI in a separate
 * JVM (the launcher's JVM options, the build's class path) and checks the exit status, that standard error is one line
 * {@code memfit COMMAND: ...} naming the file, with no exception class or stack frame, and that nothing is left
 * behind: no temporary file anywhere, no output (a {@code shard} run may keep finished shards of a conversion it can
 * resume, in a folder that does not read as complete).
 *
 * <p>To add a case: one {@link #row} line in {@link #table()}, with the input written in {@link #writeInputs}.
 */
class BadInputTableTest {

    /** Where the output goes: a fresh folder, a regular file, a read-only file system, or a full one (1 MiB). */
    enum Place { FRESH, REGULAR_FILE, READ_ONLY, FULL }

    /**
     * One command on one input.
     *
     * @param name the case
     * @param place where {@code {out}} points
     * @param exit the expected exit status
     * @param names what the line must name (after placeholders): the input, or the output for environment failures
     * @param expected a regular expression the line must match somewhere
     * @param command the arguments, with {@code {dir}} (the inputs) and {@code {out}}
     */
    record Row(String name, Place place, int exit, String names, String expected, String command) {
        @Override
        public String toString() {
            return name + ": " + command.replace("{dir}/", "");
        }
    }

    private static final String[] READERS = {"inspect {in}", "estimate {in}",
            "shard {in} --output-dir {out}/shards --shard-size 20", "preprocess --input {in} --output {out}/p.h5ad --hvg 5"};
    /** Every writer, writing more than 1 MiB (so that the full file system fails them). */
    private static final String[] WRITERS = {"shard {dir}/big.h5ad --output-dir {out}/shards --shard-size 1000",
            "preprocess --input {dir}/big.h5ad --output {out}/p.h5ad --hvg 400", "pack {dir}/npys -o {out}/p.h5",
            "select-random 1000000 -n 200000 -o {out}/sel.npy"};

    static List<Row> table() {
        List<Row> rows = new ArrayList<>();
        // name, input (or null), where output goes, expected exit, a pattern of the message, commands
        row(rows, "truncated .h5ad", "truncated.h5ad", Place.FRESH, 1, "truncated or damaged", READERS);
        row(rows, "corrupt gzip chunk", "corrupt.h5ad", Place.FRESH, 1, "corrupt chunk", READERS[0], READERS[2], READERS[3]);
        row(rows, "categorical code out of range", "badcode.h5ad", Place.FRESH, 1, "code 17 at row 5", READERS);
        row(rows, "obs column shorter than n_obs", "shortcol.h5ad", Place.FRESH, 1, "/obs/n_counts of n_obs = 60 entries.*found 30", READERS);
        row(rows, "float16 X", "f16.h5ad", Place.FRESH, 1, "found float16", READERS);
        row(rows, "bool X", "bool.h5ad", Place.FRESH, 1, "found bool", READERS);
        row(rows, "zero cells", "zero.h5ad", Place.FRESH, 1, "n_obs = 0|0 samples", READERS[1], READERS[2], READERS[3]);
        row(rows, "a directory named as a file", "dir.h5ad", Place.FRESH, 1, "found a directory", READERS);
        row(rows, "an empty file", "empty.h5ad", Place.FRESH, 1, "No valid HDF5 signature", READERS);
        row(rows, "a missing file", "missing.h5ad", Place.FRESH, 1, "no such file", READERS);
        row(rows, "a file where a shard folder is expected", "good.h5ad", Place.FRESH, 1, "expected a shard folder", "validate {in}");
        row(rows, "a file where a folder of .npy is expected", "good.h5ad", Place.FRESH, 1, "cannot list|not a directory|Not a directory", "pack {in} -o {out}/p.h5");
        row(rows, "output dir is a regular file", null, Place.REGULAR_FILE, 1, "a file, where a directory is needed|Not a directory|expected a folder to write into, found a file",
                "shard {dir}/good.h5ad --output-dir {out} --shard-size 20", WRITERS[0], WRITERS[1], WRITERS[2], WRITERS[3]);
        row(rows, "read-only output folder", null, Place.READ_ONLY, 1, "Read-only file system", WRITERS);
        row(rows, "full disk", null, Place.FULL, 1, "No space left on device|the disk is probably full", WRITERS);
        row(rows, "a bad option value", null, Place.FRESH, 2, "Invalid value for option '--shard-size'",
                "shard {dir}/good.h5ad --output-dir {out}/shards --shard-size many");
        row(rows, "a missing option", null, Place.FRESH, 2, "Missing required option: '--output-dir", "shard {dir}/good.h5ad");
        return rows;
    }

    private static void row(List<Row> rows, String name, String input, Place place, int exit, String expected, String... commands) {
        for (String command : commands) {
            String names = input != null ? "{dir}/" + input : place == Place.FRESH ? "" : "{out}";
            rows.add(new Row(name, place, exit, names, expected, command.replace("{in}", "{dir}/" + input)));
        }
    }

    @TempDir
    static Path base;
    private static Path inputs;
    private static Path readOnly;
    private static Path full;
    private static String mountProblem;

    @BeforeAll
    static void writeInputs() throws Exception {
        inputs = Files.createDirectories(base.resolve("inputs"));
        assertEquals("ok", PythonPeer.run("""
                import sys, os, shutil, numpy as np, pandas as pd, scipy.sparse as sp, anndata as ad, h5py
                d = sys.argv[1]
                rng = np.random.default_rng(0)
                def frame(n, prefix):
                    return pd.DataFrame(index=['%s%d' % (prefix, i) for i in range(n)])
                def write(path, x, obs=None):
                    n, g = x.shape
                    ad.AnnData(x, obs=frame(n, 'c') if obs is None else obs, var=frame(g, 'g'),
                               dtype=x.dtype).write_h5ad(path, compression='gzip')
                dense = ((rng.random((60, 20)) < 0.3) * rng.integers(1, 9, (60, 20))).astype(np.float32)
                obs = pd.DataFrame({'cell_type': pd.Categorical(rng.choice(['B', 'T', 'NK'], 60)),
                                    'n_counts': dense.sum(axis=1).astype(np.float64)}, index=['c%d' % i for i in range(60)])
                write(f'{d}/good.h5ad', sp.csr_matrix(dense), obs)
                whole = open(f'{d}/good.h5ad', 'rb').read()
                open(f'{d}/truncated.h5ad', 'wb').write(whole[:len(whole) // 2])
                shutil.copy(f'{d}/good.h5ad', f'{d}/corrupt.h5ad')
                with h5py.File(f'{d}/corrupt.h5ad', 'r') as f:
                    chunk = f['X/data'].id.get_chunk_info(0)
                with open(f'{d}/corrupt.h5ad', 'r+b') as f:
                    f.seek(chunk.byte_offset + chunk.size // 2)
                    f.write(b'\\xff' * min(16, chunk.size // 2))
                shutil.copy(f'{d}/good.h5ad', f'{d}/badcode.h5ad')
                with h5py.File(f'{d}/badcode.h5ad', 'r+') as f:
                    codes = f['obs/cell_type/codes'][...]
                    codes[5] = 17
                    f['obs/cell_type/codes'][...] = codes
                shutil.copy(f'{d}/good.h5ad', f'{d}/shortcol.h5ad')
                with h5py.File(f'{d}/shortcol.h5ad', 'r+') as f:
                    counts = f['obs/n_counts'][...]
                    del f['obs/n_counts']
                    f['obs/n_counts'] = counts[:30]
                    f['obs/n_counts'].attrs['encoding-type'] = 'array'
                    f['obs/n_counts'].attrs['encoding-version'] = '0.2.0'
                write(f'{d}/f16.h5ad', dense.astype(np.float16))
                write(f'{d}/bool.h5ad', dense > 0)
                write(f'{d}/zero.h5ad', sp.csr_matrix((0, 10), dtype=np.float32))
                open(f'{d}/empty.h5ad', 'wb').close()
                os.makedirs(f'{d}/dir.h5ad')
                # more than 1 MiB of output from every writer
                big = sp.random(3000, 500, density=0.2, format='csr', dtype=np.float32, random_state=1)
                big.data[:] = rng.integers(1, 9, big.nnz)
                write(f'{d}/big.h5ad', big)
                os.makedirs(f'{d}/npys')
                for i in range(40):
                    np.save(f'{d}/npys/s%03d.npy' % i, rng.random((100, 100)).astype(np.float32))
                print('ok')
                """, inputs));
        Files.writeString(base.resolve("a-file"), "not a folder\n");
        // A read-only and a full file system: small tmpfs mounts, which need root (CAP_SYS_ADMIN); without it those
        // rows are skipped, and FailuresTest checks the same messages from the exceptions the JVM throws.
        readOnly = Files.createDirectories(base.resolve("read-only"));
        full = Files.createDirectories(base.resolve("full"));
        String problem = mount(readOnly, "ro,size=1m");
        mountProblem = problem != null ? problem : mount(full, "size=1m");
    }

    /** Mounts a tmpfs; the reason it could not, or null. */
    private static String mount(Path at, String options) throws Exception {
        Process process = new ProcessBuilder("mount", "-t", "tmpfs", "-o", options, "tmpfs", at.toString())
                .redirectErrorStream(true).start();
        String output = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8).strip();
        process.waitFor(30, TimeUnit.SECONDS);
        return process.exitValue() == 0 ? null : "cannot mount a tmpfs to simulate it (needs root): " + output;
    }

    @AfterAll
    static void unmount() throws Exception {
        for (Path at : new Path[]{readOnly, full}) {
            if (at != null) {
                new ProcessBuilder("umount", at.toString()).redirectErrorStream(true).start().waitFor(30, TimeUnit.SECONDS);
            }
        }
    }

    private static int counter;

    @ParameterizedTest(name = "{0}")
    @MethodSource("table")
    void failsWithOneLineAndLeavesNothing(Row row) throws Exception {
        Path out = switch (row.place()) {
            case FRESH -> Files.createDirectories(base.resolve("out-" + ++counter));
            case REGULAR_FILE -> base.resolve("a-file");
            case READ_ONLY -> readOnly;
            case FULL -> full;
        };
        if (row.place() == Place.READ_ONLY || row.place() == Place.FULL) {
            Assumptions.assumeTrue(mountProblem == null, mountProblem);
        }
        try {
            String[] args = expand(row.command(), out).split(" ");
            Cli.Run run = Cli.run(args);
            String err = run.err().strip();
            System.out.println(row + "\n    -> " + err);
            assertEquals(row.exit(), run.status(), "exit status; stderr: " + run.err());
            assertFalse(err.contains("\n") || err.contains("\r"), "not one line:\n" + run.err());
            assertTrue(err.startsWith("memfit " + args[0] + ": "), err);
            assertFalse(err.contains("Exception"), err);
            assertFalse(err.contains("at dev.memfit"), err);
            assertTrue(Pattern.compile(row.expected()).matcher(err).find(), "expected /" + row.expected() + "/ in: " + err);
            assertTrue(err.contains(expand(row.names(), out)), "does not name " + expand(row.names(), out) + ": " + err);
            assertNothingLeft(row, out);
        } finally {
            if (row.place() == Place.FULL) {
                clear(full);   // free the 1 MiB for the next row
            }
        }
    }

    private static String expand(String text, Path out) {
        return text.replace("{dir}", inputs.toString()).replace("{out}", out.toString());
    }

    /** No temporary file under the inputs and the output; no output, but resumable shards marked incomplete. */
    private static void assertNothingLeft(Row row, Path out) throws IOException {
        for (Path folder : new Path[]{inputs, out.getParent(), out}) {
            if (!Files.isDirectory(folder)) {
                continue;
            }
            try (Stream<Path> files = Files.walk(folder)) {
                List<Path> temporary = files.filter(file -> {
                    String name = file.getFileName().toString();
                    return name.endsWith(".partial") || name.contains(".tmp");
                }).toList();
                assertEquals(List.of(), temporary, "temporary files left by " + row);
            }
        }
        if (!Files.isDirectory(out)) {
            return;
        }
        try (Stream<Path> files = Files.walk(out)) {
            List<Path> left = files.filter(Files::isRegularFile).toList();
            if (row.command().startsWith("shard ") && !left.isEmpty()) {
                Path metadata = out.resolve("shards").resolve("shard_metadata.json");
                assertTrue(Files.readString(metadata).matches("(?s).*\"complete\"\\s*:\\s*false.*"),
                        "a failed shard run left a folder that reads as complete: " + left);
            } else {
                assertEquals(List.of(), left, "output left by " + row);
            }
        }
    }

    private static void clear(Path folder) throws IOException {
        try (Stream<Path> files = Files.walk(folder)) {
            for (Path file : files.sorted(Comparator.reverseOrder()).toList()) {
                if (!file.equals(folder)) {
                    Files.delete(file);
                }
            }
        }
    }

    @Test
    void stacktraceOptionAndDebugVariableAddTheTrace() throws Exception {
        String file = inputs.resolve("badcode.h5ad").toString();
        for (Cli.Run run : List.of(Cli.run("inspect", "--stacktrace", file), Cli.run(Map.of("MEMFIT_DEBUG", "1"), "inspect", file))) {
            assertEquals(1, run.status(), run.err());
            String[] lines = run.err().split("\\R");
            assertTrue(lines[0].startsWith("memfit inspect: " + file + ": expected codes of the categorical /obs/cell_type"), lines[0]);
            assertTrue(Arrays.stream(lines).anyMatch(line -> line.strip().startsWith("at dev.memfit.io.hdf5.H5ad.")), run.err());
        }
    }

    /** Runs the CLI as the {@code ./memfit} launcher does: a JVM of its own, the launcher's options. */
    static final class Cli {

        record Run(int status, String out, String err) {
        }

        private static List<String> javaOptions;

        static Run run(String... args) throws Exception {
            return run(Map.of(), args);
        }

        static synchronized List<String> javaOptions() throws Exception {
            if (javaOptions == null) {
                // the options the launcher passes, from the launcher's own shell library (so the two cannot drift)
                Path root = Path.of("..", "..").toAbsolutePath().normalize();
                Process process = new ProcessBuilder("bash", "-c", "MEMFIT_ROOT=\"$1\"; . \"$1/environment/lib.sh\"; memfit_java_options",
                        "bash", root.toString()).start();
                String options = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8).strip();
                assertEquals(0, process.waitFor(), "memfit_java_options failed");
                javaOptions = List.of(options.split("\\s+"));
            }
            return javaOptions;
        }

        static Run run(Map<String, String> environment, String... args) throws Exception {
            List<String> command = new ArrayList<>();
            command.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
            command.addAll(javaOptions());
            command.addAll(List.of("-cp", System.getProperty("java.class.path"), Main.class.getName()));
            command.addAll(List.of(args));
            ProcessBuilder builder = new ProcessBuilder(command);
            builder.environment().remove("MEMFIT_DEBUG");
            builder.environment().put("DJL_OFFLINE", "true");
            builder.environment().put("OPT_OUT_TRACKING", "true");
            builder.environment().putAll(environment);
            Path stdout = Files.createTempFile(base, "stdout", ".log");
            Path stderr = Files.createTempFile(base, "stderr", ".log");
            try {
                Process process = builder.redirectOutput(stdout.toFile()).redirectError(stderr.toFile()).start();
                if (!process.waitFor(180, TimeUnit.SECONDS)) {
                    process.destroyForcibly();
                    throw new AssertionError("timed out: " + String.join(" ", args));
                }
                return new Run(process.exitValue(), Files.readString(stdout), Files.readString(stderr));
            } finally {
                Files.deleteIfExists(stdout);
                Files.deleteIfExists(stderr);
            }
        }
    }
}
