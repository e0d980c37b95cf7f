package dev.memfit.sample;

import dev.memfit.MemfitException;

import java.util.Arrays;
import java.util.Map;
import java.util.Objects;
import java.util.SplittableRandom;

/**
 * The samples one rank of a data-parallel job reads: whole shards, rank r taking shards r, r+R, r+2R... of an order
 * shuffled per epoch (the same order on every rank, from the shared seed), and its samples shuffled per epoch.
 *
 * <p>Rules, tested: the ranks' samples are disjoint and together cover every sample; with fewer shards than ranks,
 * samples (not shards) are dealt round-robin so every rank still gets work; and every rank yields the same number
 * of indices, the shorter ones padded by repeating their own first indices of the epoch (as PyTorch's
 * {@code DistributedSampler} pads), so that no rank waits at the end of an epoch.
 *
 * <p>{@link #order(long)} computes each position on demand from the rank's shard ranges, so a rank may own more
 * than 2^31 samples; its shuffle is the same as {@link ShuffledSampler}'s (Fisher-Yates up to
 * {@link ShuffledSampler#ARRAY_LIMIT} own samples, a keyed bijection above).
 *
 * <pre>{@code
 * Sampler sampler = DistributedShardSampler.builder().setShardSizes(store.shardSizes())
 *         .optEnvironment(System.getenv()).optSeed(42).build();   // rank and world size from torchrun or SLURM
 * }</pre>
 */
public final class DistributedShardSampler implements Sampler {

    private final long[] shardSizes;
    private final long[] shardStarts;
    private final int rank;
    private final int worldSize;
    private final long seed;
    private final long epochLength;
    private final long total;
    private final long arrayLimit;

    private DistributedShardSampler(Builder builder, long[] shardSizes, long[] shardStarts, long total, int rank,
                                    int worldSize) {
        this.shardSizes = shardSizes;
        this.shardStarts = shardStarts;
        this.total = total;
        this.rank = rank;
        this.worldSize = worldSize;
        this.seed = builder.seed;
        this.arrayLimit = builder.arrayLimit;
        long longest = 0;
        for (int r = 0; r < worldSize; r++) {
            longest = Math.max(longest, ownCount(r));
        }
        this.epochLength = longest;
    }

