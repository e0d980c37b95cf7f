package dev.memfit.memory;

import dev.memfit.MemfitException;
import dev.memfit.data.Access;
import dev.memfit.data.Datasets;
import dev.memfit.data.Loader;
import dev.memfit.data.LoaderBuilder;
import dev.memfit.io.Formats;
import dev.memfit.shard.ShardStore;

import java.nio.file.Path;
import java.util.Locale;

/**
 * How data reaches the loader, with the parameters that go with it: in memory, memory-mapped, lazily on reader
 * threads, streamed block-shuffled, a random subset first, or shards across devices.
 * {@link Advice} recommends one, {@link MemoryEstimator} estimates the memory it takes, {@link #applyTo} puts its
 * settings on the one loader builder ({@link Datasets#open}, any format, local or in a bucket; streaming block-shuffles
 * any source), and {@link #loader(Path)} opens a local file that way:
 *
 * <pre>{@code
 * MemoryEstimate estimate = MemoryEstimator.builder().setData(rows, rowBytes, LoadingStrategy.mapped()).build().estimate();
 * Advice advice = Advice.of(estimate, dataBytes, Advice.Machine.current());
 * try (Loader loader = advice.strategy().applyTo(Datasets.open(file)).optBatchSize(256).optShuffle(42).build()) { ... }
 * }</pre>
 *
 * <p>What {@link #loader(Path)} builds, by format (found by {@link Formats#detect}):
 * <table>
 *   <caption>the loader each strategy builds</caption>
 *   <tr><th>strategy</th><th>{@code .npy}</th><th>particles, packed {@code .h5}, folder of {@code .npy}</th>
 *       <th>shard folder</th><th>{@code .h5ad}</th></tr>
 *   <tr><td>{@link InMemory}</td><td>read into native memory</td><td>every record read into native memory</td>
 *       <td>every shard copied into native memory</td><td>X read dense (float32) into native memory</td></tr>
 *   <tr><td>{@link Mapped}</td><td>mapped</td><td>read on demand, files mapped when at most 256
 *       ({@link Datasets#open})</td><td>mapped</td><td>cells read where they lie: mapped (uncompressed) or through
 *       the chunk cache (compressed)</td></tr>
 *   <tr><td>{@link Lazy}</td><td>mapped, paged in by N loader threads</td><td>read on demand by N threads</td>
 *       <td>mapped, N loader threads</td><td>as {@link Mapped}, N loader threads</td></tr>
 *   <tr><td>{@link Streaming}</td><td colspan="3">as {@link Lazy} with the stream's threads: every epoch reads
 *       storage</td><td>block-shuffled: batches from windows of blocks of consecutive
 *       cells ({@link Datasets#h5ad(Path)})</td></tr>
 *   <tr><td>{@link RandomSubset}</td><td colspan="3">its {@code then} strategy, on a random subset
 *       ({@link LoaderBuilder#optRandomSubset})</td><td>as {@code then}, on the subset</td></tr>
 *   <tr><td>{@link Shards}</td><td colspan="2">refused: convert with {@code ./memfit shard} first</td>
 *       <td>mapped, this rank's whole shards ({@link dev.memfit.data.Order#distributed})</td><td>refused</td></tr>
 * </table>
 */
public sealed interface LoadingStrategy {

    /**
     * Reads the data into native memory when the loader is built: fastest batches, RAM for all of it.
     *
     * @return the strategy
     */
    static InMemory inMemory() {
        return new InMemory();
    }

    /**
     * Memory-maps the data: no copy up front, the page cache keeps what fits.
     *
     * @return the strategy
     */
    static Mapped mapped() {
        return new Mapped();
    }

    /**
     * Reads samples on demand with reader threads, to overlap the latency of slow storage.
     *
     * @param threads concurrent reads, at least 1
     * @return the strategy
     */
    static Lazy lazy(int threads) {
        return new Lazy(threads);
    }

