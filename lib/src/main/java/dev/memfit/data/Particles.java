package dev.memfit.data;

import dev.memfit.Progress;
import dev.memfit.io.ParticleStack;
import dev.memfit.io.Storage;

import java.lang.foreign.MemorySegment;

/**
 * Particle images in memory (eager) or on demand (lazy); {@link Datasets#particles(java.nio.file.Path)} is the
 * fluent way in.
 */
public final class Particles {

    private static final long CHUNK_BYTES = 64L << 20;

    private Particles() {
    }

    /**
     * Reads every image into native memory once, with a progress bar: fast batches afterwards, RAM for all of it.
     *
     * @param stack the particles
     * @param storage where bytes come from
     * @param threads concurrent reads while loading
     * @return the images as float32, one sample per particle
     */
    public static ArraySource eager(ParticleStack stack, Storage storage, int threads) {
        try (LazyParticleSource reader = new LazyParticleSource(stack, storage, false, threads)) {
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
     * @param stack the particles
     * @param storage where bytes come from (closed with the source)
     * @param threads concurrent reads
     * @return the source
     */
    public static LazyParticleSource lazy(ParticleStack stack, Storage storage, int threads) {
        return new LazyParticleSource(stack, storage, true, threads);
    }
}
