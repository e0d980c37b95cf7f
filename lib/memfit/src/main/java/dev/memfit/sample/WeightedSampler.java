package dev.memfit.sample;

import dev.memfit.MemfitException;
import org.apache.commons.rng.UniformRandomProvider;
import org.apache.commons.rng.sampling.distribution.AliasMethodDiscreteSampler;
import org.apache.commons.rng.sampling.distribution.SharedStateDiscreteSampler;
import org.apache.commons.rng.simple.RandomSource;

/**
 * Samples with replacement so that rare classes are seen as often as common ones, with a curriculum that blends
 * linearly from uniform sampling (epoch 0) to fully weighted sampling (epoch {@code warmupEpochs} and later).
 *
 * <p>The weight of a sample of class c at epoch e is {@code (1 - a) + a * n / (C * count[c])} with
 * {@code a = min(1, e / warmupEpochs)}: both ends average 1 per sample, and fully weighted, every class is drawn
 * with probability 1/C. Each epoch draws {@code n} samples from an alias table seeded by (seed, epoch).
 *
 * <p>The labels are one {@code int[]} and each epoch's draws one {@code long[]} (its {@link #order(long)} wraps
 * {@link #indices(long)}), so this sampler serves up to 2^31 - 9 samples; the draws are sequential from one
 * generator, which is what keeps an epoch reproducible.
 */
public final class WeightedSampler implements Sampler {

    private final int[] labels;
    private final long[] counts;
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
        double a = blend(epoch);
        double n = labels.length;
        int present = nonEmptyClasses();
        double[] weights = new double[labels.length];
        for (int i = 0; i < weights.length; i++) {
            weights[i] = (1 - a) + a * n / (present * (double) counts[labels[i]]);
        }
        UniformRandomProvider rng = RandomSource.XO_RO_SHI_RO_128_PP.create(ShuffledSampler.random(seed, epoch).nextLong());
        SharedStateDiscreteSampler draw = AliasMethodDiscreteSampler.of(rng, weights);
        long[] order = new long[labels.length];
        for (int i = 0; i < order.length; i++) {
            order[i] = draw.sample();
        }
        return order;
    }

    @Override
    public String settings() {
        return toString().replace("]", ", seed " + seed + ", labels " + java.util.Arrays.hashCode(labels) + "]");
    }

    @Override
    public String toString() {
        return "WeightedSampler[" + labels.length + " samples, " + classes + " classes, warm-up " + warmupEpochs + " epochs]";
    }
}
