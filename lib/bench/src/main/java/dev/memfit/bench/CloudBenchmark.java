package dev.memfit.bench;

import dev.memfit.cloud.BlockCache;
import dev.memfit.MemfitException;
import dev.memfit.data.Batch;
import dev.memfit.data.Datasets;
import dev.memfit.data.Loader;
import dev.memfit.data.LoaderBuilder;
import dev.memfit.io.cloud.CacheStatistics;
import dev.memfit.io.cloud.ObjectCache;
import dev.memfit.io.cloud.ObjectInfo;
import dev.memfit.cloud.ObjectStore;
import dev.memfit.io.cloud.ObjectUri;
import dev.memfit.io.storage.Folders;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Supplier;

/**
 * Reading a {@code .npy} from object storage through memfit's verified cache, side by side with the same file on local
 * disk, in one run: a real S3 server on loopback ({@link LocalS3}), a {@link WanLink} (simulated latency and bandwidth)
 * for the cold epoch, and the data written by numpy ({@code np.save}).
 *
 * <ol>
 *   <li>warm epoch in file order from the filled cache vs the same epoch from the local file, both through
 *       {@code Datasets.npy(..).lazy(threads)} (target: at least 0.9x the local speed);</li>
 *   <li>cold epoch (empty cache, shuffled order) through the simulated link with parallel range requests vs the link's
 *       bandwidth (target: at least 0.9x), after a warm-up epoch of a small other object through the same path (class
 *       loading and the JIT are a cost once per process, not the cache's);</li>
 *   <li>random batches from the filled cache vs the memory-mapped local loader {@code Datasets.npy(file).mapped()}:
 *       the object staged in the cache and mapped there, {@code Datasets.npy(uri).mapped()} (target: within 10%, that
 *       is at least 0.9x), epochs of loaders opened once, and the opening (which checks the whole staged copy)
 *       reported apart without a target; and, reported without a target, block access ({@code lazy}) from the filled cache vs the
 *       same loader on the local file.</li>
 * </ol>
 * Warm figures are the best of several epochs of each side, the sides alternating, so that a noisy neighbour on a
 * shared machine hurts both alike.
 */
public final class CloudBenchmark {

    /** The bucket the benchmark uploads to. */
    static final String BUCKET = "memfit-bench";

    /**
     * The benchmark's settings.
     *
     * @param directory where the data, the server's objects and the caches go
     * @param bytes the data size
     * @param columns float32 values per row
     * @param batchSize rows per batch
     * @param threads lazy reader threads (per batch)
     * @param blockBytes the cache's block size
     * @param parallelRequests range requests in flight at once
     * @param roundTrip the simulated link's round trip
     * @param bytesPerSecond the simulated link's bandwidth
     * @param epochs warm epochs per side (the best counts)
     * @param seed the data's and the shuffles' seed
     */
    public record Settings(Path directory, long bytes, int columns, int batchSize, int threads, int blockBytes,
                           int parallelRequests, Duration roundTrip, long bytesPerSecond, int epochs, long seed) {
    }

    /**
     * One comparison.
     *
     * @param measure what is compared
     * @param memfit memfit's side
     * @param memfitSeconds its seconds (best epoch; the cold epoch's only one)
     * @param reference the reference side
     * @param referenceSeconds its seconds (for the link: the bytes at its bandwidth)
     * @param megabytesPerSecond memfit's MiB/s
     * @param ratio memfit's speed over the reference's
     * @param target the ratio the issue asks for
     */
    public record Row(String measure, String memfit, double memfitSeconds, String reference, double referenceSeconds,
                      double megabytesPerSecond, double ratio, double target) {

        /**
         * Whether the target is met.
         *
         * @return true when the ratio reaches it
         */
        public boolean met() {
            return ratio >= target;
        }
    }

    /**
     * Everything one run measured.
     *
     * @param rows the comparisons, in the order measured (a row without a target is reported for context)
     * @param dataBytes the {@code .npy}'s size
     * @param samples rows in the data
     * @param link the simulated link's description
     * @param cold the cache's counters over the cold epoch
     */
    public record Result(List<Row> rows, long dataBytes, long samples, String link, CacheStatistics cold) {
    }

    private CloudBenchmark() {
    }

