package dev.memfit.data;

import dev.memfit.io.RecordIndex;
import dev.memfit.io.Storage;

import java.util.function.Supplier;

/**
 * The first step of loading records (a packed file, a folder of small files, particle stacks): choose where the
 * bytes come from, then eager or lazy.
 */
public class RecordDataset {

    /** Opens the index when the loader is built, so that errors surface there. */
    interface RecordIndexSupplier extends Supplier<RecordIndex> {
    }

    private final Supplier<RecordIndex> index;
    private Supplier<Storage> storage = Storage::local;

    RecordDataset(Supplier<RecordIndex> index) {
        this.index = index;
    }

    RecordIndexSupplier indexSupplier() {
        return index::get;
    }

    /**
     * Reads through another storage, such as {@link Storage#slow} (default: local files).
     *
     * @param supplier makes the storage when the loader is built; the loader closes it
     * @return this step
     */
    public RecordDataset storage(Supplier<Storage> supplier) {
        this.storage = supplier;
        return this;
    }

    /**
     * Loads every record into native memory when the loader is built (four reader threads, with a progress bar).
     *
     * @return the loader settings
     */
    public LoaderBuilder eager() {
        return new LoaderBuilder(() -> {
            try (Storage opened = storage.get()) {
                return Particles.eager(indexSupplier().get(), opened, 4);
            }
        }, true);
    }

    /**
     * Reads records on demand with a pool of reader threads.
     *
     * @param threads concurrent reads per batch
     * @return the loader settings
     */
    public LoaderBuilder lazy(int threads) {
        return new LoaderBuilder(() -> Particles.lazy(indexSupplier().get(), storage.get(), threads), true);
    }
}
