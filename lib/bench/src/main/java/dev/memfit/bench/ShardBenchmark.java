package dev.memfit.bench;

import com.fasterxml.jackson.databind.JsonNode;
import dev.memfit.ProgressListener;
import dev.memfit.data.Batch;
import dev.memfit.data.Datasets;
import dev.memfit.data.Loader;
import dev.memfit.io.npy.Npy;
import dev.memfit.io.npy.NpyArray;
import dev.memfit.shard.ShardLayout;
import dev.memfit.shard.ShardStore;
import dev.memfit.shard.ShardWriter;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * Random batches of cells from sparse (CSR) shards against dense shards of the same {@code .h5ad}, and against a C
 * loop densifying the same cells from the same CSR arrays: memfit's loader (shuffled, fixed batch size) on 1..n
 * threads, the bytes each layout takes on disk, side by side in one run.
 */
public final class ShardBenchmark {

    /**
     * What to measure.
     *
     * @param file the {@code .h5ad} to shard (CSR, such as anndata's default {@code write_h5ad})
     * @param shardSize cells per shard
     * @param batchSize cells per batch
     * @param epochs epochs per measurement, the first not counted (page tables and, for memfit, the JIT)
     * @param threads threads copying rows: C threads, or memfit's background readers plus the caller
     * @param seed the shuffle seed
     * @param baselines whether to run the C loops
     * @param warmupSeconds for memfit, untimed epochs after the first until this long has passed ({@link Warmup})
     */
    public record Settings(Path file, long shardSize, int batchSize, int epochs, List<Integer> threads, long seed,
                           boolean baselines, double warmupSeconds) {
    }

    /** The C loop as a loader: readers hand batches in order to a consumer through a window of rotating buffers. */
    public static final String C_LOADER = "C loader, in-order hand-off";

    /**
     * One measurement.
     *
     * @param layout "sparse" or "dense"
     * @param method who read the batches
     * @param threads threads copying rows
     * @param cellsPerSecond steady-state cells per second
     * @param gigabytesPerSecond the same in dense float32 bytes delivered
     * @param megabytesOnDisk the shard files of the layout (values; for CSR with indices and row pointers)
     */
    public record Row(String layout, String method, int threads, double cellsPerSecond, double gigabytesPerSecond,
                      double megabytesOnDisk) {
    }

    private ShardBenchmark() {
    }

    /**
     * Shards the file both ways (beside it, in {@code <file>.bench/}; an earlier complete conversion is reused) and
     * measures.
     *
     * @param settings the settings
     * @return the rows: sparse then dense, memfit first within each
     */
    public static List<Row> run(Settings settings) {
        if (settings.threads().stream().anyMatch(threads -> threads < 1)) {
            throw new IllegalArgumentException("thread counts must be at least 1 (threads copying rows), got " + settings.threads());
        }
        Path work = settings.file().toAbsolutePath().getParent().resolve(settings.file().getFileName() + ".bench");
        List<Row> rows = new ArrayList<>();
        for (ShardLayout layout : List.of(ShardLayout.SPARSE, ShardLayout.DENSE)) {
            Path folder = work.resolve("shards-" + layout.key() + "-" + settings.shardSize());
            ShardWriter.builder().setInput(settings.file()).optShardSize(settings.shardSize()).optLayout(layout)
                    .optProgress(ProgressListener.silent()).write(folder);
            try (ShardStore store = ShardStore.open(folder)) {
                for (Path file : store.shardFiles()) {
                    LoaderBenchmark.warmPageCache(file);
                }
                double megabytes = store.storedBytes() / 1e6;
                long rowBytes = store.sampleBytes();
                for (int threads : settings.threads()) {
                    double perSecond = loader(store, settings.batchSize(), settings.epochs(), threads, settings.seed(),
                            false, settings.warmupSeconds());
                    rows.add(new Row(layout.key(), "memfit loader over ShardStore", threads, perSecond,
                            perSecond * rowBytes / 1e9, megabytes));
                }
                if (settings.baselines()) {
                    for (int threads : settings.threads()) {
                        cGather(store, work, settings.batchSize(), settings.epochs(), threads, settings.seed(), 0)
                                .ifPresent(perSecond -> rows.add(new Row(layout.key(), layout == ShardLayout.SPARSE
                                        ? "C mmap, zero + scatter CSR rows" : "C mmap+memcpy (first shard's rows)",
                                        threads, perSecond, perSecond * rowBytes / 1e9, megabytes)));
                        // the same copies handed in order to a consumer through as many buffers as memfit's window
                        cGather(store, work, settings.batchSize(), settings.epochs(), threads, settings.seed(), 2 * threads)
                                .ifPresent(perSecond -> rows.add(new Row(layout.key(), C_LOADER, threads, perSecond,
                                        perSecond * rowBytes / 1e9, megabytes)));
                    }
                }
            }
        }
        return rows;
    }

