package dev.memfit.sample;

import dev.memfit.MemfitException;

import java.util.Arrays;
import java.util.SplittableRandom;

/**
 * Visits every sample once per epoch one shard at a time: the shards in a random order seeded by (seed, epoch), and
 * the samples of each shard in a random order of their own. A reader thus needs one shard (and the next ones it
 * prefetches) at a time, which is what lets shards staged from object storage into a cache smaller than the data be
 * downloaded once per epoch instead of again and again; the price is batches drawn from one shard (two at a shard
 * boundary), as {@link BlockShuffleSampler} trades mixing for contiguous reads.
 *
 * <p>{@link #shardOrder(long)} tells readers which shards come next; {@link #order(long)} computes positions on
 * demand, holding one shard's permutation at a time (an array up to {@link ShuffledSampler#ARRAY_LIMIT} samples, a
 * keyed bijection above).
 *
 * <pre>{@code
 * Sampler sampler = ShardShuffleSampler.builder().setShardSizes(store.shardSizes()).optSeed(42).build();
 * }</pre>
 */
public final class ShardShuffleSampler implements Sampler {

    private final long[] sizes;
    private final long[] starts;
    private final long total;
    private final long seed;

    private ShardShuffleSampler(long[] sizes, long seed) {
        this.sizes = sizes;
        this.seed = seed;
        this.starts = new long[sizes.length];
        long sum = 0;
        for (int s = 0; s < sizes.length; s++) {
            starts[s] = sum;
            sum = Math.addExact(sum, sizes[s]);
        }
        this.total = sum;
    }

    /**
     * Starts configuring a sampler: {@code setShardSizes} is required; seed 1 by default.
     *
     * @return the builder
     */
    public static Builder builder() {
        return new Builder();
    }

    /**
     * The order in which an epoch visits the shards.
     *
     * @param epoch the epoch
     * @return shard numbers (as in the sizes given), each once
     */
    public int[] shardOrder(long epoch) {
        long[] order = new long[sizes.length];
        for (int s = 0; s < order.length; s++) {
            order[s] = s;
        }
        ShuffledSampler.shuffle(order, ShuffledSampler.random(seed, epoch));
        int[] shards = new int[order.length];
        for (int k = 0; k < order.length; k++) {
            shards[k] = (int) order[k];
        }
        return shards;
    }

    @Override
    public long epochLength() {
        return total;
    }

    @Override
    public long[] indices(long epoch) {
        return SampleOrder.toArray(order(epoch));
    }

    @Override
    public SampleOrder order(long epoch) {
        int[] shards = shardOrder(epoch);
        long[] offsets = new long[shards.length + 1];
        for (int k = 0; k < shards.length; k++) {
            offsets[k + 1] = offsets[k] + sizes[shards[k]];
        }
        return new SampleOrder() {
            /** The permutation of the shard last asked for: positions are read in order, shard after shard. */
            private int cachedPosition = -1;
            private SampleOrder cached;

            @Override
            public long length() {
                return total;
            }

            @Override
            public synchronized long index(long position) {
                java.util.Objects.checkIndex(position, total);
                int k = Arrays.binarySearch(offsets, position);
                // the last of equal offsets (empty shards) holding the position
                k = k >= 0 ? k : -k - 2;
                while (k + 1 < shards.length && offsets[k + 1] == position) {
                    k++;
                }
                if (k != cachedPosition) {
                    int shard = shards[k];
                    SplittableRandom random = ShuffledSampler.random(seed ^ (0x9E3779B97F4A7C15L * (shard + 1)), epoch);
                    cached = ShuffledSampler.permutation(sizes[shard], random, ShuffledSampler.ARRAY_LIMIT);
                    cachedPosition = k;
                }
                return starts[shards[k]] + cached.index(position - offsets[k]);
            }
        };
    }

    @Override
    public String settings() {
        return "ShardShuffleSampler[" + sizes.length + " shards of " + total + " samples (sizes hash "
                + Arrays.hashCode(sizes) + "), seed " + seed + "]";
    }

    @Override
    public String toString() {
        return settings();
    }

    /** Configures a {@link ShardShuffleSampler}. */
    public static final class Builder {
        private long[] sizes;
        private long seed = 1;

        private Builder() {
        }

        /**
         * Sets the samples of each shard (required): shard s holds the indices after those of shards 0..s-1, as
         * {@code ShardStore.shardSizes()} returns them.
         *
         * @param shardSizes samples per shard, each at least 0
         * @return this builder
         */
        public Builder setShardSizes(long... shardSizes) {
            this.sizes = shardSizes == null ? null : shardSizes.clone();
            return this;
        }

        /**
         * Sets the seed (default 1).
         *
         * @param value the seed
         * @return this builder
         */
        public Builder optSeed(long value) {
            this.seed = value;
            return this;
        }

        /**
         * Validates the settings and creates the sampler.
         *
         * @return the sampler
         */
        public ShardShuffleSampler build() {
            if (sizes == null || sizes.length == 0) {
                throw new MemfitException("ShardShuffleSampler: setShardSizes(...) is required, with at least one "
                        + "shard (for example ShardStore.shardSizes())");
            }
            for (int s = 0; s < sizes.length; s++) {
                if (sizes[s] < 0) {
                    throw new MemfitException("ShardShuffleSampler: shard " + s + " has a negative size " + sizes[s]);
                }
            }
            return new ShardShuffleSampler(sizes, seed);
        }
    }
}