    /**
     * Streams AnnData in a block-shuffled order: blocks of {@value Streaming#DEFAULT_BLOCK} consecutive cells, batches
     * drawn from {@value dev.memfit.sample.BlockShuffleSampler#DEFAULT_FETCH_FACTOR} batches' worth of blocks at a
     * time, one reader thread.
     *
     * @return the strategy
     */
    static Streaming streaming() {
        return new Streaming(Streaming.DEFAULT_BLOCK, dev.memfit.sample.BlockShuffleSampler.DEFAULT_FETCH_FACTOR, 1);
    }

    /**
     * Streams AnnData in a block-shuffled order (see {@link dev.memfit.sample.BlockShuffleSampler}).
     *
     * @param blockSize consecutive cells read together, at least 1
     * @param fetchFactor batches' worth of blocks each window of the order holds, at least 1
     * @param threads reader threads, at least 1
     * @return the strategy
     */
    static Streaming streaming(int blockSize, int fetchFactor, int threads) {
        return new Streaming(blockSize, fetchFactor, threads);
    }

    /**
     * Trains on a random subset first (seed 0), read at random from the whole data.
     *
     * @param fraction the share of the samples kept, in (0, 1]
     * @param then how the whole data is read: {@link Mapped} or {@link Lazy}
     * @return the strategy
     */
    static RandomSubset randomSubset(double fraction, LoadingStrategy then) {
        return new RandomSubset(fraction, 0, then);
    }

    /**
     * Memory-mapped shards written by {@code ./memfit shard}, each rank of a job on several devices reading whole
     * shards of its own (seed 0, shared by every rank).
     *
     * @param devices the data-parallel devices (ranks)
     * @return the strategy
     */
    static Shards shards(int devices) {
        return new Shards(devices, 0);
    }

    /**
     * The strategy in a few words for people, such as "lazy, 16 reader threads".
     *
     * @return the description
     */
    String describe();

    /**
     * Opens a file or folder this way (see the table above for each format).
     *
     * @param path the data
     * @return the loader settings: set the batch size and the order, then {@link LoaderBuilder#build()}
     * @throws MemfitException when this strategy cannot read the format (the message says which can)
     */
    LoaderBuilder loader(Path path);

    /**
     * Puts this strategy's settings on a loader's builder (from {@link Datasets#open}, for any format and any
     * storage): its access, order, threads or subset. Set the batch size, then {@link LoaderBuilder#build()}.
     *
     * <pre>{@code
     * try (Loader loader = advice.strategy().applyTo(Datasets.open(file)).optBatchSize(256).build()) { ... }
     * }</pre>
     *
     * @param builder the builder
     * @return the same builder
     */
    LoaderBuilder applyTo(LoaderBuilder builder);

    /** Load into native memory. */
    record InMemory() implements LoadingStrategy {

        @Override
        public String describe() {
            return "in memory";
        }

        @Override
        public LoaderBuilder loader(Path path) {
            // an AnnData X as dense rows, a shard folder copied, records read: Datasets.open's in-memory access
            return applyTo(Datasets.open(path));
        }

        @Override
        public LoaderBuilder applyTo(LoaderBuilder builder) {
            return builder.optAccess(Access.inMemory());
        }
    }

    /** Memory-map the data. */
    record Mapped() implements LoadingStrategy {

        @Override
        public String describe() {
            return "memory-mapped";
        }

        @Override
        public LoaderBuilder loader(Path path) {
            // AnnData too: an uncompressed .h5ad is read from its mapping, a compressed one through its chunk cache
            return applyTo(Datasets.open(path));
        }

        @Override
        public LoaderBuilder applyTo(LoaderBuilder builder) {
            return builder.optAccess(Access.mapped());
        }
    }

    /**
     * Read samples on demand with reader threads.
     *
     * @param threads concurrent reads, in [1, 1024]
     */
    record Lazy(int threads) implements LoadingStrategy {

