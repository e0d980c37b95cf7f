package dev.memfit.data;

import dev.memfit.io.mrc.ParticleStack;
import dev.memfit.io.storage.Storage;

import java.nio.file.Path;
import java.util.function.Supplier;

/**
 * The first step of loading particle images from a {@code .mrcs}, a {@code .txt} list or a RELION {@code .star}:
 * where relative paths point, where bytes come from, then eager or lazy.
 */
public final class ParticleDataset extends RecordDataset {

    private final Path path;
    private Path datadir;

    ParticleDataset(Path path) {
        super(null);
        this.path = path;
    }

    @Override
    RecordIndexSupplier indexSupplier() {
        return () -> ParticleStack.open(path, datadir);
    }

    /**
     * Resolves relative stack paths against this folder instead of the listing's (cryoDRGN's {@code --datadir}).
     *
     * @param folder the folder
     * @return this step
     */
    public ParticleDataset optDatadir(Path folder) {
        this.datadir = folder;
        return this;
    }

    @Override
    public ParticleDataset optStorage(Supplier<Storage> supplier) {
        super.optStorage(supplier);
        return this;
    }

    @Override
    public ParticleDataset optProgress(dev.memfit.ProgressListener listener) {
        super.optProgress(listener);
        return this;
    }
}
