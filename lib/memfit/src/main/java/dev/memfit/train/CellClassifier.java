package dev.memfit.train;

import ai.djl.Device;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import ai.djl.nn.Activation;
import ai.djl.nn.Parameter;
import ai.djl.nn.SequentialBlock;
import ai.djl.nn.core.Linear;
import ai.djl.training.ParameterStore;
import ai.djl.training.loss.Loss;
import dev.memfit.data.Batch;
import dev.memfit.data.Loader;

import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.zip.CRC32C;

/**
 * A cell-type classifier: an MLP on log1p-transformed expression, trained with softmax cross-entropy on DJL
 * PyTorch (GPU when DJL sees one). Labels are looked up by sample index, so any sampler (uniform, weighted,
 * distributed) drives the batches.
 *
 * <p>The parameters are built by the first fit and kept until {@link #close()}: a second fit goes on training them.
 *
 * <pre>{@code
 * try (CellClassifier classifier = CellClassifier.builder().setClasses(3).setLabels(labels).build()) {
 *     double[] losses = classifier.fit(train).losses();
 *     int[] predicted = classifier.predict(test);
 * }
 * }</pre>
 */
public final class CellClassifier implements Trainer {

    private final int classes;
    private final int[] labels;
    private final int hidden;
    private final float learningRate;
    private final Fit loop;
    private NDManager manager;
    private SequentialBlock network;
    private ParameterStore store;
    private long genes;
    private boolean closed;

