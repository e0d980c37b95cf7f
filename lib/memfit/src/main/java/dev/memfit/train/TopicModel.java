package dev.memfit.train;

import ai.djl.Device;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDArrays;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.index.NDIndex;
import ai.djl.ndarray.types.Shape;
import dev.memfit.DType;
import dev.memfit.data.Batch;
import dev.memfit.data.Loader;
import dev.memfit.source.ArraySource;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;

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
 * <p>Every fit starts from the seed's initial parameters (A has one row per document of the loader). When it ends,
 * L and F are copied out of the device, which is then freed: the model keeps them, L in native memory, until the
 * next fit or {@link #close()}.
 *
 * <pre>{@code
 * try (TopicModel model = TopicModel.builder().setTopics(10).optEpochs(50).optLearningRate(0.01).build();
 *      Loader loader = Datasets.npy(counts).mapped().optBatchSize(256).optShuffle(1).build()) {
 *     double[] losses = model.fit(loader).losses();
 *     float[][] topics = model.topicTerms();
 * }
 * }</pre>
 */
public final class TopicModel implements Trainer {

    private static final float EPSILON = 1e-10f;
    /** Values per piece when A or L crosses between host and device: Java arrays end at 2^31 values, A does not. */
    private static final int CHUNK_VALUES = 1 << 24;

    private final int topics;
    private final float learningRate;
    private final long seed;
    private final boolean sparseDocumentUpdates;
    private final Fit loop;
    private ArraySource documentTopics;
    private float[][] topicTerms;
    private boolean closed;

    private TopicModel(Builder builder) {
        this.topics = builder.topics;
        this.learningRate = builder.learningRate;
        this.seed = builder.seed;
        this.sparseDocumentUpdates = builder.sparseDocumentUpdates;
        this.loop = new Fit("Topic model", builder);
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
        return Fit.defaultDevice();
    }

    /**
     * Fits the model to the counts a loader yields, from the seed's initial parameters; the loader's shuffle and
     * batch size drive the mini-batches. Replaces the results of an earlier fit.
     *
     * @param loader batches of documents (rows of term counts, float32)
     * @return what each epoch did
     * @throws IllegalArgumentException when the batches are not float32 (build the loader with
     *         {@code optConvertTo(DType.FLOAT32)})
     */
    @Override
    public FitResult fit(Loader loader) {
        checkOpen();
        Fit.requireFloat32(loader, "the topic model", false);
        long documents = loader.samples();
        long terms = loader.sampleShape().size();
        release();
        try (NDManager manager = Fit.engine().newBaseManager(loop.device())) {
            SplittableRandom random = new SplittableRandom(seed);
            NDArray docLogits = uniform(manager, random, new Shape(documents, topics), CHUNK_VALUES);
            NDArray topicLogits = uniform(manager, random, new Shape(topics, terms), CHUNK_VALUES);
            topicLogits.setRequiresGradient(true);
            if (!sparseDocumentUpdates) {
                docLogits.setRequiresGradient(true);
            }
            Training training = new Training(manager, docLogits, topicLogits);
            FitResult result = loop.run(loader, manager, training);
            documentTopics = toSource(docLogits, CHUNK_VALUES);
            topicTerms = toRows(topicLogits.softmax(1));
            return result;
        }
    }

    /**
     * The topic-term distributions F of the last fit.
     *
     * @return k rows of m probabilities that sum to 1 (a copy)
     * @throws IllegalStateException before the first fit
     */
    public float[][] topicTerms() {
        checkFitted();
        float[][] copy = new float[topicTerms.length][];
        for (int t = 0; t < copy.length; t++) {
            copy[t] = topicTerms[t].clone();
        }
        return copy;
    }

    /**
     * The document-topic proportions L of the last fit, in native memory; the model owns them, until the next fit
     * or {@link #close()}.
     *
     * @return n rows of k proportions that sum to 1 (float32)
     * @throws IllegalStateException before the first fit
     */
    public ArraySource documentTopics() {
        checkFitted();
        return documentTopics;
    }

    /**
     * The topic proportions of one document.
     *
     * @param document the document index in the loader's source
     * @return k proportions
     * @throws IllegalStateException before the first fit
     */
    public float[] documentTopics(long document) {
        checkFitted();
        if (document < 0 || document >= documentTopics.size()) {
            throw new IndexOutOfBoundsException("document " + document + " of " + documentTopics.size());
        }
        float[] row = new float[topics];
        MemorySegment.copy(documentTopics.data(), ValueLayout.JAVA_FLOAT, document * topics * Float.BYTES, row, 0, topics);
        return row;
    }

    /** Frees L. Idempotent. */
    @Override
    public void close() {
        closed = true;
        release();
    }

    private void release() {
        if (documentTopics != null) {
            documentTopics.close();
            documentTopics = null;
            topicTerms = null;
        }
    }

    private void checkOpen() {
        if (closed) {
            throw new IllegalStateException("the topic model is closed");
        }
    }

    private void checkFitted() {
        checkOpen();
        if (documentTopics == null) {
            throw new IllegalStateException("fit the topic model before reading its topics");
        }
    }

    /**
     * What one fit updates: A (docLogits), B (topicLogits), their optimizers, and the rows of A the mini-batches of
     * the current step touched.
     */
    private final class Training implements Fit.Model {
        private final NDArray docLogits;
        private final NDArray topicLogits;
        private final DenseAdam adam;
        private final RowAdam rowAdam;
        private final List<NDArray> rowIds = new ArrayList<>();
        private final List<NDArray> rows = new ArrayList<>();

        Training(NDManager manager, NDArray docLogits, NDArray topicLogits) {
            this.docLogits = docLogits;
            this.topicLogits = topicLogits;
            Map<String, NDArray> dense = new LinkedHashMap<>();
            dense.put("topicTerms", topicLogits);
            if (!sparseDocumentUpdates) {
                dense.put("documentTopics", docLogits);
            }
            this.adam = new DenseAdam(learningRate, dense);
            this.rowAdam = sparseDocumentUpdates ? new RowAdam(manager, docLogits.getShape(), learningRate) : null;
        }

        @Override
        public boolean keepsLossOnDevice() {
            return true;
        }

        @Override
        public NDArray backwardOnDevice(Batch batch, Fit.Step step) {
            NDManager scope = step.batchScope();
            Device target = docLogits.getDevice();
            NDArray counts = Fit.onDevice(batch, scope, target);
            NDArray ids = scope.create(batch.indices()).toDevice(target, false);
            // Sparse: the batch's rows of A become a leaf of their own, so a step costs O(batch k), not O(n k).
            // Dense: gradients flow into all of A, as in tinytopics.
            NDArray docRows = docLogits.get(new NDIndex("{}", ids));
            docRows.attach(scope);
            if (sparseDocumentUpdates) {
                docRows.setRequiresGradient(true);
            }
            NDArray f = topicLogits.softmax(1);
            f.attach(scope);
            NDArray reconstruction = docRows.softmax(1).matMul(f).add(EPSILON);
            // r - X log r: bit for bit the -(X log r) + r it was, one op (and one backward node) fewer
            NDArray loss = reconstruction.sub(counts.mul(reconstruction.log())).sum();
            // Losses are sums over documents, so k micro-batches add up to the gradient of their union.
            step.backward(loss);
            if (sparseDocumentUpdates) {
                // The update reads these rows' gradients: they outlive the mini-batch's scope.
                ids.attach(step.scope());
                docRows.attach(step.scope());
                rowIds.add(ids);
                rows.add(docRows);
            }
            // left on the device: the loop reads the losses of many batches at once, not one (a GPU sync) a batch
            return loss;
        }

        @Override
        public double backward(Batch batch, Fit.Step step) {
            NDArray loss = backwardOnDevice(batch, step);
            return loss.getFloat();
        }

        @Override
        public void update(Fit.Step step) {
            NDManager scope = step.scope();
            NDArray topicGrad = topicLogits.getGradient();
            topicGrad.attach(scope);
            adam.beginStep();
            adam.update("topicTerms", topicLogits, topicGrad);
            if (sparseDocumentUpdates) {
                NDIndex all;
                NDArray current;
                NDArray grad;
                if (rows.size() == 1) {
                    // one mini-batch a step (no accumulation): no concatenation, which would copy each array once
                    NDArray row = rows.getFirst();
                    grad = row.getGradient();
                    grad.attach(scope);
                    current = row.stopGradient();
                    current.attach(scope);
                    all = new NDIndex("{}", rowIds.getFirst());
                } else {
                    NDList grads = new NDList();
                    NDList currents = new NDList();
                    for (NDArray row : rows) {
                        NDArray rowGrad = row.getGradient();
                        rowGrad.attach(scope);
                        grads.add(rowGrad);
                        currents.add(row.stopGradient());
                    }
                    NDArray ids = NDArrays.concat(new NDList(rowIds));
                    ids.attach(scope);
                    all = new NDIndex("{}", ids);
                    current = NDArrays.concat(currents);
                    grad = NDArrays.concat(grads);
                    current.attach(scope);
                    grad.attach(scope);
                }
                rowAdam.update(docLogits, all, current, grad, scope);
                rowIds.clear();
                rows.clear();
            } else {
                NDArray docGrad = docLogits.getGradient();
                docGrad.attach(scope);
                adam.update("documentTopics", docLogits, docGrad);
            }
        }

        @Override
        public Map<String, NDArray> stateArrays() {
            Map<String, NDArray> arrays = new LinkedHashMap<>();
            arrays.put("parameters/topicTerms", topicLogits);
            arrays.put("parameters/documentTopics", docLogits);
            adam.state("adam/", arrays);
            if (rowAdam != null) {
                rowAdam.state("rowAdam/documentTopics/", arrays);
            }
            return arrays;
        }

        @Override
        public Map<String, Long> counters() {
            Map<String, Long> counters = new LinkedHashMap<>();
            counters.put("adam steps", adam.steps());
            if (rowAdam != null) {
                counters.put("row adam steps", rowAdam.steps());
            }
            return counters;
        }

        @Override
        public void restoreCounters(Map<String, Long> counters) {
            adam.restoreSteps(counters.getOrDefault("adam steps", 0L));
            if (rowAdam != null) {
                rowAdam.restoreSteps(counters.getOrDefault("row adam steps", 0L));
            }
        }

        @Override
        public Map<String, String> settings() {
            Map<String, String> settings = new LinkedHashMap<>();
            settings.put("topics", Integer.toString(topics));
            settings.put("learning rate", Float.toString(learningRate));
            settings.put("document updates", sparseDocumentUpdates ? "sparse (row Adam)" : "dense");
            settings.put("documents x terms", docLogits.getShape().get(0) + " x " + topicLogits.getShape().get(1));
            return settings;
        }
    }

    /**
     * Uniform values in [-0.1, 0.1), drawn row-major from Java's generator (so that a seed gives the same start on
     * every device and engine version), sent to the device in pieces of whole rows of at most {@code pieceValues}.
     */
    static NDArray uniform(NDManager manager, SplittableRandom random, Shape shape, int pieceValues) {
        long rows = shape.get(0);
        long cols = shape.get(1);
        long rowsPerPiece = Math.max(1, pieceValues / cols);
        if (rows <= rowsPerPiece) {
            return manager.create(draw(random, rows * cols), shape);
        }
        NDArray result = manager.create(shape);
        for (long from = 0; from < rows; from += rowsPerPiece) {
            long to = Math.min(rows, from + rowsPerPiece);
            try (NDManager piece = manager.newSubManager()) {
                result.set(new NDIndex(from + ":" + to), piece.create(draw(random, (to - from) * cols), new Shape(to - from, cols)));
            }
        }
        return result;
    }

    private static float[] draw(SplittableRandom random, long count) {
        float[] values = new float[Math.toIntExact(count)];
        for (int i = 0; i < values.length; i++) {
            values[i] = (float) (random.nextDouble() * 0.2 - 0.1);
        }
        return values;
    }

    /** L = softmax(A) row-wise, copied to native memory in pieces of whole rows of at most {@code pieceValues}. */
    static ArraySource toSource(NDArray docLogits, int pieceValues) {
        long documents = docLogits.getShape().get(0);
        long k = docLogits.getShape().get(1);
        long rowsPerPiece = Math.max(1, pieceValues / k);
        ArraySource source = ArraySource.allocate("document-topic proportions", documents, new Shape(k), DType.FLOAT32);
        for (long from = 0; from < documents; from += rowsPerPiece) {
            long to = Math.min(documents, from + rowsPerPiece);
            try (NDManager piece = docLogits.getManager().newSubManager()) {
                NDArray rows = docLogits.get(new NDIndex(from + ":" + to));
                rows.attach(piece);
                NDArray proportions = rows.softmax(1).toDevice(Device.cpu(), false);
                proportions.attach(piece);
                float[] values = proportions.toFloatArray();
                MemorySegment.copy(values, 0, source.data(), ValueLayout.JAVA_FLOAT, from * k * Float.BYTES, values.length);
            }
        }
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
     * Configures a {@link TopicModel}: {@link #setTopics} is required, every {@code optX} optional. Defaults:
     * 50 epochs, learning rate 0.01, sparse document updates, and those of {@link TrainerBuilder}.
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
         * Validates and builds.
         *
         * @return the model
         * @throws IllegalArgumentException when a setting is missing or out of range
         */
        public TopicModel build() {
            validate();
            if (topics < 1) {
                throw new IllegalArgumentException("setTopics(k) is required and k must be at least 1, got " + topics);
            }
            return new TopicModel(this);
        }
    }
}
