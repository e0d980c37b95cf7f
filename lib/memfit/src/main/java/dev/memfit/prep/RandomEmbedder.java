package dev.memfit.prep;

import ai.djl.engine.Engine;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import ai.djl.nn.Activation;
import ai.djl.nn.SequentialBlock;
import ai.djl.nn.core.Linear;
import ai.djl.training.ParameterStore;
import dev.memfit.MemfitException;
import dev.memfit.PyTorch;
import dev.memfit.data.Batch;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * A fixed, randomly initialised MLP that maps each item to {@code dimension} features, on DJL PyTorch.
 *
 * <p><b>A stand-in, labelled as such:</b> it costs real compute per item, like the pretrained embedding network
 * (a protein language model in the field report) whose features people cache, but its features mean nothing.
 * Deterministic for a seed, so caches of it can be checked.
 */
public final class RandomEmbedder implements FeatureCache.Extractor, AutoCloseable {

    private final long inputSize;
    private final int hidden;
    private final int depth;
    private final int dimension;
    private final long seed;
    private final NDManager manager;
    private final SequentialBlock network;
    private final ParameterStore store;

    private RandomEmbedder(Builder settings) {
        this.inputSize = settings.inputSize;
        this.hidden = settings.hidden;
        this.depth = settings.depth;
        this.dimension = settings.dimension;
        this.seed = settings.seed;
        Engine engine = PyTorch.engine();
        engine.setRandomSeed(Math.toIntExact(seed & 0x7fffffff));
        this.manager = engine.newBaseManager();
        this.network = new SequentialBlock();
        for (int layer = 0; layer < depth; layer++) {
            network.add(Linear.builder().setUnits(hidden).build()).add(Activation::relu);
        }
        network.add(Linear.builder().setUnits(dimension).build()).add(Activation::tanh);
        network.initialize(manager, DataType.FLOAT32, new Shape(1, inputSize));
        this.store = new ParameterStore(manager, false);
    }

    /**
     * Starts configuring an embedder: {@code setInputSize} and {@code setDimension} are required; defaults are 2
     * hidden layers of 256 units and seed 1.
     *
     * <pre>{@code
     * try (RandomEmbedder embedder = RandomEmbedder.builder().setInputSize(512).setDimension(128)
     *         .optHidden(1_024).optDepth(3).optSeed(42).build()) { ... }
     * }</pre>
     *
     * @return the builder
     */
    public static Builder builder() {
        return new Builder();
    }

    /** Configures a {@link RandomEmbedder}; {@link #build()} validates the settings and creates the network. */
    public static final class Builder {

        private long inputSize;
        private int hidden = 256;
        private int depth = 2;
        private int dimension;
        private long seed = 1;

        private Builder() {
        }

        /**
         * Sets the number of values per item, a sample flattened (required).
         *
         * @param values at least 1
         * @return this builder
         */
        public Builder setInputSize(long values) {
            this.inputSize = values;
            return this;
        }

        /**
         * Sets the number of features per item (required).
         *
         * @param features at least 1
         * @return this builder
         */
        public Builder setDimension(int features) {
            this.dimension = features;
            return this;
        }

        /**
         * Sets the width of the hidden layers (default 256; the cost per item grows with its square).
         *
         * @param units at least 1
         * @return this builder
         */
        public Builder optHidden(int units) {
            this.hidden = units;
            return this;
        }

        /**
         * Sets the number of hidden layers (default 2).
         *
         * @param layers at least 0
         * @return this builder
         */
        public Builder optDepth(int layers) {
            this.depth = layers;
            return this;
        }

        /**
         * Sets the seed of the weights (default 1): the same settings give the same features.
         *
         * @param value the seed
         * @return this builder
         */
        public Builder optSeed(long value) {
            this.seed = value;
            return this;
        }

        /**
         * Validates the settings and creates the network on DJL PyTorch.
         *
         * @return the embedder, to be closed
         * @throws MemfitException naming the setting to change
         */
        public RandomEmbedder build() {
            if (inputSize < 1) {
                throw new MemfitException("setInputSize(values) is required, with at least 1 value per item, got " + inputSize);
            }
            if (dimension < 1) {
                throw new MemfitException("setDimension(features) is required, with at least 1 feature, got " + dimension);
            }
            if (hidden < 1 || depth < 0) {
                throw new MemfitException("optHidden needs at least 1 unit and optDepth at least 0 layers, got "
                        + hidden + " and " + depth);
            }
            return new RandomEmbedder(this);
        }
    }

    /**
     * Everything the features depend on, for {@link FeatureCache}'s invalidation.
     *
     * @return name to value
     */
    public Map<String, Object> parameters() {
        Map<String, Object> parameters = new LinkedHashMap<>();
        parameters.put("model", "random-mlp (stand-in for a pretrained embedding network)");
        parameters.put("input", inputSize);
        parameters.put("hidden", hidden);
        parameters.put("depth", depth);
        parameters.put("dimension", dimension);
        parameters.put("seed", seed);
        return parameters;
    }

    @Override
    public long[] featureShape() {
        return new long[]{dimension};
    }

    @Override
    public void extract(Batch items, MemorySegment features) {
        try (NDManager step = manager.newSubManager()) {
            NDArray x = items.toNDArray(step).reshape(items.size(), inputSize).toType(DataType.FLOAT32, false);
            float[] values = network.forward(store, new NDList(x), false).singletonOrThrow().toFloatArray();
            MemorySegment.copy(values, 0, features, ValueLayout.JAVA_FLOAT, 0, values.length);
        }
    }

    /** Frees the weights. */
    @Override
    public void close() {
        manager.close();
    }
}