    private CellClassifier(Builder builder) {
        this.classes = builder.classes;
        this.labels = builder.labels;
        this.hidden = builder.hidden;
        this.learningRate = builder.learningRate;
        this.loop = new Fit("Cell classifier", builder);
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
     * Trains on the cells a loader yields, each labelled by its index in the loader's source; the first fit builds
     * the parameters, later ones go on training them.
     *
     * @param loader batches of cells (float32 expression)
     * @return what each epoch did (loss: the mean cross-entropy)
     * @throws IllegalArgumentException when the labels do not cover the loader's source, the cells differ in
     *         genes from those of an earlier fit, or the batches are float64 or float16 (a float64 shard folder:
     *         build the loader with {@code optConvertTo(DType.FLOAT32)})
     */
    @Override
    public FitResult fit(Loader loader) {
        checkOpen();
        Fit.requireFloat32(loader, "the cell classifier", true);
        if (labels.length < loader.samples()) {
            throw new IllegalArgumentException("setLabels gave " + labels.length + " labels; the loader's source has "
                    + loader.samples() + " samples, and every one needs a label");
        }
        long size = loader.sampleShape().size();
        if (manager == null) {
            genes = size;
            loop.seed();
            manager = Fit.engine().newBaseManager(loop.device());
            network = new SequentialBlock()
                    .add(Linear.builder().setUnits(hidden).build()).add(Activation::relu)
                    .add(Linear.builder().setUnits(classes).build());
            // DJL's default weight initializer, drawn on the CPU: the same start on a GPU as on the CPU
            network.setInitializer(new HostDrawn(Parameter.Type.WEIGHT.getInitializer()), Parameter.Type.WEIGHT);
            network.initialize(manager, DataType.FLOAT32, new Shape(1, genes));
            store = new ParameterStore(manager, false);
            BlockTraining.requireGradients(network);
        } else if (size != genes) {
            throw new IllegalArgumentException("the classifier was built for cells of " + genes + " genes, the loader's have "
                    + size);
        }
        Loss loss = Loss.softmaxCrossEntropyLoss();
        Map<String, NDArray> parameters = BlockTraining.parameters("network/", network);
        DenseAdam adam = new DenseAdam(learningRate, parameters);
        int accumulation = loop.accumulation();
        long stepSamples = (long) accumulation * loader.batchSize();
        Device target = manager.getDevice();
        try {
            return loop.run(loader, manager, new BlockTraining.Model(parameters, adam) {
                @Override
                public double backward(Batch batch, Fit.Step step) {
                    NDManager scope = step.batchScope();
                    NDArray x = Fit.onDevice(batch, scope, target).reshape(batch.size(), genes).add(1f).log();
                    int[] y = new int[batch.size()];
                    long[] indices = batch.indices();
                    for (int i = 0; i < y.length; i++) {
                        y[i] = labels[Math.toIntExact(indices[i])];
                    }
                    NDArray truth = scope.create(y).toDevice(target, false);
                    NDArray logits = network.forward(store, new NDList(x), true).singletonOrThrow();
                    NDArray value = loss.evaluate(new NDList(truth), new NDList(logits));
                    // The batch's mean, weighted by its share of a full step's samples: k accumulated batches give
                    // the mean over all their cells, the loss of one batch k times larger.
                    step.backward(accumulation == 1 ? value : BlockTraining.times(value, batch.size() / (float) stepSamples, scope));
                    return value.getFloat() * batch.size();
                }

                @Override
                public void update(Fit.Step step) {
                    // A short last step of an epoch was weighted as a full one: its gradient becomes the mean over
                    // the cells it had, as the short last batch of a loader k times larger would give.
                    float scale = accumulation == 1 || step.samples() == stepSamples ? 1f
                            : stepSamples / (float) step.samples();
                    BlockTraining.step(adam, step.scope(), scale, parameters);
                }

                @Override
                public Map<String, String> settings() {
                    CRC32C labelSum = new CRC32C();
                    java.nio.ByteBuffer bytes = java.nio.ByteBuffer.allocate(labels.length * Integer.BYTES);
                    bytes.asIntBuffer().put(labels);
                    labelSum.update(bytes);
                    Map<String, String> settings = new LinkedHashMap<>();
                    settings.put("classes", Integer.toString(classes));
                    settings.put("hidden units", Integer.toString(hidden));
                    settings.put("learning rate", Float.toString(learningRate));
                    settings.put("genes", Long.toString(genes));
                    settings.put("labels (CRC-32C)", Long.toHexString(labelSum.getValue()));
                    return settings;
                }
            });
        } finally {
            adam.close();
        }
    }

    /**
     * Predicts the class of every cell a loader yields, stored by sample index.
     *
     * @param loader batches of cells
     * @return the predicted class of each sample of the loader's source (-1 for samples the loader did not yield)
     * @throws IllegalStateException before the first fit, or once closed
     */
    public int[] predict(Loader loader) {
        checkOpen();
        if (manager == null) {
            throw new IllegalStateException("fit the classifier before predicting");
        }
        Fit.requireFloat32(loader, "the cell classifier", true);
        int[] predictions = new int[Math.toIntExact(loader.samples())];
        Arrays.fill(predictions, -1);
        long size = loader.sampleShape().size();
        for (Batch batch : loader.epoch(0)) {
            try (NDManager step = manager.newSubManager()) {
                NDArray x = Fit.onDevice(batch, step, manager.getDevice()).reshape(batch.size(), size).add(1f).log();
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

    /** Frees the parameters. Idempotent. */
    @Override
    public void close() {
        closed = true;
        if (manager != null) {
            manager.close();
            manager = null;
        }
    }

    private void checkOpen() {
        if (closed) {
            throw new IllegalStateException("the cell classifier is closed");
        }
    }

    /**
     * Configures a {@link CellClassifier}: {@link #setClasses} and {@link #setLabels} are required, every
     * {@code optX} optional. Defaults: 10 epochs, learning rate 1e-3, hidden width 128, and those of
     * {@link TrainerBuilder}.
     */
    public static final class Builder extends TrainerBuilder<Builder> {
        private int classes;
        private int[] labels;
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
         * Sets the class of every sample of the training loader's source, by sample index (required).
         *
         * @param bySample classes from 0 to {@code classes - 1}; not copied, so do not change them while training
         * @return this builder
         */
        public Builder setLabels(int[] bySample) {
            this.labels = bySample;
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
         * @throws IllegalArgumentException when a setting is missing or out of range
         */
        public CellClassifier build() {
            validate();
            if (classes < 2) {
                throw new IllegalArgumentException("setClasses(k) is required and k must be at least 2, got " + classes);
            }
            if (labels == null) {
                throw new IllegalArgumentException("setLabels(bySample) is required");
            }
            checkLabels(labels, classes, "setClasses");
            if (hidden < 1) {
                throw new IllegalArgumentException("optHidden(units) needs units >= 1, got " + hidden);
            }
            return new CellClassifier(this);
        }
    }
}
