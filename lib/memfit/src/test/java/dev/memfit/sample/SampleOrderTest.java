package dev.memfit.sample;

import dev.memfit.MemfitException;
import org.junit.jupiter.api.Test;

import java.util.Arrays;
import java.util.BitSet;
import java.util.HashSet;
import java.util.Set;
import java.util.SplittableRandom;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class SampleOrderTest {

    private static long[] read(SampleOrder order) {
        long[] all = new long[Math.toIntExact(order.length())];
        order.copy(0, all, all.length);
        return all;
    }

    /** Fails unless the order visits every index of [0, n) exactly once. */
    private static void assertPermutation(SampleOrder order, long n) {
        assertEquals(n, order.length());
        BitSet seen = new BitSet();
        for (long p = 0; p < n; p++) {
            long index = order.index(p);
            assertTrue(index >= 0 && index < n, "index " + index + " at position " + p + " outside [0, " + n + ")");
            assertFalse(seen.get((int) index), "index " + index + " visited twice (n = " + n + ")");
            seen.set((int) index);
        }
        assertEquals(n, seen.cardinality());
    }

    @Test
    void upToTheLimitTheOrderIsTheFisherYatesShuffleItWasBefore() {
        for (long n : new long[]{0, 1, 2, 1_000}) {
            for (long epoch = 0; epoch < 3; epoch++) {
                // the order ShuffledSampler produced before on-demand orders existed, written out independently
                long[] expected = new long[(int) n];
                for (int i = 0; i < expected.length; i++) {
                    expected[i] = i;
                }
                SplittableRandom random = ShuffledSampler.random(42, epoch);
                for (int i = expected.length - 1; i > 0; i--) {
                    int j = random.nextInt(i + 1);
                    long swap = expected[i];
                    expected[i] = expected[j];
                    expected[j] = swap;
                }
                ShuffledSampler sampler = new ShuffledSampler(n, 42);
                assertArrayEquals(expected, sampler.indices(epoch), "n " + n + " epoch " + epoch);
                assertArrayEquals(expected, read(sampler.order(epoch)), "order(epoch) agrees with indices(epoch)");
            }
        }
    }

    @Test
    void theOnDemandBijectionIsAPermutation() {
        // sizes around powers of two (the Feistel domain is the next even power of two) and odd ones
        for (long n : new long[]{0, 1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 100, 1_000, 4_097, 65_539}) {
            ShuffledSampler sampler = new ShuffledSampler(n, 9, 0);
            for (long epoch = 0; epoch < 2; epoch++) {
                SampleOrder order = sampler.order(epoch);
                assertTrue(n == 0 || order instanceof KeyedPermutation, "limit 0: on demand");
                assertPermutation(order, n);
                assertArrayEquals(read(order), sampler.indices(epoch), "indices(epoch) agrees with order(epoch)");
            }
        }
    }

    @Test
    void theBijectionDependsOnSeedAndEpochAndNothingElse() {
        long n = 10_000;
        long[] first = read(new ShuffledSampler(n, 9, 0).order(3));
        assertArrayEquals(first, read(new ShuffledSampler(n, 9, 0).order(3)), "same seed and epoch: same order");
        assertFalse(Arrays.equals(first, read(new ShuffledSampler(n, 9, 0).order(4))), "another epoch");
        assertFalse(Arrays.equals(first, read(new ShuffledSampler(n, 10, 0).order(3))), "another seed");
        // shuffled, not a shift or a near-identity: few fixed points, mean displacement near n/3 as for a random one
        long fixed = 0;
        double displacement = 0;
        for (int p = 0; p < n; p++) {
            fixed += first[p] == p ? 1 : 0;
            displacement += Math.abs(first[p] - p);
        }
        assertTrue(fixed < 10, fixed + " fixed points; a random permutation has about 1");
        assertEquals(n / 3.0, displacement / n, n * 0.03, "mean |position - index|");
    }

    @Test
    void theBijectionMixesEvenTinyDomains() {
        // Where position 0 lands over many (seed, epoch) keys: about uniform over the 10 indices.
        int[] counts = new int[10];
        int keys = 20_000;
        for (int key = 0; key < keys; key++) {
            counts[(int) new ShuffledSampler(10, key, 0).order(key % 7).index(0)]++;
        }
        for (int index = 0; index < counts.length; index++) {
            // expected 2,000, binomial standard deviation about 42: 6 sigma
            assertEquals(keys / 10.0, counts[index], 250, "index " + index + " at position 0: " + Arrays.toString(counts));
        }
    }

    @Test
    void copyAndIndexCheckTheirBounds() {
        SampleOrder order = new ShuffledSampler(50, 1, 0).order(0);
        long[] some = new long[7];
        order.copy(43, some, 7);
        for (int i = 0; i < 7; i++) {
            assertEquals(order.index(43 + i), some[i]);
        }
        assertThrows(IndexOutOfBoundsException.class, () -> order.copy(45, some, 7), "past the end of the epoch");
        assertThrows(IndexOutOfBoundsException.class, () -> order.copy(0, some, 8), "past the end of the array");
        assertThrows(IndexOutOfBoundsException.class, () -> order.index(-1));
        assertThrows(IndexOutOfBoundsException.class, () -> order.index(50));
        SampleOrder array = SampleOrder.of(new long[]{4, 2, 9});
        assertEquals(9, array.index(2));
        assertThrows(IndexOutOfBoundsException.class, () -> array.index(3));
    }

    @Test
    void epochsBeyondTwoToThe31AreReadOnDemand() {
        long n = 5_000_000_000L;
        ShuffledSampler shuffled = new ShuffledSampler(n, 3);
        SampleOrder order = shuffled.order(0);
        assertEquals(n, order.length());
        Set<Long> seen = new HashSet<>();
        SplittableRandom positions = new SplittableRandom(1);
        for (int i = 0; i < 100_000; i++) {
            long index = order.index(positions.nextLong(n));
            assertTrue(index >= 0 && index < n);
            seen.add(index);
        }
        assertTrue(seen.size() > 99_990, "distinct positions give distinct indices (repeats only from repeated positions): "
                + seen.size());
        long[] tail = new long[1_000];
        order.copy(n - tail.length, tail, tail.length);
        assertEquals(order.index(n - 1), tail[tail.length - 1]);
        MemfitException tooLong = assertThrows(MemfitException.class, () -> shuffled.indices(0));
        assertTrue(tooLong.getMessage().contains("order(epoch)"), tooLong.getMessage());

        SequentialSampler sequential = new SequentialSampler(n);
        assertEquals(n - 1, sequential.order(0).index(n - 1));
        assertThrows(MemfitException.class, () -> sequential.indices(0));

        // the largest size: 32-bit Feistel halves cover all 2^64 values, compared unsigned
        SampleOrder largest = new ShuffledSampler(Long.MAX_VALUE, 5).order(1);
        Set<Long> distinct = new HashSet<>();
        for (long p = Long.MAX_VALUE - 500; p < Long.MAX_VALUE; p++) {
            long index = largest.index(p);
            assertTrue(index >= 0, "index " + index);
            distinct.add(index);
        }
        assertEquals(500, distinct.size());
    }

    @Test
    void samplersWithoutAnOnDemandOrderWrapTheirIndices() {
        int[] labels = new int[300];
        for (int i = 0; i < labels.length; i++) {
            labels[i] = i % 3 == 0 ? 1 : 0;
        }
        WeightedSampler weighted = new WeightedSampler(labels, 7, 2);
        SampleOrder order = weighted.order(1);
        assertEquals(weighted.epochLength(), order.length());
        assertArrayEquals(weighted.indices(1), read(order));
    }

    private static DistributedShardSampler.Builder ranks(long[] shards, int rank, int world) {
        return DistributedShardSampler.builder().setShardSizes(shards).optRank(rank).optWorldSize(world).optSeed(11);
    }

    @Test
    void distributedShardsShuffledOnDemandKeepTheirPartition() {
        long[] shards = {100, 100, 37, 0, 100, 5};
        for (int world : new int[]{2, 3, 8}) {
            Set<Long> union = new HashSet<>();
            long length = -1;
            for (int rank = 0; rank < world; rank++) {
                DistributedShardSampler arrays = ranks(shards, rank, world).build();
                DistributedShardSampler onDemand = ranks(shards, rank, world).arrayLimit(0).build();
                long[] own = onDemand.ownIndices(2);
                Set<Long> ownSet = new HashSet<>();
                for (long index : own) {
                    assertTrue(union.add(index), "index " + index + " on two ranks");
                    ownSet.add(index);
                }
                long[] sortedOwn = own.clone();
                long[] sortedArrays = arrays.ownIndices(2);
                Arrays.sort(sortedOwn);
                Arrays.sort(sortedArrays);
                assertArrayEquals(sortedArrays, sortedOwn, "the same samples, only their order differs");
                long[] padded = read(onDemand.order(2));
                assertArrayEquals(onDemand.indices(2), padded);
                assertArrayEquals(arrays.indices(2), read(arrays.order(2)), "array path: order agrees with indices");
                if (length < 0) {
                    length = padded.length;
                }
                assertEquals(length, padded.length, "every rank yields the same number of indices");
                for (long index : padded) {
                    assertTrue(ownSet.contains(index), "padding repeats the rank's own samples");
                }
            }
            assertEquals(Arrays.stream(shards).sum(), union.size(), "the ranks together cover every sample");
        }
    }

    @Test
    void distributedShardsBeyondTwoToThe31() {
        long[] shards = {3_000_000_000L, 3_000_000_000L, 1_000_000_000L};
        long[] starts = {0, 3_000_000_000L, 6_000_000_000L, 7_000_000_000L};
        Set<Integer> shardsSeen = new HashSet<>();
        for (int rank = 0; rank < 2; rank++) {
            DistributedShardSampler sampler = ranks(shards, rank, 2).build();
            assertEquals(6_000_000_000L, sampler.epochLength(), "the two largest shards bound a rank");
            SampleOrder order = sampler.order(0);
            Set<Integer> mine = new HashSet<>();
            SplittableRandom positions = new SplittableRandom(rank);
            for (int i = 0; i < 20_000; i++) {
                mine.add(shardOf(starts, order.index(positions.nextLong(order.length()))));
            }
            for (int shard : mine) {
                assertTrue(shardsSeen.add(shard), "shard " + shard + " read by two ranks");
            }
            MemfitException tooLong = assertThrows(MemfitException.class, () -> sampler.ownIndices(0));
            assertTrue(tooLong.getMessage().contains("order(epoch)"), tooLong.getMessage());
        }
        assertEquals(Set.of(0, 1, 2), shardsSeen, "every shard is read by some rank");
    }

    private static int shardOf(long[] starts, long index) {
        for (int s = starts.length - 2; s >= 0; s--) {
            if (index >= starts[s]) {
                return s;
            }
        }
        throw new AssertionError("index " + index + " before the first shard");
    }

    @Test
    void distributedBuilderSaysWhatIsMissing() {
        MemfitException none = assertThrows(MemfitException.class, () -> DistributedShardSampler.builder().build());
        assertTrue(none.getMessage().startsWith("setShardSizes(...) is required"), none.getMessage());
        MemfitException rank = assertThrows(MemfitException.class, () -> ranks(new long[]{5, 5}, 2, 2).build());
        assertTrue(rank.getMessage().contains("got rank 2 of 2") && rank.getMessage().contains("optRank"), rank.getMessage());
        MemfitException environment = assertThrows(MemfitException.class, () -> ranks(new long[]{5, 5}, 0, 1)
                .optEnvironment(java.util.Map.of("WORLD_SIZE", "two", "RANK", "0")).build());
        assertTrue(environment.getMessage().contains("expected integers"), environment.getMessage());
        assertEquals("DistributedShardSampler[rank 1 of 2, 2 shards]", ranks(new long[]{5, 5}, 0, 1)
                .optEnvironment(java.util.Map.of("RANK", "1", "WORLD_SIZE", "2")).build().toString(),
                "the environment wins over optRank and optWorldSize");
    }
}
