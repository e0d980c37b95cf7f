package dev.memfit.spark;

import dev.memfit.DType;
import dev.memfit.MemfitException;
import dev.memfit.ProgressListener;
import dev.memfit.shard.GeneVocabulary;
import dev.memfit.shard.ShardLayout;
import dev.memfit.shard.ShardStore;
import dev.memfit.shard.ShardWriter;
import org.apache.spark.sql.SparkSession;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.stream.Stream;

/**
 * The command line of the Spark engine, run by {@code ./memfit shard --engine spark ...},
 * {@code ./memfit preprocess --engine spark ...}, {@code ./memfit bench spark-preprocess ...} and
 * {@code ./memfit bench spark-shards ...} with Spark's jars and JVM flags (never on the ordinary CLI's class path).
 */
@Command(name = "memfit-spark", mixinStandardHelpOptions = true, subcommands = {SparkMain.Shard.class, SparkMain.Preprocess.class, SparkMain.Bench.class,
        SparkMain.BenchPreprocess.class},
        description = "memfit on Apache Spark")
public final class SparkMain {

    private SparkMain() {
    }

    /**
     * Runs a command; a memfit failure prints its message, not a stack trace.
     *
     * @param args {@code shard ...} or {@code bench ...}
     */
    public static void main(String[] args) {
        System.exit(run(args));
    }

    /**
     * Runs a command and returns its exit status; a memfit failure prints its message, not a stack trace.
     *
     * @param args {@code shard ...}, {@code preprocess ...} or a benchmark
     * @return 0 on success
     */
    static int run(String... args) {
        CommandLine line = new CommandLine(SparkMain.class);
        line.setExecutionExceptionHandler((e, cmd, parsed) -> {
            if (e instanceof MemfitException || e instanceof UncheckedIOException) {
                System.err.println("memfit: " + e.getMessage());
                return 1;
            }
            throw e;
        });
        return line.execute(args);
    }

    /** {@code memfit shard --engine spark INPUT... --output-dir D}. */
    @Command(name = "shard", mixinStandardHelpOptions = true,
            description = "Convert .h5ad files into shards on Apache Spark (each task writes consecutive shards of one file, two tasks per core by default): the folder memfit shard writes, byte for byte.")
    static final class Shard implements Callable<Integer> {

        @Parameters(paramLabel = "INPUT", arity = "1..*", description = "the .h5ad files, in order")
        private List<Path> inputs;

        @Option(names = "--output-dir", required = true, description = "a new or empty folder")
        private Path output;

        @Option(names = "--shard-size", defaultValue = "100000", description = "cells per shard (default ${DEFAULT-VALUE})")
        private long shardSize;

        @Option(names = "--vocab", description = "a JSON array of gene names: the columns of every shard")
        private Path vocabulary;

        @Option(names = "--layer", defaultValue = "X", description = "the matrix read: X (default), raw/X, or a layer such as counts (layers/counts)")
        private String layer;

        @Option(names = "--layout", description = "dense or sparse; default: sparse for a sparse X")
        private String layout;

        @Option(names = "--dtype", paramLabel = "TYPE", description = "the shards' values: default the source's "
                + "(float64 for a float64 X); float32 casts a float64 X, as the output and the metadata say")
        private String dtype;

        @Option(names = "--master", description = "Spark master (default: spark-submit's --master, else local[*]; a local one binds to 127.0.0.1)")
        private String master;

        @Option(names = "--tasks", description = "Spark tasks, each writing consecutive shards of one file (default: two per core)")
        private Integer tasks;

        @Option(names = "--conf", description = "a Spark setting KEY=VALUE (repeatable), such as spark.ui.enabled=true")
        private Map<String, String> conf = new LinkedHashMap<>();

