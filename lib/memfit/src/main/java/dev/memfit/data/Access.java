package dev.memfit.data;

import dev.memfit.MemfitException;

/**
 * How a loader built by {@link Datasets#open(String)} reaches the samples, whatever their format
 * ({@link LoaderBuilder#optAccess}): read into memory first, memory-mapped, read on demand by threads, or (an object in
 * a bucket) staged whole into the verified cache and mapped. Without a choice each format gets what suits it: a
 * {@code .npy}, shards and AnnData mapped, particle stacks and packed records lazily on 4 threads, an object in a
 * bucket lazily through the cache.
 */
public sealed interface Access {

    /**
     * Every sample read into native memory when the loader is built: the fastest batches, RAM for all of the data (an
     * AnnData X as dense rows).
     *
     * @return the access
     */
    static Access inMemory() {
        return new InMemory();
    }

    /**
     * The file mapped: the operating system pages in what batches read, the page cache keeps it while RAM allows.
     *
     * @return the access
     */
    static Access mapped() {
        return new Mapped();
    }

    /**
     * Samples read on demand by {@code threads} threads: the source's own readers (particle stacks, packed records,
     * files in a bucket), or else the loader's.
     *
     * @param threads at least 1
     * @return the access
     */
    static Access lazy(int threads) {
        return new Lazy(threads);
    }

    /**
     * An object in a bucket staged whole into the verified local cache when the loader is built, then mapped (an
     * {@code .h5ad} in a bucket is always read this way).
     *
     * @return the access
     */
    static Access staged() {
        return new Staged();
    }

    /** Read into memory first. */
    record InMemory() implements Access {
    }

    /** Memory-mapped. */
    record Mapped() implements Access {
    }

    /**
     * Read on demand.
     *
     * @param threads readers, at least 1
     */
    record Lazy(int threads) implements Access {
        /**
         * Checks the threads.
         *
         * @param threads readers, at least 1
         */
        public Lazy {
            if (threads < 1 || threads > 1024) {
                throw new MemfitException("Access.lazy(" + threads + "): threads must be in [1, 1024]");
            }
        }
    }

    /** Staged whole into the cache, then mapped. */
    record Staged() implements Access {
    }
}
