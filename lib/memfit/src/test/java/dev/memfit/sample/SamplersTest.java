package dev.memfit.sample;

import dev.memfit.MemfitException;
import org.junit.jupiter.api.Test;

import java.util.Arrays;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class SamplersTest {

    /** 90% / 9% / 1% of 10,000 samples. */
    private static int[] imbalanced() {
        int[] labels = new int[10_000];
        for (int i = 0; i < labels.length; i++) {
            labels[i] = i < 9_000 ? 0 : i < 9_900 ? 1 : 2;
        }
        return labels;
    }

    private static double[] observedMix(int[] labels, long[] drawn) {
        double[] mix = new double[3];
        for (long index : drawn) {
            mix[labels[(int) index]] += 1.0 / drawn.length;
        }
        return mix;
    }

    @Test
    void curriculumGoesFromTheDataMixToBalanced() {
        int[] labels = imbalanced();
        WeightedSampler sampler = new WeightedSampler(labels, 3, 4);
        assertArrayEquals(new double[]{0.9, 0.09, 0.01}, sampler.expectedClassMix(0), 1e-12);
        assertArrayEquals(new double[]{1 / 3.0, 1 / 3.0, 1 / 3.0}, sampler.expectedClassMix(4), 1e-12);
        assertArrayEquals(new double[]{0.5 * 0.9 + 0.5 / 3, 0.5 * 0.09 + 0.5 / 3, 0.5 * 0.01 + 0.5 / 3}, sampler.expectedClassMix(2), 1e-12);
        for (int epoch : new int[]{0, 2, 4, 9}) {
            long[] drawn = sampler.indices(epoch);
            assertEquals(10_000, drawn.length);
            double[] observed = observedMix(labels, drawn);
            double[] expected = sampler.expectedClassMix(epoch);
            for (int c = 0; c < 3; c++) {
                // binomial standard deviation at n = 10,000 is at most 0.005: 4 sigma
                assertEquals(expected[c], observed[c], 0.02, "epoch " + epoch + " class " + c);
            }
        }
        assertArrayEquals(sampler.indices(5), new WeightedSampler(labels, 3, 4).indices(5), "reproducible");
        assertFalse(Arrays.equals(sampler.indices(5), sampler.indices(6)), "different every epoch");
        assertThrows(MemfitException.class, () -> new WeightedSampler(new int[]{0, -1}, 1, 0));
    }

    /**
     * Each sample is drawn with probability weight / n: within a class every member equally often (chi-square over
     * the members of each class), an empty class in the middle never, and any position of an epoch read on its own
     * gives the draw the whole epoch has there.
     */
    @Test
    void everySampleIsDrawnInProportionToItsWeightAndPositionsReadAlone() {
        int[] labels = new int[600];
        for (int i = 0; i < labels.length; i++) {
            labels[i] = i < 500 ? 0 : i < 590 ? 2 : 3;          // class 1 has no samples
        }
        WeightedSampler sampler = new WeightedSampler(labels, 11, 0);
        long[] hits = new long[labels.length];
        int epochs = 200;
        for (int epoch = 0; epoch < epochs; epoch++) {
            for (long index : sampler.indices(epoch)) {
                hits[(int) index]++;
            }
        }
        double[] mix = sampler.expectedClassMix(0);
        assertEquals(0.0, mix[1]);
        long[] counts = sampler.classCounts();
        for (int c : new int[]{0, 2, 3}) {
            double expected = epochs * (double) labels.length * mix[c] / counts[c];
            double chiSquare = 0;
            long classHits = 0;
            for (int i = 0; i < labels.length; i++) {
                if (labels[i] == c) {
                    chiSquare += Math.pow(hits[i] - expected, 2) / expected;
                    classHits += hits[i];
                }
            }
            long df = counts[c] - 1;
            // mean df, standard deviation sqrt(2 df): 5 sigma either way
            assertTrue(Math.abs(chiSquare - df) < 5 * Math.sqrt(2.0 * df) + 5, "class " + c + ": chi-square " + chiSquare
                    + " with " + df + " degrees of freedom");
            assertEquals(mix[c], classHits / (double) (epochs * labels.length), 0.01, "class " + c + " share");
        }
        SampleOrder order = sampler.order(7);
        long[] whole = sampler.indices(7);
        for (long position : new long[]{0, 1, 299, 598, 599}) {
            assertEquals(whole[(int) position], order.index(position), "position " + position);
        }
        assertTrue(sampler.settings().contains("draws by position"), sampler.settings());
    }

    private static void checkPartition(long[] shards, int world, long seed, long epoch) {
        long total = Arrays.stream(shards).sum();
        Set<Long> union = new HashSet<>();
        long length = -1;
        for (int rank = 0; rank < world; rank++) {
            DistributedShardSampler sampler = DistributedShardSampler.builder().setShardSizes(shards).optRank(rank)
                    .optWorldSize(world).optSeed(seed).build();
            long[] own = sampler.ownIndices(epoch);
            for (long index : own) {
                assertTrue(union.add(index), "index " + index + " on two ranks (world " + world + ")");
                assertTrue(index >= 0 && index < total);
            }
            long[] padded = sampler.indices(epoch);
            if (length < 0) {
                length = padded.length;
            }
            assertEquals(length, padded.length, "every rank yields the same number of indices");
            Set<Long> ownSet = new HashSet<>();
            for (long index : own) {
                ownSet.add(index);
            }
            for (long index : padded) {
                assertTrue(ownSet.contains(index), "padding repeats the rank's own samples");
            }
        }
        assertEquals(total, union.size(), "the ranks together cover every sample");
    }

    @Test
    void shardsArePartitionedAcrossRanks() {
        long[] shards = {100, 100, 100, 100, 100, 37, 0, 100};
        for (int world : new int[]{1, 2, 3, 4, 7}) {
            for (long epoch = 0; epoch < 3; epoch++) {
                checkPartition(shards, world, 11, epoch);
            }
        }
        DistributedShardSampler rank0 = DistributedShardSampler.builder().setShardSizes(shards).optRank(0)
                .optWorldSize(3).optSeed(11).build();
        assertFalse(Arrays.equals(rank0.ownIndices(0), rank0.ownIndices(1)), "shuffled per epoch");
    }

    @Test
    void fewerShardsThanRanksDealsSamples() {
        checkPartition(new long[]{10, 5}, 4, 2, 0);
        checkPartition(new long[]{7}, 7, 2, 1);
        assertThrows(MemfitException.class, () -> DistributedShardSampler.builder().setShardSizes(new long[]{3})
                .optRank(0).optWorldSize(4).optSeed(1).build());
        assertThrows(MemfitException.class, () -> DistributedShardSampler.builder().setShardSizes(new long[]{3})
                .optRank(4).optWorldSize(4).optSeed(1).build());
    }

    @Test
    void rankAndWorldFromTheEnvironment() {
        long[] shards = {10, 10, 10, 10};
        assertEquals("DistributedShardSampler[rank 2 of 4, 4 shards]",
                DistributedShardSampler.builder().setShardSizes(shards).optSeed(1)
                        .optEnvironment(Map.of("RANK", "2", "WORLD_SIZE", "4")).build().toString());
        assertEquals("DistributedShardSampler[rank 1 of 2, 4 shards]",
                DistributedShardSampler.builder().setShardSizes(shards).optSeed(1)
                        .optEnvironment(Map.of("SLURM_PROCID", "1", "SLURM_NTASKS", "2")).build().toString());
        assertEquals("DistributedShardSampler[rank 0 of 1, 4 shards]",
                DistributedShardSampler.builder().setShardSizes(shards).optSeed(1).optEnvironment(Map.of()).build().toString());
        assertThrows(MemfitException.class, () -> DistributedShardSampler.builder().setShardSizes(shards).optSeed(1)
                .optEnvironment(Map.of("RANK", "x", "WORLD_SIZE", "2")).build());
    }
}