        @Override
        public Integer call() {
            SparkShards.Builder builder = SparkShards.builder().setInputs(inputs).optShardSize(shardSize).optMaster(master)
                    .optVocabulary(vocabulary == null ? null : GeneVocabulary.read(vocabulary))
                    .optLayout(layout == null ? null : ShardLayout.of(layout)).optLayer(layer).optDType(dtype(dtype));
            if (tasks != null) {
                builder.optTasks(tasks);
            }
            settings(conf).forEach(builder::addConfig);
            SparkShards.Result result = builder.write(output);
            try (ShardStore store = ShardStore.open(output)) {
                System.out.printf("%d %s shards of %,d cells x %,d genes in %s, %.1f MB%s (Spark job %.1f s, %d tasks)%n",
                        result.shards(), result.layout().key(), result.cells(), result.genes(), output,
                        store.storedBytes() / 1e6, result.dtype() == DType.FLOAT64 ? ", float64 values" : "",
                        result.jobSeconds(), result.tasks());
            }
            if (result.castFrom() != null) {
                System.out.println("values cast from " + name(result.castFrom()) + " to " + name(result.dtype())
                        + " (--dtype " + name(result.dtype()) + "); recorded in shard_metadata.json");
            }
            return 0;
        }
    }

    /** The type {@code --dtype} names (float32, float64), or null for the source's. */
    static DType dtype(String name) {
        if (name == null) {
            return null;
        }
        return switch (name.toLowerCase(java.util.Locale.ROOT)) {
            case "float32", "f4" -> DType.FLOAT32;
            case "float64", "f8" -> DType.FLOAT64;
            default -> throw new MemfitException("--dtype: expected float32 or float64, found '" + name + "'");
        };
    }

    private static String name(DType type) {
        return type.name().toLowerCase(java.util.Locale.ROOT);
    }

    /**
     * The Spark settings of a command: the UI off (a batch job; {@code --conf spark.ui.enabled=true} to watch it) unless
     * spark-submit set it, then the command's {@code --conf}.
     */
    private static Map<String, String> settings(Map<String, String> conf) {
        Map<String, String> settings = new LinkedHashMap<>();
        if (System.getProperty("spark.ui.enabled") == null) {
            settings.put("spark.ui.enabled", "false");
        }
        settings.putAll(conf);
        return settings;
    }

    /** {@code memfit preprocess --engine spark --input RAW --output OUT}. */
    @Command(name = "preprocess", mixinStandardHelpOptions = true,
            description = "Normalize, log1p and keep the highly variable genes on Apache Spark: the genes and values memfit preprocess writes.")
    static final class Preprocess implements Callable<Integer> {

        @Option(names = "--layer", defaultValue = "X", description = "the matrix read: X (default), raw/X, or a layer such as counts (layers/counts)")
        private String layer;

        @Option(names = "--input", required = true, description = "raw counts (.h5ad), on a file system every executor sees")
        private Path input;

        @Option(names = "--output", required = true, description = "the processed .h5ad to write")
        private Path output;

        @Option(names = "--hvg", defaultValue = "4000", description = "highly variable genes to keep (default ${DEFAULT-VALUE})")
        private int highlyVariable;

        @Option(names = "--target-sum", defaultValue = "10000", description = "counts per cell after normalization (default ${DEFAULT-VALUE})")
        private double targetSum;

        @Option(names = "--master", description = "Spark master (default: spark-submit's --master, else local[*]; a local one binds to 127.0.0.1)")
        private String master;

        @Option(names = "--conf", description = "a Spark setting KEY=VALUE (repeatable)")
        private Map<String, String> conf = new LinkedHashMap<>();

        @Override
        public Integer call() {
            SparkPreprocess.Builder builder = SparkPreprocess.builder().setInput(input).optHighlyVariable(highlyVariable)
                    .optTargetSum(targetSum).optMaster(master).optLayer(layer);
            settings(conf).forEach(builder::addConfig);
            dev.memfit.prep.Preprocess.Result result = builder.run(output);
            System.out.printf("wrote %s: %d cells x %d highly variable genes (of %d), normalized to %.0f counts, log1p (Spark)%n",
                    result.output(), result.cells(), result.genes(), result.statistics().genes().length, targetSum);
            return 0;
        }
    }

    /** {@code memfit bench spark-preprocess}: single-process preprocessing vs Spark local[1..n], the session start apart. */
    @Command(name = "bench-preprocess", mixinStandardHelpOptions = true,
            description = "Time preprocess (normalize, log1p, HVG): single process vs Spark local[1], local[2], ... (Spark's session start reported apart); every output checked byte for byte against the single-process one. Figures are this machine's, noisy on a busy one.")
    static final class BenchPreprocess implements Callable<Integer> {