    /**
     * Starts configuring a sampler: {@code setShardSizes} is required; rank 0 of 1 and seed 1 by default.
     *
     * @return the builder
     */
    public static Builder builder() {
        return new Builder();
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
        Arrays.sort(sorted);
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
     * @throws MemfitException when the rank owns more samples than one array holds: use {@link #order(long)}
     */
    public long[] ownIndices(long epoch) {
        Own own = own(epoch);
        return SampleOrder.toArray(new Padded(own, own.count));
    }

    @Override
    public long epochLength() {
        return epochLength;
    }

    /**
     * {@inheritDoc}
     *
     * @throws MemfitException when the epoch is longer than one array holds: use {@link #order(long)}
     */
    @Override
    public long[] indices(long epoch) {
        return SampleOrder.toArray(order(epoch));
    }

    /**
     * {@inheritDoc}
     *
     * <p>Computed on demand from the rank's shard ranges; only the shuffle of up to
     * {@link ShuffledSampler#ARRAY_LIMIT} own samples is held as an array.
     */
    @Override
    public SampleOrder order(long epoch) {
        return new Padded(own(epoch), epochLength);
    }

    /** The rank's samples of an epoch: where each own position lies, and their shuffle. */
    private Own own(long epoch) {
        long[] starts;
        long[] offsets;
        if (dealSamples()) {
            starts = null;
            offsets = new long[]{0, ownCount(rank)};
        } else {
            long[] order = new long[shardSizes.length];
            for (int s = 0; s < order.length; s++) {
                order[s] = s;
            }
            ShuffledSampler.shuffle(order, ShuffledSampler.random(seed, epoch));
            int mine = (order.length - rank + worldSize - 1) / worldSize;
            starts = new long[mine];
            offsets = new long[mine + 1];
            for (int k = 0, position = rank; position < order.length; k++, position += worldSize) {
                int shard = (int) order[position];
                starts[k] = shardStarts[shard];
                offsets[k + 1] = offsets[k] + shardSizes[shard];
            }
        }
        long count = offsets[offsets.length - 1];
        SplittableRandom random = ShuffledSampler.random(seed ^ (0x5DEECE66DL * (rank + 1)), epoch);
        return new Own(count, starts, offsets, ShuffledSampler.permutation(count, random, arrayLimit));
    }

    /**
     * A rank's own samples: own position p (before the shuffle) is sample {@code rank + p * worldSize} when samples
     * are dealt, else row {@code p - offsets[k]} of the k-th own shard, which starts at sample {@code starts[k]}.
     */
    private record Own(long count, long[] starts, long[] offsets, SampleOrder shuffle) {
    }

    /** The shuffled own samples, followed by as many of them again as the padding to the epoch length needs. */
    private final class Padded implements SampleOrder {

        private final Own own;
        private final long length;

        Padded(Own own, long length) {
            this.own = own;
            this.length = length;
        }

        @Override
        public long length() {
            return length;
        }

        @Override
        public long index(long position) {
            Objects.checkIndex(position, length);
            long p = own.shuffle.index(position < own.count ? position : (position - own.count) % own.count);
            if (own.starts == null) {
                return rank + p * worldSize;
            }
            int k = Arrays.binarySearch(own.offsets, p);
            k = k >= 0 ? k : -k - 2;   // the shard whose range [offsets[k], offsets[k+1]) holds p
            return own.starts[k] + (p - own.offsets[k]);
        }
    }

    /** The shards and the seed; rank and world size apart ({@link #rank()}, {@link #worldSize()}). */
    @Override
    public String settings() {
        return "DistributedShardSampler[" + shardSizes.length + " shards of " + total + " samples (sizes hash "
                + java.util.Arrays.hashCode(shardSizes) + "), seed " + seed + "]";
    }

    @Override
    public int rank() {
        return rank;
    }

    @Override
    public int worldSize() {
        return worldSize;
    }

    @Override
    public String toString() {
        return "DistributedShardSampler[rank " + rank + " of " + worldSize + ", " + shardSizes.length + " shards]";
    }

    /**
     * Configures a {@link DistributedShardSampler}; {@link #build()} validates the settings.
     */
    public static final class Builder {

        private static final String[][] ENVIRONMENT = {
            {"RANK", "WORLD_SIZE"}, {"SLURM_PROCID", "SLURM_NTASKS"}, {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"},
        };

        private long[] shardSizes;
        private int rank;
        private int worldSize = 1;
        private long seed = 1;
        private Map<String, String> environment;
        private long arrayLimit = ShuffledSampler.ARRAY_LIMIT;

        private Builder() {
        }

        /**
         * Sets the number of samples in each shard (required); shard s holds the indices after those of shards
         * 0..s-1, as {@code ShardStore.shardSizes()} returns them.
         *
         * @param sizes samples per shard, each at least 0
         * @return this builder
         */
        public Builder setShardSizes(long... sizes) {
            this.shardSizes = sizes == null ? null : sizes.clone();
            return this;
        }

        /**
         * Sets this process's rank (default 0).
         *
         * @param value from 0 to world size - 1
         * @return this builder
         */
        public Builder optRank(int value) {
            this.rank = value;
            return this;
        }

        /**
         * Sets the number of ranks (default 1).
         *
         * @param value at least 1
         * @return this builder
         */
        public Builder optWorldSize(int value) {
            this.worldSize = value;
            return this;
        }

        /**
         * Sets the seed shared by all ranks (default 1).
         *
         * @param value the seed
         * @return this builder
         */
        public Builder optSeed(long value) {
            this.seed = value;
            return this;
        }

        /**
         * Reads rank and world size from the usual environment variables when they are set, over
         * {@link #optRank}/{@link #optWorldSize}: {@code RANK}/{@code WORLD_SIZE} (torchrun),
         * {@code SLURM_PROCID}/{@code SLURM_NTASKS}, {@code OMPI_COMM_WORLD_RANK}/{@code OMPI_COMM_WORLD_SIZE}.
         *
         * @param variables the environment, usually {@code System.getenv()}
         * @return this builder
         */
        public Builder optEnvironment(Map<String, String> variables) {
            this.environment = variables == null ? null : Map.copyOf(variables);
            return this;
        }

        /** Sets the largest own-sample count shuffled as an array, so that tests reach the on-demand shuffle. */
        Builder arrayLimit(long limit) {
            this.arrayLimit = limit;
            return this;
        }

        /**
         * Validates the settings and creates the sampler.
         *
         * @return the sampler
         * @throws MemfitException naming the setting to change
         */
        public DistributedShardSampler build() {
            if (shardSizes == null) {
                throw new MemfitException("setShardSizes(...) is required: the number of samples in each shard, "
                        + "for example ShardStore.shardSizes()");
            }
            int chosenRank = rank;
            int chosenWorld = worldSize;
            if (environment != null) {
                for (String[] pair : ENVIRONMENT) {
                    String r = environment.get(pair[0]);
                    String size = environment.get(pair[1]);
                    if (r != null && size != null) {
                        try {
                            chosenRank = Integer.parseInt(r.trim());
                            chosenWorld = Integer.parseInt(size.trim());
                        } catch (NumberFormatException e) {
                            throw new MemfitException(pair[0] + "=" + r + ", " + pair[1] + "=" + size
                                    + ": expected integers; fix the environment or leave optEnvironment out");
                        }
                        break;
                    }
                }
            }
            if (chosenWorld < 1 || chosenRank < 0 || chosenRank >= chosenWorld) {
                throw new MemfitException("rank must be in [0, world size) and world size >= 1, got rank " + chosenRank
                        + " of " + chosenWorld + "; set optRank and optWorldSize (or the environment) accordingly");
            }
            // Empty shards carry no samples: they are left out so that every rank's shards hold something.
            long total = 0;
            int kept = 0;
            long[] starts = new long[shardSizes.length];
            long[] sizes = new long[shardSizes.length];
            for (int s = 0; s < shardSizes.length; s++) {
                if (shardSizes[s] < 0) {
                    throw new MemfitException("shard " + s + " has a negative size " + shardSizes[s]);
                }
                if (shardSizes[s] > 0) {
                    starts[kept] = total;
                    sizes[kept++] = shardSizes[s];
                }
                total = Math.addExact(total, shardSizes[s]);
            }
            if (total < chosenWorld) {
                throw new MemfitException(total + " samples cannot be split over " + chosenWorld
                        + " ranks; use fewer ranks or more data");
            }
            return new DistributedShardSampler(this, Arrays.copyOf(sizes, kept), Arrays.copyOf(starts, kept), total,
                    chosenRank, chosenWorld);
        }
    }
}
