package dev.memfit.data;

import dev.memfit.source.SampleSource;
import dev.memfit.source.SubsetSource;
import dev.memfit.MemfitException;
import dev.memfit.DType;
import dev.memfit.sample.BlockShuffleSampler;
import dev.memfit.sample.Sampler;



import java.util.function.Supplier;

/**
 * Configures a {@link Loader}; {@link #build()} validates the settings and opens the source.
 *
 * <p>Defaults: batch size 32, sequential order, keep the last partial batch, prefetch 2, one reader thread, batches
 * in the source's element type.
 */
public final class LoaderBuilder {

    private final java.util.function.Function<FormatSettings, SampleSource> opener;
    private final boolean ownsSource;
    /** What the opener reads: AnnData has layers; an object in a bucket has a cache. */
    private final boolean layered;
    private final boolean inBucket;
    /** Whether the opener reads a path in a format it recognised, and so can open it any way ({@link #optAccess}). */
    private final boolean accessible;
    private Access access;
    private boolean threadsSet;
    private String layer;
    private dev.memfit.io.cloud.ObjectCache cache;
    private long chunkCacheBytes = dev.memfit.io.hdf5.H5ad.DEFAULT_CHUNK_CACHE_BYTES;
    private int batchSize = 32;
    private Order order;
    private double subsetFraction;
    private long subsetSeed;
    private boolean dropLast;
    private int prefetch = 2;
    private boolean prefetchSet;
    private LoaderState resumeFrom;
    private int threads = 1;
    private DType convertTo;
    private boolean sparseBatches;
    private long[] subset;
    private java.nio.file.Path subsetFile;

    LoaderBuilder(Supplier<SampleSource> opener, boolean ownsSource) {
        this(settings -> opener.get(), ownsSource, false, false, false);
    }

    /**
     * Settings for an opener that reads AnnData ({@code layered}: {@link #optLayer}) or an object in a bucket
     * ({@code inBucket}: {@link #optCache}).
     */
    LoaderBuilder(java.util.function.Function<FormatSettings, SampleSource> opener, boolean ownsSource, boolean layered,
                  boolean inBucket) {
        this(opener, ownsSource, layered, inBucket, false);
    }

    /** As above, for the one door ({@link Datasets#open}): {@code accessible} allows {@link #optAccess}. */
    LoaderBuilder(java.util.function.Function<FormatSettings, SampleSource> opener, boolean ownsSource, boolean layered,
                  boolean inBucket, boolean accessible) {
        this.opener = opener;
        this.ownsSource = ownsSource;
        this.layered = layered;
        this.inBucket = inBucket;
        this.accessible = accessible;
    }

    /** The settings only some formats have, handed to the opener when the loader is built. */
    record FormatSettings(String layer, dev.memfit.io.cloud.ObjectCache cache, long chunkCacheBytes, Access access) {
    }

    /**
     * How the samples are reached (default: what suits the format, see {@link Access}): in memory, mapped, lazily by
     * threads, or staged from a bucket. {@code Access.lazy(n)} also gives the loader {@code n} reader threads unless
     * {@link #optThreads} sets them, when the source has no readers of its own.
     *
     * @param how the access
     * @return this builder
     * @throws MemfitException for samples opened already ({@link Datasets#of}, a format's own entry such as
     *         {@link Datasets#npy}, which chose already)
     */
    public LoaderBuilder optAccess(Access how) {
        if (!accessible) {
            throw new MemfitException("optAccess(" + how + "): these samples are opened one way already; open the path "
                    + "with Datasets.open(pathOrUri) to choose how");
        }
        this.access = java.util.Objects.requireNonNull(how, "access; leave optAccess out for the format's default");
        return this;
    }

    /**
     * The AnnData matrix the samples are the rows of: {@code "X"} (default), {@code "raw/X"} or a layer under
     * {@code layers/} ({@code "counts"}).
     *
     * @param matrix the matrix
     * @return this builder
     * @throws MemfitException when the data is not AnnData (an {@code .h5ad} or a {@code .zarr} store)
     */
    public LoaderBuilder optLayer(String matrix) {
        if (!layered) {
            throw new MemfitException("optLayer(\"" + matrix + "\"): only AnnData (an .h5ad file or a .zarr store) has "
                    + "layers; these samples have none");
        }
        this.layer = java.util.Objects.requireNonNull(matrix, "layer; leave optLayer out to read X");
        return this;
    }