    /**
     * Cells per second of memfit's loader over a store: shuffled, fixed-size batches, {@code threads - 1}
     * background readers and the caller, over the epochs after the first, which follow untimed epochs for
     * {@code warmupSeconds} ({@link Warmup}).
     *
     * @param store the store
     * @param batchSize cells per batch
     * @param epochs epochs (the first not counted unless it is the only one)
     * @param threads threads copying rows
     * @param seed the shuffle seed
     * @param sparse whether the batches are sparse (CSR)
     * @param warmupSeconds how long to warm up after the first epoch; 0 for not at all
     * @return cells per second
     */
    static double loader(ShardStore store, int batchSize, int epochs, int threads, long seed, boolean sparse,
                         double warmupSeconds) {
        long sink = 0;
        double steady = 0;
        long cells = 0;
        try (Loader loader = Datasets.of(store).optBatchSize(batchSize).optShuffle(seed).optDropLast(true)
                .optSparseBatches(sparse).optThreads(threads - 1).optPrefetch(2 * threads).build()) {
            long next = 0;
            for (int epoch = 0; epoch < epochs; epoch++) {
                if (epoch == 1) {
                    next = Warmup.epochs(loader, next, warmupSeconds);   // after the first, before the timed ones
                }
                long start = System.nanoTime();
                long epochCells = 0;
                for (Batch batch : loader.epoch(next++)) {
                    sink += Warmup.touch(batch);
                    epochCells += batchSize;
                }
                if (epoch > 0 || epochs == 1) {
                    steady += (System.nanoTime() - start) / 1e9;
                    cells += epochCells;
                }
            }
        }
        if (sink == Long.MIN_VALUE) {
            // uses the bytes read, so that the JIT cannot drop the reads
            System.out.print("");
        }
        return cells / steady;
    }

    /**
     * Cells per second of the C baseline for a store's layout: for CSR shards {@code csr_gather.c} over all shards
     * (zero each row, scatter its values); for dense shards {@code gather.c} (memcpy of rows) over the first shard.
     *
     * @param store the store
     * @param buildDir where to compile the C program
     * @param batchSize cells per batch
     * @param epochs epochs (the first not counted)
     * @param threads C threads
     * @param seed the shuffle seed
     * @param window 0 for the bare gather (each thread its own buffer); else a loader whose readers hand batches in
     *               order to a consumer, at most this many ahead
     * @return cells per second, or empty when gcc or the program failed
     */
    static Optional<Double> cGather(ShardStore store, Path buildDir, int batchSize, int epochs, int threads, long seed,
                                    int window) {
        try {
            Files.createDirectories(buildDir);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot create " + buildDir, e);
        }
        long rowBytes = store.sampleBytes();
        if (store.layout() == ShardLayout.SPARSE) {
            List<String> command = new ArrayList<>();
            Optional<Path> binary = Baselines.compile(buildDir, "csr_gather");
            if (binary.isEmpty()) {
                return Optional.empty();
            }
            command.add(binary.get().toString());
            if (window > 0) {
                command.add("--window=" + window);
            }
            command.addAll(List.of(Long.toString(store.sampleShape().get(0)),
                    Integer.toString(batchSize), Integer.toString(epochs), Integer.toString(threads), Long.toString(seed)));
            for (Path file : store.shardFiles()) {
                String name = file.toString();
                if (name.endsWith(".data.npy")) {
                    command.add(name.substring(0, name.length() - ".data.npy".length()));
                }
            }
            return Baselines.json(command, 1800).map(json -> json.get("steady_cells_per_s").asDouble());
        }
        Path first = store.shardFiles().getFirst();
        long dataOffset;
        long shardRows;
        try (NpyArray array = Npy.map(first)) {
            dataOffset = array.header().dataOffset();
            shardRows = array.rows();
        }
        List<String> arguments = new ArrayList<>(List.of(first.toString(), Long.toString(dataOffset),
                Long.toString(shardRows), Long.toString(rowBytes), Integer.toString(batchSize), Integer.toString(epochs),
                Integer.toString(threads), Long.toString(seed)));
        if (window > 0) {
            arguments.add(Integer.toString(window));
        }
        Optional<JsonNode> json = Baselines.compileGather(buildDir).flatMap(binary -> {
            List<String> command = new ArrayList<>(List.of(binary.toString()));
            command.addAll(arguments);
            return Baselines.json(command, 1800);
        });
        return json.map(j -> j.get("steady_gbps").asDouble() * 1e9 / rowBytes);
    }
}
