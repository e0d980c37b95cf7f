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

    /**
     * Creates the network.
     *
     * @param inputSize values per item (a sample is flattened)
     * @param hidden width of the hidden layers (cost grows with its square)
     * @param depth number of hidden layers
     * @param dimension features per item
     * @param seed the seed of the weights
     */
    public RandomEmbedder(long inputSize, int hidden, int depth, int dimension, long seed) {
        this.inputSize = inputSize;
        this.hidden = hidden;
        this.depth = depth;
        this.dimension = dimension;
        this.seed = seed;
        Engine engine = Engine.getEngine("PyTorch");
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
