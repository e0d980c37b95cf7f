package dev.memfit.memory;

import ai.djl.nn.Block;
import ai.djl.nn.Parameter;
import ai.djl.util.Pair;
import dev.memfit.MemfitException;
import dev.memfit.sample.ShuffledSampler;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * Estimates, before a run, the memory it will need where: heap, native, mapped, device and page cache.
 *
 * <pre>{@code
 * MemoryEstimate estimate = MemoryEstimator.builder()
 *         .setData(200_000, 2_000 * 4L, LoadingStrategy.mapped())   // samples, bytes per sample, how loaded
 *         .setModel(parameterCount, activationsPerSample)
 *         .optOptimizer(Optimizer.ADAM).optBatchSize(256).optPrefetch(2)
 *         .build().estimate();
 * }</pre>
 *
 * <p>The components mirror what memfit allocates: data held in native memory when loaded, loader batch buffers
 * ({@code max(1, prefetch) + 1} of them), the sampler's index array on the heap (8 bytes per sample), parameters,
 * gradients and optimizer state on the device, and activations kept for the backward pass.
 */
public final class MemoryEstimator {

    /** Optimizers by the state they keep per parameter. */
    public enum Optimizer {
        /** Plain SGD: no state. */
        SGD(0),
        /** SGD with momentum: one value per parameter. */
        SGD_MOMENTUM(1),
        /** Adam: two values per parameter. */
        ADAM(2);

        private final int statesPerParameter;

        Optimizer(int statesPerParameter) {
            this.statesPerParameter = statesPerParameter;
        }

        /**
         * The state kept per parameter.
         *
         * @return values per parameter
         */
        public int statesPerParameter() {
            return statesPerParameter;
        }
    }

    private final long samples;
    private final long sampleBytes;
    private final LoadingStrategy loading;
    private final long parameters;
    private final long activationsPerSample;
    private final Optimizer optimizer;
    private final int batchSize;
    private final int bytesPerValue;
    private final int prefetch;
    private final int devices;
    private final boolean shuffled;
    private final long storedBytes;
    private final long processBaseline;
    private final TransformerShape transformer;

    private MemoryEstimator(Builder builder) {
        this.transformer = builder.transformer;
        this.processBaseline = builder.processBaseline;
        this.storedBytes = builder.storedBytes;
        this.samples = builder.samples;
        this.sampleBytes = builder.sampleBytes;
        this.loading = builder.loading;
        this.parameters = builder.parameters;
        this.activationsPerSample = builder.activationsPerSample;
        this.optimizer = builder.optimizer;
        this.batchSize = builder.batchSize;
        this.bytesPerValue = builder.bytesPerValue;
        this.prefetch = builder.prefetch;
        this.devices = builder.devices;
        this.shuffled = builder.shuffled;
    }

    /**
     * Starts a builder.
     *
     * @return the builder
     */
    public static Builder builder() {
        return new Builder();
    }

    /**
     * Counts the parameters of an initialised DJL block.
     *
     * @param block the block, initialised with its input shape
     * @return the number of values in all its parameters
     */
    public static long parameterCount(Block block) {
        long count = 0;
        for (Pair<String, Parameter> parameter : block.getParameters()) {
            if (!parameter.getValue().isInitialized()) {
                throw new MemfitException("block parameter " + parameter.getKey() + " is not initialised: call "
                        + "block.initialize(manager, DataType.FLOAT32, inputShape) first");
            }
            count += parameter.getValue().getArray().getShape().size();
        }
        return count;
    }

    /**
     * The estimate.
     *
     * @return the components
     */
    public MemoryEstimate estimate() {
        List<MemoryEstimate.Component> parts = new ArrayList<>();
        if (processBaseline >= 0) {
            parts.add(new MemoryEstimate.Component("this process before the run (JVM, libraries, PyTorch)",
                    MemoryEstimate.Where.PROCESS, processBaseline));
        }
        if (loading != null) {
            dataParts(parts);
        }
        if (transformer != null) {
            transformerParts(parts);
        } else {
            modelParts(parts);
        }
        if (devices > 1) {
            parts.add(new MemoryEstimate.Component("(device totals are per device; " + devices + " devices)",
                    MemoryEstimate.Where.DEVICE, 0));
        }
        return new MemoryEstimate(List.copyOf(parts));
    }