    /**
     * The bound of an AnnData reader's cache of decoded chunks (default 64 MiB; compressed files only): a block-shuffled
     * order raises it to hold its window, whatever is set here.
     *
     * @param bytes at least 0
     * @return this builder
     * @throws MemfitException when the data is not AnnData
     */
    public LoaderBuilder optChunkCacheBytes(long bytes) {
        if (!layered) {
            throw new MemfitException("optChunkCacheBytes: only AnnData (an .h5ad file or a .zarr store) has a chunk cache");
        }
        this.chunkCacheBytes = bytes;
        return this;
    }

    /**
     * The verified local cache an object in a bucket ({@code s3://}, {@code gs://}) is read through, kept open by the
     * caller (to share it or read its statistics); default: {@code ObjectCache.fromEnvironment()}, closed with the
     * loader.
     *
     * @param objects the cache
     * @return this builder
     * @throws MemfitException when the data is a local file
     */
    public LoaderBuilder optCache(dev.memfit.io.cloud.ObjectCache objects) {
        if (!inBucket) {
            throw new MemfitException("optCache is for data in a bucket (s3://, gs://); a local file is read directly");
        }
        this.cache = java.util.Objects.requireNonNull(objects, "cache; leave optCache out to use "
                + "ObjectCache.fromEnvironment()");
        return this;
    }

    /**
     * Sets the number of samples per batch.
     *
     * @param size at least 1
     * @return this builder
     */
    public LoaderBuilder optBatchSize(int size) {
        this.batchSize = size;
        return this;
    }

    /**
     * Visits samples in a seeded random order that changes every epoch. For a shard folder in a bucket
     * ({@code Datasets.shards("s3://...")}) the order is shard by shard: the shards in a random order, the cells of
     * each in a random order ({@link dev.memfit.sample.ShardShuffleSampler}), so that shards are staged once per epoch.
     *
     * <p>After a block-shuffled, distributed or weighted order ({@link #optOrder}, or a strategy's
     * {@code applyTo}) the seed seeds that order instead, which stays as it was (what
     * {@code advice.applyTo(Datasets.open(file)).optShuffle(seed)} relies on); after a sampler of your own
     * ({@link #optSampler}) it replaces the sampler.
     *
     * @param seed the seed; the same seed gives the same batches from any source
     * @return this builder
     */
    public LoaderBuilder optShuffle(long seed) {
        // an order that shuffles in its own way keeps its way and takes the seed: a strategy applied before
        // (Advice.applyTo: block-shuffled, a rank's shards) must not turn into a plain shuffle of everything
        this.order = switch (order) {
            case Order.BlockShuffle block -> new Order.BlockShuffle(block.blockSize(), block.fetchFactor(), seed);
            case Order.Distributed ranks -> new Order.Distributed(ranks.rank(), ranks.worldSize(), seed);
            case Order.Weighted weighted -> new Order.Weighted(weighted.labels(), seed, weighted.warmupEpochs());
            case null, default -> Order.shuffle(seed);
        };
        return this;
    }

    /**
     * Visits samples in seeded random blocks of consecutive indices, shuffled within fetches of
     * {@code fetchFactor} batches ({@link Order#blockShuffle}): much faster to read from shards on disk or
     * compressed files than {@link #optShuffle(long)}, with less mixed batches
     * ({@link dev.memfit.sample.BatchDiversity} measures how much less). Uses the batch size and the source's size
     * (after any subset) known at {@link #build()}.
     *
     * @param blockSize consecutive samples per block, at least 1
     * @param fetchFactor batches per fetch, at least 1
     * @param seed the seed
     * @return this builder
     */
    public LoaderBuilder optBlockShuffle(int blockSize, int fetchFactor, long seed) {
        return optOrder(Order.blockShuffle(blockSize, fetchFactor, seed));
    }

    /**
     * Visits samples block-shuffled, as {@link #optBlockShuffle(int, int, long)} does, with the seed of
     * {@link #optShuffle(long)} (0 when none is set).
     *
     * @param blockSize consecutive samples per block, at least 1
     * @param fetchFactor batches per fetch, at least 1
     * @return this builder
     */
    public LoaderBuilder optBlockShuffle(int blockSize, int fetchFactor) {
        long seed = order instanceof Order.Shuffle shuffle ? shuffle.seed()
                : order instanceof Order.BlockShuffle block ? block.seed() : 0;
        return optOrder(Order.blockShuffle(blockSize, fetchFactor, seed));
    }

