package dev.memfit.sample;

import dev.memfit.MemfitException;

import java.util.Arrays;

/**
 * Samples with replacement so that rare classes are seen as often as common ones, with a curriculum that blends
 * linearly from uniform sampling (epoch 0) to fully weighted sampling (epoch {@code warmupEpochs} and later).
 *
 * <p>The weight of a sample of class c at epoch e is {@code (1 - a) + a * n / (C * count[c])} with
 * {@code a = min(1, e / warmupEpochs)}: both ends average 1 per sample, and fully weighted, every class is drawn
 * with probability 1/C. Each epoch draws {@code n} samples.
 *
 * <p>Draws are computed by position: the draw at position p of epoch e comes from a hash of (seed, e, p) that picks
 * a class from the epoch's class mix (a cumulative table of C entries) and then a member of that class uniformly,
 * which gives every sample exactly its weight's probability. An epoch therefore costs O(C) memory however many
 * samples it has ({@link #order(long)} reads any position directly, so a resumed loader skips without replaying),
 * where an alias table and an array of draws would cost about 33 bytes per sample per epoch. What is kept is the
 * labels and the samples grouped by class, 8 bytes per sample, once.
 */
public final class WeightedSampler implements Sampler {

    private final int[] labels;
    private final long[] counts;
    /** Sample indices grouped by class: those of class c are {@code byClass[starts[c] .. starts[c + 1])}. */
    private final int[] byClass;
    private final long[] starts;
    private final int classes;
    private final long seed;
    private final int warmupEpochs;

    /**
     * Creates the sampler.
     *
     * @param labels the class of each sample, from 0
     * @param seed the seed
     * @param warmupEpochs epochs over which sampling goes from uniform to weighted (0: weighted from the start)
     */
    public WeightedSampler(int[] labels, long seed, int warmupEpochs) {
        if (labels.length == 0) {
            throw new MemfitException("weighted sampling needs at least one labelled sample");
        }
        if (warmupEpochs < 0) {
            throw new MemfitException("warm-up epochs must be >= 0, got " + warmupEpochs);
        }
        int max = -1;
        for (int i = 0; i < labels.length; i++) {
            if (labels[i] < 0) {
                throw new MemfitException("sample " + i + " has class " + labels[i] + "; classes are numbered from 0");
            }
            max = Math.max(max, labels[i]);
        }
        this.labels = labels.clone();
        this.classes = max + 1;
        this.counts = new long[classes];
        for (int label : labels) {
            counts[label]++;
        }
        this.starts = new long[classes + 1];
        for (int c = 0; c < classes; c++) {
            starts[c + 1] = starts[c] + counts[c];
        }
        this.byClass = new int[labels.length];
        long[] next = Arrays.copyOf(starts, classes);
        for (int i = 0; i < labels.length; i++) {
            byClass[(int) next[labels[i]]++] = i;
        }
        this.seed = seed;
        this.warmupEpochs = warmupEpochs;
    }

    /**
     * How far the curriculum is at an epoch.
     *
     * @param epoch the epoch
     * @return 0 (uniform) to 1 (fully weighted)
     */
    public double blend(long epoch) {
        return warmupEpochs == 0 ? 1 : Math.min(1, epoch / (double) warmupEpochs);
    }

    /**
     * The expected share of each class among the samples drawn at an epoch.
     *
     * @param epoch the epoch
     * @return one share per class, summing to 1
     */
    public double[] expectedClassMix(long epoch) {
        double a = blend(epoch);
        double[] mix = new double[classes];
        double n = labels.length;
        for (int c = 0; c < classes; c++) {
            if (counts[c] > 0) {
                mix[c] = (1 - a) * counts[c] / n + a / nonEmptyClasses();
            }
        }
        return mix;
    }

    private int nonEmptyClasses() {
        int present = 0;
        for (long count : counts) {
            present += count > 0 ? 1 : 0;
        }
        return present;
    }

    /**
     * The number of samples of each class.
     *
     * @return counts by class
     */
    public long[] classCounts() {
        return counts.clone();
    }

    @Override
    public long epochLength() {
        return labels.length;
    }

    @Override
    public long[] indices(long epoch) {
        return SampleOrder.toArray(order(epoch));
    }

    /**
     * The draws of an epoch, each computed from its position.
     *
     * @param epoch the epoch
     * @return the order, O(C) memory
     */
    @Override
    public SampleOrder order(long epoch) {
        double[] mix = expectedClassMix(epoch);
        double[] cumulative = new double[classes];
        double sum = 0;
        for (int c = 0; c < classes; c++) {
            sum += mix[c];
            cumulative[c] = sum;
        }
        double total = sum;
        long key = ShuffledSampler.random(seed, epoch).nextLong();
        long length = labels.length;
        return new SampleOrder() {
            @Override
            public long length() {
                return length;
            }

            @Override
            public long index(long position) {
                java.util.Objects.checkIndex(position, length);
                long first = mix(key + 0x9E3779B97F4A7C15L * (position + 1));
                long second = mix(first ^ 0xD1B54A32D192ED03L);
                double u = (first >>> 11) * 0x1.0p-53 * total;
                // the class is the first whose cumulative share exceeds u (an empty class adds nothing, so is never it)
                int c = Arrays.binarySearch(cumulative, u);
                c = c >= 0 ? c + 1 : -c - 1;
                while (c < classes - 1 && cumulative[c] <= u) {
                    c++;
                }
                long member = Math.unsignedMultiplyHigh(second, counts[c]);
                return byClass[(int) (starts[c] + member)];
            }
        };
    }

    /** SplitMix64's finaliser: a well-mixed 64-bit value from a counter. */
    private static long mix(long z) {
        z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
        z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
        return z ^ (z >>> 31);
    }

    @Override
    public String settings() {
        // "draws by position" marks this order; a state saved by the earlier alias-table order is refused, not mixed
        return toString().replace("]", ", seed " + seed + ", labels " + Arrays.hashCode(labels) + ", draws by position]");
    }

    @Override
    public String toString() {
        return "WeightedSampler[" + labels.length + " samples, " + classes + " classes, warm-up " + warmupEpochs + " epochs]";
    }
}
