package dev.memfit.train;

import ai.djl.Device;
import ai.djl.engine.Engine;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import ai.djl.nn.Activation;
import ai.djl.nn.SequentialBlock;
import ai.djl.nn.core.Linear;
import ai.djl.training.GradientCollector;
import ai.djl.training.ParameterStore;
import ai.djl.training.loss.Loss;
import ai.djl.training.optimizer.Optimizer;
import ai.djl.training.tracker.Tracker;
import dev.memfit.Progress;
import dev.memfit.data.Batch;
import dev.memfit.data.Loader;
import dev.memfit.memory.DeviceMemory;

import java.util.ArrayList;
import java.util.List;
import java.util.function.Consumer;

/**
 * A cell-type classifier: an MLP on log1p-transformed expression, trained with softmax cross-entropy on DJL
 * PyTorch (GPU when DJL sees one). Labels are looked up by sample index, so any sampler (uniform, weighted,
 * distributed) drives the batches.
 */
public final class CellClassifier implements AutoCloseable {

    private final int classes;
    private final int hidden;
    private final int epochs;
    private final float learningRate;
    private final long seed;
    private final Device device;
    private NDManager manager;
    private SequentialBlock network;
    private ParameterStore store;

    private CellClassifier(Builder builder) {
        this.classes = builder.classes;
        this.hidden = builder.hidden;
        this.epochs = builder.epochs;
        this.learningRate = builder.learningRate;
        this.seed = builder.seed;
        this.device = builder.device;
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
     * Trains on the cells a loader yields.
     *
     * @param loader batches of cells (float32 expression)
     * @param labels the class of every sample of the loader's source, by index
     * @param onEpoch called after every epoch
     * @return one entry per epoch (loss is the mean cross-entropy)
     */
    public List<EpochStats> fit(Loader loader, int[] labels, Consumer<EpochStats> onEpoch) {
        Engine engine = Engine.getEngine("PyTorch");
        Device target = device != null ? device : engine.defaultDevice();
        long genes = loader.sampleShape().size();
        if (manager == null) {
            engine.setRandomSeed(Math.toIntExact(seed & 0x7fffffff));
            manager = engine.newBaseManager(target);
            network = new SequentialBlock()
                    .add(Linear.builder().setUnits(hidden).build()).add(Activation::relu)
                    .add(Linear.builder().setUnits(classes).build());
            network.initialize(manager, DataType.FLOAT32, new Shape(1, genes));
            store = new ParameterStore(manager, false);
            BlockTraining.requireGradients(network);
        }
        Loss loss = Loss.softmaxCrossEntropyLoss();
        Optimizer adam = Optimizer.adam().optLearningRateTracker(Tracker.fixed(learningRate)).build();
        List<EpochStats> history = new ArrayList<>();
        try (Progress progress = Progress.bar("Cell classifier", epochs * loader.batchesPerEpoch(), "batches")) {
            for (int epoch = 0; epoch < epochs; epoch++) {
                long start = System.nanoTime();
                double lossSum = 0;
                long samples = 0;
                long steps = 0;
                for (Batch batch : loader.epoch(epoch)) {
                    try (NDManager step = manager.newSubManager()) {
                        NDArray x = batch.toNDArray(step).toDevice(target, false).reshape(batch.size(), genes).add(1f).log();
                        int[] y = new int[batch.size()];
                        long[] indices = batch.indices();
                        for (int i = 0; i < y.length; i++) {
                            y[i] = labels[Math.toIntExact(indices[i])];
                        }
                        NDArray truth = step.create(y).toDevice(target, false);
                        try (GradientCollector collector = engine.newGradientCollector()) {
                            NDArray logits = network.forward(store, new NDList(x), true).singletonOrThrow();
                            NDArray value = loss.evaluate(new NDList(truth), new NDList(logits));
                            collector.backward(value);
                            lossSum += value.getFloat() * batch.size();
                        }
                        BlockTraining.step(adam, step, network);
                    }
                    samples += batch.size();
                    steps++;
                    progress.step(1);
                }
                DeviceMemory.releaseCache(target);
                EpochStats stats = new EpochStats(epoch, lossSum / Math.max(1, samples), (System.nanoTime() - start) / 1e9,
                        steps, samples);
                history.add(stats);
                onEpoch.accept(stats);
            }
        }
        return history;
    }

    /**
     * Predicts the class of every cell a loader yields, stored by sample index.
     *
     * @param loader batches of cells
     * @return the predicted class of each sample of the loader's source (-1 for samples the loader did not yield)
     */
    public int[] predict(Loader loader) {
        if (manager == null) {
            throw new IllegalStateException("fit the classifier before predicting");
        }
        int[] predictions = new int[Math.toIntExact(loader.samples())];
        java.util.Arrays.fill(predictions, -1);
        long genes = loader.sampleShape().size();
        for (Batch batch : loader.epoch(0)) {
            try (NDManager step = manager.newSubManager()) {
                NDArray x = batch.toNDArray(step).toDevice(manager.getDevice(), false).reshape(batch.size(), genes).add(1f).log();
                long[] best = network.forward(store, new NDList(x), false).singletonOrThrow().argMax(1)
                        .toDevice(Device.cpu(), false).toType(DataType.INT64, false).toLongArray();
                long[] indices = batch.indices();
                for (int i = 0; i < best.length; i++) {
                    predictions[Math.toIntExact(indices[i])] = (int) best[i];
                }
            }
        }
        return predictions;
    }

    /**
     * The recall of each class: the share of its samples predicted as it.
     *
     * @param predicted predicted classes
     * @param truth true classes
     * @param classes the number of classes
     * @return recall by class (NaN for a class without samples)
     */
    public static double[] recallPerClass(int[] predicted, int[] truth, int classes) {
        double[] hits = new double[classes];
        double[] totals = new double[classes];
        for (int i = 0; i < truth.length; i++) {
            totals[truth[i]]++;
            if (predicted[i] == truth[i]) {
                hits[truth[i]]++;
            }
        }
        double[] recall = new double[classes];
        for (int c = 0; c < classes; c++) {
            recall[c] = totals[c] == 0 ? Double.NaN : hits[c] / totals[c];
        }
        return recall;
    }

    /** Frees the parameters. */
    @Override
    public void close() {
        if (manager != null) {
            manager.close();
        }
    }

    /** Configures a {@link CellClassifier}: {@code setClasses} is required. */
    public static final class Builder extends TrainerBuilder<Builder> {
        private int classes;
        private int hidden = 128;

        private Builder() {
            super(10, 1e-3f);
        }

        @Override
        protected Builder self() {
            return this;
        }

        /**
         * Sets the number of classes (required).
         *
         * @param count at least 2
         * @return this builder
         */
        public Builder setClasses(int count) {
            this.classes = count;
            return this;
        }

        /**
         * Sets the width of the hidden layer (default 128).
         *
         * @param units at least 1
         * @return this builder
         */
        public Builder optHidden(int units) {
            this.hidden = units;
            return this;
        }

        /**
         * Validates and builds.
         *
         * @return the classifier
         */
        public CellClassifier build() {
            validate();
            if (classes < 2 || hidden < 1) {
                throw new IllegalArgumentException("setClasses(k) with k >= 2 is required and hidden must be positive");
            }
            if (accumulation != 1) {
                throw new IllegalArgumentException("the cell classifier does not accumulate gradients yet");
            }
            return new CellClassifier(this);
        }
    }
}