        @Option(names = "--input", description = "the raw .h5ad (default: one written by anndata's write_h5ad with its defaults, --cells cells)")
        private Path input;

        @Option(names = "--cells", defaultValue = "50000", description = "cells of the generated file (default ${DEFAULT-VALUE})")
        private long cells;

        @Option(names = "--genes", defaultValue = "2000", description = "genes of the generated file (default ${DEFAULT-VALUE})")
        private int genes;

        @Option(names = "--hvg", defaultValue = "500", description = "highly variable genes (default ${DEFAULT-VALUE})")
        private int highlyVariable;

        @Option(names = "--cores", defaultValue = "1,2", split = ",", description = "Spark local[n] for each n (default ${DEFAULT-VALUE})")
        private List<Integer> cores;

        @Option(names = "--work", defaultValue = "build/bench/spark", description = "folder for the generated file and the outputs (default ${DEFAULT-VALUE})")
        private Path work;

        @Override
        public Integer call() throws IOException {
            Files.createDirectories(work);
            Path raw = input != null ? input : Bench.generate(work, cells, genes);
            Path single = work.resolve("preprocessed-single.h5ad");
            // warm-up (not counted): the JIT and the page cache, for every run below alike
            dev.memfit.prep.Preprocess.Result result = dev.memfit.prep.Preprocess.builder().setInput(raw)
                    .optHighlyVariable(highlyVariable).optProgress(ProgressListener.silent()).run(single);
            long total = result.cells();
            long start = System.nanoTime();
            dev.memfit.prep.Preprocess.builder().setInput(raw).optHighlyVariable(highlyVariable)
                    .optProgress(ProgressListener.silent()).run(single);
            double singleSeconds = (System.nanoTime() - start) / 1e9;
            List<String[]> rows = new ArrayList<>();
            rows.add(Bench.row("single process", "-", singleSeconds, total, singleSeconds, singleSeconds));
            long cold = System.nanoTime();
            SparkSession first = SparkShards.start("local[" + cores.getFirst() + "]", Map.of("spark.ui.enabled", "false"));
            double coldStart = (System.nanoTime() - cold) / 1e9;
            Path output = work.resolve("preprocessed-spark.h5ad");
            try {
                SparkPreprocess.builder().setInput(raw).optHighlyVariable(highlyVariable).optSession(first)
                        .optProgress(ProgressListener.silent()).run(output);   // warms Spark's code, not counted
            } finally {
                first.stop();
            }
            for (int n : cores) {
                long begin = System.nanoTime();
                SparkSession spark = SparkShards.start("local[" + n + "]", Map.of("spark.ui.enabled", "false"));
                double startup = (System.nanoTime() - begin) / 1e9;
                try {
                    long job = System.nanoTime();
                    SparkPreprocess.builder().setInput(raw).optHighlyVariable(highlyVariable).optSession(spark)
                            .optProgress(ProgressListener.silent()).run(output);
                    double seconds = (System.nanoTime() - job) / 1e9;
                    rows.add(Bench.row("Spark local[" + n + "]", String.format("%.2f", startup), seconds, total,
                            singleSeconds, seconds + startup));
                } finally {
                    spark.stop();
                }
                if (Files.mismatch(single, output) != -1) {
                    throw new MemfitException(output + " differs from " + single + ": the engines must write the same bytes");
                }
            }
            System.out.printf("%npreprocess (normalize, log1p, %d HVG), %,d cells x %,d genes of %s, on %d cores (noisy on a busy machine)%n",
                    highlyVariable, total, result.statistics().genes().length, raw, Runtime.getRuntime().availableProcessors());
            System.out.printf("Spark's first session start in this JVM (class loading): %.2f s; the sessions below start warm%n", coldStart);
            String format = "%-16s %12s %10s %12s %14s %16s%n";
            System.out.printf(format, "engine", "startup s", "job s", "cells/s", "vs single", "incl. startup");
            for (String[] row : rows) {
                System.out.printf(format, (Object[]) row);
            }
            System.out.println("every Spark output equals the single-process output byte for byte");
            return 0;
        }
    }

