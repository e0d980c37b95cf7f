package dev.memfit.sample;

import java.util.SplittableRandom;

/**
 * Visits every sample once per epoch in a seeded random order that differs from epoch to epoch.
 *
 * <p>The permutation of epoch {@code e} is a Fisher-Yates shuffle driven by a generator seeded from
 * {@code (seed, e)}, so it is reproducible and independent of the data source and of the number of loader threads.
 */
public final class ShuffledSampler implements Sampler {

    private final long size;
    private final long seed;

    /**
     * Creates the sampler.
     *
     * @param size the number of samples
     * @param seed the seed
     */
    public ShuffledSampler(long size, long seed) {
        if (size < 0 || size > Integer.MAX_VALUE - 8) {
            throw new IllegalArgumentException("sample count must be in [0, 2^31 - 9], got " + size);
        }
        this.size = size;
        this.seed = seed;
    }

    /**
     * The generator for an epoch: a different, reproducible stream per (seed, epoch).
     *
     * @param seed the user's seed
     * @param epoch the epoch
     * @return a fresh generator
     */
    public static SplittableRandom random(long seed, long epoch) {
        long mixed = seed * 0x9E3779B97F4A7C15L + (epoch + 1) * 0xBF58476D1CE4E5B9L;
        mixed = (mixed ^ (mixed >>> 31)) * 0x94D049BB133111EBL;
        return new SplittableRandom(mixed ^ (mixed >>> 29));
    }

    @Override
    public long epochLength() {
        return size;
    }

    /**
     * Shuffles in place (Fisher-Yates).
     *
     * @param values the array
     * @param random the generator
     */
    public static void shuffle(long[] values, SplittableRandom random) {
        for (int i = values.length - 1; i > 0; i--) {
            int j = random.nextInt(i + 1);
            long swap = values[i];
            values[i] = values[j];
            values[j] = swap;
        }
    }

    @Override
    public long[] indices(long epoch) {
        long[] order = new SequentialSampler(size).indices(epoch);
        shuffle(order, random(seed, epoch));
        return order;
    }

    @Override
    public String toString() {
        return "ShuffledSampler[" + size + ", seed " + seed + "]";
    }
}