        /**
         * Checks the thread count.
         *
         * @param threads concurrent reads, in [1, 1024]
         */
        public Lazy {
            if (threads < 1 || threads > 1024) {
                throw new MemfitException("lazy loading needs 1 to 1024 reader threads, got " + threads);
            }
        }

        @Override
        public String describe() {
            return "lazy, " + threads + (threads == 1 ? " reader thread" : " reader threads");
        }

        @Override
        public LoaderBuilder loader(Path path) {
            return applyTo(Datasets.open(path));
        }

        @Override
        public LoaderBuilder applyTo(LoaderBuilder builder) {
            return builder.optAccess(Access.lazy(threads));
        }
    }

    /**
     * Stream AnnData (an {@code .h5ad} or a {@code .zarr} store) in a block-shuffled order through the one loader
     * (see {@link Datasets#h5ad(Path)}): batches drawn from a window of blocks of consecutive cells, so the file is read
     * in long stretches and memory is the batches and the window's decoded chunks.
     *
     * @param blockSize consecutive cells read together, at least 1
     * @param fetchFactor batches' worth of blocks each window holds, at least 1
     * @param threads reader threads, at least 1
     */
    record Streaming(int blockSize, int fetchFactor, int threads) implements LoadingStrategy {

        /** The cells per block of {@link LoadingStrategy#streaming()}. */
        public static final int DEFAULT_BLOCK = 1_000;

        /**
         * Checks the settings.
         *
         * @param blockSize consecutive cells read together, at least 1
         * @param fetchFactor batches' worth of blocks each window holds, at least 1
         * @param threads reader threads, at least 1
         */
        public Streaming {
            if (blockSize < 1 || fetchFactor < 1 || threads < 1) {
                throw new MemfitException("streaming needs block size >= 1, fetch factor >= 1 and threads >= 1; got "
                        + "block " + blockSize + ", fetch factor " + fetchFactor + ", threads " + threads);
            }
        }

        @Override
        public String describe() {
            return String.format(Locale.ROOT, "streamed block-shuffled: blocks of %,d cells, windows of %d batches, %d %s",
                    blockSize, fetchFactor, threads, threads == 1 ? "reader thread" : "reader threads");
        }

        /**
         * Streams AnnData in this order (the seed of {@link LoaderBuilder#optShuffle} seeds it); opens any other
         * format read at random as {@link Lazy} with this stream's threads does (a mapped {@code .npy} pages in what
         * batches read, and every epoch reads storage).
         *
         * @param path the data
         * @return the loader settings: set the batch size and the seed, then build
         */
        @Override
        public LoaderBuilder loader(Path path) {
            if (isAnnData(Formats.detect(path))) {
                return applyTo(Datasets.open(path));
            }
            return new Lazy(threads).loader(path);
        }

        /** Block-shuffled (seed 0; {@code optShuffle(seed)} after it seeds it) on this many reader threads. */
        @Override
        public LoaderBuilder applyTo(LoaderBuilder builder) {
            return builder.optBlockShuffle(blockSize, fetchFactor).optThreads(threads);
        }
    }

    /**
     * Train on a random subset first, read at random from the whole data; scale up once the run looks right.
     *
     * @param fraction the share of the samples kept, in (0, 1]
     * @param seed the seed of the draw (the same seed draws the same samples)
     * @param then how the whole data is read: {@link Mapped} or {@link Lazy} (an in-memory load would read all of
     *             it first)
     */
    record RandomSubset(double fraction, long seed, LoadingStrategy then) implements LoadingStrategy {

        /**
         * Checks the fraction and the strategy underneath.
         *
         * @param fraction the share of the samples kept, in (0, 1]
         * @param seed the seed of the draw
         * @param then {@link Mapped} or {@link Lazy}
         */
        public RandomSubset {
            if (!(fraction > 0 && fraction <= 1)) {
                throw new MemfitException("a random subset keeps a fraction in (0, 1] of the samples, got " + fraction);
            }
            if (!(then instanceof Mapped || then instanceof Lazy)) {
                throw new MemfitException("a random subset is read at random from the whole data, so through a "
                        + "mapping or lazily; got " + (then == null ? "null" : then.describe()));
            }
        }

