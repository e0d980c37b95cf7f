package dev.memfit.bench;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.memfit.data.Batch;
import dev.memfit.data.Datasets;
import dev.memfit.data.Loader;
import dev.memfit.io.hdf5.H5ad;
import dev.memfit.io.storage.Folders;
import dev.memfit.memory.MemoryProbe;
import dev.memfit.memory.MemoryTimeline;
import dev.memfit.shard.ShardStore;
import dev.memfit.shard.ShardWriter;
import dev.memfit.synthetic.SyntheticAtlas;
import org.apache.commons.rng.UniformRandomProvider;
import org.apache.commons.rng.sampling.CombinationSampler;
import org.apache.commons.rng.simple.RandomSource;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Optional;

/**
 * Single-cell atlas benchmarks, side by side in one run: a streaming pass over an {@code .h5ad} (memfit's
 * {@link Datasets#h5ad} vs anndata's backed {@code chunked_X}), random batches read from the {@code .h5ad} directly
 * (memfit vs anndata backed indexing) and from shards (memfit's loader vs the C loop of the shards' layout: CSR rows
 * zeroed and scattered for a sparse X, rows copied for a dense one), and shard conversion (cells/s and peak memory
 * of a separate JVM, for two file sizes). With the format {@code zarr}: the same atlas as an AnnData {@code .zarr}
 * store (anndata's {@code write_zarr}, its defaults), streamed by memfit against zarr-python reading
 * {@code X/indptr}, {@code X/data} and {@code X/indices} in row blocks and against {@code anndata.read_zarr}, the
 * sides run alternately {@code repeats} times and each reported by its median (a shared machine is noisy).
 */
public final class H5adBenchmark {

    private static final ObjectMapper JSON = new ObjectMapper();

    /**
     * What to measure.
     *
     * @param file the atlas ({@code .h5ad}, created if missing)
     * @param cells cells when creating it
     * @param genes genes when creating it
     * @param chunkSize cells per streamed chunk
     * @param batchSize cells per random batch
     * @param shardSize cells per shard
     * @param randomBatches random batches read from the {@code .h5ad} directly
     * @param epochs epochs over the shards (the first is not counted)
     * @param threads thread counts to measure, at least 1: chunk readers for the stream; for random batches from shards,
     *                threads copying rows (memfit runs one fewer background readers, because its caller reads whatever
     *                batch it would otherwise wait for; C runs that many threads)
     * @param seed the seed
     * @param baselines whether to run anndata and C
     * @param formats what to measure: {@code h5ad} (the tasks above), or some of them ({@code stream}, {@code random},
     *                {@code shards}), and/or {@code zarr} (the stream over a {@code .zarr} store beside the
     *                {@code .h5ad}, written from it by anndata when missing)
     * @param repeats runs of each side of the zarr comparison, alternated; medians are reported
     * @param chunkCacheBytes the bound of each reader's cache of decoded chunks (the stream raises it to its window)
     */
    public record Settings(Path file, long cells, int genes, int chunkSize, int batchSize, long shardSize,
                           int randomBatches, int epochs, List<Integer> threads, long seed, boolean baselines,
                           List<String> formats, int repeats, long chunkCacheBytes) {

        /**
         * The settings of the {@code .h5ad} tasks only, measured once each.
         *
         * @param file the atlas
         * @param cells cells when creating it
         * @param genes genes when creating it
         * @param chunkSize cells per streamed chunk
         * @param batchSize cells per random batch
         * @param shardSize cells per shard
         * @param randomBatches random batches read from the {@code .h5ad} directly
         * @param epochs epochs over the shards
         * @param threads thread counts
         * @param seed the seed
         * @param baselines whether to run anndata and C
         */
        public Settings(Path file, long cells, int genes, int chunkSize, int batchSize, long shardSize, int randomBatches,
                        int epochs, List<Integer> threads, long seed, boolean baselines) {
            this(file, cells, genes, chunkSize, batchSize, shardSize, randomBatches, epochs, threads, seed, baselines,
                    List.of("h5ad"), 1, H5ad.DEFAULT_CHUNK_CACHE_BYTES);
        }
    }

