package dev.memfit.sample;

import dev.memfit.MemfitException;

import java.util.Arrays;
import java.util.Locale;

/**
 * How mixed the batches of an epoch are: what reading contiguous blocks ({@link BlockShuffleSampler}, the
 * {@code .h5ad} stream's chunks) costs in randomness, next to a uniform shuffle.
 *
 * <p>Two measures, averaged over the full batches of one epoch: the number of distinct source blocks (runs of
 * {@code blockSize} consecutive indices, block {@code index / blockSize}) a batch draws from, and the Shannon entropy
 * in bits of a batch's labels. Data stored by class (as atlases often store cells of a type together) gives
 * block-shuffled batches fewer classes, so a lower entropy than a random batch's.
 *
 * <pre>{@code
 * BatchDiversity.Builder meter = BatchDiversity.builder().setBatchSize(256).setBlockSize(64).optLabels(labels);
 * BatchDiversity blocks = meter.measure(sampler.order(0));
 * BatchDiversity random = meter.measureRandom(labels.length, 0);
 * System.out.println(blocks.versus(random));
 * // 14.2 distinct blocks per batch of 256 (a random batch: 245.1), label entropy 1.31 bits (random: 1.58)
 * }</pre>
 *
 * @param batches the full batches measured (the one partial batch when the epoch is shorter than a batch)
 * @param batchSize the batch size
 * @param blocksPerBatch the mean number of distinct blocks per batch
 * @param labelEntropy the mean label entropy per batch in bits; {@code NaN} when no labels were given
 */
public record BatchDiversity(long batches, int batchSize, double blocksPerBatch, double labelEntropy) {

    /**
     * Starts configuring a measurement.
     *
     * @return the builder
     */
    public static Builder builder() {
        return new Builder();
    }

    /**
     * What to measure with: the batch size and block size (required) and the labels (optional). Its terminal calls
     * measure an order ({@link #measure}) or a uniform shuffle of the same data ({@link #measureRandom}).
     */
    public static final class Builder {
        private int batchSize;
        private long blockSize;
        private int[] labels;

        private Builder() {
        }

        /**
         * Sets the samples per batch, as the loader cuts the order.
         *
         * @param size at least 1
         * @return this builder
         */
        public Builder setBatchSize(int size) {
            this.batchSize = size;
            return this;
        }

        /**
         * Sets the consecutive indices per block (block {@code index / blockSize}).
         *
         * @param size at least 1
         * @return this builder
         */
        public Builder setBlockSize(long size) {
            this.blockSize = size;
            return this;
        }

        /**
         * Sets the class of each sample, from 0, for the label entropy (default: none, entropy {@code NaN}).
         *
         * @param classes one class per sample
         * @return this builder
         */
        public Builder optLabels(int[] classes) {
            this.labels = classes;
            return this;
        }

        /**
         * Measures one epoch's order, cut into consecutive batches as a loader cuts it. Reads the whole order once:
         * time proportional to its length, memory to one batch (and the class count).
         *
         * @param order the epoch's order, e.g. {@code sampler.order(epoch)}
         * @return the measures
         * @throws MemfitException when a setting is out of range or a label is negative
         */
        public BatchDiversity measure(SampleOrder order) {
            return BatchDiversity.measure(order, batchSize, blockSize, labels);
        }

        /**
         * Measures a uniformly shuffled epoch ({@link ShuffledSampler}) of the same data: the reference a block order
         * is compared with.
         *
         * @param size the number of samples
         * @param seed the shuffle's seed
         * @return the measures of a random order
         * @throws MemfitException when a setting is out of range or a label is negative
         */
        public BatchDiversity measureRandom(long size, long seed) {
            return BatchDiversity.measure(new ShuffledSampler(size, seed).order(0), batchSize, blockSize, labels);
        }
    }

    private static BatchDiversity measure(SampleOrder order, int batchSize, long blockSize, int[] labels) {
        if (batchSize < 1 || blockSize < 1) {
            throw new MemfitException("setBatchSize(n) and setBlockSize(n) are required, each at least 1, got "
                    + batchSize + " and " + blockSize);
        }
        int[] counts = labels == null ? null : new int[classes(labels)];
        long length = order.length();
        // Full batches only, as a partial last batch would lower both means; unless there is no full batch.
        long full = length / batchSize;
        long batches = full > 0 ? full : length > 0 ? 1 : 0;
        int size = (int) Math.min(batchSize, length);
        long[] batch = new long[size];
        long[] blockIds = new long[size];
        double blockSum = 0;
        double entropySum = 0;
        for (long b = 0; b < batches; b++) {
            order.copy(b * batchSize, batch, size);
            for (int i = 0; i < size; i++) {
                blockIds[i] = batch[i] / blockSize;
            }
            Arrays.sort(blockIds);
            int distinct = size == 0 ? 0 : 1;
            for (int i = 1; i < size; i++) {
                distinct += blockIds[i] != blockIds[i - 1] ? 1 : 0;
            }
            blockSum += distinct;
            if (counts != null) {
                entropySum += entropy(batch, labels, counts);
            }
        }
        return new BatchDiversity(batches, size, batches == 0 ? 0 : blockSum / batches,
                counts == null ? Double.NaN : batches == 0 ? 0 : entropySum / batches);
    }

    /**
     * One line comparing these batches with a reference, usually {@link Builder#measureRandom}'s.
     *
     * @param random the reference measures
     * @return e.g. {@code "14.2 distinct blocks per batch of 256 (a random batch: 245.1), label entropy 1.31 bits
     *         (random: 1.58)"}
     */
    public String versus(BatchDiversity random) {
        String line = String.format(Locale.ROOT, "%.1f distinct blocks per batch of %d (a random batch: %.1f)",
                blocksPerBatch, batchSize, random.blocksPerBatch);
        if (!Double.isNaN(labelEntropy)) {
            line += String.format(Locale.ROOT, ", label entropy %.2f bits (random: %.2f)", labelEntropy, random.labelEntropy);
        }
        return line;
    }

    private static int classes(int[] labels) {
        int max = -1;
        for (int i = 0; i < labels.length; i++) {
            if (labels[i] < 0) {
                throw new MemfitException("sample " + i + " has class " + labels[i] + "; classes are numbered from 0");
            }
            max = Math.max(max, labels[i]);
        }
        return max + 1;
    }

    /** The entropy in bits of the batch's labels; leaves {@code counts} all zero again. */
    private static double entropy(long[] batch, int[] labels, int[] counts) {
        for (long index : batch) {
            counts[labels[Math.toIntExact(index)]]++;
        }
        double bits = 0;
        for (long index : batch) {
            int c = labels[(int) index];
            if (counts[c] > 0) {
                double p = counts[c] / (double) batch.length;
                bits -= p * Math.log(p) / Math.log(2);
                counts[c] = 0;
            }
        }
        return bits;
    }
}
