package dev.memfit.sample;

import dev.memfit.MemfitException;

import java.util.SplittableRandom;

/**
 * Visits every sample once per epoch in a seeded random order that differs from epoch to epoch.
 *
 * <p>Up to {@value #ARRAY_LIMIT} samples (a 256 MiB {@code long[]}), the permutation of epoch {@code e} is a
 * Fisher-Yates shuffle driven by a generator seeded from {@code (seed, e)}. Above that, where one array per epoch is
 * too big or impossible (past 2^31 samples), it is a keyed bijection of {@code [0, size)} (a Feistel network with
 * cycle-walking, keyed from the same generator) that {@link #order(long)} evaluates position by position in constant
 * memory. Either way the order is reproducible and independent of the data source and of the number of loader
 * threads, and {@link #indices(long)} and {@link #order(long)} agree.
 */
public final class ShuffledSampler implements Sampler {

    /** Sizes up to this many samples are shuffled as an array (Fisher-Yates); larger ones on demand. */
    public static final long ARRAY_LIMIT = 1L << 25;

    private final long size;
    private final long seed;
    private final long arrayLimit;

    /**
     * Creates the sampler.
     *
     * @param size the number of samples, at least 0 (any {@code long})
     * @param seed the seed
     */
    public ShuffledSampler(long size, long seed) {
        this(size, seed, ARRAY_LIMIT);
    }

    /** Creates the sampler with another limit between the two orders, so that tests reach the on-demand one. */
    ShuffledSampler(long size, long seed, long arrayLimit) {
        if (size < 0) {
            throw new MemfitException("sample count must be >= 0, got " + size);
        }
        this.size = size;
        this.seed = seed;
        this.arrayLimit = Math.min(arrayLimit, SampleOrder.MAX_ARRAY);
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

    /**
     * A seeded permutation of {@code [0, size)}: Fisher-Yates up to {@code arrayLimit}, on demand above.
     *
     * @param size the number of positions
     * @param random the generator of the epoch
     * @param arrayLimit the largest size shuffled as an array
     * @return the order
     */
    static SampleOrder permutation(long size, SplittableRandom random, long arrayLimit) {
        return size > arrayLimit ? new KeyedPermutation(size, random) : SampleOrder.of(shuffled((int) size, random));
    }

    private static long[] shuffled(int size, SplittableRandom random) {
        long[] order = new long[size];
        for (int i = 0; i < order.length; i++) {
            order[i] = i;
        }
        shuffle(order, random);
        return order;
    }

    /**
     * {@inheritDoc}
     *
     * <p>Above {@value #ARRAY_LIMIT} samples the order is computed on demand, in constant memory.
     */
    @Override
    public SampleOrder order(long epoch) {
        return permutation(size, random(seed, epoch), arrayLimit);
    }

    /**
     * {@inheritDoc}
     *
     * @throws MemfitException past 2^31 samples, which no array holds: use {@link #order(long)}
     */
    @Override
    public long[] indices(long epoch) {
        return size > arrayLimit ? SampleOrder.toArray(order(epoch)) : shuffled((int) size, random(seed, epoch));
    }

    @Override
    public String toString() {
        return "ShuffledSampler[" + size + ", seed " + seed + "]";
    }
}
