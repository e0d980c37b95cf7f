package dev.memfit.io.cloud;

import dev.memfit.MemfitException;
import dev.memfit.io.storage.Storage;

import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.ServiceLoader;

/**
 * Objects in cloud storage ({@code s3://}, {@code gs://}) read through a local cache that can be trusted: what the
 * core's readers and loaders need from one. The cache itself (blocks fetched with range requests, each checked
 * against a CRC32C, staged copies checked against the ETag) and the S3 client are in {@code memfit-cloud}
 * ({@code dev.memfit.cloud.BlockCache}), found through {@link Provider}: a program that reads buckets adds that
 * module, one that reads local files does without the AWS SDK.
 *
 * <p>The cache is a {@link Storage}: paths in the form {@link ObjectUri#toPath()} ({@code s3:/bucket/key}) read
 * objects, so a reader that takes a storage (npy, MRC, zarr) reads a bucket through it. It is thread-safe.
 *
 * <pre>{@code
 * try (ObjectCache cache = ObjectCache.fromEnvironment()) {        // MEMFIT_CACHE_DIR, MEMFIT_CACHE_LIMIT, AWS_*
 *     Loader loader = Datasets.open("s3://atlas/cells.npy").optCache(cache).optBatchSize(256).build();
 *     ...
 *     System.out.println(cache.statistics());
 * }
 * }</pre>
 */
public interface ObjectCache extends Storage {

    /**
     * A cache set up from the environment by the provider on the class path ({@code memfit-cloud}: the folder of
     * {@code MEMFIT_CACHE_DIR}, the limit of {@code MEMFIT_CACHE_LIMIT}, the store of the {@code AWS_*} variables).
     *
     * @return the cache; closing it closes its store
     * @throws MemfitException when no provider is on the class path, saying which module to add
     */
    static ObjectCache fromEnvironment() {
        Provider provider = ServiceLoader.load(Provider.class, ObjectCache.class.getClassLoader()).findFirst()
                .orElseThrow(() -> new MemfitException("reading s3:// and gs:// objects needs memfit-cloud on the class "
                        + "path (dev.memfit:memfit-cloud, lib/cloud: the object cache and the S3 client); ./memfit and "
                        + "the notebook kernel have it"));
        return provider.fromEnvironment();
    }

    /** Makes the cache of {@link #fromEnvironment()}; registered in {@code META-INF/services} (memfit-cloud registers one). */
    interface Provider {
        /**
         * Opens a cache configured by the environment.
         *
         * @return the cache
         */
        ObjectCache fromEnvironment();
    }

    /**
     * The version of an object this cache reads: asked from the server once, then kept until {@link #refresh()}.
     *
     * @param uri the object
     * @return its size and ETag
     */
    ObjectInfo open(ObjectUri uri);

    /**
     * Lists the objects under a prefix, asking the server: what a zarr store or a shard folder in a bucket holds.
     *
     * @param prefix the bucket and key prefix, such as {@code s3://bucket/atlas.zarr/}
     * @return every object under it, in key order
     */
    List<ObjectInfo> list(ObjectUri prefix);

    /** Forgets the versions pinned by {@link #open}, so that the next reads see what the server has now. */
    void refresh();

    /**
     * Reads {@code into.byteSize()} bytes of an object through the cache.
     *
     * @param uri the object
     * @param position the first byte
     * @param into where the bytes go
     * @throws ObjectChangedException when a byte still to fetch belongs to a newer version on the server
     */
    void read(ObjectUri uri, long position, MemorySegment into);

    /**
     * Makes a whole object available as a local file, checked against what the server sent, so that a reader of
     * local files (jhdf, a mapping) reads it unchanged.
     *
     * @param uri the object
     * @return the local copy and how it was checked
     */
    StagedObject stage(ObjectUri uri);

    /**
     * Protects a cached file (such as a {@link #stage staged} object being read) from eviction until the returned
     * handle is closed. Pins count: a file pinned twice stays protected until both handles are closed.
     *
     * @param file a file of this cache, such as {@link StagedObject#file()}
     * @return the pin; closing it (once) lets the file be evicted again
     */
    Pin pin(Path file);

    /**
     * Stages an object ({@link #stage}) and pins its copy ({@link #pin}), staging it again when another reader's
     * insertion evicted it between the two steps.
     *
     * @param uri the object
     * @return the staged copy, pinned: close it when done reading
     */
    default PinnedObject stagePinned(ObjectUri uri) {
        StagedObject staged = stage(uri);
        Pin pinned = pin(staged.file());
        for (int attempt = 0; !Files.exists(staged.file()) && attempt < 3; attempt++) {
            pinned.close();
            staged = stage(uri);
            pinned = pin(staged.file());
        }
        return new PinnedObject(staged, pinned);
    }

    /**
     * Removes a staged copy that a caller found damaged (its bytes fail a check the caller knows, such as a CRC a
     * shard folder's metadata records), so that the next {@link #stage} builds it again.
     *
     * @param staged what {@link #stage} returned
     */
    void discardStaged(StagedObject staged);

    /**
     * The counters since this cache was created.
     *
     * @return a snapshot
     */
    CacheStatistics statistics();

    /**
     * The bytes the cache holds now.
     *
     * @return bytes
     */
    long usedBytes();

    /**
     * The cache folder.
     *
     * @return its absolute path
     */
    Path folder();

    /** Closes the cache's files, threads and store. */
    @Override
    void close();

    /**
     * A whole object on local disk, checked, as {@link #stage} returns it.
     *
     * @param file the local copy (kept until evicted: open it promptly, or {@link #pin} it)
     * @param info the version it holds
     * @param etagChecked true when the bytes were checked against the ETag as an MD5; false for a multipart ETag
     *                    ({@code ...-N}), which cannot be checked without the part sizes: the bytes were then checked
     *                    only block by block against the CRC32C taken when they were downloaded
     */
    record StagedObject(Path file, ObjectInfo info, boolean etagChecked) {
    }

    /** A file kept from eviction by {@link #pin}; closing releases it. */
    interface Pin extends AutoCloseable {
        /** Lets the file be evicted again (only the first call counts). */
        @Override
        void close();
    }

    /**
     * A staged object with a pin on its local copy, as {@link #stagePinned} returns it; closing releases the pin.
     *
     * @param staged the local copy and how it was checked
     * @param pin the pin that keeps it from eviction
     */
    record PinnedObject(StagedObject staged, Pin pin) implements AutoCloseable {
        @Override
        public void close() {
            pin.close();
        }
    }

    /**
     * The failure of a reader of a staged copy, told about the object rather than the cache's file: the copy was
     * checked against what the server sent, so a format error is in the object itself, and the user knows the
     * object's address, not the cache's file name.
     *
     * @param failure what the reader threw
     * @param staged the staged copy it read
     * @param uri the object
     * @return the same failure with the object's address in place of the copy's path, or the failure itself when
     *         it does not name the copy
     */
    static RuntimeException aboutObject(RuntimeException failure, Path staged, ObjectUri uri) {
        String message = failure.getMessage();
        if (!(failure instanceof MemfitException) || message == null || !message.contains(staged.toString())) {
            return failure;
        }
        return new MemfitException(message.replace(staged.toString(), uri.toString())
                + " (in the object itself: the cached copy is the server's bytes, checked)", failure);
    }
}
