package dev.memfit.train;

import ai.djl.Device;
import ai.djl.engine.Engine;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDArrays;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.index.NDIndex;
import ai.djl.ndarray.types.Shape;
import ai.djl.training.GradientCollector;
import ai.djl.training.optimizer.Optimizer;
import ai.djl.training.tracker.Tracker;
import dev.memfit.Progress;
import dev.memfit.memory.DeviceMemory;
import dev.memfit.source.ArraySource;
import dev.memfit.data.Batch;
import dev.memfit.data.Loader;
import dev.memfit.DType;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.function.Consumer;

/**
 * Poisson non-negative matrix factorisation of a documents x terms count matrix, fitted by mini-batch Adam on DJL
 * PyTorch: the model of tinytopics.
 *
 * <p>X (n x m) is approximated by L F, where L = softmax(A) row-wise (n x k, document-topic proportions) and
 * F = softmax(B) row-wise (k x m, topic-term distributions). The loss of a batch of documents is
 * {@code sum(-X log(L F + 1e-10) + L F)}; an epoch's reported loss is the sum over its batches divided by the
 * documents seen. Only the mini-batch of X goes to the device; A and B live there for the whole fit. B is updated by
 * Adam at every step; A, which grows with the data, is by default updated only in the rows of the batch
 * (see {@link Builder#optSparseDocumentUpdates(boolean)}).
 *
 * <pre>{@code
 * TopicModel model = TopicModel.builder().setTopics(10).optEpochs(50).optLearningRate(0.01).build();
 * try (Loader loader = Datasets.npy(counts).mapped().optBatchSize(256).optShuffle(1).build();
 *      TopicFit fit = model.fit(loader)) {
 *     double[] losses = fit.losses();
 * }
 * }</pre>
 */
public final class TopicModel {

    private static final float EPSILON = 1e-10f;

    private final int topics;
    private final int epochs;
    private final float learningRate;
    private final long seed;
    private final Device device;
    private final boolean sparseDocumentUpdates;
    private final int accumulation;

