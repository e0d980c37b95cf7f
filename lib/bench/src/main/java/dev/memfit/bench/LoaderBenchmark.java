package dev.memfit.bench;

import com.fasterxml.jackson.databind.JsonNode;
import dev.memfit.Progress;
import dev.memfit.data.Batch;
import dev.memfit.data.Datasets;
import dev.memfit.data.Loader;
import dev.memfit.DType;
import dev.memfit.io.npy.Npy;
import dev.memfit.io.npy.NpyArray;
import dev.memfit.io.npy.NpyHeader;
import dev.memfit.io.npy.NpyWriter;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.SplittableRandom;

/**
 * Random batches of rows from a page-cached, memory-mapped {@code .npy}: memfit's loader against a C loop
 * (mmap + memcpy) and numpy's memmap fancy indexing, measured in one run. Rows compare the same number of threads
 * copying rows: C's threads, and memfit's background readers plus the caller (which reads the batches it would
 * otherwise wait for). The C loop runs twice: as a bare gather (each thread its own buffer, no consumer), and as a
 * loader whose readers hand batches in order to a consumer through as many rotating buffers as memfit's window, so a
 * gap to the first that the second shares is the price of handing batches over, and one it does not share is memfit's.
 */
public final class LoaderBenchmark {

    /**
     * The benchmark's settings.
     *
     * @param file the {@code .npy} to read (created with random float32 data when missing)
     * @param bytes the data size when the file is created
     * @param columns float32 columns per row
     * @param batchSize rows per batch
     * @param epochs epochs per measurement: the first is the "fresh mapping" epoch, the rest steady state
     * @param threads copying thread counts to measure: C runs that many threads; memfit runs one fewer background
     *                readers, because its caller reads whatever batch it would otherwise wait for
     * @param prefetch batches read ahead per loader thread
     * @param seed shuffle seed
     * @param baselines whether to run the C and numpy baselines
     * @param warmupSeconds for memfit, untimed epochs after the first until this long has passed ({@link Warmup})
     */
    public record Settings(Path file, long bytes, int columns, int batchSize, int epochs, List<Integer> threads,
                           int prefetch, long seed, boolean baselines, double warmupSeconds) {
    }

    /**
     * One measured line.
     *
     * @param method "memfit", {@link #C_GATHER}, {@link #C_LOADER} or "numpy memmap"
     * @param threads threads copying rows (for memfit: background readers plus the caller)
     * @param firstEpochGbps GB/s in the first epoch of a fresh mapping
     * @param steadyGbps GB/s over the later epochs
     * @param steadyRowsPerSecond rows/s over the later epochs
     */
    public record Row(String method, int threads, double firstEpochGbps, double steadyGbps, double steadyRowsPerSecond) {
    }

    /** The bare C gather: each thread copies its own batches into its own buffer, nobody consumes them. */
    public static final String C_GATHER = "C mmap+memcpy";
    /** The C gather as a loader: readers hand batches in order to a consumer through a window of rotating buffers. */
    public static final String C_LOADER = "C loader, in-order hand-off";

    private LoaderBenchmark() {
    }

    /**
     * Runs the benchmark.
     *
     * @param settings the settings
     * @return the measured rows, memfit first
     */
    public static List<Row> run(Settings settings) {
        if (settings.threads().stream().anyMatch(threads -> threads < 1)) {
            throw new IllegalArgumentException("thread counts must be at least 1 (threads copying rows), got " + settings.threads());
        }
        Path file = settings.file();
        if (!Files.exists(file)) {
            create(file, settings.bytes(), settings.columns(), settings.seed());
        }
        long rowBytes;
        long rows;
        long dataOffset;
        try (NpyArray array = Npy.map(file)) {
            rowBytes = array.rowBytes();
            rows = array.rows();
            dataOffset = array.header().dataOffset();
        }
        warmPageCache(file);
        List<Row> result = new ArrayList<>();
        for (int threads : settings.threads()) {
            result.add(measureMemfit(settings, threads, rows, rowBytes));
        }
        if (settings.baselines()) {
            Path buildDir = file.toAbsolutePath().getParent();
            Optional<Path> gather = Baselines.compileGather(buildDir);
            for (int threads : settings.threads()) {
                List<String> command = List.of(file.toString(), Long.toString(dataOffset), Long.toString(rows),
                        Long.toString(rowBytes), Integer.toString(settings.batchSize()), Integer.toString(settings.epochs()),
                        Integer.toString(threads), Long.toString(settings.seed()));
                gather.flatMap(binary -> Baselines.json(prepend(binary.toString(), command, List.of()), 600))
                        .ifPresent(json -> result.add(row(C_GATHER, threads, json, rowBytes)));
                // the same copies handed to an in-order consumer through as many buffers as memfit's loader rotates
                String window = Integer.toString(memfitPrefetch(settings, threads));
                gather.flatMap(binary -> Baselines.json(prepend(binary.toString(), command, List.of(window)), 600))
                        .ifPresent(json -> result.add(row(C_LOADER, threads, json, rowBytes)));
            }
            if (Baselines.pythonHas("numpy")) {
                Baselines.json(List.of("/usr/bin/python3", Baselines.sources().resolve("numpy_gather.py").toString(),
                                file.toString(), Integer.toString(settings.batchSize()),
                                Integer.toString(settings.epochs()), Long.toString(settings.seed())), 600)
                        .ifPresent(json -> result.add(row("numpy memmap a[idx]", 1, json, rowBytes)));
            }
        }
        return result;
    }

