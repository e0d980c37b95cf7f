package dev.memfit.data;

import dev.memfit.MemfitException;
import dev.memfit.ProgressListener;
import dev.memfit.io.cloud.ObjectCache;
import dev.memfit.io.cloud.ObjectUri;
import dev.memfit.io.npy.NpyRows;
import dev.memfit.io.storage.Storage;
import dev.memfit.source.NpySource;
import dev.memfit.source.Particles;

import java.nio.file.Path;
import java.util.Objects;

/**
 * The first step of loading a {@code .npy} file: choose how its rows reach the loader.
 *
 * <p>A file in a bucket ({@code s3://bucket/x.npy}, {@code gs://...}) is read through an {@link ObjectCache}, in one
 * of two ways: {@link #lazy} reads the header (one small request on a cold cache) and the rows on demand, block by
 * block, each block downloaded once with a range request and served from the verified local cache afterwards (for
 * objects larger than the cache); {@link #mapped} stages the whole object into the cache and maps the checked copy
 * (random batches as fast as from a local file, for a cache that holds the object). By default the cache is
 * {@link ObjectCache#fromEnvironment()} (made when the loader is built, closed with it); {@link #optCache} passes one
 * that the caller keeps, to share it between loaders or read its {@link ObjectCache#statistics()}.
 *
 * <pre>{@code
 * try (ObjectCache cache = ObjectCache.fromEnvironment();
 *      Loader loader = Datasets.npy("s3://atlas/cells.npy").optCache(cache).lazy(8)
 *              .optBatchSize(256).optShuffle(42).build()) {
 *     for (Batch batch : loader.epoch(0)) { ... }
 *     System.out.println(cache.statistics());
 * }
 * }</pre>
 */
public final class NpyDataset {

    private final Path file;
    private final ObjectUri object;
    private ObjectCache cache;

    NpyDataset(Path file) {
        this.file = file;
        this.object = null;
    }

    NpyDataset(ObjectUri object) {
        this.file = object.toPath();
        this.object = object;
    }

    /**
     * Reads an object through this cache instead of {@link ObjectCache#fromEnvironment()}; the loader does not close
     * it. Only for objects ({@code s3://}, {@code gs://}).
     *
     * @param objects the cache
     * @return this step
     */
    public NpyDataset optCache(ObjectCache objects) {
        this.cache = Objects.requireNonNull(objects, "cache; leave optCache out to use ObjectCache.fromEnvironment()");
        return this;
    }

    /**
     * Memory-maps the file: nothing of the data is copied up front; the OS pages rows in as batches need them and the
     * page cache keeps them while memory allows.
     *
     * <p>An object is first staged whole into the cache (its blocks fetched in parallel and checked, joined, the
     * copy's MD5 compared with the ETag of a single-part upload; a hit when the cache already holds the copy, which
     * is not read again to check it), then the copy is mapped and
     * pinned against eviction until the loader closes: random batches as fast as from a local file, for a cache that
     * can hold the whole object. An object larger than the cache's limit is refused before any download: use
     * {@link #lazy} (blocks on demand).
     *
     * @return the loader settings
     */
    public LoaderBuilder mapped() {
        if (object != null) {
            return new LoaderBuilder(() -> StagedNpySource.open(object, cache), true);
        }
        checkNoCache();
        return new LoaderBuilder(() -> NpySource.mapped(file), true);
    }

    /**
     * Reads the whole file into native memory first; fastest per batch, needs RAM for all of it. An object is read
     * through the cache into float32 rows.
     *
     * @return the loader settings
     */
    public LoaderBuilder inMemory() {
        if (object == null) {
            checkNoCache();
            return new LoaderBuilder(() -> NpySource.inMemory(file), true);
        }
        return new LoaderBuilder(() -> {
            try (Storage storage = storage()) {
                return Particles.builder().setRecords(NpyRows.open(storage, file)).optStorage(storage).optThreads(4)
                        .optProgress(ProgressListener.silent()).eager();
            }
        }, true);
    }

    /**
     * Reads rows on demand with a pool of reader threads, as float32: an object in blocks through the cache, a
     * local file from a memory mapping. For objects, a batch's missing blocks are fetched by up to this many readers
     * at once, within the cache's own limit on parallel requests ({@code BlockCache.Builder.optParallelRequests} in memfit-cloud).
     *
     * @param threads concurrent reads per batch
     * @return the loader settings
     */
    public LoaderBuilder lazy(int threads) {
        if (object == null) {
            checkNoCache();
        }
        return new LoaderBuilder(() -> {
            Storage storage = object == null ? Storage.mapped() : storage();
            try {
                return Particles.builder().setRecords(NpyRows.open(storage, file)).optStorage(storage)
                        .optThreads(threads).lazy();
            } catch (RuntimeException e) {
                storage.close();
                throw e;
            }
        }, true);
    }

    private void checkNoCache() {
        if (cache != null) {
            throw new MemfitException(file + ": optCache is for objects in a bucket (s3://, gs://); a local file is "
                    + "read directly");
        }
    }

    /** The cache given with {@link #optCache} (which the loader must not close), else a new one from the environment. */
    private Storage storage() {
        return cache == null ? ObjectCache.fromEnvironment() : new BorrowedStorage(cache);
    }
}
