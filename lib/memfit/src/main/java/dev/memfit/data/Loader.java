package dev.memfit.data;

import ai.djl.ndarray.types.Shape;
import dev.memfit.DType;

import java.util.Iterator;

/**
 * Epochs of mini-batches, whatever they are read from: the one batch pipeline every source ends in.
 *
 * <p>Random-access sources ({@code .npy} in memory or mapped, lazy particle stacks, packed records, shards) read the
 * batches a {@link dev.memfit.sample.Sampler} orders on background threads; an {@code .h5ad} stream reads chunks of
 * consecutive cells through a shuffle buffer. Either way batch buffers are off-heap and reused, so a loader's memory
 * ({@link #bufferMemory()}) is a few batches (plus the shuffle buffer when streaming) whatever the size of the data.
 * Build one with {@link Datasets}:
 *
 * <pre>{@code
 * try (Loader loader = Datasets.npy(path).mapped().optBatchSize(256).optShuffle(42).optPrefetch(2).build()) {
 *     for (Batch batch : loader.epoch(0)) {
 *         try (NDManager step = manager.newSubManager()) {
 *             NDArray x = batch.toNDArray(step);
 *         }
 *     }
 * }
 * }</pre>
 */
public final class Loader implements AutoCloseable {

    private final Pipeline pipeline;
    private Epoch active;

    Loader(Pipeline pipeline) {
        this.pipeline = pipeline;
    }

    /**
     * The number of samples in the data (one epoch visits {@link #batchesPerEpoch()} batches of them).
     *
     * @return samples
     */
    public long samples() {
        return pipeline.samples();
    }

    /**
     * The shape of one sample, without the batch dimension.
     *
     * @return the sample shape
     */
    public Shape sampleShape() {
        return pipeline.sampleShape();
    }

    /**
     * What the batches are read from and how, for logs and notebooks.
     *
     * @return a one-line description
     */
    public String describe() {
        return pipeline.describe();
    }

    /**
     * The samples per batch (the last batch of an epoch may be smaller unless the loader drops it).
     *
     * @return the batch size
     */
    public int batchSize() {
        return pipeline.batchSize();
    }

    /**
     * The number of batches each epoch yields.
     *
     * @return batches per epoch
     */
    public long batchesPerEpoch() {
        return pipeline.batchesPerEpoch();
    }

    /**
     * The element type of batches.
     *
     * @return the output dtype
     */
    public DType outputType() {
        return pipeline.outputType();
    }

    /**
     * The off-heap memory the loader holds: batch buffers, and the shuffle buffer when streaming.
     *
     * @return bytes
     */
    public long bufferMemory() {
        return pipeline.bufferMemory();
    }

    /**
     * The batches of one epoch. One epoch is iterated at a time per loader: starting another epoch (for example
     * after leaving a loop early) abandons the previous one and reclaims its buffers.
     *
     * @param epoch the epoch number, which with the seed fixes the order
     * @return the batches, read ahead in the background while iterated
     */
    public Iterable<Batch> epoch(long epoch) {
        return () -> start(epoch);
    }

    private synchronized Epoch start(long epoch) {
        if (active != null) {
            active.abandon();
        }
        active = pipeline.start(epoch);
        return active;
    }

    /**
     * Stops the reader threads and frees the buffers; closes the source when the loader opened it.
     */
    @Override
    public synchronized void close() {
        if (active != null) {
            active.abandon();
            active = null;
        }
        pipeline.close();
    }

    @Override
    public String toString() {
        return "Loader[" + pipeline + "]";
    }

    /**
     * The settings every loader takes, whatever it reads: {@link LoaderBuilder} (random access) and
     * {@link H5adStreamBuilder} (an {@code .h5ad} stream) both implement it, with more settings of their own, so code
     * that only sets these works with either (as {@code LoadingStrategy.loader(path)} returns).
     */
    public interface Builder {
        /**
         * Sets the samples per batch.
         *
         * @param size at least 1
         * @return this builder
         */
        Builder optBatchSize(int size);

        /**
         * Shuffles the samples every epoch, in an order fixed by the seed and the epoch.
         *
         * @param seed the seed
         * @return this builder
         */
        Builder optShuffle(long seed);

        /**
         * Drops the last batch of each epoch when it is smaller than the batch size.
         *
         * @param drop whether to drop it
         * @return this builder
         */
        Builder optDropLast(boolean drop);

        /**
         * Sets how much is read ahead in the background: batches for random access, chunks for a stream.
         *
         * @param count 0 or more batches; at least 1 chunk
         * @return this builder
         */
        Builder optPrefetch(int count);

        /**
         * Sets the background reader threads.
         *
         * @param count reader threads
         * @return this builder
         */
        Builder optThreads(int count);

        /**
         * Validates the settings and opens the loader.
         *
         * @return the loader, to be closed
         */
        Loader build();
    }

    /** How batches are produced: random access in sampler order, or a stream through a shuffle buffer. */
    interface Pipeline extends AutoCloseable {
        long samples();

        Shape sampleShape();

        String describe();

        int batchSize();

        long batchesPerEpoch();

        DType outputType();

        long bufferMemory();

        /** Starts an epoch; the loader has abandoned the previous one already. */
        Epoch start(long epoch);

        @Override
        void close();
    }

    /** The batches of one epoch, which can be left early. */
    interface Epoch extends Iterator<Batch> {
        /** Waits for reads in flight and gives every buffer back, so the next epoch can start. */
        void abandon();
    }
}
