package dev.memfit.sample;

import dev.memfit.MemfitException;
import org.junit.jupiter.api.Test;

import java.util.Arrays;
import java.util.HashSet;
import java.util.Set;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Shard by shard: every sample once, the shards in the order {@code shardOrder} names, each shard's run shuffled. */
class ShardShuffleSamplerTest {

    private static final long[] SIZES = {30, 0, 45, 1, 60, 24};

    private static int shardOf(long index) {
        long start = 0;
        for (int s = 0; s < SIZES.length; s++) {
            if (index < start + SIZES[s]) {
                return s;
            }
            start += SIZES[s];
        }
        throw new AssertionError(index);
    }

    @Test
    void eachEpochVisitsTheShardsInItsOrderAndEverySampleOnce() {
        ShardShuffleSampler sampler = ShardShuffleSampler.builder().setShardSizes(SIZES).optSeed(7).build();
        assertEquals(160, sampler.epochLength());
        Set<String> orders = new HashSet<>();
        for (long epoch = 0; epoch < 4; epoch++) {
            long[] indices = sampler.indices(epoch);
            int[] shards = sampler.shardOrder(epoch);
            orders.add(Arrays.toString(shards));
            assertEquals(160, Arrays.stream(indices).distinct().count());
            assertEquals(0, Arrays.stream(indices).min().orElseThrow());
            assertEquals(159, Arrays.stream(indices).max().orElseThrow());
            // the runs of shards, empty ones left out, follow shardOrder
            int[] visited = Arrays.stream(indices).mapToInt(ShardShuffleSamplerTest::shardOf).toArray();
            int[] runs = java.util.stream.IntStream.range(0, visited.length)
                    .filter(i -> i == 0 || visited[i] != visited[i - 1]).map(i -> visited[i]).toArray();
            assertArrayEquals(Arrays.stream(shards).filter(s -> SIZES[s] > 0).toArray(), runs, "epoch " + epoch);
            // shuffled within a shard: shard 4's 60 samples are not in file order
            long[] run4 = Arrays.stream(indices).filter(i -> shardOf(i) == 4).toArray();
            assertFalse(Arrays.equals(run4, java.util.stream.LongStream.range(76, 136).toArray()), "epoch " + epoch);
            assertArrayEquals(indices, sampler.indices(epoch), "the same order again");
        }
        assertTrue(orders.size() > 1, "the shard order changes between epochs: " + orders);
        assertThrows(MemfitException.class, () -> ShardShuffleSampler.builder().build());
        assertThrows(MemfitException.class, () -> ShardShuffleSampler.builder().setShardSizes(3, -1).build());
    }
}