    /** {@code memfit bench spark-shards}: single process vs Spark local[1..n], with the session start apart. */
    @Command(name = "bench", mixinStandardHelpOptions = true,
            description = "Time .h5ad -> shards: single process vs Spark local[1], local[2], ... (Spark's session start reported apart), the fastest of --repeat runs each. Figures are this machine's, noisy on a busy one.")
    static final class Bench implements Callable<Integer> {

        @Option(names = "--input", description = "the .h5ad files (default: one written by anndata's write_h5ad with its defaults, --cells cells)", split = ",")
        private List<Path> inputs;

        @Option(names = "--cells", defaultValue = "50000", description = "cells of the generated file (default ${DEFAULT-VALUE})")
        private long cells;

        @Option(names = "--genes", defaultValue = "2000", description = "genes of the generated file (default ${DEFAULT-VALUE})")
        private int genes;

        @Option(names = "--shard-size", defaultValue = "10000", description = "cells per shard (default ${DEFAULT-VALUE})")
        private long shardSize;

        @Option(names = "--tasks-per-core", defaultValue = "2", description = "Spark tasks per core of local[n] (default ${DEFAULT-VALUE})")
        private int tasksPerCore;

        @Option(names = "--repeat", defaultValue = "3", description = "runs of each engine, the fastest reported: the others' load on a shared machine only ever slows a run (default ${DEFAULT-VALUE})")
        private int repeat;

        @Option(names = "--cores", defaultValue = "1,2", split = ",", description = "Spark local[n] for each n (default ${DEFAULT-VALUE})")
        private List<Integer> cores;

        @Option(names = "--work", defaultValue = "build/bench/spark", description = "folder for the generated file and the shards (default ${DEFAULT-VALUE})")
        private Path work;

        @Override
        public Integer call() throws IOException {
            Files.createDirectories(work);
            List<Path> files = inputs != null ? inputs : List.of(generate(work, cells, genes));
            long total = 0;
            // warm-up (not counted): the JIT and the page cache, for every run below alike
            Path warm = work.resolve("shards-warmup");
            dev.memfit.io.storage.Folders.deleteTree(warm);
            ShardWriter.Result warmed = ShardWriter.builder().setInputs(files).optShardSize(shardSize)
                    .optProgress(ProgressListener.silent()).write(warm);
            total = warmed.cells();
            List<String[]> rows = new ArrayList<>();
            if (repeat < 1) {
                throw new MemfitException("--repeat needs at least 1 run, got " + repeat);
            }
            Path single = work.resolve("shards-single");
            double singleSeconds = Double.MAX_VALUE;
            for (int run = 0; run < repeat; run++) {
                dev.memfit.io.storage.Folders.deleteTree(single);
                long start = System.nanoTime();
                ShardWriter.builder().setInputs(files).optShardSize(shardSize).optProgress(ProgressListener.silent()).write(single);
                singleSeconds = Math.min(singleSeconds, (System.nanoTime() - start) / 1e9);
            }
            rows.add(row("single process", "-", singleSeconds, total, singleSeconds, singleSeconds));
            // Spark's first session in a JVM loads its classes (seconds): timed apart, then one conversion (not
            // counted) warms Spark's code as the warm-up above warmed memfit's
            long cold = System.nanoTime();
            SparkSession first = SparkShards.start("local[" + cores.getFirst() + "]", Map.of("spark.ui.enabled", "false"));
            double coldStart = (System.nanoTime() - cold) / 1e9;
            try {
                Path sparkWarm = work.resolve("shards-spark-warmup");
                dev.memfit.io.storage.Folders.deleteTree(sparkWarm);
                SparkShards.builder().setInputs(files).optShardSize(shardSize).optTasks(tasksPerCore * cores.getFirst()).optSession(first)
                        .optProgress(ProgressListener.silent()).write(sparkWarm);
            } finally {
                first.stop();
            }
            for (int n : cores) {
                Path folder = work.resolve("shards-spark-" + n);
                dev.memfit.io.storage.Folders.deleteTree(folder);
                long begin = System.nanoTime();
                SparkSession spark = SparkShards.start("local[" + n + "]", Map.of("spark.ui.enabled", "false"));
                double startup = (System.nanoTime() - begin) / 1e9;
                try {
                    double jobSeconds = Double.MAX_VALUE;
                    int tasks = 0;
                    for (int run = 0; run < repeat; run++) {
                        dev.memfit.io.storage.Folders.deleteTree(folder);
                        SparkShards.Result result = SparkShards.builder().setInputs(files).optShardSize(shardSize)
                                .optTasks(tasksPerCore * n).optSession(spark).optProgress(ProgressListener.silent()).write(folder);
                        jobSeconds = Math.min(jobSeconds, result.jobSeconds());
                        tasks = result.tasks();
                    }
                    rows.add(row("Spark local[" + n + "], " + tasks + " tasks", String.format("%.2f", startup),
                            jobSeconds, total, singleSeconds, jobSeconds + startup));
                } finally {
                    spark.stop();
                }
                if (!sameFiles(single, folder)) {
                    throw new MemfitException(folder + " differs from " + single + ": the engines must write the same bytes");
                }
            }
            System.out.printf("%n.h5ad -> shards, %,d cells in %d file(s), %,d cells per shard, on %d cores, best of %d runs each (noisy on a busy machine)%n",
                    total, files.size(), shardSize, Runtime.getRuntime().availableProcessors(), repeat);
            System.out.printf("Spark's first session start in this JVM (class loading): %.2f s; the sessions below start warm%n", coldStart);
            String format = "%-24s %12s %10s %12s %14s %16s%n";
            System.out.printf(format, "engine", "startup s", "job s", "cells/s", "vs single", "incl. startup");
            for (String[] row : rows) {
                System.out.printf(format, (Object[]) row);
            }
            System.out.println("every Spark folder equals the single-process folder byte for byte");
            return 0;
        }

