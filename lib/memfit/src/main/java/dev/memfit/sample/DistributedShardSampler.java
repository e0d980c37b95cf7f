package dev.memfit.sample;

import dev.memfit.MemfitException;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;

/**
 * The samples one rank of a data-parallel job reads: whole shards, rank r taking shards r, r+R, r+2R... of an order
 * shuffled per epoch (the same order on every rank, from the shared seed), and its samples shuffled per epoch.
 *
 * <p>Rules, tested: the ranks' samples are disjoint and together cover every sample; with fewer shards than ranks,
 * samples (not shards) are dealt round-robin so every rank still gets work; and every rank yields the same number
 * of indices, the shorter ones padded by repeating their own first indices of the epoch (as PyTorch's
 * {@code DistributedSampler} pads), so that no rank waits at the end of an epoch.
 */
public final class DistributedShardSampler implements Sampler {

    private final long[] shardSizes;
    private final long[] shardStarts;
    private final int rank;
    private final int worldSize;
    private final long seed;
    private final long epochLength;
    private final long total;

    /**
     * Creates the sampler.
     *
     * @param shardSizes samples per shard; shard s holds the indices after those of shards 0..s-1
     * @param rank this process's rank, from 0
     * @param worldSize the number of ranks
     * @param seed the seed shared by all ranks
     */
    public DistributedShardSampler(long[] shardSizes, int rank, int worldSize, long seed) {
        if (worldSize < 1 || rank < 0 || rank >= worldSize) {
            throw new MemfitException("rank must be in [0, world size) and world size >= 1, got rank " + rank
                    + " of " + worldSize);
        }
        // Empty shards carry no samples: they are left out so that every rank's shards hold something.
        long total = 0;
        List<long[]> kept = new ArrayList<>();
        for (int s = 0; s < shardSizes.length; s++) {
            if (shardSizes[s] < 0) {
                throw new MemfitException("shard " + s + " has a negative size " + shardSizes[s]);
            }
            if (shardSizes[s] > 0) {
                kept.add(new long[]{total, shardSizes[s]});
            }
            total += shardSizes[s];
        }
        this.shardStarts = kept.stream().mapToLong(shard -> shard[0]).toArray();
        this.shardSizes = kept.stream().mapToLong(shard -> shard[1]).toArray();
        this.total = total;
        if (total < worldSize) {
            throw new MemfitException(total + " samples cannot be split over " + worldSize + " ranks");
        }
        this.rank = rank;
        this.worldSize = worldSize;
        this.seed = seed;
        long longest = 0;
        for (int r = 0; r < worldSize; r++) {
            longest = Math.max(longest, ownCount(r));
        }
        this.epochLength = longest;
    }

    /**
     * Reads rank and world size from the usual environment variables: {@code RANK}/{@code WORLD_SIZE} (torchrun),
     * {@code SLURM_PROCID}/{@code SLURM_NTASKS}, {@code OMPI_COMM_WORLD_RANK}/{@code OMPI_COMM_WORLD_SIZE};
     * rank 0 of 1 when none is set.
     *
     * @param shardSizes samples per shard
     * @param seed the shared seed
     * @param environment the environment, usually {@code System.getenv()}
     * @return the sampler
     */
    public static DistributedShardSampler fromEnvironment(long[] shardSizes, long seed, Map<String, String> environment) {
        String[][] names = {{"RANK", "WORLD_SIZE"}, {"SLURM_PROCID", "SLURM_NTASKS"}, {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"}};
        for (String[] pair : names) {
            String rank = environment.get(pair[0]);
            String size = environment.get(pair[1]);
            if (rank != null && size != null) {
                try {
                    return new DistributedShardSampler(shardSizes, Integer.parseInt(rank.trim()), Integer.parseInt(size.trim()), seed);
                } catch (NumberFormatException e) {
                    throw new MemfitException(pair[0] + "=" + rank + ", " + pair[1] + "=" + size + ": expected integers");
                }
            }
        }
        return new DistributedShardSampler(shardSizes, 0, 1, seed);
    }

    private boolean dealSamples() {
        return shardSizes.length < worldSize;
    }

    private long ownCount(int r) {
        if (dealSamples()) {
            return total / worldSize + (r < total % worldSize ? 1 : 0);
        }
        // Which shards a rank gets depends on the epoch's shard order, so the longest over any order bounds it:
        // the sum of the largest ceil(S / R) shards.
        long[] sorted = shardSizes.clone();
        java.util.Arrays.sort(sorted);
        int per = (shardSizes.length + worldSize - 1) / worldSize;
        long sum = 0;
        for (int i = 0; i < per; i++) {
            sum += sorted[sorted.length - 1 - i];
        }
        return sum;
    }

    /**
     * This rank's own samples in an epoch, before padding.
     *
     * @param epoch the epoch
     * @return the indices, shuffled
     */
    public long[] ownIndices(long epoch) {
        SplittableRandom random = ShuffledSampler.random(seed, epoch);
        List<Long> mine = new ArrayList<>();
        if (dealSamples()) {
            // Round-robin over the samples that exist (empty shards hold none, so the global range is exact).
            for (long i = rank; i < total; i += worldSize) {
                mine.add(i);
            }
        } else {
            long[] order = new long[shardSizes.length];
            for (int s = 0; s < order.length; s++) {
                order[s] = s;
            }
            ShuffledSampler.shuffle(order, random);
            for (int position = rank; position < order.length; position += worldSize) {
                int shard = (int) order[position];
                for (long i = 0; i < shardSizes[shard]; i++) {
                    mine.add(shardStarts[shard] + i);
                }
            }
        }
        long[] indices = mine.stream().mapToLong(Long::longValue).toArray();
        ShuffledSampler.shuffle(indices, ShuffledSampler.random(seed ^ (0x5DEECE66DL * (rank + 1)), epoch));
        return indices;
    }

    @Override
    public long epochLength() {
        return epochLength;
    }

    @Override
    public long[] indices(long epoch) {
        long[] own = ownIndices(epoch);
        long[] padded = java.util.Arrays.copyOf(own, Math.toIntExact(epochLength));
        for (int i = own.length; i < padded.length; i++) {
            padded[i] = own[(i - own.length) % own.length];
        }
        return padded;
    }

    @Override
    public String toString() {
        return "DistributedShardSampler[rank " + rank + " of " + worldSize + ", " + shardSizes.length + " shards]";
    }
}
