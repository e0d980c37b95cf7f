package dev.memfit.data;

import dev.memfit.ProgressListener;
import dev.memfit.source.Particles;
import dev.memfit.io.storage.RecordIndex;
import dev.memfit.io.storage.Storage;

import java.util.function.Supplier;

/**
 * The first step of loading records (a packed file, a folder of small files, particle stacks): choose where the
 * bytes come from, then eager or lazy.
 */
public class RecordDataset {

    /** Opens the index when the loader is built, so that errors surface there. */
    interface RecordIndexSupplier extends Supplier<RecordIndex> {
    }

    /** Few large files are mapped (no system call per read); many small files are read with positional reads. */
    private static final int MAPPED_FILES_AT_MOST = 256;

    private final Supplier<RecordIndex> index;
    private Supplier<Storage> storage;
    private ProgressListener progress = ProgressListener.console();

    RecordDataset(Supplier<RecordIndex> index) {
        this.index = index;
    }

    RecordIndexSupplier indexSupplier() {
        return index::get;
    }

    private Storage storageFor(RecordIndex records) {
        if (storage != null) {
            return storage.get();
        }
        return records.files().size() <= MAPPED_FILES_AT_MOST ? Storage.mapped() : Storage.local();
    }

    /**
     * Reads through another storage, such as a simulated slow one ({@code dev.memfit.bench.SlowStorage}). By default local files are memory-mapped when
     * there are at most 256 of them ({@link Storage#mapped()}) and read with positional reads otherwise
     * ({@link Storage#local()}).
     *
     * @param supplier makes the storage when the loader is built; the loader closes it
     * @return this step
     */
    public RecordDataset optStorage(Supplier<Storage> supplier) {
        this.storage = supplier;
        return this;
    }

    /**
     * Sets where the progress of an {@link #eager()} load goes (default {@link ProgressListener#console()}).
     *
     * @param listener the listener, such as {@link ProgressListener#silent()}
     * @return this step
     */
    public RecordDataset optProgress(ProgressListener listener) {
        this.progress = java.util.Objects.requireNonNull(listener, "listener; pass ProgressListener.silent() to report nothing");
        return this;
    }

    /**
     * Loads every record into native memory when the loader is built (four reader threads, with a progress bar).
     *
     * @return the loader settings
     */
    public LoaderBuilder eager() {
        ProgressListener listener = progress;
        return new LoaderBuilder(() -> {
            RecordIndex records = indexSupplier().get();
            try (Storage opened = storageFor(records)) {
                return Particles.builder().setRecords(records).optStorage(opened).optThreads(4).optProgress(listener).eager();
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
        return new LoaderBuilder(() -> {
            RecordIndex records = indexSupplier().get();
            return Particles.builder().setRecords(records).optStorage(storageFor(records)).optThreads(threads).lazy();
        }, true);
    }
}
