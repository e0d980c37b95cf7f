package dev.memfit.sample;

/**
 * Decides which samples an epoch visits, and in which order.
 *
 * <p>The order depends only on the sampler's settings and the epoch number, never on the source, so the same seed
 * gives the same batches whether the data is in memory, mapped or streamed.
 */
public interface Sampler {

    /**
     * The number of indices each epoch yields.
     *
     * @return the epoch length in samples
     */
    long epochLength();

    /**
     * The sample indices of one epoch, in visiting order (8 bytes per sample on the heap).
     *
     * @param epoch the epoch number, from 0
     * @return the indices
     */
    long[] indices(long epoch);
}