    /** The data's part: where the samples live, the loader's buffers and the epoch's order. */
    private void dataParts(List<MemoryEstimate.Component> parts) {
        long dataBytes = samples * sampleBytes;
        long epochLength = samples;
        switch (loading) {
            case LoadingStrategy.InMemory _ ->
                    parts.add(new MemoryEstimate.Component("data held in memory", MemoryEstimate.Where.NATIVE, dataBytes));
            case LoadingStrategy.Mapped _ -> {
                parts.add(new MemoryEstimate.Component("data file mapping (address space)", MemoryEstimate.Where.MAPPED, dataBytes));
                parts.add(new MemoryEstimate.Component("page cache to keep the data warm", MemoryEstimate.Where.PAGE_CACHE, dataBytes));
            }
            case LoadingStrategy.Lazy _ ->
                    parts.add(new MemoryEstimate.Component("page cache to keep the data warm", MemoryEstimate.Where.PAGE_CACHE, dataBytes));
            case LoadingStrategy.Streaming streaming -> {
                // the loader reads the cells where they lie; a compressed file's decoded chunks of the window batches
                // are drawn from stay in its chunk cache (LoaderBuilder sizes it): at most the window as dense rows
                long blocks = (samples + streaming.blockSize() - 1) / streaming.blockSize();
                long window = Math.min(samples, Math.ceilDiv((long) streaming.fetchFactor() * batchSize, streaming.blockSize())
                        * streaming.blockSize());
                epochLength = blocks;
                parts.add(new MemoryEstimate.Component(String.format(Locale.ROOT, "decoded chunks of the block-shuffle "
                        + "window (at most %,d samples; none for an uncompressed file)", window), MemoryEstimate.Where.HEAP,
                        window * sampleBytes));
                parts.add(new MemoryEstimate.Component(String.format(Locale.ROOT, "the window's order (%,d samples)",
                        window), MemoryEstimate.Where.HEAP, 8 * window));
            }
            case LoadingStrategy.RandomSubset subset -> {
                epochLength = subset.size(samples);
                if (subset.then() instanceof LoadingStrategy.Mapped) {
                    parts.add(new MemoryEstimate.Component("data file mapping (address space)", MemoryEstimate.Where.MAPPED, dataBytes));
                }
                parts.add(new MemoryEstimate.Component("page cache to keep the subset warm", MemoryEstimate.Where.PAGE_CACHE,
                        epochLength * sampleBytes));
                parts.add(new MemoryEstimate.Component("subset indices (8 bytes per sample)", MemoryEstimate.Where.HEAP,
                        8 * epochLength));
            }
            case LoadingStrategy.Shards shards -> {
                epochLength = (samples + shards.devices() - 1) / shards.devices();
                if (storedBytes < 0) {
                    parts.add(new MemoryEstimate.Component("shard file mappings (address space)", MemoryEstimate.Where.MAPPED, dataBytes));
                    parts.add(new MemoryEstimate.Component(shards.devices() == 1 ? "page cache to keep the data warm"
                            : "page cache to keep this rank's shards warm", MemoryEstimate.Where.PAGE_CACHE,
                            epochLength * sampleBytes));
                } else {
                    // what the files hold: sparse (CSR) shards store only the non-zero values, densified per batch
                    String kind = storedBytes < dataBytes ? "sparse shards" : "shards";
                    parts.add(new MemoryEstimate.Component(kind + " file mappings (as stored, address space)",
                            MemoryEstimate.Where.MAPPED, storedBytes));
                    parts.add(new MemoryEstimate.Component(shards.devices() == 1 ? "page cache to keep the " + kind + " warm"
                            : "page cache to keep this rank's " + kind + " warm", MemoryEstimate.Where.PAGE_CACHE,
                            (long) Math.ceil(storedBytes * (double) epochLength / samples)));
                }
            }
        }
        int buffers = Math.max(1, prefetch) + 1;
        parts.add(new MemoryEstimate.Component(String.format(Locale.ROOT, "loader batch buffers (%d x %d x %s)", buffers,
                batchSize, human(sampleBytes)), MemoryEstimate.Where.NATIVE, (long) buffers * batchSize * sampleBytes));
        // the loader asks the sampler for each batch's positions: a sequential order and a shuffle of more than
        // ShuffledSampler.ARRAY_LIMIT samples are computed on demand, a smaller shuffle is one long[] per epoch
        if (loading instanceof LoadingStrategy.Streaming) {
            parts.add(new MemoryEstimate.Component("epoch order (8 bytes per block)", MemoryEstimate.Where.HEAP, 8 * epochLength));
        } else if (!shuffled) {
            parts.add(new MemoryEstimate.Component("epoch order (sequential, computed on demand)", MemoryEstimate.Where.HEAP, 0));
        } else if (epochLength > ShuffledSampler.ARRAY_LIMIT) {
            parts.add(new MemoryEstimate.Component("epoch order (a keyed permutation, computed on demand)", MemoryEstimate.Where.HEAP, 0));
        } else {
            parts.add(new MemoryEstimate.Component("epoch order (8 bytes per sample)", MemoryEstimate.Where.HEAP, 8 * epochLength));
        }
    }

