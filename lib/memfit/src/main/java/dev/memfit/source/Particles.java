package dev.memfit.source;

import dev.memfit.MemfitException;
import dev.memfit.ProgressListener;
import dev.memfit.data.Datasets;
import dev.memfit.io.storage.RecordIndex;
import dev.memfit.io.storage.Storage;


/**
 * Records (particle images, packed rows, small files) in memory (eager) or on demand (lazy);
 * {@link Datasets#particles(java.nio.file.Path)} and {@link Datasets#records(RecordIndex)} are the fluent ways in.
 *
 * <pre>{@code
 * try (ArraySource images = Particles.builder().setRecords(ParticleStack.open(star)).optThreads(4).eager()) { ... }
 * try (LazySource images = Particles.builder().setRecords(stack).optStorage(slow).optThreads(16).lazy()) { ... }
 * }</pre>
 */
public final class Particles {

    private Particles() {
    }

    /**
     * Starts configuring a source of records: {@code setRecords} is required; defaults are positional reads from
     * local files ({@link Storage#local()}), 4 reader threads and a console progress bar for an eager load.
     *
     * @return the builder
     */
    public static Builder builder() {
        return new Builder();
    }

    /** Configures a source of records; {@link #eager()} and {@link #lazy()} validate the settings and open it. */
    public static final class Builder {

        private RecordIndex records;
        private Storage storage;
        private int threads = 4;
        private ProgressListener progress = ProgressListener.console();

        private Builder() {
        }

        /**
         * Sets where the records are (required): a particle stack, a packed file, a folder of small files.
         *
         * @param index the records
         * @return this builder
         */
        public Builder setRecords(RecordIndex index) {
            this.records = index;
            return this;
        }

        /**
         * Sets where the bytes come from (default: a new {@link Storage#local()}, closed when no longer needed).
         * A storage given here stays open after {@link #eager()}, and is closed with the source of {@link #lazy()}.
         *
         * @param bytes the storage, such as {@link Storage#mapped()} or a simulated slow one
         * @return this builder
         */
        public Builder optStorage(Storage bytes) {
            this.storage = bytes;
            return this;
        }

        /**
         * Sets the number of concurrent reads (default 4; 1 reads on the caller's thread).
         *
         * @param count from 1 to 1024
         * @return this builder
         */
        public Builder optThreads(int count) {
            this.threads = count;
            return this;
        }

        /**
         * Sets where the progress of {@link #eager()} goes (default {@link ProgressListener#console()}), in records.
         *
         * @param listener the listener, such as {@link ProgressListener#silent()}
         * @return this builder
         */
        public Builder optProgress(ProgressListener listener) {
            this.progress = listener;
            return this;
        }

        /**
         * Reads every record into native memory once: fast batches afterwards, RAM for all of it.
         *
         * @return the samples as float32, to be closed
         * @throws MemfitException naming the setting to change
         */
        public ArraySource eager() {
            check();
            if (storage != null) {
                return load(records, storage, threads, progress);
            }
            try (Storage local = Storage.local()) {
                return load(records, local, threads, progress);
            }
        }

        /**
         * Reads records on demand through a pool of reader threads: nothing is loaded up front.
         *
         * @return the source, to be closed (closing the storage)
         * @throws MemfitException naming the setting to change
         */
        public LazySource lazy() {
            check();
            return new LazySource(records, storage != null ? storage : Storage.local(), true, threads);
        }

        private void check() {
            if (records == null) {
                throw new MemfitException("setRecords(index) is required: a particle stack, a packed file or a "
                        + "folder of sample files");
            }
            if (threads < 1 || threads > 1024) {
                throw new MemfitException("optThreads needs 1 to 1024 threads, got " + threads);
            }
            if (progress == null) {
                throw new MemfitException("optProgress(null): pass ProgressListener.silent() to report nothing");
            }
        }
    }

    private static ArraySource load(RecordIndex stack, Storage storage, int threads, ProgressListener listener) {
        try (LazySource reader = new LazySource(stack, storage, false, threads);
             ProgressListener.Task progress = listener.start("Loading " + stack.source().getFileName(), stack.size(), "images")) {
            return ArraySource.copyOf("eager " + stack.source().getFileName(), reader, progress);
        }
    }
}
