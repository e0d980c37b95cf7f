package dev.memfit.source;

import dev.memfit.data.Datasets;
import dev.memfit.Progress;
import dev.memfit.io.storage.RecordIndex;
import dev.memfit.io.storage.Storage;

import java.lang.foreign.MemorySegment;

/**
 * Records (particle images, packed rows, small files) in memory (eager) or on demand (lazy);
 * {@link Datasets#particles(java.nio.file.Path)} and {@link Datasets#records(RecordIndex)} are the fluent ways in.
 */
public final class Particles {

    private static final long CHUNK_BYTES = 64L << 20;

    private Particles() {
    }

    /**
     * Reads every image into native memory once, with a progress bar: fast batches afterwards, RAM for all of it.
     *
     * @param stack where the records are
     * @param storage where bytes come from
     * @param threads concurrent reads while loading
     * @return the samples as float32
     */
    public static ArraySource eager(RecordIndex stack, Storage storage, int threads) {
        try (LazySource reader = new LazySource(stack, storage, false, threads)) {
            ArraySource images = ArraySource.allocate("eager " + stack.source().getFileName(), stack.size(),
                    reader.sampleShape(), reader.dtype());
            long imageBytes = reader.sampleBytes();
            int chunk = (int) Math.max(1, CHUNK_BYTES / imageBytes);
            try (Progress progress = Progress.bar("Loading " + stack.source().getFileName(), stack.size(), "images")) {
                for (long first = 0; first < stack.size(); first += chunk) {
                    int n = (int) Math.min(chunk, stack.size() - first);
                    long[] indices = new long[n];
                    for (int i = 0; i < n; i++) {
                        indices[i] = first + i;
                    }
                    MemorySegment target = images.data().asSlice(first * imageBytes, n * imageBytes);
                    reader.readBatch(indices, target);
                    progress.step(n);
                }
            } catch (RuntimeException e) {
                images.close();
                throw e;
            }
            return images;
        }
    }

    /**
     * Reads images on demand through a pool of reader threads.
     *
     * @param stack where the records are
     * @param storage where bytes come from (closed with the source)
     * @param threads concurrent reads
     * @return the source
     */
    public static LazySource lazy(RecordIndex stack, Storage storage, int threads) {
        return new LazySource(stack, storage, true, threads);
    }
}
