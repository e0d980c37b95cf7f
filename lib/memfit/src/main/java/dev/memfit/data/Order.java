package dev.memfit.data;

import dev.memfit.MemfitException;
import dev.memfit.sample.BlockShuffleSampler;
import dev.memfit.sample.DistributedShardSampler;
import dev.memfit.sample.Sampler;
import dev.memfit.sample.SequentialSampler;
import dev.memfit.sample.ShuffledSampler;
import dev.memfit.sample.WeightedSampler;
import dev.memfit.shard.ObjectShardStore;
import dev.memfit.shard.ShardStore;
import dev.memfit.source.SampleSource;

import java.util.Map;
import java.util.Objects;

/**
 * Which samples an epoch visits, and in which order: the one setting {@link LoaderBuilder#optOrder} takes, for any
 * source. Every order is a function of (seed, epoch, position), so a loader resumed mid-epoch skips to its position
 * instead of replaying, and the same seed gives the same batches whether the data is in memory, mapped or in a bucket.
 * The order is fitted to the source when the loader is built (its size after any subset, its shards, the batch size).
 *
 * <pre>{@code
 * Datasets.open(file).optOrder(Order.shuffle(42))                        // every sample once, random order
 * Datasets.open(atlas).optOrder(Order.blockShuffle(1000, 16, 42))      // streaming: long reads, bounded memory
 * Datasets.open(shards).optOrder(Order.weighted(cellTypes, 42, 3))      // rare classes as often as common ones
 * Datasets.open(shards).optOrder(Order.distributed(42))                 // this rank's shards (torchrun / SLURM)
 * }</pre>
 */
public sealed interface Order {

    /**
     * Every sample once, in index order (a shard folder in a bucket: shard by shard, staged ahead).
     *
     * @return the order
     */
    static Order sequential() {
        return new Sequential();
    }

    /**
     * Every sample once per epoch, in a seeded random order that changes every epoch ({@link ShuffledSampler}); a
     * shard folder in a bucket is shuffled shard by shard, so that each shard is staged once per epoch.
     *
     * @param seed the seed
     * @return the order
     */
    static Order shuffle(long seed) {
        return new Shuffle(seed);
    }

    /**
     * Every sample once per epoch, in seeded random blocks of consecutive samples shuffled within fetches of
     * {@code fetchFactor} batches ({@link BlockShuffleSampler}, scDataset's block shuffling): files are read in long
     * stretches, and memory holds one fetch whatever the size of the data.
     *
     * @param blockSize consecutive samples per block, at least 1
     * @param fetchFactor batches per fetch, at least 1
     * @param seed the seed
     * @return the order
     */
    static Order blockShuffle(int blockSize, int fetchFactor, long seed) {
        if (blockSize < 1 || fetchFactor < 1) {
            throw new MemfitException("blockShuffle needs a block size and a fetch factor of at least 1, got "
                    + blockSize + " and " + fetchFactor);
        }
        return new BlockShuffle(blockSize, fetchFactor, seed);
    }

    /**
     * As many samples per epoch as the source has, drawn with replacement so that every class is drawn as often,
     * blending from uniform (epoch 0) to fully weighted at {@code warmupEpochs} ({@link WeightedSampler}).
     *
     * @param labels the class of each sample (after any subset), from 0
     * @param seed the seed
     * @param warmupEpochs epochs of the curriculum from uniform to weighted (0: weighted from the start)
     * @return the order
     */
    static Order weighted(int[] labels, long seed, int warmupEpochs) {
        return new Weighted(labels.clone(), seed, warmupEpochs);
    }

    /**
     * This rank's part of a data-parallel job, rank and world size read from the environment ({@code RANK} and
     * {@code WORLD_SIZE} as torchrun sets them, or SLURM's): whole shards of a shard folder, or samples dealt
     * round-robin from any other source, shuffled per epoch ({@link DistributedShardSampler}).
     *
     * @param seed the seed, the same on every rank
     * @return the order
     */
    static Order distributed(long seed) {
        return new Distributed(-1, -1, seed);
    }

