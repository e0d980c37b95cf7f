package dev.memfit.cloud;

import dev.memfit.io.cloud.ObjectStore;

/** Registers {@link S3Transport} with {@link ObjectStore} (through {@code META-INF/services}). */
public final class S3TransportProvider implements ObjectStore.Provider {

    /** The service loader's constructor. */
    public S3TransportProvider() {
    }

    @Override
    public ObjectStore.Transport open(ObjectStore.Settings settings) {
        return new S3Transport(settings);
    }
}
