package dev.memfit.sample;

/**
 * Visits every sample once per epoch in index order.
 */
public final class SequentialSampler implements Sampler {

    private final long size;

    /**
     * Creates the sampler.
     *
     * @param size the number of samples
     */
    public SequentialSampler(long size) {
        if (size < 0 || size > Integer.MAX_VALUE - 8) {
            throw new IllegalArgumentException("sample count must be in [0, 2^31 - 9], got " + size);
        }
        this.size = size;
    }

    @Override
    public long epochLength() {
        return size;
    }

    @Override
    public long[] indices(long epoch) {
        long[] order = new long[(int) size];
        for (int i = 0; i < order.length; i++) {
            order[i] = i;
        }
        return order;
    }

    @Override
    public String toString() {
        return "SequentialSampler[" + size + "]";
    }
}