    /** A model given by its counts: parameters, gradients and optimizer state, activations, the batch's copy. */
    private void modelParts(List<MemoryEstimate.Component> parts) {
        if (parameters > 0) {
            long weights = parameters * bytesPerValue;
            parts.add(new MemoryEstimate.Component("parameters (" + parameters + " x " + bytesPerValue + " B) per device",
                    MemoryEstimate.Where.DEVICE, weights));
            parts.add(new MemoryEstimate.Component("gradients per device", MemoryEstimate.Where.DEVICE, weights));
            if (optimizer.statesPerParameter() > 0) {
                parts.add(new MemoryEstimate.Component(optimizer.name().toLowerCase(Locale.ROOT) + " state ("
                        + optimizer.statesPerParameter() + " per parameter, float32)", MemoryEstimate.Where.DEVICE,
                        parameters * 4L * optimizer.statesPerParameter()));
            }
        }
        if (activationsPerSample > 0) {
            parts.add(new MemoryEstimate.Component("activations kept for backward (batch " + batchSize + ")",
                    MemoryEstimate.Where.DEVICE, activationsPerSample * batchSize * bytesPerValue));
        }
        if (sampleBytes > 0) {
            parts.add(new MemoryEstimate.Component("mini-batch copy on the device", MemoryEstimate.Where.DEVICE,
                    (long) batchSize * sampleBytes));
        }
    }

    /**
     * A gene-token transformer, counted from its shape: float32 master weights (and their bfloat16 casts at
     * precision 2, as bf16-mixed keeps them), float32 gradients and optimizer state, and per cell of a micro-batch the
     * activations held until the backward pass, the backward pass's widest gradients and the tokens.
     */
    private void transformerParts(List<MemoryEstimate.Component> parts) {
        MemoryEstimate.Where device = MemoryEstimate.Where.DEVICE;
        long p = transformer.parameters();
        parts.add(new MemoryEstimate.Component(String.format(Locale.ROOT, "parameters (%,d x 4 B, float32)", p), device, 4 * p));
        if (bytesPerValue == 2) {
            parts.add(new MemoryEstimate.Component("bfloat16 casts of the weights (bf16-mixed)", device, 2 * p));
        }
        parts.add(new MemoryEstimate.Component("gradients (float32)", device, 4 * p));
        if (optimizer.statesPerParameter() > 0) {
            parts.add(new MemoryEstimate.Component(optimizer.name().toLowerCase(Locale.ROOT) + " state ("
                    + optimizer.statesPerParameter() + " per parameter, float32)", device,
                    4 * p * optimizer.statesPerParameter()));
        }
        String precision = bytesPerValue == 2 ? "bfloat16" : bytesPerValue == 4 ? "float32" : "float64";
        parts.add(new MemoryEstimate.Component(String.format(Locale.ROOT, "attention scores kept for backward (%d x "
                        + "%d heads x %d² tokens x %d layers per cell, batch %d, %s)", TransformerShape.SCORE_COPIES,
                transformer.heads(), transformer.maxLength(), transformer.layers(), batchSize, precision), device,
                (long) batchSize * transformer.scoreValuesPerCell() * bytesPerValue));
        parts.add(new MemoryEstimate.Component(String.format(Locale.ROOT, "other activations kept for backward "
                        + "(about %d x %d tokens x d_model %d x %d layers per cell, and the heads' logits)",
                TransformerShape.VALUES_PER_TOKEN_AND_WIDTH, transformer.maxLength(), transformer.dModel(),
                transformer.layers()), device, (long) batchSize * transformer.otherActivationValuesPerCell() * bytesPerValue));
        parts.add(new MemoryEstimate.Component("the backward pass's widest gradients", device,
                (long) batchSize * transformer.backwardValuesPerCell() * bytesPerValue));
        parts.add(new MemoryEstimate.Component("token ids, masks and key padding (int64, float32)", device,
                (long) batchSize * transformer.maxLength() * (8 + 8 + 4)));
        parts.add(new MemoryEstimate.Component("what a fit allocates whatever its size (a constant fitted to measurements)",
                device, TransformerShape.RUNTIME_BYTES));
    }

