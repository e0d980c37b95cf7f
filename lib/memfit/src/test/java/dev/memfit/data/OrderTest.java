package dev.memfit.data;

import dev.memfit.MemfitException;
import dev.memfit.sample.SequentialSampler;
import dev.memfit.source.ArraySource;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** {@link LoaderBuilder#optOrder}: every order through one loader, on rows whose value is their index. */
class OrderTest {

    private static ArraySource rows(int n) {
        float[][] rows = new float[n][];
        for (int i = 0; i < n; i++) {
            rows[i] = new float[]{i};
        }
        return ArraySource.of("rows", rows);
    }

    /** The rows one epoch visits, in order, read from the batches' data. */
    private static List<Long> visits(ArraySource source, Order order, int batch, long epoch) {
        List<Long> rows = new ArrayList<>();
        try (Loader loader = Datasets.of(source).optOrder(order).optBatchSize(batch).build()) {
            for (Batch b : loader.epoch(epoch)) {
                for (float value : b.toFloatArray()) {
                    rows.add((long) value);
                }
            }
        }
        return rows;
    }

    private static List<Long> visits(ArraySource source, LoaderBuilder settings, long epoch) {
        List<Long> rows = new ArrayList<>();
        try (Loader loader = settings.build()) {
            for (Batch b : loader.epoch(epoch)) {
                for (float value : b.toFloatArray()) {
                    rows.add((long) value);
                }
            }
        }
        return rows;
    }

    @Test
    void sequentialShuffleAndBlockShuffleVisitEveryRowOnceAndMatchTheirShorthands() {
        try (ArraySource source = rows(100)) {
            assertEquals(java.util.stream.LongStream.range(0, 100).boxed().toList(), visits(source, Order.sequential(), 7, 0));
            List<Long> shuffled = visits(source, Order.shuffle(5), 8, 0);
            assertEquals(100, new HashSet<>(shuffled).size(), "every row once");
            assertNotEquals(visits(source, Order.sequential(), 8, 0), shuffled);
            assertEquals(visits(source, Datasets.of(source).optBatchSize(8).optShuffle(5), 0), shuffled,
                    "optShuffle(seed) is Order.shuffle(seed)");
            List<Long> blocks = visits(source, Order.blockShuffle(10, 2, 5), 8, 1);
            assertEquals(100, new HashSet<>(blocks).size(), "every row once");
            assertEquals(visits(source, Datasets.of(source).optBatchSize(8).optBlockShuffle(10, 2, 5), 1), blocks,
                    "optBlockShuffle(b, f, seed) is Order.blockShuffle(b, f, seed)");
            assertEquals(blocks, visits(source, Datasets.of(source).optBatchSize(8).optOrder(Order.blockShuffle(10, 2, 9))
                    .optShuffle(5), 1), "optShuffle after a block shuffle seeds it and keeps it block-shuffled");
        }
    }

    @Test
    void weightedDrawsRareClassesAsOftenAsCommonOnesAfterItsWarmUp() {
        int n = 4000;
        int[] labels = new int[n];
        for (int i = 0; i < n; i++) {
            labels[i] = i < 200 ? 1 : 0; // 5% rare
        }
        try (ArraySource source = rows(n)) {
            List<Long> uniform = visits(source, Order.weighted(labels, 3, 2), 256, 0);
            List<Long> weighted = visits(source, Order.weighted(labels, 3, 2), 256, 2);
            assertEquals(n, uniform.size());
            assertEquals(n, weighted.size(), "an epoch draws as many samples as the source has");
            double rareAtStart = uniform.stream().filter(r -> r < 200).count() / (double) n;
            double rareAfter = weighted.stream().filter(r -> r < 200).count() / (double) n;
            assertTrue(Math.abs(rareAtStart - 0.05) < 0.02, "epoch 0 is uniform: " + rareAtStart);
            assertTrue(Math.abs(rareAfter - 0.5) < 0.04, "after the warm-up each of 2 classes is half: " + rareAfter);
            MemfitException wrong = assertThrows(MemfitException.class,
                    () -> visits(source, Order.weighted(new int[10], 3, 0), 8, 0));
            assertTrue(wrong.getMessage().contains("10 labels for the 4000 samples"), wrong.getMessage());
        }
    }

    @Test
    void distributedRanksAreDisjointAndTogetherCoverEverySample() {
        try (ArraySource source = rows(103)) {
            Set<Long> seen = new HashSet<>();
            int total = 0;
            for (int rank = 0; rank < 3; rank++) {
                List<Long> mine = visits(source, Order.distributed(rank, 3, 11), 16, 0);
                assertEquals(35, mine.size(), "103 samples over 3 ranks: 35 each, the shorter ranks padded");
                Set<Long> distinct = new HashSet<>(mine);
                for (Long row : distinct) {
                    assertTrue(seen.add(row), "row " + row + " read by two ranks");
                }
                total += distinct.size();
            }
            assertEquals(103, total, "every sample read by some rank");
            assertThrows(MemfitException.class, () -> Order.distributed(3, 3, 0));
            assertThrows(MemfitException.class, () -> Order.blockShuffle(0, 2, 0));
        }
    }

    @Test
    void aSamplerOfYourOwnIsAnOrderToo() {
        try (ArraySource source = rows(20)) {
            assertEquals(java.util.stream.LongStream.range(0, 20).boxed().toList(),
                    visits(source, Order.of(new SequentialSampler(20)), 6, 0));
        }
    }

    @Test
    void aSeedAfterADistributedOrWeightedOrderSeedsItAndKeepsIt() {
        try (ArraySource source = rows(103)) {
            List<Long> rank1 = visits(source, Datasets.of(source).optBatchSize(16).optOrder(Order.distributed(1, 3, 9))
                    .optShuffle(11), 0);
            assertEquals(visits(source, Order.distributed(1, 3, 11), 16, 0), rank1,
                    "still rank 1 of 3, seeded 11: not every sample (what a multi-device advice relies on)");
            assertEquals(35, rank1.size());
            int[] labels = new int[103];
            labels[0] = 1;
            assertEquals(visits(source, Order.weighted(labels, 5, 0), 16, 2), visits(source, Datasets.of(source)
                    .optBatchSize(16).optOrder(Order.weighted(labels, 4, 0)).optShuffle(5), 2), "still weighted, seeded 5");
        }
    }
}