    /**
     * Uses a custom sampler (weighted, a subset, a distributed shard...); the same as
     * {@code optOrder(Order.of(sampler))}.
     *
     * @param sampler decides the order of each epoch
     * @return this builder
     */
    public LoaderBuilder optSampler(Sampler sampler) {
        return optOrder(Order.of(sampler));
    }

    /**
     * Sets which samples an epoch visits and in which order: {@link Order#sequential()} (the default),
     * {@link Order#shuffle}, {@link Order#blockShuffle}, {@link Order#weighted}, {@link Order#distributed} or
     * {@link Order#of} a sampler of your own. The order is fitted to the source when the loader is built.
     *
     * @param visits the order
     * @return this builder
     */
    public LoaderBuilder optOrder(Order visits) {
        this.order = java.util.Objects.requireNonNull(visits, "order");
        return this;
    }

    /**
     * Drops the last batch of an epoch when it is smaller than the batch size.
     *
     * @param drop true to drop it
     * @return this builder
     */
    public LoaderBuilder optDropLast(boolean drop) {
        this.dropLast = drop;
        return this;
    }

    /**
     * Sets how many batches are read ahead in the background while the current one is used.
     *
     * @param batches 0 or more; each costs one batch buffer of off-heap memory
     * @return this builder
     */
    public LoaderBuilder optPrefetch(int batches) {
        this.prefetch = batches;
        this.prefetchSet = true;
        return this;
    }

    /**
     * Sets the number of background reader threads; 0 reads on the caller's thread only. The caller also reads
     * whenever it would otherwise wait (a batch no reader has started, or the next ones while a reader is busy), so up
     * to {@code count + 1} batches are read at once when training is faster than reading.
     *
     * @param count 0 or more
     * @return this builder
     */
    public LoaderBuilder optThreads(int count) {
        this.threads = count;
        this.threadsSet = true;
        return this;
    }

    /**
     * Converts batches to another element type while reading (e.g. integer counts to float32).
     *
     * @param type the batch element type
     * @return this builder
     */
    public LoaderBuilder optConvertTo(DType type) {
        this.convertTo = type;
        return this;
    }

    /**
     * Hands batches over as sparse rows (CSR: values, column indices, row offsets; see {@link Batch#isSparse()})
     * instead of dense ones, for a source that stores its samples sparse: a CSR or CSC {@code .h5ad} or zarr matrix,
     * or sparse shards. A batch then takes about its stored values (8 bytes each in float32, with their column index),
     * not {@code batch x genes} values: 4,096 cells of a 20,000-gene atlas with 1,000 values a cell are 33 MB instead
     * of 328 MB, and the memory a loader reads ahead shrinks by the same factor. The trainers densify a batch on their
     * device ({@link Batch#toNDArray}), one at a time. A batch's rows come in ascending sample order
     * ({@link Batch#indices()} says which), each row's columns ascending and unique. Off by default.
     *
     * @param sparse true for CSR batches
     * @return this builder
     */
    public LoaderBuilder optSparseBatches(boolean sparse) {
        this.sparseBatches = sparse;
        return this;
    }

    /**
     * Trains on some samples only, renumbered from 0 (see {@link dev.memfit.sample.Subsets#random}).
     *
     * @param indices the samples to keep
     * @return this builder
     */
    public LoaderBuilder optSubset(long[] indices) {
        this.subset = indices.clone();
        this.subsetFile = null;
        this.subsetFraction = 0;
        return this;
    }

    /**
     * Trains on a random subset of the samples, renumbered from 0: {@code round(fraction * size)} of them (at least
     * one), drawn without replacement by {@link dev.memfit.sample.Subsets#random} when the loader is built, when the
     * source's size is known.
     *
     * @param fraction the share kept, in (0, 1]
     * @param seed the seed of the draw
     * @return this builder
     */
    public LoaderBuilder optRandomSubset(double fraction, long seed) {
        if (!(fraction > 0 && fraction <= 1)) {
            throw new MemfitException("a random subset keeps a fraction in (0, 1] of the samples, got " + fraction);
        }
        this.subsetFraction = fraction;
        this.subsetSeed = seed;
        this.subset = null;
        this.subsetFile = null;
        return this;
    }