    /**
     * One measurement.
     *
     * @param task what was done
     * @param method who did it
     * @param threads threads used (0 when not applicable)
     * @param cellsPerSecond throughput
     * @param gigabytesPerSecond throughput in dense float32 bytes delivered
     * @param peakMegabytes peak resident memory of the process, when measured (else 0); includes the page-cache
     *                      pages of files it mapped, which the kernel can drop
     * @param peakAnonymousMegabytes peak anonymous resident memory (heap, native buffers), sampled every 20 ms
     */
    public record Row(String task, String method, int threads, double cellsPerSecond, double gigabytesPerSecond,
                      double peakMegabytes, double peakAnonymousMegabytes) {
    }

    private H5adBenchmark() {
    }

    /**
     * Runs everything.
     *
     * @param settings the settings
     * @return the rows, memfit first within each task
     */
    public static List<Row> run(Settings settings) {
        Path file = settings.file();
        if (!Files.exists(file)) {
            SyntheticAtlas.builder().setCells(settings.cells()).setGenes(settings.genes()).optSeed(settings.seed()).write(file);
        }
        long cells;
        long genes;
        try (H5ad h5ad = H5ad.open(file)) {
            cells = h5ad.observations();
            genes = h5ad.variables();
        }
        long rowBytes = genes * Float.BYTES;
        LoaderBenchmark.warmPageCache(file);
        List<Row> rows = new ArrayList<>();
        if (settings.formats().contains("zarr")) {
            rows.addAll(zarr(settings, cells, rowBytes));
        }
        boolean every = settings.formats().contains("h5ad");
        if (every || settings.formats().contains("stream")) {
            rows.addAll(stream(settings, cells, rowBytes));
        }
        if (every || settings.formats().contains("random")) {
            rows.addAll(random(settings, rowBytes));
        }
        if (every || settings.formats().contains("shards")) {
            rows.addAll(shards(settings, cells, genes, rowBytes));
        }
        return rows;
    }

    /**
     * The stream over the .h5ad, dense and sparse batches, beside anndata's backed {@code chunked_X}; when the file
     * does not fit in the memory this process may use (run with {@code --memory} below its size), the storage's own
     * sequential read of the whole file too, cold and again: the bound of an epoch that reads it all from storage.
     */
    private static List<Row> stream(Settings settings, long cells, long rowBytes) {
        Path file = settings.file();
        List<Row> rows = new ArrayList<>();
        if (!dev.memfit.ProcessMemory.current().fitsInMemory(size(file))) {
            for (boolean cold : new boolean[]{true, false}) {
                DiskEpochs.Row read = DiskEpochs.sequentialRead(file, cold);
                rows.add(new Row("whole file from storage", String.format(java.util.Locale.ROOT,
                        "storage: sequential read of the whole file%s (%.0f MB/s, %,d MB read from storage)",
                        cold ? ", cold" : ", again", read.megabytesPerSecond(), read.readFromStorage() / 1_000_000),
                        1, cells / read.seconds(), cells * rowBytes / read.seconds() / 1e9, 0, 0));
            }
        }
        for (int threads : settings.threads()) {
            long[] buffers = new long[1];
            String dense = "memfit loader, block shuffle (blocks of " + settings.chunkSize() + ", windows of 4), dense batches";
            for (boolean sparse : new boolean[]{false, true}) {
                String method = sparse ? "memfit loader, the same, sparse batches (CSR)" : dense;
                H5ad.ChunkCacheStatistics before = H5ad.processChunkCacheStatistics();
                try {
                    double seconds = streamPass(file, settings, threads, sparse, buffers);
                    rows.add(new Row("stream pass over .h5ad", method + ", buffers " + buffers[0] / 1_000_000 + " MB"
                            + cacheNote(before), threads, cells / seconds, cells * rowBytes / seconds / 1e9, 0, 0));
                } catch (dev.memfit.MemfitException e) {
                    rows.add(refusedRow("stream pass over .h5ad", method, threads, e));
                }
            }
        }
        if (settings.baselines() && Baselines.pythonHas("anndata")) {
            anndata(file, "stream", Integer.toString(settings.chunkSize())).ifPresent(json -> rows.add(new Row(
                    "stream pass over .h5ad", "anndata backed chunked_X(" + settings.chunkSize() + ")", 1,
                    json.get("cells_per_s").asDouble(), json.get("cells_per_s").asDouble() * rowBytes / 1e9, 0, 0)));
        }

        return rows;
    }

