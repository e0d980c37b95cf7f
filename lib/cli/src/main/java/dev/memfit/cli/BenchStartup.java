package dev.memfit.cli;

import dev.memfit.MemfitException;
import dev.memfit.bench.LocalS3;
import dev.memfit.bench.WanLink;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import tech.tablesaw.api.DoubleColumn;
import tech.tablesaw.api.IntColumn;
import tech.tablesaw.api.StringColumn;
import tech.tablesaw.api.Table;

import java.io.File;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.TimeUnit;

/**
 * {@code memfit bench startup}: how long a command takes from the start of its JVM, as {@code ./memfit} starts it (same
 * class path and flags), to its first request to an S3 server (a loopback S3Proxy behind a relay that notes the first
 * connection) and to its exit; and a local {@code inspect} of a tiny {@code .npy} to its exit. Each run is a fresh JVM
 * and an empty cache; the median of the runs is reported, since other work on a shared machine only ever slows a run.
 */
@Command(name = "startup", mixinStandardHelpOptions = true,
        description = "Seconds from a command's JVM start to its first S3 request and to its exit (inspect, local and s3://).")
final class BenchStartup implements Callable<Integer> {

    @Option(names = "--runs", defaultValue = "5", description = "fresh JVMs per command (default ${DEFAULT-VALUE})")
    private int runs;

    @Option(names = "--work", defaultValue = "build/bench/startup", description = "folder for the file and caches (default ${DEFAULT-VALUE})")
    private Path work;

    @Override
    public Integer call() throws Exception {
        if (runs < 1) {
            throw new MemfitException("--runs needs at least 1 run, got " + runs);
        }
        Files.createDirectories(work);
        Path tiny = work.resolve("tiny.npy");
        dev.memfit.bench.NumpyFiles.randomFloat32(tiny, 10, 1, 1);
        Table table = Table.create("Start-up of ./memfit inspect (a fresh JVM each run, median of " + runs + ")");
        StringColumn command = StringColumn.create("command");
        DoubleColumn toRequest = DoubleColumn.create("s to first S3 request");
        DoubleColumn toExit = DoubleColumn.create("s to exit");
        IntColumn count = IntColumn.create("runs");
        double[] local = new double[runs];
        for (int r = 0; r < runs; r++) {
            local[r] = run(List.of("inspect", tiny.toString()), Map.of(), null)[1];
        }
        command.append("inspect tiny.npy (local)");
        toRequest.appendMissing();
        toExit.append(round(median(local)));
        count.append(runs);
        try (LocalS3 s3 = LocalS3.inMemory(); WanLink relay = WanLink.start(s3.endpoint(), Duration.ZERO, 0)) {
            s3.createBucket("bench");
            s3.upload(tiny, "bench", "tiny.npy");
            double[] request = new double[runs];
            double[] exit = new double[runs];
            for (int r = 0; r < runs; r++) {
                Path cache = work.resolve("cache-" + r);
                deleteTree(cache);
                relay.resetFirstConnection();
                double[] times = run(List.of("inspect", "s3://bench/tiny.npy"), Map.of("AWS_ENDPOINT_URL",
                        relay.endpoint().toString(), "AWS_ACCESS_KEY_ID", LocalS3.ACCESS_KEY, "AWS_SECRET_ACCESS_KEY",
                        LocalS3.SECRET_KEY, "MEMFIT_CACHE_DIR", cache.toString()), relay);
                request[r] = times[0];
                exit[r] = times[1];
                deleteTree(cache);
            }
            command.append("inspect s3://bench/tiny.npy (empty cache)");
            toRequest.append(round(median(request)));
            toExit.append(round(median(exit)));
            count.append(runs);
        }
        table.addColumns(command, toRequest, toExit, count);
        System.out.println(table.print());
        return 0;
    }

    /** Runs one command in a fresh JVM; returns seconds to the relay's first connection (NaN without) and to exit. */
    private static double[] run(List<String> arguments, Map<String, String> environment, WanLink relay) throws Exception {
        List<String> line = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "--enable-native-access=ALL-UNNAMED", "--sun-misc-unsafe-memory-access=allow", "-Djava.awt.headless=true",
                "-Dai.djl.offline=true", "-cp", System.getProperty("java.class.path"), Main.class.getName()));
        line.addAll(arguments);
        ProcessBuilder builder = new ProcessBuilder(line).redirectErrorStream(true).redirectOutput(ProcessBuilder.Redirect.DISCARD);
        builder.environment().keySet().removeIf(name -> name.startsWith("AWS_") || name.startsWith("MEMFIT_CACHE"));
        builder.environment().putAll(environment);
        long start = System.nanoTime();
        Process process = builder.start();
        if (!process.waitFor(2, TimeUnit.MINUTES)) {
            process.destroyForcibly();
            throw new MemfitException(String.join(" ", arguments) + " did not end within 2 minutes");
        }
        long end = System.nanoTime();
        if (process.exitValue() != 0) {
            throw new MemfitException(String.join(" ", arguments) + " failed (exit " + process.exitValue() + ")");
        }
        long first = relay == null ? 0 : relay.firstConnectionNanos();
        return new double[]{first == 0 ? Double.NaN : (first - start) / 1e9, (end - start) / 1e9};
    }

    private static double median(double[] values) {
        double[] sorted = values.clone();
        Arrays.sort(sorted);
        return sorted.length % 2 == 1 ? sorted[sorted.length / 2] : (sorted[sorted.length / 2 - 1] + sorted[sorted.length / 2]) / 2;
    }

    private static double round(double value) {
        return Math.round(value * 1000) / 1000.0;
    }

    private static void deleteTree(Path folder) throws java.io.IOException {
        if (!Files.exists(folder)) {
            return;
        }
        try (var files = Files.walk(folder)) {
            files.sorted(java.util.Comparator.reverseOrder()).map(Path::toFile).forEach(File::delete);
        }
    }
}
