package dev.memfit.io.anndata;

import dev.memfit.MemfitException;
import dev.memfit.ProgressListener;

import java.nio.file.Path;

/**
 * The settings every AnnData reader has, declared once for the {@code .h5ad} reader, the zarr reader and the door that
 * picks between them ({@code AnnDataFiles.builder()}): the matrix read as X, where a CSC X's transpose goes and how
 * much memory it may use, the bound of the cache of decoded chunks, and where progress goes.
 *
 * @param <B> the builder
 */
public abstract class ReaderSettings<B extends ReaderSettings<B>> {

    /** The default bound of a reader's cache of decoded chunks: 64 MiB. */
    public static final long DEFAULT_CHUNK_CACHE_BYTES = 64L << 20;

    private String layer = "X";
    private ProgressListener progress = ProgressListener.console();
    private Path scratch;
    private long budget = -1;
    private long chunkCacheBytes = DEFAULT_CHUNK_CACHE_BYTES;

    /** For the readers' builders. */
    protected ReaderSettings() {
    }

    /**
     * This builder, for chaining.
     *
     * @return this
     */
    protected abstract B self();

    /**
     * Sets the matrix read as X (default {@code X}): {@code raw/X} (or {@code raw}: raw counts anndata keeps beside a
     * normalized X, with their own genes in {@code raw/var}), or a layer, {@code layers/NAME} or just {@code NAME}
     * (such as {@code counts}). Every read, the shape and {@code var} are then that matrix's.
     *
     * @param matrix the matrix
     * @return this builder
     */
    public B optLayer(String matrix) {
        this.layer = matrix;
        return self();
    }

    /**
     * Sets where the progress of a CSC transpose goes (default {@link ProgressListener#console()}).
     *
     * @param listener the listener, such as {@link ProgressListener#silent()}
     * @return this builder
     */
    public B optProgress(ProgressListener listener) {
        this.progress = listener;
        return self();
    }

    /**
     * Sets the folder under which a CSC X's transpose gets a temporary folder of its own (default:
     * {@code -Dmemfit.scratch} or {@code MEMFIT_SCRATCH}, else {@code java.io.tmpdir}). It needs 8 bytes per stored
     * value, plus 12 more while the transpose runs when X does not fit in the budget; the files are gone when the last
     * reader of the file closes.
     *
     * @param folder a local folder, created when missing
     * @return this builder
     */
    public B optScratch(Path folder) {
        this.scratch = folder;
        return self();
    }

    /**
     * Sets the memory a transpose may use besides its row pointers (default 256 MiB, or
     * {@code -Dmemfit.transpose.budget=BYTES}); a smaller budget means more, smaller bands, not more passes.
     *
     * @param bytes at least 192
     * @return this builder
     */
    public B optTransposeBudget(long bytes) {
        this.budget = bytes;
        return self();
    }

    /**
     * Sets the bound of the reader's cache of decoded chunks (default {@value #DEFAULT_CHUNK_CACHE_BYTES} bytes,
     * 64 MiB), shared by X's arrays; a chunked dense X raises it to two bands of chunks, a block-shuffled loader to its
     * window ({@link AnnData#reserveChunkCache}).
     *
     * @param bytes at least 0
     * @return this builder
     */
    public B optChunkCacheBytes(long bytes) {
        this.chunkCacheBytes = bytes;
        return self();
    }

    /**
     * The matrix read as X.
     *
     * @return {@code X}, {@code raw/X} or a layer's name as given
     */
    protected String layer() {
        return layer;
    }

    /**
     * Where progress goes.
     *
     * @return the listener
     */
    protected ProgressListener progress() {
        return progress;
    }

    /**
     * The folder for a transpose: the one set, else the default.
     *
     * @return a local folder
     */
    protected Path scratchFolder() {
        return scratch == null ? CscTranspose.defaultScratch() : scratch;
    }

    /**
     * The bound of the chunk cache.
     *
     * @return bytes
     */
    protected long chunkCacheBytes() {
        return chunkCacheBytes;
    }

    /**
     * Checks the shared settings at a builder's final call.
     *
     * @return the transpose budget in bytes (the one set, else the configured default)
     * @throws MemfitException naming the setting to change
     */
    protected long checkSettings() {
        if (progress == null) {
            throw new MemfitException("optProgress(null): pass ProgressListener.silent() to report nothing");
        }
        if (chunkCacheBytes < 0) {
            throw new MemfitException("optChunkCacheBytes(" + chunkCacheBytes + "): the chunk cache bound is at least 0 "
                    + "bytes (default " + DEFAULT_CHUNK_CACHE_BYTES + ")");
        }
        return AnnData.checkSettings(layer, budget);
    }

    /**
     * Puts these settings on another reader's builder (the door hands them to the reader it picks).
     *
     * @param other the other builder
     * @param <T> its type
     * @return the other builder
     */
    protected <T extends ReaderSettings<T>> T copyTo(T other) {
        other.optLayer(layer).optProgress(progress).optScratch(scratch).optTransposeBudget(budget)
                .optChunkCacheBytes(chunkCacheBytes);
        return other;
    }
}