    /**
     * This rank's part of a data-parallel job, as {@link #distributed(long)}, with the rank and world size given.
     *
     * @param rank this process's rank, from 0
     * @param worldSize the number of ranks, at least 1
     * @param seed the seed, the same on every rank
     * @return the order
     */
    static Order distributed(int rank, int worldSize, long seed) {
        if (worldSize < 1 || rank < 0 || rank >= worldSize) {
            throw new MemfitException("distributed order: rank " + rank + " of world size " + worldSize
                    + " (expected 0 <= rank < worldSize)");
        }
        return new Distributed(rank, worldSize, seed);
    }

    /**
     * A sampler of your own; its epoch length and indices must fit the source the loader reads.
     *
     * @param sampler the sampler
     * @return the order
     */
    static Order of(Sampler sampler) {
        return new Custom(Objects.requireNonNull(sampler, "sampler"));
    }

    /**
     * The sampler for one source, when the loader is built.
     *
     * @param source the samples the loader reads (after any subset)
     * @param batchSize the loader's batch size
     * @return the sampler
     */
    Sampler sampler(SampleSource source, int batchSize);

    /** See {@link #sequential()}. */
    record Sequential() implements Order {
        @Override
        public Sampler sampler(SampleSource source, int batchSize) {
            return new SequentialSampler(source.size());
        }
    }

    /**
     * See {@link #shuffle(long)}.
     *
     * @param seed the seed
     */
    record Shuffle(long seed) implements Order {
        @Override
        public Sampler sampler(SampleSource source, int batchSize) {
            return new ShuffledSampler(source.size(), seed);
        }
    }

    /**
     * See {@link #blockShuffle(int, int, long)}.
     *
     * @param blockSize consecutive samples per block
     * @param fetchFactor batches per fetch
     * @param seed the seed
     */
    record BlockShuffle(int blockSize, int fetchFactor, long seed) implements Order {
        @Override
        public Sampler sampler(SampleSource source, int batchSize) {
            return BlockShuffleSampler.builder().setSize(source.size()).setBlockSize(blockSize).optFetchFactor(fetchFactor)
                    .setBatchSize(batchSize).optSeed(seed).build();
        }
    }

    /**
     * See {@link #weighted(int[], long, int)}.
     *
     * @param labels the class of each sample
     * @param seed the seed
     * @param warmupEpochs epochs of the curriculum
     */
    record Weighted(int[] labels, long seed, int warmupEpochs) implements Order {
        @Override
        public Sampler sampler(SampleSource source, int batchSize) {
            if (labels.length != source.size()) {
                throw new MemfitException("weighted order: " + labels.length + " labels for the " + source.size()
                        + " samples of " + source.describe() + " (expected one label per sample, after any subset)");
            }
            return new WeightedSampler(labels, seed, warmupEpochs);
        }

        /**
         * The class of each sample.
         *
         * @return a copy
         */
        @Override
        public int[] labels() {
            return labels.clone();
        }

        @Override
        public String toString() {
            return "Weighted[" + labels.length + " labels, seed=" + seed + ", warmupEpochs=" + warmupEpochs + "]";
        }
    }

    /**
     * See {@link #distributed(int, int, long)}; a rank of -1 reads rank and world size from the environment.
     *
     * @param rank this process's rank, or -1
     * @param worldSize the number of ranks, or -1
     * @param seed the seed
     */
    record Distributed(int rank, int worldSize, long seed) implements Order {
        @Override
        public Sampler sampler(SampleSource source, int batchSize) {
            long[] shards = source instanceof ShardStore store ? store.shardSizes()
                    : source instanceof ObjectShardStore objects ? objects.shardSizes() : new long[]{source.size()};
            DistributedShardSampler.Builder settings = DistributedShardSampler.builder().setShardSizes(shards).optSeed(seed);
            if (rank < 0) {
                settings.optEnvironment(Map.copyOf(System.getenv()));
            } else {
                settings.optRank(rank).optWorldSize(worldSize);
            }
            return settings.build();
        }
    }

    /**
     * See {@link #of(Sampler)}.
     *
     * @param sampler the sampler
     */
    record Custom(Sampler sampler) implements Order {
        @Override
        public Sampler sampler(SampleSource source, int batchSize) {
            return sampler;
        }
    }
}
