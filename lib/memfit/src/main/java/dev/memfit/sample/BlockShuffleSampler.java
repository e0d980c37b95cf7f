package dev.memfit.sample;

import dev.memfit.MemfitException;

import java.util.SplittableRandom;

/**
 * Visits every sample once per epoch in blocks of consecutive indices, the strategy of scDataset and annbatch: cheap
 * to read from disk or compressed files, since a source reads a run of consecutive indices as one range, at the cost
 * of batches that mix fewer parts of the data than a uniform shuffle (measure it with {@link BatchDiversity}).
 *
 * <p>The samples are cut into blocks of {@code blockSize} consecutive indices, block {@code b} holding
 * {@code [b * blockSize, (b + 1) * blockSize)} (the last one shorter when the size is not a multiple). Each epoch
 * visits the blocks in a random order seeded by (seed, epoch) and groups them into fetches of
 * {@code ceil(fetchFactor * batchSize / blockSize)} whole blocks, that is at least {@code fetchFactor} batches
 * (scDataset's {@code fetch_factor}; annbatch's {@code preload_nchunks} counts blocks instead); the samples of each
 * fetch are shuffled together, and the epoch is the fetches one after the other. A batch thus holds samples from at
 * most the blocks of one or two fetches, read as a few contiguous runs. With a block of 1 it is a uniform shuffle;
 * a block size that divides {@code fetchFactor * batchSize} makes fetches of exactly {@code fetchFactor} batches.
 *
 * <p>The short last block goes to a seeded random place in the block order, like the others. {@link #order(long)}
 * computes the order one fetch at a time (only the block order is held: an array up to
 * {@link ShuffledSampler#ARRAY_LIMIT} blocks, a keyed bijection above), so epochs of any {@code long} length work.
 *
 * <pre>{@code
 * Sampler blocks = BlockShuffleSampler.builder().setSize(source.size()).setBlockSize(64).setBatchSize(256)
 *         .optFetchFactor(16).optSeed(42).build();
 * try (Loader loader = Datasets.shards(folder).optBatchSize(256).optSampler(blocks).build()) { ... }
 * }</pre>
 */
public final class BlockShuffleSampler implements Sampler {

    /** The default fetch factor: 16 batches per fetch, scDataset's suggestion for mixing close to a random batch. */
    public static final int DEFAULT_FETCH_FACTOR = 16;

    private final long size;
    private final int blockSize;
    private final int batchSize;
    private final int fetchFactor;
    private final long seed;
    private final long blocks;
    private final int fetchBlocks;
    private final long arrayLimit;

    private BlockShuffleSampler(Builder builder, long blocks, int fetchBlocks) {
        this.size = builder.size;
        this.blockSize = builder.blockSize;
        this.batchSize = builder.batchSize;
        this.fetchFactor = builder.fetchFactor;
        this.seed = builder.seed;
        this.arrayLimit = builder.arrayLimit;
        this.blocks = blocks;
        this.fetchBlocks = fetchBlocks;
    }

    /**
     * Starts configuring a sampler: {@code setSize}, {@code setBlockSize} and {@code setBatchSize} are required;
     * fetch factor {@value #DEFAULT_FETCH_FACTOR} and seed 1 by default.
     *
     * @return the builder
     */
    public static Builder builder() {
        return new Builder();
    }

    @Override
    public long epochLength() {
        return size;
    }

    /**
     * The consecutive samples in a block (the last block may be shorter).
     *
     * @return the block size
     */
    public int blockSize() {
        return blockSize;
    }

    /**
     * The samples in a full fetch: whole blocks, at least {@code fetchFactor * batchSize} (unless the epoch is
     * shorter).
     *
     * @return the fetch size in samples
     */
    public long fetchSize() {
        return Math.min(size, (long) fetchBlocks * blockSize);
    }

    /**
     * {@inheritDoc}
     *
     * @throws MemfitException past 2^31 samples, which no array holds: use {@link #order(long)}
     */
    @Override
    public long[] indices(long epoch) {
        return SampleOrder.toArray(order(epoch));
    }

    /**
     * {@inheritDoc}
     *
     * <p>Computed one fetch at a time; only the block order (and the fetch last read) is held.
     */
    @Override
    public SampleOrder order(long epoch) {
        return new Order(ShuffledSampler.random(seed, epoch));
    }

    @Override
    public String toString() {
        return "BlockShuffleSampler[" + size + " samples, blocks of " + blockSize + ", fetch factor " + fetchFactor
                + " x batch " + batchSize + " = " + fetchBlocks + " blocks, seed " + seed + "]";
    }

    /** One fetch's samples, already shuffled: immutable, so threads can share the last one read. */
    private record Fetch(long number, long start, long[] samples) {
    }

    /** One epoch's order: the block order plus a per-fetch shuffle, each derived from the epoch's generator. */
    private final class Order implements SampleOrder {
        private final SampleOrder blockOrder;
        private final boolean shortLast;
        private final long shortAt;
        private final long fetches;
        private final long fetchKey;
        private volatile Fetch last;

        Order(SplittableRandom random) {
            shortLast = size % blockSize != 0;
            long full = size / blockSize;
            blockOrder = ShuffledSampler.permutation(full, random, arrayLimit);
            // The short block joins the order at a random place, so its samples are not always in the last fetch.
            shortAt = shortLast ? random.nextLong(full + 1) : -1;
            fetchKey = random.nextLong();
            fetches = (blocks + fetchBlocks - 1) / fetchBlocks;
        }