        /**
         * The samples the subset keeps out of a total: the fraction, rounded, at least one.
         *
         * @param total the samples of the whole data
         * @return the subset size
         */
        public long size(long total) {
            return Math.max(1, Math.min(total, Math.round(fraction * total)));
        }

        @Override
        public String describe() {
            return String.format(Locale.ROOT, "a random %.3g%% subset (seed %d), %s", fraction * 100, seed, then.describe());
        }

        @Override
        public LoaderBuilder loader(Path path) {
            return applyTo(Datasets.open(path));
        }

        @Override
        public LoaderBuilder applyTo(LoaderBuilder builder) {
            return then.applyTo(builder).optRandomSubset(fraction, seed);
        }
    }

    /**
     * Memory-mapped shards written by {@code ./memfit shard}; with several devices, each rank reads whole shards of
     * its own, rank and world size taken from the environment ({@link dev.memfit.data.Order#distributed(long)}).
     *
     * @param devices the data-parallel devices (ranks), at least 1
     * @param seed the seed of the shard and sample order, shared by every rank
     */
    record Shards(int devices, long seed) implements LoadingStrategy {

        /**
         * Checks the device count.
         *
         * @param devices at least 1
         * @param seed the seed shared by every rank
         */
        public Shards {
            if (devices < 1) {
                throw new MemfitException("shards need at least one device, got " + devices);
            }
        }

        @Override
        public String describe() {
            return devices == 1 ? "memory-mapped shards"
                    : "memory-mapped shards, whole shards per rank across " + devices + " devices";
        }

        /**
         * This strategy for one shard folder, with how its shards store the cells and the bytes they take on disk
         * (what the mappings address and the page cache holds when warm): CSR shards, about the size of the source's
         * sparse X, are densified per batch. For an estimate, pass the bytes to
         * {@link MemoryEstimator.Builder#optStoredBytes}.
         *
         * @param path the shard folder
         * @return the description, such as {@code memory-mapped shards, sparse (CSR, densified per batch), 312.4 MiB on disk}
         */
        public String describe(Path path) {
            try (ShardStore store = ShardStore.open(path)) {
                return describe() + (store.layout() == dev.memfit.shard.ShardLayout.SPARSE
                        ? ", sparse (CSR, densified per batch), " : ", dense, ")
                        + MemoryEstimator.human(store.storedBytes()) + " on disk";
            }
        }

        /**
         * Opens a shard folder; with several devices its sampler already gives this rank its own shards, shuffled
         * every epoch from {@link #seed()}, so set the batch size but not {@code optShuffle} (which would read
         * everything on every rank).
         *
         * @param path the shard folder
         * @return the loader settings
         * @throws MemfitException for anything but a shard folder
         */
        @Override
        public LoaderBuilder loader(Path path) {
            if (Formats.detect(path) != Formats.Format.SHARDS) {
                throw new MemfitException(path + ": expected a shard folder; convert the data once with ./memfit "
                        + "shard, then open the folder");
            }
            return applyTo(Datasets.shards(path));
        }

        /** With more than one device, this rank's whole shards (rank and world size from the environment). */
        @Override
        public LoaderBuilder applyTo(LoaderBuilder builder) {
            return devices > 1 ? builder.optOrder(dev.memfit.data.Order.distributed(seed)) : builder;
        }
    }

    /** Whether a format holds AnnData: an {@code .h5ad} or a zarr store, streamed alike. */
    private static boolean isAnnData(Formats.Format format) {
        return format == Formats.Format.H5AD || format == Formats.Format.ANNDATA_ZARR;
    }
}
