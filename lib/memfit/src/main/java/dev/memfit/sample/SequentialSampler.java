package dev.memfit.sample;

import dev.memfit.MemfitException;

/**
 * Visits every sample once per epoch in index order.
 */
public final class SequentialSampler implements Sampler {

    private final long size;

    /**
     * Creates the sampler.
     *
     * @param size the number of samples, at least 0 (any {@code long}: {@link #order(long)} holds no array)
     */
    public SequentialSampler(long size) {
        if (size < 0) {
            throw new MemfitException("sample count must be >= 0, got " + size);
        }
        this.size = size;
    }

    @Override
    public long epochLength() {
        return size;
    }

    /**
     * {@inheritDoc}
     *
     * @throws MemfitException past 2^31 samples, which no array holds: use {@link #order(long)}
     */
    @Override
    public long[] indices(long epoch) {
        return SampleOrder.toArray(order(epoch));
    }

    /**
     * {@inheritDoc}
     *
     * <p>Position {@code i} is sample {@code i}, computed on demand.
     */
    @Override
    public SampleOrder order(long epoch) {
        return new SampleOrder() {
            @Override
            public long length() {
                return size;
            }

            @Override
            public long index(long position) {
                return java.util.Objects.checkIndex(position, size);
            }

            @Override
            public void copy(long from, long[] into, int count) {
                java.util.Objects.checkFromIndexSize(0, count, into.length);
                java.util.Objects.checkFromIndexSize(from, count, size);
                for (int i = 0; i < count; i++) {
                    into[i] = from + i;
                }
            }
        };
    }

    @Override
    public String toString() {
        return "SequentialSampler[" + size + "]";
    }
}
