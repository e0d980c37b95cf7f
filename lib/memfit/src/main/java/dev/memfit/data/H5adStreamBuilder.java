package dev.memfit.data;

import java.nio.file.Path;

/**
 * Configures a {@link Loader} that streams AnnData (an {@code .h5ad}, or a zarr store: a {@code .zarr} folder or a
 * {@code .zarr.zip}) through a shuffle buffer; start one with {@link Datasets#h5ad(Path)}. Defaults: chunks of 10,000 cells, a shuffle buffer of four chunks (and at least one batch), batches of 256, one
 * reader thread reading two chunks ahead, seed 0, the last short batch of an epoch kept.
 *
 * <pre>{@code
 * try (Loader cells = Datasets.h5ad(atlas).optChunkSize(2_000).optBufferCells(20_000)
 *         .optBatchSize(256).optThreads(2).optShuffle(42).build()) {
 *     for (Batch batch : cells.epoch(0)) { ... }
 * }
 * }</pre>
 *
 * <p>An {@code .h5ad} in a bucket ({@link Datasets#h5ad(String)}) is staged whole into the verified local cache
 * when the loader is built ({@link dev.memfit.io.cloud.ObjectCache#stage}, MD5-checked against the ETag of a
 * single-part upload, block CRC32Cs otherwise) and then read like a local file; a zarr store in a bucket
 * ({@code s3://bucket/atlas.zarr}, {@code .zarr.zip}) is read chunk by chunk through the cache, never staged whole
 * (each chunk checked as the cache checks its blocks); {@link #optCache} shares a cache.
 *
 * <p>Every cell is read once per epoch in runs of consecutive cells, which is what compressed, chunked files (every
 * file anndata writes) read fastest; randomness comes from the chunk order and the draws from the buffer, so a larger
 * buffer mixes better at the cost of memory ({@link Loader#bufferMemory()}).
 *
 * <p>This is block shuffling, as {@link dev.memfit.sample.BlockShuffleSampler} does for random-access loaders (and
 * scDataset and annbatch do): a chunk is a block of consecutive cells, and the buffer is the fetch, {@code fetch
 * factor x batch size} cells; {@link #optBlockShuffle(int, int)} sets both in those terms. One difference: the buffer
 * is refilled chunk by chunk as batches leave it rather than emptied fetch by fetch, so each batch draws from about a
 * buffer's worth of chunks. {@link dev.memfit.sample.BatchDiversity} shows what a block size costs in mixing.
 */
public final class H5adStreamBuilder implements Loader.Builder {
    private LoaderState resumeFrom;
    private final Path file;
    private final dev.memfit.io.cloud.ObjectUri object;
    private dev.memfit.io.cloud.ObjectCache cache;
    private int chunkSize = 10_000;
    private Integer bufferCells;
    private Integer fetchFactor;
    private int batchSize = 256;
    private int threads = 1;
    private Integer prefetch;
    private long seed;
    private boolean dropLast;
    private boolean sparseBuffer = true;

    private String layer = "X";

    H5adStreamBuilder(Path file) {
        this.file = file;
        this.object = null;
    }

    /** An {@code .h5ad} in a bucket: staged whole through the cache when the loader is built. */
    H5adStreamBuilder(dev.memfit.io.cloud.ObjectUri object) {
        this.file = object.toPath();
        this.object = object;
    }

    /**
     * Reads an object ({@code s3://}, {@code gs://}) through this cache instead of
     * {@link dev.memfit.io.cloud.ObjectCache#fromEnvironment()}: an {@code .h5ad} is staged in it, a zarr store read
     * chunk by chunk through it; the loader does not close it.
     *
     * @param objects the cache, whose limit must hold the whole file for an {@code .h5ad} (and, while it is staged, its
     *                blocks); for a zarr store, the chunks being read
     * @return this builder
     */
    public H5adStreamBuilder optCache(dev.memfit.io.cloud.ObjectCache objects) {
        if (object == null) {
            throw new dev.memfit.MemfitException(file + ": optCache is for AnnData in a bucket (s3://, gs://); a "
                    + "local file is read directly");
        }
        this.cache = java.util.Objects.requireNonNull(objects, "cache; leave optCache out to use "
                + "ObjectCache.fromEnvironment()");
        return this;
    }

    /**
     * Reads another matrix of the file as X: {@code raw/X} (raw counts beside a normalized X, with their own genes) or
     * a layer ({@code counts} or {@code layers/counts}); default {@code X}.
     *
     * @param layer the matrix
     * @return this builder
     */
    public H5adStreamBuilder optLayer(String layer) {
        this.layer = java.util.Objects.requireNonNull(layer, "layer; leave optLayer out to read X");
        return this;
    }

    /**
     * Sets the cells read at once: consecutive cells of the file, in one read.
     *
     * @param cells at least 1
     * @return this builder
     */
    public H5adStreamBuilder optChunkSize(int cells) {
        this.chunkSize = cells;
        return this;
    }

    /**
     * Sets chunks and buffer in block-shuffling terms: chunks of {@code blockCells} consecutive cells (a block), and a
     * buffer (a fetch) of the whole chunks that hold at least {@code fetchFactor} batches of the batch size set with
     * {@link #optBatchSize(int)}, in either order. A later {@link #optBufferCells(int)} overrides the buffer.
     *
     * @param blockCells the cells of a chunk, at least 1
     * @param fetchFactor the batches the buffer holds, at least 1
     * @return this builder
     */
    public H5adStreamBuilder optBlockShuffle(int blockCells, int fetchFactor) {
        this.fetchFactor = fetchFactor;
        this.bufferCells = null;
        this.chunkSize = blockCells;
        return this;
    }