    /** memfit's read-ahead in batches: the per-thread setting times the threads copying rows. */
    private static int memfitPrefetch(Settings settings, int threads) {
        return settings.prefetch() * threads;
    }

    private static List<String> prepend(String first, List<String> middle, List<String> last) {
        List<String> all = new ArrayList<>();
        all.add(first);
        all.addAll(middle);
        all.addAll(last);
        return all;
    }

    private static Row row(String method, int threads, JsonNode json, long rowBytes) {
        double steady = json.get("steady_gbps").asDouble();
        return new Row(method, threads, json.get("first_gbps").asDouble(), steady, steady * 1e9 / rowBytes);
    }

    private static Row measureMemfit(Settings settings, int threads, long rows, long rowBytes) {
        long bytesPerEpoch = rows / settings.batchSize() * settings.batchSize() * rowBytes;
        double first = 0;
        double steady = 0;
        long sink = 0;
        try (Loader loader = Datasets.npy(settings.file()).mapped().optBatchSize(settings.batchSize())
                .optShuffle(settings.seed()).optDropLast(true).optThreads(threads - 1).optPrefetch(memfitPrefetch(settings, threads)).build()) {
            long next = 0;
            for (int epoch = 0; epoch < settings.epochs(); epoch++) {
                if (epoch == 1) {
                    next = Warmup.epochs(loader, next, settings.warmupSeconds());   // after the fresh mapping's epoch
                }
                long start = System.nanoTime();
                for (Batch batch : loader.epoch(next++)) {
                    sink += Warmup.touch(batch);
                }
                double seconds = (System.nanoTime() - start) / 1e9;
                if (epoch == 0) {
                    first = seconds;
                } else {
                    steady += seconds;
                }
            }
        }
        if (sink == Long.MIN_VALUE) {
            // Uses the bytes read, so the JIT cannot drop the reads as dead code.
            System.out.print("");
        }
        double steadyGbps = settings.epochs() > 1 ? bytesPerEpoch * (settings.epochs() - 1) / steady / 1e9 : 0;
        return new Row("memfit", threads, bytesPerEpoch / first / 1e9, steadyGbps, steadyGbps * 1e9 / rowBytes);
    }

    /** Writes random float32 rows in chunks, with a progress bar. */
    static void create(Path file, long bytes, int columns, long seed) {
        long rowBytes = (long) columns * Float.BYTES;
        long rows = Math.max(1, bytes / rowBytes);
        int chunkRows = (int) Math.max(1, (16L << 20) / rowBytes);
        SplittableRandom random = new SplittableRandom(seed);
        float[] chunk = new float[chunkRows * columns];
        try (NpyWriter writer = Npy.create(file, NpyHeader.of(DType.FLOAT32, rows, columns));
             Progress progress = Progress.bar("Creating " + file.getFileName(), rows * rowBytes >> 20, "MiB")) {
            for (long row = 0; row < rows; row += chunkRows) {
                int n = (int) Math.min(chunkRows, rows - row);
                for (int i = 0; i < n * columns; i++) {
                    chunk[i] = (float) random.nextDouble();
                }
                writer.writeRows(row, MemorySegment.ofArray(chunk).asSlice(0, (long) n * rowBytes));
                progress.step(((row + n) * rowBytes >> 20) - (row * rowBytes >> 20));
            }
            writer.commit();
        }
    }

    /** Reads the file once sequentially so that the measurement starts page-cached. */
    static void warmPageCache(Path file) {
        try (FileChannel channel = FileChannel.open(file, StandardOpenOption.READ)) {
            ByteBuffer buffer = ByteBuffer.allocateDirect(8 << 20);
            long position = 0;
            int n;
            while ((n = channel.read(buffer, position)) > 0) {
                position += n;
                buffer.clear();
            }
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read " + file, e);
        }
    }
}