    /**
     * Trains on the samples listed in an index {@code .npy} (as written by {@code ./memfit select-random}).
     *
     * @param indexFile the one-dimensional integer array
     * @return this builder
     */
    public LoaderBuilder optSubset(java.nio.file.Path indexFile) {
        this.subsetFile = indexFile;
        this.subset = null;
        this.subsetFraction = 0;
        return this;
    }

    /**
     * Continues a run from a saved state (see {@link Loader#resumeFrom(LoaderState)}): the first epoch asked for must
     * be the saved one, and it starts after the last batch handed out before.
     *
     * @param state the state from {@link Loader#state()}, for the same data and settings
     * @return this builder
     */
    public LoaderBuilder optResumeFrom(LoaderState state) {
        this.resumeFrom = state;
        return this;
    }

    /**
     * Validates the settings, opens the source and starts the reader threads.
     *
     * @return the loader, to be closed
     */
    public Loader build() {
        if (batchSize < 1) {
            throw new MemfitException("batch size must be at least 1, got " + batchSize);
        }
        if (prefetch < 0 || prefetch > 1024) {
            throw new MemfitException("prefetch must be in [0, 1024] batches, got " + prefetch);
        }
        if (threads < 0 || threads > 1024) {
            throw new MemfitException("threads must be in [0, 1024], got " + threads);
        }
        SampleSource opened = opener.apply(settings());
        SampleSource source = opened;
        Loader loader;
        try {
            if (subsetFraction > 0) {
                long total = opened.size();
                int kept = Math.toIntExact(Math.max(1, Math.min(total, Math.round(subsetFraction * total))));
                source = new SubsetSource(opened, dev.memfit.sample.Subsets.random(total, kept, subsetSeed), ownsSource);
            } else if (subset != null || subsetFile != null) {
                long[] indices = subset != null ? subset : dev.memfit.sample.Subsets.read(subsetFile, opened.size());
                source = new SubsetSource(opened, indices, ownsSource);
            }
            Order visits = order == null ? Order.sequential() : order;
            Sampler chosen = visits.sampler(source, batchSize);
            if (source instanceof dev.memfit.shard.ObjectShardStore objects
                    && (visits instanceof Order.Sequential || visits instanceof Order.Shuffle)) {
                // shards in a bucket: shard by shard (shuffled within each), so that the store stages the next
                // shards of the epoch's order while one is read, and a cache smaller than the data does not thrash
                chosen = ShardPrefetchSampler.of(objects, visits instanceof Order.Shuffle shuffle ? shuffle.seed() : null);
            }
            // mapped files larger than memory: a random order reads page by page, not a read-ahead window a sample
            source.expectReads(reads(visits));
            if (dropLast && chosen.epochLength() < batchSize) {
                throw new MemfitException("batch size " + batchSize + " is larger than the " + chosen.epochLength()
                        + " samples an epoch of " + source.describe() + " has, and dropLast is set: no batch would be "
                        + "produced; lower the batch size or keep the last partial batch");
            }
            DType output = convertTo == null ? source.dtype() : convertTo;
            // Access.lazy(n): the loader's threads read when the source has no readers of its own
            int readers = access instanceof Access.Lazy lazy && !threadsSet && !(opened instanceof dev.memfit.source.LazySource)
                    ? lazy.threads() : threads;
            int depth = fittingPrefetch(source, output, readers, dev.memfit.ProcessMemory.current());
            if (source instanceof dev.memfit.source.AnnDataSource cells) {
                keepWindowDecoded(cells, chosen, depth);
            }
            loader = new Loader(new RandomAccessPipeline(source, ownsSource, chosen, batchSize, dropLast, depth, readers, output,
                    sparseBatches));
        } catch (RuntimeException e) {
            if (ownsSource) {
                opened.close();
            }
            throw e;
        }
        return loader.resumingFrom(resumeFrom);
    }