    /**
     * The transformer's memory a micro-batch of a size needs, all of it (what {@link #estimate()} puts on the device).
     *
     * @param shape the transformer
     * @param batchSize cells per micro-batch
     * @param bytesPerValue 4 for float32, 2 for bf16-mixed
     * @return bytes
     */
    public static long transformerBytes(TransformerShape shape, int batchSize, int bytesPerValue) {
        return builder().setTransformer(shape).optBatchSize(batchSize).optPrecision(bytesPerValue).build().estimate()
                .total(MemoryEstimate.Where.DEVICE);
    }

    /**
     * A size in binary units, the one spelling memfit's memory reports use: {@code "1.5 GiB"}, {@code "12.0 MiB"},
     * {@code "3.0 KiB"} (powers of 2^10).
     *
     * @param bytes the size
     * @return the size in words
     */
    public static String human(long bytes) {
        return dev.memfit.ProcessMemory.human(bytes);
    }

    /** Configures a {@link MemoryEstimator}: {@code setX} required, {@code optX} optional. */
    public static final class Builder {
        private TransformerShape transformer;
        private long processBaseline = -1;
        private long samples = -1;
        private long sampleBytes = -1;
        private LoadingStrategy loading;
        private long parameters;
        private long activationsPerSample;
        private Optimizer optimizer = Optimizer.ADAM;
        private int batchSize = 32;
        private int bytesPerValue = 4;
        private int prefetch = 2;
        private int devices = 1;
        private boolean shuffled = true;
        private long storedBytes = -1;

        private Builder() {
        }

        /**
         * The resident memory of the process before the run (the JVM, libraries, PyTorch, what the program already
         * holds), so the estimate covers the whole process ({@link MemoryEstimate#residentPeak(boolean)}), not only
         * what the run adds. In the process that will train, measure it just before: {@link #optProcessBaselineNow()}.
         *
         * @param bytes resident bytes, at least 0
         * @return this builder
         */
        public Builder optProcessBaseline(long bytes) {
            if (bytes < 0) {
                throw new MemfitException("process baseline must be at least 0 bytes, got " + bytes);
            }
            this.processBaseline = bytes;
            return this;
        }

        /**
         * The resident memory of this process now ({@code VmRSS}) as the baseline: call it in the process that will
         * train, after its libraries (PyTorch) are loaded and before the run allocates.
         *
         * @return this builder
         */
        public Builder optProcessBaselineNow() {
            return optProcessBaseline(MemoryProbe.now().rss());
        }

        /**
         * Sets the bytes the data takes in its files, when that is not {@code count x bytesPerSample}: sparse (CSR)
         * shards store only the non-zero values ({@code ShardStore.storedBytes()}, or the {@code stored_bytes} fact of
         * {@code Datasets.describe(folder)}), so their mappings and page cache are that size while batches hold dense
         * rows. Used for {@link LoadingStrategy.Shards}; default: {@code count x bytesPerSample}.
         *
         * @param bytes the bytes on disk, at least 0
         * @return this builder
         */
        public Builder optStoredBytes(long bytes) {
            this.storedBytes = bytes < 0 ? Long.MIN_VALUE : bytes;
            return this;
        }

        /**
         * Sets the data (required, but for a {@link #setTransformer transformer}'s estimate of the model alone).
         *
         * @param count the number of samples
         * @param bytesPerSample the bytes of one sample as batches hold it
         * @param how how it is loaded (a streaming chunk, a subset or a rank's shards set what an epoch holds)
         * @return this builder
         */
        public Builder setData(long count, long bytesPerSample, LoadingStrategy how) {
            this.samples = count;
            this.sampleBytes = bytesPerSample;
            this.loading = how;
            return this;
        }