    /** Random batches read from the .h5ad directly, beside anndata's backed {@code X[idx]}. */
    private static List<Row> random(Settings settings, long rowBytes) {
        Path file = settings.file();
        List<Row> rows = new ArrayList<>();
        // untimed batches of other cells first, on the file opened apart, so that the timed ones run compiled code
        // and still start with an empty chunk cache (whole passes, each on the file opened afresh, for 2 s at least):
        // 100 batches from a fresh JVM read 9.3k cells/s, 600 read 11.0k
        dev.memfit.plot.Measure.warmUp(Warmup.DEFAULT, () -> randomFromH5ad(file, settings, settings.seed() + 1));
        H5ad.ChunkCacheStatistics before = H5ad.processChunkCacheStatistics();
        double direct = randomFromH5ad(file, settings, settings.seed());
        rows.add(new Row("random batches from .h5ad", "memfit H5ad.readRows" + cacheNote(before), 1, direct,
                direct * rowBytes / 1e9, 0, 0));
        if (settings.baselines() && Baselines.pythonHas("anndata")) {
            anndata(file, "random", Integer.toString(settings.batchSize()), Integer.toString(settings.randomBatches()),
                    Long.toString(settings.seed())).ifPresent(json -> rows.add(new Row("random batches from .h5ad",
                    "anndata backed X[idx]", 1, json.get("cells_per_s").asDouble(),
                    json.get("cells_per_s").asDouble() * rowBytes / 1e9, 0, 0)));
        }

        return rows;
    }

    /** Shard conversion of half the atlas and of all of it (each in a child JVM), then random batches from the shards. */
    private static List<Row> shards(Settings settings, long cells, long genes, long rowBytes) {
        Path file = settings.file();
        List<Row> rows = new ArrayList<>();
        Path work = file.toAbsolutePath().getParent().resolve(file.getFileName() + ".bench");
        Path half = work.resolve("half.h5ad");
        if (!Files.exists(half)) {
            SyntheticAtlas.builder().setCells(Math.max(1, cells / 2)).setGenes((int) genes).optSeed(settings.seed())
                    .write(half);
        }
        for (Path input : List.of(half, file)) {
            Path shards = work.resolve(input == file ? "shards" : "shards-half");
            JsonNode json = convertInChildJvm(input, shards, settings.shardSize());
            long n = json.get("cells").asLong();
            rows.add(new Row(String.format("shard conversion, %d cells (%.0f MB .h5ad)", n, size(input) / 1e6),
                    "memfit shard (JVM -Xmx512m)", 1, n / json.get("seconds").asDouble(),
                    n * rowBytes / json.get("seconds").asDouble() / 1e9, json.get("peak_rss_mb").asDouble(),
                    json.get("peak_rss_anon_mb").asDouble()));
        }

        Path shards = work.resolve("shards");
        try (ShardStore store = ShardStore.open(shards)) {
            for (Path shard : store.shardFiles()) {
                LoaderBenchmark.warmPageCache(shard);
            }
            for (int threads : settings.threads()) {
                for (boolean sparse : new boolean[]{false, true}) {
                    String method = "memfit loader over ShardStore" + (sparse ? ", sparse batches (CSR)" : "");
                    try {
                        double perSecond = ShardBenchmark.loader(store, settings.batchSize(), settings.epochs(), threads,
                                settings.seed(), sparse, 0);
                        rows.add(new Row("random batches from shards", method, threads, perSecond,
                                perSecond * rowBytes / 1e9, 0, 0));
                    } catch (dev.memfit.MemfitException e) {
                        rows.add(refusedRow("random batches from shards", method, threads, e));
                    }
                }
            }
            if (settings.baselines()) {
                // the C loop of the shards' layout: CSR rows zeroed and scattered (the default for a sparse X), or
                // dense rows copied
                String method = store.layout() == dev.memfit.shard.ShardLayout.SPARSE
                        ? "C mmap, zero + scatter CSR rows" : "C mmap+memcpy (rows of the same size)";
                for (int threads : settings.threads()) {
                    ShardBenchmark.cGather(store, work, settings.batchSize(), settings.epochs(), threads, settings.seed(), 0)
                            .ifPresent(perSecond -> rows.add(new Row("random batches from shards", method, threads,
                                    perSecond, perSecond * rowBytes / 1e9, 0, 0)));
                }
            }
        }
        return rows;
    }