        private static String[] row(String engine, String startup, double seconds, long cells, double single, double withStartup) {
            return new String[]{engine, startup, String.format("%.2f", seconds), String.format("%,.0f", cells / seconds),
                    String.format("%.2fx time", seconds / single), String.format("%.2fx time", withStartup / single)};
        }

        /** An .h5ad written by anndata's {@code write_h5ad()} with its defaults (CSR, ~10% non-zero counts). */
        private static Path generate(Path folder, long cells, int genes) throws IOException {
            Path file = folder.resolve("atlas-" + cells + "x" + genes + ".h5ad");
            if (Files.exists(file)) {
                return file;
            }
            String script = """
                    import sys, numpy as np, pandas as pd, scipy.sparse as sp, anndata as ad
                    n, g = int(sys.argv[2]), int(sys.argv[3])
                    rng = np.random.default_rng(0)
                    x = sp.random(n, g, density=0.1, format='csr', dtype=np.float32, random_state=1)
                    x.data = np.ceil(x.data * 10).astype(np.float32)
                    obs = pd.DataFrame({'cell_type': pd.Categorical(rng.choice(['B', 'T', 'NK', 'Mono'], n))},
                                       index=['c%d' % i for i in range(n)])
                    ad.AnnData(x, obs=obs, var=pd.DataFrame(index=['g%d' % j for j in range(g)])).write_h5ad(sys.argv[1])
                    """;
            Path temporary = folder.resolve("writing-" + file.getFileName());
            Process python = new ProcessBuilder("/usr/bin/python3", "-c", script, temporary.toString(),
                    Long.toString(cells), Integer.toString(genes)).inheritIO().start();
            try {
                if (python.waitFor() != 0) {
                    throw new MemfitException("/usr/bin/python3 with anndata could not write " + file
                            + " (apt-get install python3-anndata), or pass --input");
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new MemfitException("interrupted while writing " + file);
            }
            Files.move(temporary, file);
            return file;
        }

        private static boolean sameFiles(Path a, Path b) throws IOException {
            try (Stream<Path> listA = Files.list(a); Stream<Path> listB = Files.list(b)) {
                List<String> namesA = listA.map(p -> p.getFileName().toString()).filter(n -> !n.startsWith(".")).sorted().toList();
                List<String> namesB = listB.map(p -> p.getFileName().toString()).filter(n -> !n.startsWith(".")).sorted().toList();
                if (!namesA.equals(namesB)) {
                    return false;
                }
                for (String name : namesA) {
                    if (Files.mismatch(a.resolve(name), b.resolve(name)) != -1) {
                        return false;
                    }
                }
                return true;
            }
        }

    }
}