        /**
         * Sets the model to a gene-token transformer, counted from its shape (parameters, activations by batch x
         * tokens x d_model x layers and heads x tokens², the backward pass's gradients); {@link #optPrecision} 2 counts
         * bf16-mixed (bfloat16 activations beside float32 master weights). Without {@link #setData}, the estimate is
         * the model's alone.
         *
         * @param shape the transformer's sizes
         * @return this builder
         */
        public Builder setTransformer(TransformerShape shape) {
            this.transformer = shape;
            this.parameters = shape.parameters();
            this.activationsPerSample = shape.scoreValuesPerCell() + shape.otherActivationValuesPerCell();
            return this;
        }

        /**
         * Sets the model: its parameter count and the values per sample its forward pass keeps for the backward pass
         * (0 when unknown or negligible).
         *
         * @param parameterCount the number of trainable values
         * @param activationValuesPerSample the activation values per sample
         * @return this builder
         */
        public Builder setModel(long parameterCount, long activationValuesPerSample) {
            this.transformer = null;
            this.parameters = parameterCount;
            this.activationsPerSample = activationValuesPerSample;
            return this;
        }

        /**
         * Sets the optimizer (default Adam).
         *
         * @param kind the optimizer
         * @return this builder
         */
        public Builder optOptimizer(Optimizer kind) {
            this.optimizer = kind;
            return this;
        }

        /**
         * Sets the batch size (default 32).
         *
         * @param size samples per batch
         * @return this builder
         */
        public Builder optBatchSize(int size) {
            this.batchSize = size;
            return this;
        }

        /**
         * Sets the bytes per parameter and activation value (default 4, float32; 2 for half precision).
         *
         * @param bytes 2, 4 or 8
         * @return this builder
         */
        public Builder optPrecision(int bytes) {
            this.bytesPerValue = bytes;
            return this;
        }

        /**
         * Sets the loader's prefetch depth (default 2).
         *
         * @param batches batches read ahead
         * @return this builder
         */
        public Builder optPrefetch(int batches) {
            this.prefetch = batches;
            return this;
        }

        /**
         * Sets the number of data-parallel devices (default 1); device figures are per device.
         *
         * @param count devices
         * @return this builder
         */
        public Builder optDevices(int count) {
            this.devices = count;
            return this;
        }

        /**
         * Whether the loader shuffles (default true): a shuffled epoch order of up to {@link ShuffledSampler#ARRAY_LIMIT}
         * samples is held on the heap, a sequential one is computed on demand.
         *
         * @param shuffle true when shuffling
         * @return this builder
         */
        public Builder optShuffled(boolean shuffle) {
            this.shuffled = shuffle;
            return this;
        }

        /**
         * Validates and builds.
         *
         * @return the estimator
         */
        public MemoryEstimator build() {
            if (transformer != null && loading == null) {
                if (batchSize < 1 || bytesPerValue != 2 && bytesPerValue != 4 && bytesPerValue != 8 || devices < 1) {
                    throw new MemfitException("batch size, devices >= 1 and a precision of 2, 4 or 8 bytes are needed, got "
                            + batchSize + ", " + devices + ", " + bytesPerValue);
                }
                return new MemoryEstimator(this);
            }
            if (loading == null || samples < 1 || sampleBytes < 1) {
                throw new MemfitException("setData(count, bytesPerSample, strategy) is required with count >= 1 and "
                        + "bytesPerSample >= 1, got count " + samples + ", bytes per sample " + sampleBytes);
            }
            if (storedBytes < -1) {
                throw new MemfitException("optStoredBytes: the bytes on disk cannot be negative, got " + storedBytes);
            }
            if (parameters < 0 || activationsPerSample < 0) {
                throw new MemfitException("parameter and activation counts cannot be negative");
            }
            if (batchSize < 1 || batchSize > samples) {
                throw new MemfitException("batch size must be in [1, " + samples + "] (the number of samples), got " + batchSize);
            }
            if (devices < 1) {
                throw new MemfitException("devices must be at least 1, got " + devices);
            }
            if (bytesPerValue != 2 && bytesPerValue != 4 && bytesPerValue != 8) {
                throw new MemfitException("precision must be 2, 4 or 8 bytes per value, got " + bytesPerValue);
            }
            if (prefetch < 0) {
                throw new MemfitException("prefetch must be >= 0, got " + prefetch);
            }
            return new MemoryEstimator(this);
        }
    }
}