    /**
     * A task whose loader refused buffers that do not fit in the memory left (run with {@code --memory}): a row that
     * says so, so that the other rows still run. Any other failure is thrown.
     */
    private static Row refusedRow(String task, String method, int threads, dev.memfit.MemfitException e) {
        if (!e.getMessage().contains("this process can still get")) {
            throw e;
        }
        return new Row(task, method + ": refused, the buffers do not fit (" + e.getMessage().replaceAll(".*need ", "need ")
                .replaceAll(":.*", "") + ")", threads, Double.NaN, Double.NaN, 0, 0);
    }

    /**
     * The stream over the atlas as a {@code .zarr} store against zarr-python and anndata on the same store: each side
     * run {@code repeats} times, alternately, and reported by its median; memfit's stream over the {@code .h5ad} is
     * run in the same rounds for reference.
     */
    private static List<Row> zarr(Settings settings, long cells, long rowBytes) {
        Path file = settings.file();
        String name = file.getFileName().toString().replaceAll("\\.h5ad$", "");
        Path store = file.toAbsolutePath().resolveSibling(name + ".zarr");
        if (!Files.exists(store)) {
            // anndata's own write_zarr with its defaults (Blosc lz4, byte shuffle; zarr's chunks): the store users have
            Baselines.json(List.of("/usr/bin/python3", "-c", "import sys, json, anndata as ad; "
                    + "ad.read_h5ad(sys.argv[1]).write_zarr(sys.argv[2]); print(json.dumps({'ok': True}))",
                    file.toString(), store.toString()), 3600).orElseThrow(() -> new IllegalStateException(
                    "cannot write " + store + " with anndata (Debian's python3-anndata and python3-zarr)"));
        }
        warmFolder(store);
        boolean python = settings.baselines() && Baselines.pythonHas("zarr");
        List<Integer> threads = settings.threads();
        List<List<Double>> memfit = new ArrayList<>();
        List<List<Double>> reference = new ArrayList<>();
        for (int t = 0; t < threads.size(); t++) {
            memfit.add(new ArrayList<>());
            reference.add(new ArrayList<>());
        }
        List<Double> zarrPython = new ArrayList<>();
        List<Double> anndata = new ArrayList<>();
        String chunk = Integer.toString(settings.chunkSize());
        Path script = Baselines.sources().resolve("anndata_zarr.py");
        for (int round = 0; round < Math.max(1, settings.repeats()); round++) {
            for (int t = 0; t < threads.size(); t++) {
                memfit.get(t).add(cells / streamPass(store, settings, threads.get(t), false, new long[1]));
                reference.get(t).add(cells / streamPass(file, settings, threads.get(t), false, new long[1]));
            }
            if (python) {
                Baselines.json(List.of("/usr/bin/python3", script.toString(), store.toString(), "zarr", chunk), 1800)
                        .ifPresent(json -> zarrPython.add(json.get("cells_per_s").asDouble()));
                Baselines.json(List.of("/usr/bin/python3", script.toString(), store.toString(), "anndata", chunk), 1800)
                        .ifPresent(json -> anndata.add(json.get("cells_per_s").asDouble()));
            }
        }
        List<Row> rows = new ArrayList<>();
        String runs = " [median of " + Math.max(1, settings.repeats()) + "]";
        for (int t = 0; t < threads.size(); t++) {
            double perSecond = median(memfit.get(t));
            rows.add(new Row("stream pass over .zarr", "memfit loader, block shuffle (.zarr)" + runs, threads.get(t), perSecond,
                    perSecond * rowBytes / 1e9, 0, 0));
        }
        if (!zarrPython.isEmpty()) {
            double perSecond = median(zarrPython);
            rows.add(new Row("stream pass over .zarr", "zarr-python X/indptr,data,indices in row blocks(" + chunk + ")"
                    + runs, 1, perSecond, perSecond * rowBytes / 1e9, 0, 0));
        }
        if (!anndata.isEmpty()) {
            double perSecond = median(anndata);
            rows.add(new Row("stream pass over .zarr", "anndata.read_zarr (X whole) + row blocks(" + chunk + ")" + runs,
                    1, perSecond, perSecond * rowBytes / 1e9, 0, 0));
        }
        for (int t = 0; t < threads.size(); t++) {
            double perSecond = median(reference.get(t));
            rows.add(new Row("stream pass over .h5ad (same atlas, same rounds)", "memfit loader, block shuffle (.h5ad)" + runs,
                    threads.get(t), perSecond, perSecond * rowBytes / 1e9, 0, 0));
        }
        return rows;
    }

