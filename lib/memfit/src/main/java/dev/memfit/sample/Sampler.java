package dev.memfit.sample;

/**
 * Decides which samples an epoch visits, and in which order.
 *
 * <p>The order depends only on the sampler's settings and the epoch number, never on the source, so the same seed
 * gives the same batches whether the data is in memory, mapped or streamed.
 *
 * <p>Two ways to read an epoch, always the same indices: {@link #indices(long)} returns them as one array (8 bytes
 * per sample on the heap, at most 2^31 samples), and {@link #order(long)} returns a {@link SampleOrder} read
 * position by position, which samplers that can compute their order on demand (sequential, shuffled, distributed
 * shards) serve in constant memory for epochs of any {@code long} length. A loader should read through
 * {@link #order(long)}.
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
     * @throws dev.memfit.MemfitException when the epoch is too long for one array: use {@link #order(long)}
     */
    long[] indices(long epoch);

    /**
     * The visiting order of one epoch, read position by position; the same indices as {@link #indices(long)}.
     *
     * <p>The default wraps {@link #indices(long)}; samplers that compute positions on demand override it.
     *
     * @param epoch the epoch number, from 0
     * @return the order, of {@link #epochLength()} positions
     */
    default SampleOrder order(long epoch) {
        return SampleOrder.of(indices(epoch));
    }

    /**
     * The settings that fix this sampler's order (kind, size, seed and the like), compared when a loader resumes
     * from a saved state so that a changed order is refused instead of silently mixing two orders. Rank and world
     * size are not part of it ({@link #rank()}, {@link #worldSize()}).
     *
     * @return a one-line description of every setting the order depends on
     */
    default String settings() {
        return toString();
    }

    /**
     * This process's rank in a data-parallel job whose ranks share the samples ({@link DistributedShardSampler}).
     *
     * @return the rank; 0 for a sampler that serves one process
     */
    default int rank() {
        return 0;
    }

    /**
     * The ranks that share the samples: with {@link #rank()}, the partition a loader's state records apart from
     * {@link #settings()}, since a job may restart with another world size at an epoch boundary.
     *
     * @return the world size; 1 for a sampler that serves one process
     */
    default int worldSize() {
        return 1;
    }
}
