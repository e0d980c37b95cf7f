package dev.memfit.data;

import dev.memfit.io.ParticleStack;
import dev.memfit.io.Storage;

import java.nio.file.Path;
import java.util.function.Supplier;

/**
 * The first step of loading particle images from a {@code .mrcs}, a {@code .txt} list or a RELION {@code .star}:
 * choose eager or lazy.
 */
public final class ParticleDataset {

    private final Path path;
    private Path datadir;
    private Supplier<Storage> storage = Storage::local;

    ParticleDataset(Path path) {
        this.path = path;
    }

    /**
     * Resolves relative stack paths against this folder instead of the listing's (cryoDRGN's {@code --datadir}).
     *
     * @param folder the folder
     * @return this step
     */
    public ParticleDataset datadir(Path folder) {
        this.datadir = folder;
        return this;
    }

    /**
     * Reads through another storage, such as {@link Storage#slow} (default: local files).
     *
     * @param supplier makes the storage when the loader is built; the loader closes it
     * @return this step
     */
    public ParticleDataset storage(Supplier<Storage> supplier) {
        this.storage = supplier;
        return this;
    }

    /**
     * Loads every image into native memory when the loader is built.
     *
     * @return the loader settings
     */
    public LoaderBuilder eager() {
        return new LoaderBuilder(() -> {
            try (Storage opened = storage.get()) {
                return Particles.eager(ParticleStack.open(path, datadir), opened, 4);
            }
        }, true);
    }

    /**
     * Reads images on demand with a pool of reader threads.
     *
     * @param threads concurrent reads per batch
     * @return the loader settings
     */
    public LoaderBuilder lazy(int threads) {
        return new LoaderBuilder(() -> Particles.lazy(ParticleStack.open(path, datadir), storage.get(), threads), true);
    }
}
