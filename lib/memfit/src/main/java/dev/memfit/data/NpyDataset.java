package dev.memfit.data;

import dev.memfit.source.NpySource;
import java.nio.file.Path;

/**
 * The first step of loading a {@code .npy} file: choose how its rows reach the loader.
 */
public final class NpyDataset {

    private final Path file;

    NpyDataset(Path file) {
        this.file = file;
    }

    /**
     * Memory-maps the file: nothing of the data is copied up front; the OS pages rows in as batches need them and the
     * page cache keeps them while memory allows.
     *
     * @return the loader settings
     */
    public LoaderBuilder mapped() {
        return new LoaderBuilder(() -> NpySource.mapped(file), true);
    }

    /**
     * Reads the whole file into native memory first; fastest per batch, needs RAM for all of it.
     *
     * @return the loader settings
     */
    public LoaderBuilder inMemory() {
        return new LoaderBuilder(() -> NpySource.inMemory(file), true);
    }
}