    /**
     * Sets the cells held in the shuffle buffer, which batches are drawn from at random.
     *
     * @param cells at least one chunk and one batch
     * @return this builder
     */
    public H5adStreamBuilder optBufferCells(int cells) {
        this.bufferCells = cells;
        this.fetchFactor = null;
        return this;
    }

    /**
     * Sets the cells per batch.
     *
     * @param size at least 1, at most the shuffle buffer
     * @return this builder
     */
    @Override
    public H5adStreamBuilder optBatchSize(int size) {
        this.batchSize = size;
        return this;
    }

    /**
     * Sets the chunk reads done at once, each on its own thread and file handle.
     *
     * @param count at least 1
     * @return this builder
     */
    @Override
    public H5adStreamBuilder optThreads(int count) {
        this.threads = count;
        return this;
    }

    /**
     * Sets the chunks read ahead: each is read straight into free slots of the buffer, so each costs a chunk of
     * memory. Default: the reader threads, at least 2 (so that a read overlaps the draws from the buffer).
     *
     * @param chunks at least 1
     * @return this builder
     */
    @Override
    public H5adStreamBuilder optPrefetch(int chunks) {
        this.prefetch = chunks;
        return this;
    }

    /**
     * Sets the seed of the chunk order and of the draws; with the epoch it fixes the order, whatever the threads.
     *
     * @param seed the seed
     * @return this builder
     */
    @Override
    public H5adStreamBuilder optShuffle(long seed) {
        this.seed = seed;
        return this;
    }

    /**
     * Drops the last batch of each epoch when it is smaller than the batch size.
     *
     * @param drop whether to drop it
     * @return this builder
     */
    @Override
    public H5adStreamBuilder optDropLast(boolean drop) {
        this.dropLast = drop;
        return this;
    }

    /**
     * Validates the settings, opens the file and starts the reader threads.
     *
     * @return the loader, to be closed
     */
    @Override
    public Loader build() {
        int buffer = bufferCells != null ? bufferCells
                : fetchFactor != null ? fetchCells(chunkSize, fetchFactor, batchSize) : Math.max(4 * chunkSize, batchSize);
        int ahead = prefetch == null ? Math.max(2, threads) : prefetch;
        if (object == null) {
            return new Loader(new H5adStream(file, null, chunkSize, buffer, batchSize, threads, ahead, seed, dropLast,
                    sparseBuffer, layer)).resumingFrom(resumeFrom);
        }
        if (dev.memfit.io.AnnDataFiles.isZarrName(object.key())) {
            // a zarr store: its chunks read through the cache as batches need them; the cache kept open until the
            // loader closes (and closed with it when the loader made it)
            dev.memfit.io.cloud.ObjectCache objects = cache != null ? cache : dev.memfit.io.cloud.ObjectCache.fromEnvironment();
            try {
                H5adStream stream = new H5adStream(object.toPath(), objects, chunkSize, buffer, batchSize, threads, ahead,
                        seed, dropLast, sparseBuffer, layer);
                return new Loader(stream.stagedFrom(object.toString(), cache != null ? () -> { } : objects))
                        .resumingFrom(resumeFrom);
            } catch (RuntimeException e) {
                if (cache == null) {
                    objects.close();
                }
                throw e;
            }
        }
        // the whole object, verified, as a local file that the mapped reader reads unchanged; pinned (and the cache
        // kept open) until the loader closes
        StagedFile staged = StagedFile.of(object, cache);
        H5adStream stream;
        try {
            stream = new H5adStream(staged.file(), null, chunkSize, buffer, batchSize, threads, ahead, seed, dropLast,
                    sparseBuffer, layer).stagedFrom(object.toString(), staged);
        } catch (RuntimeException e) {
            staged.close();
            throw dev.memfit.io.cloud.ObjectCache.aboutObject(e, staged.file(), object);
        }
        return new Loader(stream).resumingFrom(resumeFrom);
    }

    /**
     * Continues a run from a saved state (see {@link Loader#resumeFrom(LoaderState)}), at any batch: inside an epoch
     * the stream replays the chunk order and the shuffle buffer's draws on cell indices, without reading, up to the
     * saved batch, then reads the cells its buffer holds there; the batches after it are an uninterrupted run's.
     *
     * @param state the state from {@link Loader#state()}, for the same file and settings
     * @return this builder
     */
    public H5adStreamBuilder optResumeFrom(LoaderState state) {
        this.resumeFrom = state;
        return this;
    }

    /** Keeps dense rows in the shuffle buffer even for a sparse X: tests compare the two buffers. */
    H5adStreamBuilder denseBufferOnly() {
        this.sparseBuffer = false;
        return this;
    }

    /** The whole chunks holding at least {@code fetchFactor} batches: the buffer {@link #optBlockShuffle} asks for. */
    static int fetchCells(int chunkSize, int fetchFactor, int batchSize) {
        if (chunkSize < 1 || fetchFactor < 1) {
            throw new dev.memfit.MemfitException("optBlockShuffle needs blockCells >= 1 and fetchFactor >= 1, got "
                    + chunkSize + " and " + fetchFactor);
        }
        long wanted = (long) fetchFactor * Math.max(1, batchSize);
        long cells = (wanted + chunkSize - 1) / chunkSize * chunkSize;
        if (cells > Integer.MAX_VALUE - 8) {
            throw new dev.memfit.MemfitException("optBlockShuffle: a buffer of " + cells + " cells is too large; lower "
                    + "the fetch factor or the batch size");
        }
        return (int) cells;
    }
}