    private static double median(List<Double> values) {
        double[] sorted = values.stream().mapToDouble(Double::doubleValue).sorted().toArray();
        int n = sorted.length;
        return n == 0 ? Double.NaN : n % 2 == 1 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
    }

    /** Reads every file of a folder once, so that both sides read a store in the page cache. */
    private static void warmFolder(Path folder) {
        try (java.util.stream.Stream<Path> files = Files.walk(folder)) {
            for (Path file : files.filter(Files::isRegularFile).toList()) {
                LoaderBenchmark.warmPageCache(file);
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /**
     * How the chunk caches did since a snapshot, for the method column: empty when no chunk was decoded (contiguous
     * or unfiltered data read from the mapping).
     */
    private static String cacheNote(H5ad.ChunkCacheStatistics before) {
        H5ad.ChunkCacheStatistics done = H5ad.processChunkCacheStatistics().minus(before);
        if (done.decodes() == 0) {
            return "";
        }
        return String.format(java.util.Locale.ROOT, " [chunk cache %d MiB: %.0f%% hits, %,d MB decoded]",
                done.budgetBytes() >> 20, 100 * done.hitRate(), done.decodedBytes() / 1_000_000);
    }

    private static long size(Path file) {
        try {
            return Files.size(file);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /**
     * One pass of the one loader over the cells, block-shuffled: blocks of the chunk setting, windows of four blocks
     * (the fetch factor that many cells make at this batch size), as anndata's baseline reads chunks of that size.
     */
    private static double streamPass(Path file, Settings settings, int threads, boolean sparse, long[] bufferBytes) {
        long sink = 0;
        int fetch = Math.max(1, 4 * settings.chunkSize() / settings.batchSize());
        try (Loader stream = Datasets.h5ad(file).optChunkCacheBytes(settings.chunkCacheBytes())
                .optBlockShuffle(settings.chunkSize(), fetch, settings.seed()).optSparseBatches(sparse)
                .optBatchSize(settings.batchSize()).optThreads(threads).build()) {
            double seconds = 0;
            for (int epoch = 0; epoch < 2; epoch++) {
                // the second pass is measured: the first warms the JIT (anndata's code is warm from the start)
                long start = System.nanoTime();
                for (Batch batch : stream.epoch(epoch)) {
                    sink += sparse ? batch.storedValues() : batch.data().get(ValueLayout.JAVA_BYTE, 0);
                }
                bufferBytes[0] = stream.bufferMemory();
                seconds = (System.nanoTime() - start) / 1e9;
            }
            blackhole(sink);
            return seconds;
        }
    }

    /** Cells per second of {@code settings.randomBatches()} random batches read with {@code H5ad.readRows}. */
    private static double randomFromH5ad(Path file, Settings settings, long seed) {
        UniformRandomProvider rng = RandomSource.XO_RO_SHI_RO_128_PP.create(seed);
        try (H5ad h5ad = H5ad.builder().setFile(file).optChunkCacheBytes(settings.chunkCacheBytes()).open();
             Arena arena = Arena.ofConfined()) {
            int n = Math.toIntExact(h5ad.observations());
            long rowBytes = h5ad.variables() * Float.BYTES;
            MemorySegment batch = arena.allocate(settings.batchSize() * rowBytes);
            // distinct cells per batch: a partial shuffle, O(batch) per draw
            CombinationSampler picker = new CombinationSampler(rng, n, settings.batchSize());
            long sink = 0;
            long start = System.nanoTime();
            for (int b = 0; b < settings.randomBatches(); b++) {
                int[] cells = picker.sample();
                Arrays.sort(cells);
                for (int i = 0; i < cells.length; i++) {
                    h5ad.readRows(cells[i], 1, batch.asSlice(i * rowBytes, rowBytes));
                }
                sink += batch.get(ValueLayout.JAVA_BYTE, 0);
            }
            double seconds = (System.nanoTime() - start) / 1e9;
            blackhole(sink);
            return settings.randomBatches() * (double) settings.batchSize() / seconds;
        }
    }

    private static Optional<JsonNode> anndata(Path file, String... args) {
        List<String> command = new ArrayList<>(List.of("/usr/bin/python3",
                Baselines.sources().resolve("anndata_h5ad.py").toString(), file.toString()));
        command.addAll(List.of(args));
        return Baselines.json(command, 1800);
    }

    /** Converts in a fresh JVM with a 512 MB heap, so that its peak resident memory is the conversion's own. */
    private static JsonNode convertInChildJvm(Path input, Path output, long shardSize) {
        deleteTree(output);
        String java = ProcessHandle.current().info().command().orElse("java");
        List<String> command = List.of(java, "-Xmx512m", "--enable-native-access=ALL-UNNAMED",
                "-cp", System.getProperty("java.class.path"), H5adBenchmark.class.getName(), "convert",
                input.toString(), output.toString(), Long.toString(shardSize));
        return Baselines.json(command, 1800).orElseThrow(() -> new IllegalStateException(
                "shard conversion of " + input + " failed in the child JVM: run " + String.join(" ", command)));
    }

    private static void deleteTree(Path folder) {
        try {
            Folders.deleteTree(folder);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot clear " + folder, e);
        }
    }

    private static void blackhole(long sink) {
        if (sink == Long.MIN_VALUE) {
            // uses the bytes read, so that the JIT cannot drop the reads
            System.out.print("");
        }
    }

    /**
     * The child process of the conversion measurement: {@code convert INPUT OUTPUT SHARD_SIZE}, printing one JSON line
     * with the cells, seconds, peak resident memory (VmHWM) and peak heap.
     *
     * @param args the arguments
     * @throws Exception on failure
     */
    public static void main(String[] args) throws Exception {
        if (args.length != 4 || !args[0].equals("convert")) {
            throw new IllegalArgumentException("usage: convert INPUT OUTPUT SHARD_SIZE");
        }
        long start = System.nanoTime();
        ShardWriter.Result result;
        MemoryTimeline timeline;
        try (MemoryProbe probe = MemoryProbe.start("conversion", java.time.Duration.ofMillis(20))) {
            result = ShardWriter.builder().setInput(Path.of(args[1])).optShardSize(Long.parseLong(args[3]))
                    .write(Path.of(args[2]));
            timeline = probe.stop();
        }
        double seconds = (System.nanoTime() - start) / 1e9;
        long peakHeap = PeakMemory.heapBytes();
        long peakRss = PeakMemory.residentBytes();
        System.out.println(JSON.writeValueAsString(java.util.Map.of("cells", result.cells(), "seconds", seconds,
                "peak_rss_mb", peakRss / 1e6, "peak_rss_anon_mb", timeline.peakRssAnon() / 1e6,
                "peak_heap_mb", peakHeap / 1e6)));
    }
}
