package dev.memfit.cloud;

import dev.memfit.io.cloud.ObjectCache;

/**
 * Registers {@link BlockCache} as the core's {@link ObjectCache} (through {@code META-INF/services}), so that
 * {@code ObjectCache.fromEnvironment()} and a loader over {@code s3://} or {@code gs://} find it.
 */
public final class CacheProvider implements ObjectCache.Provider {

    /** The service loader's constructor. */
    public CacheProvider() {
    }

    @Override
    public ObjectCache fromEnvironment() {
        return BlockCache.fromEnvironment();
    }
}
