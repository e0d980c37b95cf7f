package dev.memfit.sample;

import java.util.Objects;
import java.util.SplittableRandom;

/**
 * A keyed bijection of {@code [0, size)} evaluated one position at a time, in constant memory: a balanced Feistel
 * network over the smallest domain of {@code 2^(2h) >= size} values, restricted to {@code [0, size)} by cycle-walking
 * (re-applying the network until the value falls inside). The network is a permutation of its domain for any round
 * function, and cycle-walking a permutation keeps it one, so every index appears exactly once.
 *
 * <p>The domain is less than four times {@code size}, so a position takes fewer than four walks on average, each of
 * {@value #ROUNDS} rounds of a 64-bit mix. This is for shuffling, not cryptography.
 */
final class KeyedPermutation implements SampleOrder {

    /** Eight rounds: four already make a pseudo-random permutation in theory; more mix small domains better. */
    static final int ROUNDS = 8;

    private final long size;
    private final int halfBits;
    private final long halfMask;
    private final long[] keys = new long[ROUNDS];

    /**
     * Creates the permutation.
     *
     * @param size the number of positions, at least 0
     * @param random supplies the round keys (e.g. seeded from the sampler's seed and the epoch)
     */
    KeyedPermutation(long size, SplittableRandom random) {
        if (size < 0) {
            throw new IllegalArgumentException("size must be >= 0, got " + size);
        }
        this.size = size;
        int bits = 64 - Long.numberOfLeadingZeros(Math.max(1, size - 1));   // bits of the largest index
        this.halfBits = Math.max(1, (bits + 1) / 2);
        this.halfMask = halfBits == 32 ? 0xFFFF_FFFFL : (1L << halfBits) - 1;
        for (int round = 0; round < ROUNDS; round++) {
            keys[round] = random.nextLong();
        }
    }

    @Override
    public long length() {
        return size;
    }

    @Override
    public long index(long position) {
        Objects.checkIndex(position, size);
        long value = position;
        do {
            value = network(value);
        } while (Long.compareUnsigned(value, size) >= 0);   // unsigned: with 32-bit halves the domain is all of 2^64
        return value;
    }

    private long network(long value) {
        long left = value >>> halfBits;
        long right = value & halfMask;
        for (long key : keys) {
            long next = left ^ (mix(right ^ key) & halfMask);
            left = right;
            right = next;
        }
        return left << halfBits | right;
    }

    /** SplitMix64's finalizer: every input bit affects every output bit. */
    private static long mix(long z) {
        z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
        z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
        return z ^ (z >>> 31);
    }

    @Override
    public String toString() {
        return "KeyedPermutation[" + size + "]";
    }
}
