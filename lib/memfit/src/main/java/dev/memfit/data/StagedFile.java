package dev.memfit.data;

import dev.memfit.io.cloud.ObjectCache;
import dev.memfit.io.cloud.ObjectUri;

import java.nio.file.Path;

/**
 * An object staged whole into a local cache for a reader that needs a local file (an {@code .h5ad}, a {@code .npy}
 * read with {@code mapped()}):
 * the verified copy, pinned so that the cache does not evict it while it is read, and the cache itself when this
 * owns it ({@link ObjectCache#fromEnvironment()}); closing releases both.
 */
final class StagedFile implements AutoCloseable {

    private final ObjectUri uri;
    private final ObjectCache cache;
    private final boolean ownsCache;
    private final ObjectCache.Pin pin;
    private final Path file;

    private StagedFile(ObjectUri uri, ObjectCache cache, boolean ownsCache) {
        this.uri = uri;
        this.cache = cache;
        this.ownsCache = ownsCache;
        try {
            ObjectCache.PinnedObject pinned = cache.stagePinned(uri);
            this.pin = pinned.pin();
            this.file = pinned.staged().file();
        } catch (RuntimeException e) {
            if (ownsCache) {
                cache.close();
            }
            throw e;
        }
    }

    /**
     * Stages an object through a cache.
     *
     * @param uri the object
     * @param cache the cache to use and leave open, or null for a new one from the environment (closed by this)
     * @return the staged object, to be closed
     */
    static StagedFile of(ObjectUri uri, ObjectCache cache) {
        return cache != null ? new StagedFile(uri, cache, false)
                : new StagedFile(uri, ObjectCache.fromEnvironment(), true);
    }

    /** The verified local copy. */
    Path file() {
        return file;
    }

    ObjectUri uri() {
        return uri;
    }

    @Override
    public void close() {
        pin.close();
        if (ownsCache) {
            cache.close();
        }
    }
}