    private TopicModel(Builder builder) {
        this.accumulation = builder.accumulation;
        this.sparseDocumentUpdates = builder.sparseDocumentUpdates;
        this.topics = builder.topics;
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
     * The device fits run on when none is set: the first GPU DJL sees, else the CPU.
     *
     * @return the device
     */
    public static Device defaultDevice() {
        return Engine.getEngine("PyTorch").defaultDevice();
    }

    /**
     * Fits the model to the counts a loader yields; the loader's shuffle and batch size drive the mini-batches.
     *
     * @param loader batches of documents (rows of term counts, float32)
     * @return the fit
     */
    public TopicFit fit(Loader loader) {
        return fit(loader, stats -> { });
    }

    /**
     * Fits the model, reporting each epoch as it ends.
     *
     * @param loader batches of documents (rows of term counts, float32)
     * @param onEpoch called after every epoch
     * @return the fit
     */
    public TopicFit fit(Loader loader, Consumer<EpochStats> onEpoch) {
        if (loader.outputType() != DType.FLOAT32) {
            throw new IllegalArgumentException("the topic model trains on float32 counts; build the loader with "
                    + ".optConvertTo(DType.FLOAT32) (batches are " + loader.outputType() + ")");
        }
        long documents = loader.samples();
        long terms = loader.sampleShape().size();
        Engine engine = Engine.getEngine("PyTorch");
        Device target = device != null ? device : engine.defaultDevice();
        List<EpochStats> history = new ArrayList<>();
        try (NDManager manager = engine.newBaseManager(target);
             Progress progress = Progress.bar("Topic model", epochs * loader.batchesPerEpoch(), "batches")) {
            SplittableRandom random = new SplittableRandom(seed);
            NDArray docLogits = uniform(manager, random, new Shape(documents, topics));
            NDArray topicLogits = uniform(manager, random, new Shape(topics, terms));
            topicLogits.setRequiresGradient(true);
            Optimizer adam = Optimizer.adam().optLearningRateTracker(Tracker.fixed(learningRate)).build();
            RowAdam rowAdam = sparseDocumentUpdates ? new RowAdam(manager, docLogits.getShape(), learningRate) : null;
            if (!sparseDocumentUpdates) {
                docLogits.setRequiresGradient(true);
            }
            for (int epoch = 0; epoch < epochs; epoch++) {
                long start = System.nanoTime();
                double lossSum = 0;
                long samples = 0;
                long steps = 0;
                StepGroup group = null;
                for (Batch batch : loader.epoch(epoch)) {
                    if (group == null) {
                        group = new StepGroup(manager.newSubManager(), engine.newGradientCollector());
                    }
                    NDManager scope = group.scope;
                    NDArray counts = batch.toNDArray(scope).toDevice(target, false);
                    NDArray rowIds = scope.create(batch.indices()).toDevice(target, false);
                    // Sparse: the batch's rows of A become a leaf of their own, so a step costs O(batch k), not
                    // O(n k). Dense: gradients flow into all of A, as in tinytopics.
                    NDArray docRows = docLogits.get(new NDIndex("{}", rowIds));
                    docRows.attach(scope);
                    if (sparseDocumentUpdates) {
                        docRows.setRequiresGradient(true);
                    }
                    NDArray f = topicLogits.softmax(1);
                    f.attach(scope);
                    NDArray reconstruction = docRows.softmax(1).matMul(f).add(EPSILON);
                    NDArray loss = counts.mul(reconstruction.log()).neg().add(reconstruction).sum();
                    // Losses are sums over documents, so k micro-batches add up to the gradient of their union.
                    group.collector.backward(loss);
                    lossSum += loss.getFloat();
                    group.rowIds.add(rowIds);
                    group.rows.add(docRows);
                    if (group.rows.size() == accumulation) {
                        step(group, docLogits, topicLogits, adam, rowAdam);
                        group = null;
                        steps++;
                    }
                    samples += batch.size();
                    progress.step(1);
                }
                if (group != null) {
                    step(group, docLogits, topicLogits, adam, rowAdam);
                    steps++;
                }
                // Between epochs, cached but unused GPU memory goes back to the driver (no-op on the CPU).
                DeviceMemory.releaseCache(target);
                EpochStats stats = new EpochStats(epoch, lossSum / Math.max(1, samples),
                        (System.nanoTime() - start) / 1e9, steps, samples);
                history.add(stats);
                progress.message(String.format("epoch %d loss %.4f", epoch, stats.loss()));
                onEpoch.accept(stats);
            }
            return new TopicFit(toSource(docLogits.softmax(1), documents), toRows(topicLogits.softmax(1)),
                    List.copyOf(history), target.toString());
        }
    }

    /** The micro-batches of one optimizer step: their scope, their gradient collector, their rows of A. */
    private static final class StepGroup {
        final NDManager scope;
        final GradientCollector collector;
        final List<NDArray> rowIds = new ArrayList<>();
        final List<NDArray> rows = new ArrayList<>();

        StepGroup(NDManager scope, GradientCollector collector) {
            this.scope = scope;
            this.collector = collector;
        }
    }

    /** One optimizer step on the gradients the group's micro-batches accumulated, then frees the group. */
    private void step(StepGroup group, NDArray docLogits, NDArray topicLogits, Optimizer adam, RowAdam rowAdam) {
        try (NDManager scope = group.scope) {
            group.collector.close();
            NDArray topicGrad = topicLogits.getGradient();
            topicGrad.attach(scope);
            adam.update("topicTerms", topicLogits, topicGrad);
            if (sparseDocumentUpdates) {
                NDList grads = new NDList();
                NDList current = new NDList();
                for (NDArray rows : group.rows) {
                    NDArray grad = rows.getGradient();
                    grad.attach(scope);
                    grads.add(grad);
                    current.add(rows.stopGradient());
                }
                NDIndex all = new NDIndex("{}", NDArrays.concat(new NDList(group.rowIds)));
                rowAdam.update(docLogits, all, NDArrays.concat(current), NDArrays.concat(grads), scope);
            } else {
                NDArray docGrad = docLogits.getGradient();
                docGrad.attach(scope);
                adam.update("documentTopics", docLogits, docGrad);
            }
        }
    }

    private static NDArray uniform(NDManager manager, SplittableRandom random, Shape shape) {
        // Initialised from Java's generator so a seed gives the same start on every device and engine version.
        float[] values = new float[Math.toIntExact(shape.size())];
        for (int i = 0; i < values.length; i++) {
            values[i] = (float) (random.nextDouble() * 0.2 - 0.1);
        }
        return manager.create(values, shape);
    }

    private static ArraySource toSource(NDArray proportions, long documents) {
        float[] values = proportions.toDevice(Device.cpu(), false).toFloatArray();
        int k = Math.toIntExact(proportions.getShape().get(1));
        ArraySource source = ArraySource.allocate("document-topic proportions", documents, new Shape(k), DType.FLOAT32);
        MemorySegment.copy(values, 0, source.data(), ValueLayout.JAVA_FLOAT, 0, values.length);
        return source;
    }

    private static float[][] toRows(NDArray matrix) {
        int rows = Math.toIntExact(matrix.getShape().get(0));
        int cols = Math.toIntExact(matrix.getShape().get(1));
        float[] flat = matrix.toDevice(Device.cpu(), false).toFloatArray();
        float[][] result = new float[rows][cols];
        for (int r = 0; r < rows; r++) {
            System.arraycopy(flat, r * cols, result[r], 0, cols);
        }
        return result;
    }

    /**
     * Configures a {@link TopicModel}: {@code setX} is required, {@code optX} optional. Defaults: 50 epochs,
     * learning rate 0.01, sparse document updates.
     */
    public static final class Builder extends TrainerBuilder<Builder> {
        private int topics;
        private boolean sparseDocumentUpdates = true;

        private Builder() {
            super(50, 0.01f);
        }

        @Override
        protected Builder self() {
            return this;
        }

        /**
         * Chooses how the document-topic logits A are updated (default: sparse).
         *
         * <p>Sparse: only the rows of the documents in a batch are updated, by Adam with per-row moments (the
         * approach of torch's {@code SparseAdam}), so a step costs O(batch x k) however many documents there are.
         * Dense: A is one parameter updated by Adam at every step, exactly as tinytopics does, at O(n x k) per step;
         * use it to compare with tinytopics step for step.
         *
         * @param sparse true for sparse updates
         * @return this builder
         */
        public Builder optSparseDocumentUpdates(boolean sparse) {
            this.sparseDocumentUpdates = sparse;
            return this;
        }

        /**
         * Sets the number of topics k (required).
         *
         * @param k at least 1
         * @return this builder
         */
        public Builder setTopics(int k) {
            this.topics = k;
            return this;
        }

        /**
         * Validates and builds.
         *
         * @return the model
         */
        public TopicModel build() {
            if (topics < 1) {
                throw new IllegalArgumentException("setTopics(k) is required and k must be at least 1, got " + topics);
            }
            validate();
            return new TopicModel(this);
        }
    }
}
