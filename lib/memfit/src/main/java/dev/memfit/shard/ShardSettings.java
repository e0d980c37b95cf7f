package dev.memfit.shard;

import dev.memfit.DType;
import dev.memfit.ProgressListener;
import dev.memfit.io.storage.Storage;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * The settings of a conversion to shards, declared once: {@link ShardPlan.Builder} plans with them,
 * {@link ShardWriter.Builder} writes in this process and Spark's builder ({@code dev.memfit.spark.SparkShards}) on a
 * cluster; each adds only what is its own (Spark's session and tasks).
 *
 * @param <B> the builder type, returned by every setting for chaining
 */
public abstract class ShardSettings<B extends ShardSettings<B>> {

    List<Path> inputs;
    long shardSize = 100_000;
    GeneVocabulary vocabulary;
    ShardLayout layout;
    DType dtype;
    String layer = "X";
    ProgressListener progress;
    Storage storage;
    final Map<Path, String[]> sources = new HashMap<>();

    /**
     * Settings with their defaults.
     *
     * @param progress where progress goes unless {@link #optProgress} says otherwise
     */
    protected ShardSettings(ProgressListener progress) {
        this.progress = progress;
    }

    /**
     * This builder, for chaining.
     *
     * @return this
     */
    protected abstract B self();

    /**
     * Sets the file to convert (required, or {@link #setInputs}).
     *
     * @param file an {@code .h5ad}, a {@code .zarr} folder or a {@code .zarr.zip}
     * @return this builder
     */
    public B setInput(Path file) {
        this.inputs = file == null ? null : List.of(file);
        return self();
    }

    /**
     * Sets the files to convert, in order (required, or {@link #setInput}): each is cut into shards from its first
     * cell, so a shard never holds cells of two files; the shards are numbered across the files. Without a vocabulary,
     * the shards hold the union of the files' genes, in the order they first appear.
     *
     * @param files one or more {@code .h5ad}, {@code .zarr} folders or {@code .zarr.zip}
     * @return this builder
     */
    public B setInputs(List<Path> files) {
        this.inputs = files == null ? null : new ArrayList<>(files);
        return self();
    }

    /**
     * Sets the number of cells per shard (default 100,000); the last shard of each input holds its rest.
     *
     * @param cells at least 1
     * @return this builder
     */
    public B optShardSize(long cells) {
        this.shardSize = cells;
        return self();
    }

    /**
     * Sets the genes of every shard, in order (default: the genes of the inputs' {@code var}, in the order they first
     * appear: one file's own genes, or the union of several); genes an input lacks are 0, genes outside the vocabulary
     * dropped, so shards of different files agree column by column.
     *
     * @param genes the vocabulary, or null for the inputs' own genes
     * @return this builder
     */
    public B optVocabulary(GeneVocabulary genes) {
        this.vocabulary = genes;
        return self();
    }

    /**
     * Sets how the shards store their cells (default: {@link ShardLayout#SPARSE} when any input's X is sparse, about
     * the size of the source on disk; else {@link ShardLayout#DENSE}).
     *
     * @param shardLayout the layout, or null for the default
     * @return this builder
     */
    public B optLayout(ShardLayout shardLayout) {
        this.layout = shardLayout;
        return self();
    }

    /**
     * Sets the type of the shards' values (default: the source's, float64 when an input's X is float64, else
     * float32): {@code FLOAT32} casts a float64 X's values to float32 (half the disk; each value rounded to the nearest
     * float32, values below float32's range to 0; {@code --dtype float32} on the command line), which the metadata
     * records ({@code "cast_from": "float64"}); {@code FLOAT64} widens a float32 X exactly.
     *
     * @param type {@code FLOAT32} or {@code FLOAT64}, or null for the source's
     * @return this builder
     */
    public B optDType(DType type) {
        this.dtype = type;
        return self();
    }

    /**
     * Sets the matrix of every input converted (default {@code X}): {@code raw/X} (raw counts beside a normalized X;
     * the shards' genes are then {@code raw/var}'s) or a layer, {@code counts} or {@code layers/counts}.
     *
     * @param matrix the matrix
     * @return this builder
     */
    public B optLayer(String matrix) {
        this.layer = matrix;
        return self();
    }

    /**
     * Sets where progress goes, in cells (a CSC X is transposed when opened, with its own bar).
     *
     * @param listener the listener, such as {@link ProgressListener#silent()}
     * @return this builder
     */
    public B optProgress(ProgressListener listener) {
        this.progress = listener;
        return self();
    }

    /**
     * Reads the inputs that are zarr stores in a bucket (their path form, {@code s3:/bucket/atlas.zarr}) through a
     * storage the caller keeps open, an object cache, chunk by chunk; give each one's version with
     * {@link #optSource(Path, String, String, long)}. Such a conversion is written by this process
     * ({@link ShardWriter}), not sent to workers.
     *
     * @param objects the storage, or null when every input is a local file or store
     * @return this builder
     */
    public B optStorage(Storage objects) {
        this.storage = objects;
        return self();
    }

    /**
     * Records an input read through {@link #optStorage} (a zarr store in a bucket) under its address, with what
     * identifies its contents ({@code AnnDataFiles.version(cache, uri)}): a later run over the same store resumes, a
     * changed one is named and converted again.
     *
     * @param input one of the inputs, a store's path form
     * @param address its address, such as {@code s3://bucket/atlas.zarr}
     * @param version what identifies its contents, recorded as its {@code etag}
     * @param bytes its bytes
     * @return this builder
     */
    public B optSource(Path input, String address, String version, long bytes) {
        sources.put(input, new String[]{address, version, Long.toString(bytes)});
        return self();
    }

    /**
     * Records an input under the object it is a staged copy of, by address and ETag, rather than by its path and
     * modification time: a later run over the same object then resumes, wherever the cache put its copy, and a changed
     * object (another ETag) is named and converted again.
     *
     * @param input one of the inputs, a staged copy
     * @param address the object's address, such as {@code s3://bucket/atlas.h5ad}
     * @param etag the object's ETag
     * @return this builder
     */
    public B optSource(Path input, String address, String etag) {
        sources.put(input, new String[]{address, etag});
        return self();
    }

    /**
     * Where progress goes.
     *
     * @return the listener, null when set so (refused when the conversion starts)
     */
    protected ProgressListener progress() {
        return progress;
    }

    /**
     * Whether inputs are read through a storage or recorded under other names ({@link #optStorage},
     * {@link #optSource}): what only a conversion in this process can do.
     *
     * @return whether either was set
     */
    protected boolean readsThroughStorage() {
        return storage != null || !sources.isEmpty();
    }

    /**
     * Opens every input, checks it against these settings and plans the shards; nothing is written.
     *
     * @return the plan
     * @throws dev.memfit.MemfitException naming the setting to change, or the input that cannot be converted and why
     */
    protected ShardPlan planShards() {
        ShardPlan.Builder plan = ShardPlan.builder();
        plan.inputs = inputs == null ? null : new ArrayList<>(inputs);
        plan.shardSize = shardSize;
        plan.vocabulary = vocabulary;
        plan.layout = layout;
        plan.dtype = dtype;
        plan.layer = layer;
        plan.progress = progress;
        plan.storage = storage;
        plan.sources.putAll(sources);
        return plan.plan();
    }
}