    /**
     * How an order reads its source: in runs (file order, block shuffling: the kernel's default read-ahead) or one
     * sample at a time at random. File order keeps the default rather than {@code SEQUENTIAL}: inside a 512 MiB limit,
     * epochs over a 1.1 GiB file with {@code MADV_SEQUENTIAL} took either 0.41 s or 1.0-1.3 s (median about 1.0 s over
     * 12), with the default 0.46-0.63 s (median 0.51 s), the disk's own read 0.38-0.42 s ({@code ./memfit bench disk}).
     */
    private static dev.memfit.io.storage.PageCache.ReadAdvice reads(Order visits) {
        Object order = visits instanceof Order.Custom custom ? custom.sampler() : visits;
        return switch (order) {
            case Order.Sequential sequential -> dev.memfit.io.storage.PageCache.ReadAdvice.NORMAL;
            case dev.memfit.sample.SequentialSampler sequential -> dev.memfit.io.storage.PageCache.ReadAdvice.NORMAL;
            case Order.BlockShuffle blocks -> dev.memfit.io.storage.PageCache.ReadAdvice.NORMAL;
            case dev.memfit.sample.BlockShuffleSampler blocks -> dev.memfit.io.storage.PageCache.ReadAdvice.NORMAL;
            default -> dev.memfit.io.storage.PageCache.ReadAdvice.RANDOM;
        };
    }

    /**
     * The batches read ahead, sized to the memory this process can still get (a container's limit included): the
     * batch buffers ({@code max(1, prefetch) + 1} with reader threads, one without) may take half of it, the rest is
     * for the model, the JVM and the page cache. A prefetch left at its default shrinks to fit; buffers that cannot
     * fit at all, or an explicit prefetch that does not, are refused before anything is allocated, saying what to
     * change (a 4,096-cell batch of a 20,000-gene atlas is 328 MB a buffer). Inside a container, buffers under a
     * sixteenth of its limit are left as set.
     */
    int fittingPrefetch(SampleSource source, DType output, int readers, dev.memfit.ProcessMemory memory) {
        long room = memory.available();
        long batchBytes = RandomAccessPipeline.bufferBytes(source, batchSize, output, sparseBatches);
        if (room < 0) {
            return prefetch;
        }
        // inside a container, buffers under a sixteenth of its limit are left alone: the usage counts the page cache's
        // active part, which the kernel reclaims too, so what is left can look smaller than it is (outside one,
        // MemAvailable counts reclaimable cache as available already)
        if (memory.containerLimited() && buffers(prefetch, readers) * batchBytes <= memory.total() / 16) {
            return prefetch;
        }
        int depth = prefetch;
        while (!prefetchSet && depth > 1 && buffers(depth, readers) * batchBytes > room / 2) {
            depth--;
        }
        long needed = buffers(depth, readers) * batchBytes;
        if (needed > room || prefetchSet && readers > 0 && needed > room / 2 && depth > 1) {
            throw new MemfitException(String.format(java.util.Locale.ROOT, "%s: batches of %,d samples of %,d bytes "
                    + "need %d buffer(s) of %,d MB (%,d MB), %s the %,d MB this process can still get (%s): lower the "
                    + "batch size (optBatchSize)%s; or give the process more memory", source.describe(), batchSize,
                    batchBytes / batchSize, buffers(depth, readers), batchBytes / 1_000_000, needed / 1_000_000,
                    needed > room ? "more than" : "over half of", room / 1_000_000, memory,
                    (!sparseBatches && source.sparseRows().isPresent() ? ", hand batches over sparse "
                            + "(optSparseBatches(true): their stored values only)" : "")
                            + (readers > 0 && depth > 1 ? ", the batches read ahead (optPrefetch(1))" : "")
                            + (readers > 0 ? ", or read on the caller's thread (optThreads(0): one buffer)" : "")));
        }
        return depth;
    }

    private static long buffers(int depth, int readers) {
        return readers == 0 ? 1 : Math.max(1, depth) + 1;
    }

    /** The format settings the opener gets. */
    private FormatSettings settings() {
        return new FormatSettings(layer == null ? "X" : layer, cache, chunkCacheBytes, access);
    }

    /**
     * Opens the source with this builder's format settings, for a builder that delegates to this one.
     *
     * @return the source, owned by the caller
     */
    SampleSource openSource() {
        return opener.apply(settings());
    }

    /**
     * A compressed AnnData file read in a block-shuffled order: its chunk cache holds the window of cells batches are
     * drawn from (and the batches read ahead into the next window), so each chunk is decoded once per window.
     */
    private void keepWindowDecoded(dev.memfit.source.AnnDataSource cells, Sampler order, int depth) {
        if (order instanceof BlockShuffleSampler blocks) {
            long ahead = (long) batchSize * (Math.max(1, depth) + Math.max(1, threads));
            long rows = Math.min(cells.size(), blocks.fetchSize() + ahead);
            cells.keepDecoded(rows, (rows + blocks.blockSize() - 1) / blocks.blockSize() + 1);
        }
    }
}