    /**
     * Runs the benchmark.
     *
     * @param settings the settings
     * @return the rows and the cold epoch's counters
     */
    public static Result run(Settings settings) {
        try {
            return measure(settings);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private static Result measure(Settings s) throws IOException {
        Files.createDirectories(s.directory());
        long rowBytes = (long) s.columns() * Float.BYTES;
        long rows = Math.max(s.batchSize(), s.bytes() / rowBytes);
        Path file = s.directory().resolve("cloud-" + rows + "x" + s.columns() + ".npy");
        NumpyFiles.randomFloat32(file, rows, s.columns(), s.seed());
        long dataBytes = Files.size(file);
        LoaderBenchmark.warmPageCache(file);

        try (LocalS3 s3 = LocalS3.inFolder(s.directory().resolve("s3"));
             WanLink link = WanLink.start(s3.endpoint(), s.roundTrip(), s.bytesPerSecond())) {
            s3.createBucket(BUCKET);
            ObjectUri uri = new ObjectUri("s3", BUCKET, file.getFileName().toString());
            ensureUploaded(s3, file, uri, dataBytes);
            List<Row> result = new ArrayList<>();

            // The JIT first: a shuffled epoch of a small other object through the same link, loader and cache. In a
            // fresh JVM the cold epoch began in the interpreter and class loading (the link carried 29 MiB in its
            // first half second, 41 after a warm-up): a cost once per process, whatever the data's size, that is not
            // the cache's or the link's.
            warmUp(s, s3, link);

            // (b) cold: an empty cache, everything over the simulated link, the order training would use
            Path coldFolder = s.directory().resolve("cache-cold");
            Folders.deleteTree(coldFolder);
            CacheStatistics cold;
            double coldSeconds;
            try (ObjectCache cache = cache(s, s3.store(link.endpoint()).build(), coldFolder, dataBytes)) {
                // the HEAD first: it starts the store's HTTP client (class loading, seconds on a loaded machine), and
                // pins the version; the timed epoch then moves the data
                cache.open(uri);
                CacheStatistics before = cache.statistics();
                coldSeconds = epoch(() -> Datasets.npy(uri.toString()).optCache(cache).lazy(s.threads())
                        .optBatchSize(s.batchSize()).optShuffle(s.seed()), 0);
                cold = cache.statistics().minus(before);
            }
            Folders.deleteTree(coldFolder);
            double linkSeconds = (double) cold.bytesDownloaded() / s.bytesPerSecond();
            result.add(new Row("cold epoch (shuffled) vs the link", "cache over the " + link.describe(), coldSeconds,
                    "the link's bandwidth", linkSeconds, cold.bytesDownloaded() / 1048576.0 / coldSeconds,
                    linkSeconds / coldSeconds, 0.9));

            // the ceiling of this machine: the same bytes as plain parallel range GETs through the same link (no
            // cache, no loader); the S3 server, the link's relay and the client share the machine's cores
            double plainSeconds;
            try (ObjectStore store = s3.store(link.endpoint()).build()) {
                plainSeconds = plainDownload(store, uri, s.blockBytes(), s.parallelRequests());
            }
            result.add(new Row("plain parallel GETs vs the link (this machine's ceiling)",
                    s.parallelRequests() + " range GETs in flight, no cache", plainSeconds, "the link's bandwidth",
                    dataBytes / (double) s.bytesPerSecond(), dataBytes / 1048576.0 / plainSeconds,
                    dataBytes / (double) s.bytesPerSecond() / plainSeconds, 0));

            // (a) and (c): a cache filled straight from the loopback server, then warm epochs side by side
            Path warmFolder = s.directory().resolve("cache-warm");
            Folders.deleteTree(warmFolder);
            try (ObjectCache cache = cache(s, s3.store().build(), warmFolder, dataBytes)) {
                epoch(() -> Datasets.npy(uri.toString()).optCache(cache).lazy(s.threads()).optBatchSize(s.batchSize()), 0);
                Supplier<LoaderBuilder> cachedInOrder = () -> Datasets.npy(uri.toString()).optCache(cache)
                        .lazy(s.threads()).optBatchSize(s.batchSize());
                Supplier<LoaderBuilder> localInOrder = () -> Datasets.npy(file).lazy(s.threads()).optBatchSize(s.batchSize());
                double[] inOrder = best(s.epochs(), cachedInOrder, localInOrder);
                result.add(new Row("warm epoch (file order) vs local file", "lazy(" + s.threads() + ") from the cache",
                        inOrder[0], "lazy(" + s.threads() + ") from the local file", inOrder[1],
                        dataBytes / 1048576.0 / inOrder[0], inOrder[1] / inOrder[0], 0.9));

                // the whole object staged in the cache and mapped there (Datasets.npy(uri).mapped()): the loader for
                // random batches when the cache holds the object; the first build stages it (not timed)
                epoch(() -> Datasets.npy(uri.toString()).optCache(cache).mapped().optBatchSize(s.batchSize()), 0);
                Supplier<LoaderBuilder> stagedRandom = () -> Datasets.npy(uri.toString()).optCache(cache).mapped()
                        .optBatchSize(s.batchSize()).optShuffle(s.seed());
                Supplier<LoaderBuilder> mappedRandom = () -> Datasets.npy(file).mapped().optBatchSize(s.batchSize())
                        .optShuffle(s.seed());
                // opening checks the whole staged copy (the CRC32C of each piece) before a mapping may read it: paid
                // once per loader, so timed apart from the epochs, which run on loaders opened once
                double[] open = bestOpen(s.epochs(), stagedRandom, mappedRandom);
                result.add(new Row("opening: staged copy checked vs local file", "mapped() staged, CRC32C of every piece",
                        open[0], "mapped() local file", open[1], dataBytes / 1048576.0 / open[0], open[1] / open[0], 0));
                double[] random = bestOpened(s.epochs(), stagedRandom, mappedRandom);
                result.add(new Row("random batches, fully cached vs mapped", "mapped() staged in the cache",
                        random[0], "mapped() local file", random[1], dataBytes / 1048576.0 / random[0],
                        random[1] / random[0], 0.9));

                // block access (lazy, for objects larger than the cache) fully cached, against the same loader on
                // the local file: the cost of the cache's block lookups and checks alone
                Supplier<LoaderBuilder> cachedRandom = () -> Datasets.npy(uri.toString()).optCache(cache)
                        .lazy(s.threads()).optBatchSize(s.batchSize()).optShuffle(s.seed());
                Supplier<LoaderBuilder> localRandom = () -> Datasets.npy(file).lazy(s.threads())
                        .optBatchSize(s.batchSize()).optShuffle(s.seed());
                double[] blocks = best(s.epochs(), cachedRandom, localRandom);
                result.add(new Row("random batches in blocks, fully cached vs local", "lazy(" + s.threads()
                        + ") from the cache's blocks", blocks[0], "lazy(" + s.threads() + ") from the local file",
                        blocks[1], dataBytes / 1048576.0 / blocks[0], blocks[1] / blocks[0], 0));
                CacheStatistics all = cache.statistics();
                if (all.corruptBlocks() != 0) {
                    throw new MemfitException("the benchmark's cache found " + all.corruptBlocks() + " corrupt blocks");
                }
            }
            Folders.deleteTree(warmFolder);
            return new Result(result, dataBytes, rows, link.describe(), cold);
        }
    }

    /**
     * One shuffled epoch of an object of the same rows (an eighth of the data, at most 128 MiB) through the link into
     * a cache deleted afterwards.
     */
    private static void warmUp(Settings s, LocalS3 s3, WanLink link) throws IOException {
        long rowBytes = (long) s.columns() * Float.BYTES;
        long rows = Math.max(s.batchSize(), Math.min(128L << 20, s.bytes() / 8) / rowBytes);
        Path file = s.directory().resolve("warm-up-" + rows + "x" + s.columns() + ".npy");
        NumpyFiles.randomFloat32(file, rows, s.columns(), s.seed() + 1);
        ObjectUri uri = new ObjectUri("s3", BUCKET, file.getFileName().toString());
        ensureUploaded(s3, file, uri, Files.size(file));
        Path folder = s.directory().resolve("cache-warm-up");
        Folders.deleteTree(folder);
        try (ObjectCache cache = cache(s, s3.store(link.endpoint()).build(), folder, Files.size(file))) {
            cache.open(uri);
            epoch(() -> Datasets.npy(uri.toString()).optCache(cache).lazy(s.threads()).optBatchSize(s.batchSize())
                    .optShuffle(s.seed()), 0);
        }
        Folders.deleteTree(folder);
    }

    /** Seconds to download the whole object in blocks, {@code parallel} range GETs at a time, into scratch buffers. */
    private static double plainDownload(ObjectStore store, ObjectUri uri, int blockBytes, int parallel) {
        var info = store.head(uri);
        long blocks = (info.size() + blockBytes - 1) / blockBytes;
        java.util.concurrent.atomic.AtomicLong next = new java.util.concurrent.atomic.AtomicLong();
        long start = System.nanoTime();
        try (var workers = java.util.concurrent.Executors.newFixedThreadPool(parallel)) {
            for (int w = 0; w < parallel; w++) {
                workers.submit(() -> {
                    try (java.lang.foreign.Arena arena = java.lang.foreign.Arena.ofConfined()) {
                        java.lang.foreign.MemorySegment buffer = arena.allocate(blockBytes);
                        for (long b = next.getAndIncrement(); b < blocks; b = next.getAndIncrement()) {
                            long length = Math.min(blockBytes, info.size() - b * blockBytes);
                            store.read(uri, info.etag(), b * blockBytes, buffer.asSlice(0, length));
                        }
                    }
                    return null;
                });
            }
        }
        return (System.nanoTime() - start) / 1e9;
    }

    private static ObjectCache cache(Settings s, ObjectStore store, Path folder, long dataBytes) {
        long blocks = (dataBytes + s.blockBytes() - 1) / s.blockBytes();
        // room for every block with its checksum table and for the staged copy: the cache never evicts here
        return BlockCache.builder().setStore(store).setFolder(folder).optBlockBytes(s.blockBytes())
                .optParallelRequests(s.parallelRequests())
                .optLimitBytes(2 * dataBytes + blocks * 4096 + (64L << 20)).build();
    }

    /** The best seconds of {@code epochs} epochs of each side, alternating: {cached, reference}. */
    private static double[] best(int epochs, Supplier<LoaderBuilder> cached, Supplier<LoaderBuilder> reference) {
        double bestCached = Double.MAX_VALUE;
        double bestReference = Double.MAX_VALUE;
        for (int e = 0; e < Math.max(1, epochs); e++) {
            bestCached = Math.min(bestCached, epoch(cached, e));
            bestReference = Math.min(bestReference, epoch(reference, e));
        }
        return new double[]{bestCached, bestReference};
    }

    /** The best seconds to build (open) each side's loader, the sides alternating. */
    private static double[] bestOpen(int epochs, Supplier<LoaderBuilder> cached, Supplier<LoaderBuilder> reference) {
        double[] best = {Double.MAX_VALUE, Double.MAX_VALUE};
        for (int e = 0; e < Math.max(1, epochs); e++) {
            List<Supplier<LoaderBuilder>> sides = List.of(cached, reference);
            for (int side = 0; side < 2; side++) {
                long start = System.nanoTime();
                try (Loader ignored = sides.get(side).get().build()) {
                    best[side] = Math.min(best[side], (System.nanoTime() - start) / 1e9);
                }
            }
        }
        return best;
    }

    /** The best epoch of each side, both loaders opened once (not timed) and their epochs alternating. */
    private static double[] bestOpened(int epochs, Supplier<LoaderBuilder> cached, Supplier<LoaderBuilder> reference) {
        double[] best = {Double.MAX_VALUE, Double.MAX_VALUE};
        try (Loader cachedLoader = cached.get().build(); Loader referenceLoader = reference.get().build()) {
            for (int e = 0; e < Math.max(1, epochs); e++) {
                best[0] = Math.min(best[0], epochOf(cachedLoader, e));
                best[1] = Math.min(best[1], epochOf(referenceLoader, e));
            }
        }
        return best;
    }

    /** Seconds to read one epoch of an open loader, touching every batch so the reads cannot be skipped. */
    private static double epochOf(Loader loader, int epoch) {
        long sink = 0;
        long start = System.nanoTime();
        for (Batch batch : loader.epoch(epoch)) {
            sink += batch.data().get(ValueLayout.JAVA_BYTE, batch.number() % batch.data().byteSize());
        }
        double seconds = (System.nanoTime() - start) / 1e9;
        if (sink == Long.MIN_VALUE) {
            System.out.print("");
        }
        return seconds;
    }

    /** Seconds to build a loader and read one epoch with it ({@link #epochOf}). */
    private static double epoch(Supplier<LoaderBuilder> loader, int epoch) {
        long start = System.nanoTime();
        try (Loader opened = loader.get().build()) {
            epochOf(opened, epoch);
        }
        return (System.nanoTime() - start) / 1e9;
    }

    /** Uploads the file unless the bucket holds an object of its size (from an earlier run on the same folder). */
    private static void ensureUploaded(LocalS3 s3, Path file, ObjectUri uri, long bytes) {
        try (ObjectStore store = s3.store().build()) {
            ObjectInfo info = store.head(uri);
            if (info.size() == bytes) {
                return;
            }
        } catch (MemfitException e) {
            // not there yet
        }
        if (bytes > (64L << 20)) {
            s3.uploadMultipart(file, uri.bucket(), uri.key(), 64L << 20);
        } else {
            s3.upload(file, uri.bucket(), uri.key());
        }
    }
}