        @Override
        public long length() {
            return size;
        }

        /** The first position of the block at place {@code k} of the block order ({@code size} past the last). */
        private long start(long k) {
            if (k >= blocks) {
                return size;
            }
            return k * blockSize - (shortLast && k > shortAt ? blockSize - size % blockSize : 0);
        }

        private long blockAt(long k) {
            if (!shortLast || k < shortAt) {
                return blockOrder.index(k);
            }
            return k == shortAt ? blocks - 1 : blockOrder.index(k - 1);
        }

        private Fetch fetchOf(long position) {
            Fetch cached = last;
            if (cached != null && position >= cached.start && position - cached.start < cached.samples.length) {
                return cached;
            }
            // Fetches before the short block are exactly fetchBlocks * blockSize long, later ones start less than a
            // block earlier: the fetch is the estimate or the next one.
            long f = position / ((long) fetchBlocks * blockSize);
            if (f + 1 < fetches && position >= start((f + 1) * fetchBlocks)) {
                f++;
            }
            Fetch fetch = build(f);
            last = fetch;
            return fetch;
        }

        private Fetch build(long f) {
            long firstPlace = f * fetchBlocks;
            long endPlace = Math.min(blocks, firstPlace + fetchBlocks);
            long start = start(firstPlace);
            long[] samples = new long[(int) (start(endPlace) - start)];
            int n = 0;
            for (long k = firstPlace; k < endPlace; k++) {
                long first = blockAt(k) * blockSize;
                long end = Math.min(size, first + blockSize);
                for (long index = first; index < end; index++) {
                    samples[n++] = index;
                }
            }
            ShuffledSampler.shuffle(samples, ShuffledSampler.random(fetchKey, f));
            return new Fetch(f, start, samples);
        }

        @Override
        public long index(long position) {
            java.util.Objects.checkIndex(position, size);
            Fetch fetch = fetchOf(position);
            return fetch.samples[(int) (position - fetch.start)];
        }

        @Override
        public void copy(long from, long[] into, int count) {
            java.util.Objects.checkFromIndexSize(0, count, into.length);
            java.util.Objects.checkFromIndexSize(from, count, size);
            int done = 0;
            while (done < count) {
                long position = from + done;
                Fetch fetch = fetchOf(position);
                int offset = (int) (position - fetch.start);
                int n = Math.min(count - done, fetch.samples.length - offset);
                System.arraycopy(fetch.samples, offset, into, done, n);
                done += n;
            }
        }
    }

    /** Configures a {@link BlockShuffleSampler}. */
    public static final class Builder {
        private long size = -1;
        private int blockSize;
        private int batchSize;
        private int fetchFactor = DEFAULT_FETCH_FACTOR;
        private long seed = 1;
        private long arrayLimit = ShuffledSampler.ARRAY_LIMIT;

        private Builder() {
        }

        /**
         * Sets the number of samples (required).
         *
         * @param value at least 0 (any {@code long})
         * @return this builder
         */
        public Builder setSize(long value) {
            this.size = value;
            return this;
        }

        /**
         * Sets the consecutive samples read as one block (required): a larger block reads faster and mixes less.
         *
         * @param value at least 1
         * @return this builder
         */
        public Builder setBlockSize(int value) {
            this.blockSize = value;
            return this;
        }

        /**
         * Sets the loader's batch size (required), which with the fetch factor sets the fetch size.
         *
         * @param value at least 1
         * @return this builder
         */
        public Builder setBatchSize(int value) {
            this.batchSize = value;
            return this;
        }

        /**
         * Sets the batches per fetch (default {@value #DEFAULT_FETCH_FACTOR}): a fetch is the whole blocks that hold
         * at least {@code fetchFactor * batchSize} samples, shuffled together, so a larger factor mixes more blocks
         * into each batch.
         *
         * @param value at least 1
         * @return this builder
         */
        public Builder optFetchFactor(int value) {
            this.fetchFactor = value;
            return this;
        }

        /**
         * Sets the seed (default 1); with the epoch it fixes the order.
         *
         * @param value the seed
         * @return this builder
         */
        public Builder optSeed(long value) {
            this.seed = value;
            return this;
        }

        /** Sets the largest block count ordered as an array, so that tests reach the on-demand block order. */
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
        public BlockShuffleSampler build() {
            if (size < 0) {
                throw new MemfitException("setSize(...) is required: the number of samples, at least 0; got " + size);
            }
            if (blockSize < 1) {
                throw new MemfitException("setBlockSize(...) is required: consecutive samples per block, at least 1; got "
                        + blockSize);
            }
            if (batchSize < 1) {
                throw new MemfitException("setBatchSize(...) is required: the loader's batch size, at least 1; got "
                        + batchSize);
            }
            if (fetchFactor < 1) {
                throw new MemfitException("optFetchFactor must be at least 1 batch per fetch, got " + fetchFactor);
            }
            long wanted = (long) fetchFactor * batchSize;
            long fetchBlocks = (wanted + blockSize - 1) / blockSize;
            if (fetchBlocks * blockSize > SampleOrder.MAX_ARRAY) {
                throw new MemfitException("a fetch of " + fetchBlocks + " blocks of " + blockSize + " samples does not fit "
                        + "in one array; lower optFetchFactor, setBatchSize or setBlockSize");
            }
            long blocks = size / blockSize + (size % blockSize == 0 ? 0 : 1);
            return new BlockShuffleSampler(this, blocks, (int) fetchBlocks);
        }
    }
}
