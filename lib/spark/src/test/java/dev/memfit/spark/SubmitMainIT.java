package dev.memfit.spark;

import dev.memfit.ProgressListener;
import dev.memfit.PythonPeer;
import dev.memfit.prep.Preprocess;
import dev.memfit.shard.ShardWriter;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import java.util.jar.JarFile;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * The spark-submit jar ({@code memfit-spark-<version>-submit.jar}, built in the package phase; this test runs after
 * it) run as spark-submit runs it: its main class in a fresh JVM with the jar and Spark's jars on the class path (no
 * memfit jar nor memfit-only library besides), the master from the {@code spark.master} property spark-submit sets.
 * Its shards and its preprocessed file equal the single-process ones byte for byte; a bad input exits 1 with memfit's
 * message naming the file.
 */
class SubmitMainIT {

    @TempDir
    static Path dir;

    @Test
    void theSubmitJarWritesWhatOneProcessWrites() throws IOException {
        // Surefire's default execution runs it too when named with -Dtest: the jar is built after that execution
        assumeTrue("integration-test".equals(System.getProperty("memfit.submit.phase")), "runs after the package phase");
        Path jar = Path.of(System.getProperty("memfit.submit.jar"));
        try (JarFile contents = new JarFile(jar.toFile())) {
            List<String> names = contents.stream().map(e -> e.getName()).toList();
            assertTrue(names.contains("dev/memfit/spark/SubmitMain.class"));
            assertTrue(names.contains("dev/memfit/shard/ShardWriter.class"));
            assertTrue(names.stream().anyMatch(n -> n.startsWith("dev/memfit/shaded/parquet/hadoop/")), "Parquet relocated");
            for (String provided : List.of("org/apache/spark/", "scala/", "org/apache/hadoop/", "org/apache/parquet/", "ai/djl/")) {
                assertFalse(names.stream().anyMatch(n -> n.startsWith(provided)), provided + " is the cluster's or unused");
            }
            assertEquals(SubmitMain.class.getName(), contents.getManifest().getMainAttributes().getValue("Main-Class"));
        }
        assertEquals("ok", PythonPeer.run("""
                import sys, numpy as np, pandas as pd, scipy.sparse as sp, anndata as ad
                rng = np.random.default_rng(3)
                for i, n in enumerate([90, 41]):
                    x = rng.poisson(rng.gamma(0.7, 2.0, 30) * rng.gamma(2.0, 0.5, (n, 1))).astype(np.float32)
                    obs = pd.DataFrame({'cell_type': pd.Categorical(rng.choice(['B', 'T'], n))},
                                       index=['f%d_c%d' % (i, k) for k in range(n)])
                    ad.AnnData(sp.csr_matrix(x), obs=obs, var=pd.DataFrame(index=['g%d' % j for j in range(30)])
                               ).write_h5ad('%s/part-%d.h5ad' % (sys.argv[1], i))
                print('ok')
                """, dir));
        List<Path> inputs = List.of(dir.resolve("part-0.h5ad"), dir.resolve("part-1.h5ad"));
        Path single = dir.resolve("single");
        ShardWriter.builder().setInputs(inputs).optShardSize(25).optProgress(ProgressListener.silent()).write(single);
        Path submitted = dir.resolve("submitted");
        Result shard = submit("shard", inputs.get(0).toString(), inputs.get(1).toString(), "--output-dir", submitted.toString(),
                "--shard-size", "25");
        assertEquals(0, shard.status(), shard.output());
        assertEquals(files(single), files(submitted));

        Path processed = dir.resolve("processed.h5ad");
        Preprocess.builder().setInput(inputs.get(0)).optHighlyVariable(10).optProgress(ProgressListener.silent()).run(processed);
        Path submittedProcessed = dir.resolve("submitted.h5ad");
        Result preprocess = submit("preprocess", "--input", inputs.get(0).toString(), "--output", submittedProcessed.toString(),
                "--hvg", "10");
        assertEquals(0, preprocess.status(), preprocess.output());
        assertEquals(-1L, Files.mismatch(processed, submittedProcessed), "the same file, byte for byte");

        Path truncated = dir.resolve("truncated.h5ad");
        byte[] bytes = Files.readAllBytes(inputs.get(1));
        Files.write(truncated, Arrays.copyOf(bytes, bytes.length / 2));
        Result refused = submit("shard", truncated.toString(), "--output-dir", dir.resolve("never").toString());
        assertEquals(1, refused.status(), refused.output());
        assertTrue(refused.output().contains("memfit: ") && refused.output().contains(truncated.toString()), refused.output());
        assertFalse(refused.output().contains("\tat dev.memfit"), "memfit's message, not a stack trace: " + refused.output());
        assertFalse(Files.exists(dir.resolve("never")));
    }

    private record Result(int status, String output) {
    }

    /** The submit jar's main class in a new JVM, as spark-submit starts it in client mode. */
    private static Result submit(String... args) throws IOException {
        List<String> command = new ArrayList<>();
        command.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        command.add("-Xmx1g");
        command.addAll(Arrays.asList(System.getProperty("memfit.spark.jvm.flags").trim().split("\\s+")));
        command.add("-Dspark.master=local[2]");   // what spark-submit --master local[2] sets
        command.add("-Dspark.ui.enabled=false");
        command.add("-cp");
        command.add(System.getProperty("memfit.submit.jar") + java.io.File.pathSeparator
                + Files.readString(Path.of(System.getProperty("memfit.spark.classpath"))).trim());
        command.add(SubmitMain.class.getName());
        command.addAll(Arrays.asList(args));
        Path log = Files.createTempFile(dir, "submit", ".log");
        ProcessBuilder builder = new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(log.toFile());
        builder.environment().put("SPARK_LOCAL_IP", "127.0.0.1");
        Process process = builder.start();
        try {
            if (!process.waitFor(5, TimeUnit.MINUTES)) {
                process.destroyForcibly();
                return new Result(-1, "did not end in 5 minutes: " + Files.readString(log, StandardCharsets.UTF_8));
            }
        } catch (InterruptedException e) {
            process.destroyForcibly();
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
        return new Result(process.exitValue(), Files.readString(log, StandardCharsets.UTF_8));
    }

    /** Every file of a folder but the lock, by name, as text of its bytes' hash and size (readable in a failure). */
    private static Map<String, String> files(Path folder) {
        Map<String, String> files = new TreeMap<>();
        try (Stream<Path> list = Files.list(folder)) {
            for (Path file : list.toList()) {
                String name = file.getFileName().toString();
                if (!name.equals(".memfit.lock")) {
                    byte[] bytes = Files.readAllBytes(file);
                    files.put(name, bytes.length + " bytes, hash " + Arrays.hashCode(bytes));
                }
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return files;
    }
}
