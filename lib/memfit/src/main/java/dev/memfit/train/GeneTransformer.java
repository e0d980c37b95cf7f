package dev.memfit.train;

import ai.djl.Device;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.internal.NDArrayEx;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import ai.djl.ndarray.types.SparseFormat;
import ai.djl.training.loss.Loss;
import dev.memfit.data.Batch;
import dev.memfit.data.Loader;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.TreeMap;

/**
 * A gene-token transformer, as Geneformer: each cell is its rank-value tokens ({@link RankValueTokens}), read by a
 * pre-norm transformer encoder, trained to predict masked gene ids (a share of each cell's tokens replaced by the
 * mask token) and, with labels, the cell's type from its mean-pooled tokens. Both losses are summed; each is
 * reported per epoch ({@link #epochLosses()}) beside the loss of the best prediction of the same masked genes from
 * their rank alone (a masked token keeps its position): a model that learned nothing about the rest of the cell does
 * no better than that.
 *
 * <p>The encoder is written here on DJL's operators (embedding, layer norm, linear, GELU, batched matmul, softmax),
 * not from DJL's {@code TransformerEncoderBlock}, which normalizes with batch statistics ({@code BatchNorm}) rather than
 * layer norm: that is not the architecture of Geneformer or of PyTorch's {@code nn.TransformerEncoderLayer}, and its
 * results would change with the batch. The parameters are named as PyTorch's {@code nn.TransformerEncoderLayer(
 * norm_first=True, activation="gelu", dropout=0)} names them, so that the same initial weights can be loaded on
 * both sides for a comparison (no dropout here).
 *
 * <p>{@code optBf16(true)} runs the forward and backward passes in bfloat16 with float32 master weights (the weights
 * are cast at each use, their gradients flow back to float32, Adam updates float32), as {@code bf16-mixed} does, where
 * the engine can hold bfloat16 arrays ({@link #bf16Supported()}): DJL 0.35's PyTorch engine cannot (creating or
 * casting to {@code DataType.BFLOAT16} aborts the JVM in its native layer), so there the builder refuses it.
 *
 * <p>The parameters are built by the first fit and kept until {@link #close()}; checkpoints, resume, gradient
 * accumulation and progress come from the one loop every trainer uses.
 *
 */
public final class GeneTransformer implements Trainer {

    private static final float MASK_BIAS = -1e9f;
    /** The share of each cell's gene tokens masked unless {@link Builder#optMaskShare} says otherwise, as Geneformer. */
    public static final double DEFAULT_MASK_SHARE = 0.15;

    private final RankValueTokens tokens;
    private final int[] labels;
    private final int classes;
    private final int dModel;
    private final int layers;
    private final int heads;
    private final float maskShare;
    private final boolean bf16;
    private final float learningRate;
    private final long seed;
    private final Fit loop;
    private NDManager manager;
    private Map<String, NDArray> parameters;
    /** Per epoch run here (the loader's number, from 0): masked-gene loss sum, masked tokens, cell-type loss sum, cells. */
    private final Map<Long, double[]> epochParts = new TreeMap<>();
    /** Per epoch run here: how often each (position, gene) was a masked target, keyed position x vocabulary + id. */
    private final Map<Long, Map<Long, Long>> epochTargets = new TreeMap<>();
    private boolean closed;
    /** Whether a fit has trained the weights (they exist from the first {@link #parameters()} call on, untrained). */
    private boolean fitted;
    /** Tokens (cells x max_length, padding included: what the encoder computes on) of every batch trained on. */
    private long tokensRead;
    /** glibc's largest mmap threshold (64-bit): larger blocks are always mapped, and unmapped when freed. */
    private static final long GLIBC_MMAP_THRESHOLD_MAX = 32L << 20;
    /** Whether this process was told about its allocator already (once is enough). */
    private static final java.util.concurrent.atomic.AtomicBoolean ALLOCATOR_NOTED = new java.util.concurrent.atomic.AtomicBoolean();

    private GeneTransformer(Builder builder) {
        this.tokens = builder.tokens;
        this.labels = builder.labels;
        this.classes = builder.classes;
        this.dModel = builder.dModel;
        this.layers = builder.layers;
        this.heads = builder.heads;
        this.maskShare = builder.maskShare;
        this.bf16 = builder.bf16;
        this.learningRate = builder.learningRate;
        this.seed = builder.seed;
        this.loop = new Fit("Gene transformer", builder);
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
     * Whether the engine can train in bfloat16 ({@code bf16-mixed}). Not with DJL 0.35's PyTorch engine, the one
     * memfit runs on: its native layer has no mapping for {@code DataType.BFLOAT16}, and creating or casting such an
     * array aborts the process ("terminate called without an active exception", measured on PyTorch 2.7.1 CPU),
     * which no Java code can catch, so it is never tried.
     *
     * @return false on this engine
     */
    public static boolean bf16Supported() {
        return false;
    }

    /**
     * Trains on the cells a loader yields (sparse batches are tokenized without densifying); with labels, each cell is
     * labelled by its index in the loader's source.
     *
     * @param loader batches of cells with the columns the tokenizer was fitted on
     * @return what each epoch did (loss: the masked-gene loss plus the cell-type loss, per cell)
     */
    @Override
    public FitResult fit(Loader loader) {
        checkOpen();
        if (labels != null && labels.length < loader.samples()) {
            throw new IllegalArgumentException("setLabels gave " + labels.length + " labels; the loader's source has "
                    + loader.samples() + " samples, and every one needs a label");
        }
        ensureParameters();
        long scoresBytes = (long) loader.batchSize() * heads * tokens.maxLength() * tokens.maxLength() * Float.BYTES;
        if (!manager.getDevice().isGpu() && scoresBytes > GLIBC_MMAP_THRESHOLD_MAX
                && "glibc".equals(dev.memfit.ProcessMemory.allocator()) && ALLOCATOR_NOTED.compareAndSet(false, true)) {
            // measured (./memfit bench transformer): half of a step's time went to the page faults of tensors glibc
            // maps and unmaps on every step (above its 32 MiB mmap threshold); the launcher preloads tcmalloc
            loop.progress().note("native memory comes from glibc's malloc: PyTorch's CPU tensors above 32 MiB (here "
                    + "the attention scores, " + dev.memfit.ProcessMemory.human(scoresBytes) + " a layer) are mapped and "
                    + "unmapped on every step, which took half of a step's time in memfit's benchmark; start the JVM "
                    + "with LD_PRELOAD=libtcmalloc_minimal.so.4 (Debian's libtcmalloc-minimal4; ./memfit train does) for "
                    + "about twice the tokens/s");
        }
        epochParts.clear();
        epochTargets.clear();
        fitted = true;
        DenseAdam adam = new DenseAdam(learningRate, parameters);
        int accumulation = loop.accumulation();
        long stepSamples = (long) accumulation * loader.batchSize();
        Loss crossEntropy = Loss.softmaxCrossEntropyLoss();
        try {
            return loop.run(loader, manager, new BlockTraining.Model(parameters, adam) {
                @Override
                public double backward(Batch batch, Fit.Step step) {
                    NDManager scope = step.batchScope();
                    MaskedTokens masked = maskedTokens(batch);
                    RankValueTokens.Tokens cells = masked.cells();
                    tokensRead += (long) cells.cells() * cells.length();
                    NDArray hidden = encode(scope, masked.input(), cells.lengths());
                    int b = cells.cells();
                    NDArray total = scope.zeros(new Shape(), DataType.FLOAT32);
                    double[] parts = epochParts.computeIfAbsent(batch.epoch(), e -> new double[4]);
                    if (masked.targets().length > 0) {
                        NDArray at = scope.create(masked.positions()).toDevice(manager.getDevice(), false);
                        NDArray picked = ex(hidden).embedding(at, hidden.reshape(-1, dModel), SparseFormat.DENSE).head();
                        NDArray logits = linear(picked, "masked_gene_head").toType(DataType.FLOAT32, false);
                        NDArray truth = scope.create(masked.targets()).toDevice(manager.getDevice(), false);
                        NDArray genes = crossEntropy.evaluate(new NDList(truth), new NDList(logits));
                        total = total.add(genes);
                        parts[0] += genes.getFloat() * masked.targets().length;
                        parts[1] += masked.targets().length;
                        Map<Long, Long> counts = epochTargets.computeIfAbsent(batch.epoch(), e -> new java.util.HashMap<>());
                        long vocabulary = tokens.vocabularySize();
                        for (int i = 0; i < masked.targets().length; i++) {
                            long position = masked.positions()[i] % cells.length();
                            counts.merge(position * vocabulary + masked.targets()[i], 1L, Long::sum);
                        }
                    }
                    if (labels != null) {
                        NDArray logits = linear(pool(scope, hidden, cells.lengths()), "cell_type_head")
                                .toType(DataType.FLOAT32, false);
                        int[] y = new int[b];
                        long[] indices = batch.indices();
                        for (int i = 0; i < b; i++) {
                            y[i] = labels[Math.toIntExact(indices[i])];
                        }
                        NDArray types = crossEntropy.evaluate(new NDList(scope.create(y).toDevice(manager.getDevice(), false)),
                                new NDList(logits));
                        total = total.add(types);
                        parts[2] += types.getFloat() * b;
                        parts[3] += b;
                    }
                    if (masked.targets().length == 0 && labels == null) {
                        // no gene token in any cell and no head: nothing to learn from this batch (and no graph)
                        return 0;
                    }
                    // a batch's share of a full step's cells, as the other trainers weigh accumulated batches
                    step.backward(accumulation == 1 ? total : BlockTraining.times(total, b / (float) stepSamples, scope));
                    return total.getFloat() * b;
                }

                @Override
                public void update(Fit.Step step) {
                    float scale = accumulation == 1 || step.samples() == stepSamples ? 1f
                            : stepSamples / (float) step.samples();
                    BlockTraining.step(adam, step.scope(), scale, parameters);
                }

                @Override
                public String workUnit() {
                    return "tokens";
                }

                @Override
                public long workDone() {
                    return tokensRead;
                }

                @Override
                public Map<String, String> settings() {
                    Map<String, String> settings = new LinkedHashMap<>();
                    settings.put("vocabulary", Integer.toString(tokens.vocabularySize()));
                    settings.put("max length", Integer.toString(tokens.maxLength()));
                    settings.put("d_model", Integer.toString(dModel));
                    settings.put("layers", Integer.toString(layers));
                    settings.put("heads", Integer.toString(heads));
                    settings.put("classes", Integer.toString(labels == null ? 0 : classes));
                    settings.put("mask share", Float.toString(maskShare));
                    settings.put("precision", bf16 ? "bf16-mixed" : "32-true");
                    settings.put("learning rate", Float.toString(learningRate));
                    return settings;
                }
            });
        } finally {
            adam.close();
        }
    }

    /**
     * What one epoch of the last fit learned, as run in this process.
     *
     * @param epoch the epoch, from 1 (as {@link EpochStats#epoch()})
     * @param maskedGenes the masked-gene loss: mean cross-entropy over the masked tokens, in nats
     * @param rankBaseline the loss of the best prediction of the same masked genes from their rank alone (the
     *                     entropy of the genes masked at each position, weighted by the position's count, corrected
     *                     for its bias on few targets): the masked-gene loss falls below it only when the model uses
     *                     the rest of the cell
     * @param unigramBaseline the loss of the best constant prediction of the same masked genes (the entropy of their
     *                        frequencies, bias-corrected): a model below it has learned something, if only the ranks
     * @param cellType the cell-type loss, mean cross-entropy per cell (NaN without labels)
     * @param maskedTokens the tokens masked
     * @param cells the cells seen
     */
    public record EpochLosses(int epoch, double maskedGenes, double rankBaseline, double unigramBaseline, double cellType,
                              long maskedTokens, long cells) {
    }

    /**
     * The losses of the epochs the last fit ran in this process, in order (a resumed fit: the epochs after its
     * checkpoint, the first of them from where it resumed).
     *
     * @return one entry per epoch run
     */
    public List<EpochLosses> epochLosses() {
        List<EpochLosses> losses = new ArrayList<>();
        epochParts.forEach((epoch, parts) -> losses.add(new EpochLosses(Math.toIntExact(epoch + 1),
                parts[1] == 0 ? Double.NaN : parts[0] / parts[1],
                entropy(epochTargets.getOrDefault(epoch, Map.of()), tokens.vocabularySize()),
                entropy(epochTargets.getOrDefault(epoch, Map.of()), Long.MAX_VALUE),
                labels == null || parts[3] == 0 ? Double.NaN : parts[2] / parts[3], (long) parts[1], (long) parts[3])));
        return losses;
    }

    /**
     * The entropy of the targets at each position (or of all of them, for the unigram), weighted by the position's
     * share of the targets, in nats, with Miller and Madow's correction ({@code (genes seen - 1) / 2n} per position): the entropy of frequencies counted
     * on the very targets it scores is biased low by about that much, which would credit the baseline with knowledge
     * of the epoch's own masks.
     */
    private double entropy(Map<Long, Long> positionAndGene, long vocabulary) {
        // by position: keys are position x vocabulary + id; with vocabulary = MAX_VALUE every key is position 0, and
        // the genes are counted over all positions (the unigram); the ids are the keys modulo the vocabulary
        Map<Long, Long> counts = new java.util.HashMap<>();
        long size = tokens.vocabularySize();
        positionAndGene.forEach((key, count) -> counts.merge(vocabulary == size ? key : key % size, count, Long::sum));
        Map<Long, Long> perPosition = new java.util.HashMap<>();
        Map<Long, Long> seenPerPosition = new java.util.HashMap<>();
        counts.forEach((key, count) -> {
            perPosition.merge(key / vocabulary, count, Long::sum);
            seenPerPosition.merge(key / vocabulary, 1L, Long::sum);
        });
        double total = perPosition.values().stream().mapToLong(Long::longValue).sum();
        if (total == 0) {
            return Double.NaN;
        }
        double entropy = 0;
        for (Map.Entry<Long, Long> entry : counts.entrySet()) {
            double atPosition = perPosition.get(entry.getKey() / vocabulary);
            entropy -= entry.getValue() / total * Math.log(entry.getValue() / atPosition);
        }
        for (Map.Entry<Long, Long> position : perPosition.entrySet()) {
            entropy += position.getValue() / total * (seenPerPosition.get(position.getKey()) - 1) / (2.0 * position.getValue());
        }
        return entropy;
    }

    /**
     * Predicts the type of every cell a loader yields, by sample index.
     *
     * @param loader cells
     * @return the predicted class of each sample of the loader's source (-1 for samples not yielded)
     */
    public int[] predict(Loader loader) {
        checkOpen();
        if (!fitted || labels == null) {
            throw new IllegalStateException(!fitted ? "fit the transformer before predicting"
                    : "the transformer was built without labels: it has no cell-type head");
        }
        int[] predictions = new int[Math.toIntExact(loader.samples())];
        Arrays.fill(predictions, -1);
        for (Batch batch : loader.epoch(0)) {
            try (NDManager scope = manager.newSubManager()) {
                RankValueTokens.Tokens cells = tokens.tokenize(batch);
                NDArray hidden = encode(scope, cells.ids(), cells.lengths());
                long[] best = linear(pool(scope, hidden, cells.lengths()), "cell_type_head").argMax(1)
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
     * The parameters by name (PyTorch's names for the same layers), live: for inspection and for loading weights.
     * Before the first fit they are the initial weights, drawn from the seed on the first call (the fit then starts
     * from them).
     *
     * @return the float32 master weights
     */
    public Map<String, NDArray> parameters() {
        checkOpen();
        ensureParameters();
        return java.util.Collections.unmodifiableMap(parameters);
    }

    private void ensureParameters() {
        if (manager == null) {
            loop.seed();
            manager = Fit.engine().newBaseManager(loop.device());
            parameters = initialParameters();
        }
    }

    /**
     * A batch as the fit trains on it: its rank-value tokens and the masked input.
     *
     * @param cells the batch's tokens
     * @param input the token ids, cell after cell ({@code cells x length}), with the masked tokens replaced by
     *              {@link RankValueTokens#MASK}
     * @param positions where the masked tokens are, as {@code cell x length + position}, in order
     * @param targets the gene token each masked position held
     */
    public record MaskedTokens(RankValueTokens.Tokens cells, long[] input, long[] positions, long[] targets) {
    }

    /**
     * Tokenizes and masks a batch as the fit does: {@code max(1, round(share x genes))} tokens of each cell with genes
     * are picked by a generator seeded by the fit's seed, the batch's epoch and number, so that the same batch masks
     * the same tokens in a resumed run (and another framework can be fed the very same input).
     *
     * @param batch cells with the columns the tokenizer was fitted on
     * @return the tokens and the masked input
     */
    public MaskedTokens maskedTokens(Batch batch) {
        RankValueTokens.Tokens cells = tokens.tokenize(batch);
        long epoch = batch.epoch();
        long number = batch.number();
        long[] input = cells.ids().clone();
        int total = 0;
        for (int n : cells.lengths()) {
            total += picks(n);
        }
        long[] positions = new long[total];
        long[] targets = new long[total];
        SplittableRandom random = new SplittableRandom(seed ^ (epoch * 0x9E3779B97F4A7C15L) ^ (number * 0xC2B2AE3D27D4EB4FL));
        int length = cells.length();
        int[] order = new int[length];
        int masked = 0;
        for (int cell = 0; cell < cells.cells(); cell++) {
            int n = cells.lengths()[cell];
            for (int i = 0; i < n; i++) {
                order[i] = i;
            }
            for (int i = 0; i < picks(n); i++) {
                int j = i + random.nextInt(n - i);
                int swap = order[i];
                order[i] = order[j];
                order[j] = swap;
                long at = (long) cell * length + order[i];
                positions[masked] = at;
                targets[masked++] = input[(int) at];
                input[(int) at] = RankValueTokens.MASK;
            }
        }
        return new MaskedTokens(cells, input, positions, targets);
    }

    /** The tokens masked in a cell of {@code n} gene tokens: none without genes, else at least one. */
    private int picks(int n) {
        return n == 0 ? 0 : Math.max(1, Math.round(maskShare * n));
    }


    /** The encoder: token and position embeddings, pre-norm layers, a final layer norm; {@code (B, T, d)} float32. */
    private NDArray encode(NDManager scope, long[] ids, int[] lengths) {
        int b = lengths.length;
        int t = tokens.maxLength();
        Device device = manager.getDevice();
        NDArray input = scope.create(ids, new Shape(b, t)).toDevice(device, false);
        NDArray x = ex(input).embedding(input, weight("token_embedding"), SparseFormat.DENSE).head()
                .add(weight("position_embedding"));
        float[] bias = new float[b * t];
        for (int cell = 0; cell < b; cell++) {
            // a cell without genes attends to its padding, evenly: no row of all -inf, no NaN
            for (int i = lengths[cell] == 0 ? t : lengths[cell]; i < t; i++) {
                bias[cell * t + i] = MASK_BIAS;
            }
        }
        NDArray keyBias = scope.create(bias, new Shape(b, 1, 1, t)).toDevice(device, false);
        if (bf16) {
            keyBias = keyBias.toType(DataType.BFLOAT16, false);
        }
        int headWidth = dModel / heads;
        float scale = (float) (1 / Math.sqrt(headWidth));
        for (int l = 0; l < layers; l++) {
            String layer = "layers." + l + ".";
            NDArray h = norm(x, layer + "norm1");
            NDArray qkv = ex(h).linear(h, weight(layer + "self_attn.in_proj_weight"), weight(layer + "self_attn.in_proj_bias"))
                    .head().reshape(b, t, 3, heads, headWidth).transpose(2, 0, 3, 1, 4);
            NDArray q = qkv.get(0);
            NDArray k = qkv.get(1);
            NDArray v = qkv.get(2);
            NDArray attention = BlockTraining.times(q.matMul(k.transpose(0, 1, 3, 2)), scale, scope).add(keyBias).softmax(-1);
            NDArray mixed = attention.matMul(v).transpose(0, 2, 1, 3).reshape(b, t, dModel);
            x = x.add(ex(mixed).linear(mixed, weight(layer + "self_attn.out_proj.weight"),
                    weight(layer + "self_attn.out_proj.bias")).head());
            NDArray g = norm(x, layer + "norm2");
            NDArray inner = ex(g).linear(g, weight(layer + "linear1.weight"), weight(layer + "linear1.bias")).head();
            inner = ex(inner).gelu();
            x = x.add(ex(inner).linear(inner, weight(layer + "linear2.weight"), weight(layer + "linear2.bias")).head());
        }
        return norm(x, "norm").toType(DataType.FLOAT32, false);
    }

    /** The mean of each cell's gene tokens (all of its tokens for a cell without genes). */
    private NDArray pool(NDManager scope, NDArray hidden, int[] lengths) {
        int b = lengths.length;
        int t = tokens.maxLength();
        float[] weights = new float[b * t];
        for (int cell = 0; cell < b; cell++) {
            int n = lengths[cell] == 0 ? t : lengths[cell];
            for (int i = 0; i < n; i++) {
                weights[cell * t + i] = 1f / n;
            }
        }
        NDArray share = scope.create(weights, new Shape(b, t, 1)).toDevice(manager.getDevice(), false);
        return hidden.mul(share).sum(new int[]{1});
    }

    /** A head on float32 features: in the precision of the run, as a linear layer. */
    private NDArray linear(NDArray features, String head) {
        NDArray input = bf16 ? features.toType(DataType.BFLOAT16, false) : features;
        return ex(input).linear(input, weight(head + ".weight"), weight(head + ".bias")).head();
    }

    private NDArray norm(NDArray x, String name) {
        return ex(x).layerNorm(x, new Shape(dModel), weight(name + ".weight"), weight(name + ".bias"), 1e-5f).head();
    }

    /** A weight in the precision of the run: the float32 master, or its bfloat16 cast (gradients flow back). */
    private NDArray weight(String name) {
        NDArray master = parameters.get(name);
        return bf16 ? master.toType(DataType.BFLOAT16, false) : master;
    }

    private static NDArrayEx ex(NDArray array) {
        return array.getNDArrayInternal();
    }

    /**
     * Weights drawn on the host from the seed (normal, standard deviation 0.02, as BERT and Geneformer initialize;
     * layer norms 1 and 0, biases 0): the same start on every device.
     */
    private Map<String, NDArray> initialParameters() {
        SplittableRandom random = new SplittableRandom(seed);
        Map<String, NDArray> made = new LinkedHashMap<>();
        int vocabulary = tokens.vocabularySize();
        made.put("token_embedding", normal(random, vocabulary, dModel));
        made.put("position_embedding", normal(random, tokens.maxLength(), dModel));
        for (int l = 0; l < layers; l++) {
            String layer = "layers." + l + ".";
            made.put(layer + "norm1.weight", filled(1f, dModel));
            made.put(layer + "norm1.bias", filled(0f, dModel));
            made.put(layer + "self_attn.in_proj_weight", normal(random, 3 * dModel, dModel));
            made.put(layer + "self_attn.in_proj_bias", filled(0f, 3 * dModel));
            made.put(layer + "self_attn.out_proj.weight", normal(random, dModel, dModel));
            made.put(layer + "self_attn.out_proj.bias", filled(0f, dModel));
            made.put(layer + "norm2.weight", filled(1f, dModel));
            made.put(layer + "norm2.bias", filled(0f, dModel));
            made.put(layer + "linear1.weight", normal(random, 4 * dModel, dModel));
            made.put(layer + "linear1.bias", filled(0f, 4 * dModel));
            made.put(layer + "linear2.weight", normal(random, dModel, 4 * dModel));
            made.put(layer + "linear2.bias", filled(0f, dModel));
        }
        made.put("norm.weight", filled(1f, dModel));
        made.put("norm.bias", filled(0f, dModel));
        made.put("masked_gene_head.weight", normal(random, vocabulary, dModel));
        made.put("masked_gene_head.bias", filled(0f, vocabulary));
        if (labels != null) {
            made.put("cell_type_head.weight", normal(random, classes, dModel));
            made.put("cell_type_head.bias", filled(0f, classes));
        }
        made.values().forEach(array -> array.setRequiresGradient(true));
        return made;
    }

    private NDArray normal(SplittableRandom random, int rows, int columns) {
        float[] values = new float[rows * columns];
        for (int i = 0; i < values.length; i++) {
            values[i] = (float) (0.02 * gaussian(random));
        }
        return engineOwned(manager.create(values, new Shape(rows, columns)));
    }

    private NDArray filled(float value, int size) {
        float[] values = new float[size];
        Arrays.fill(values, value);
        return engineOwned(manager.create(values, new Shape(size)));
    }

    /**
     * A copy in memory the engine allocated (64-byte aligned), not the direct buffer the Java array was copied into
     * (16-byte aligned, another multiple each run): MKL's matrix kernels may round differently with the alignment of
     * their operands, and the weights are in every product.
     */
    private static NDArray engineOwned(NDArray made) {
        NDArray copy = made.duplicate();
        made.close();
        return copy;
    }

    /** A standard normal draw (Box-Muller: SplittableRandom has no Gaussian of its own). */
    private static double gaussian(SplittableRandom random) {
        double u = 1 - random.nextDouble();
        return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * random.nextDouble());
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
            throw new IllegalStateException("the gene transformer is closed");
        }
    }

    /**
     * Configures a {@link GeneTransformer}: {@link #setTokens} is required, labels optional (without them, masked-gene
     * pretraining only). Defaults: d_model 64, 2 layers, 4 heads, 15% of each cell's tokens masked, float32, 10
     * epochs, learning rate 1e-3, and those of {@link TrainerBuilder}.
     */
    public static final class Builder extends TrainerBuilder<Builder> {
        private RankValueTokens tokens;
        private int[] labels;
        private int classes;
        private int dModel = 64;
        private int layers = 2;
        private int heads = 4;
        private float maskShare = (float) DEFAULT_MASK_SHARE;
        private boolean bf16;

        private Builder() {
            super(10, 1e-3f);
        }

        @Override
        protected Builder self() {
            return this;
        }

        /**
         * Sets the tokenizer, fitted on the cells to train on (required).
         *
         * @param fitted from {@link RankValueTokens#fit}
         * @return this builder
         */
        public Builder setTokens(RankValueTokens fitted) {
            this.tokens = fitted;
            return this;
        }

        /**
         * Adds the cell-type head: the class of every sample of the training loader's source.
         *
         * @param bySample classes from 0 to {@code count - 1}; not copied
         * @param count the number of classes, at least 2
         * @return this builder
         */
        public Builder optLabels(int[] bySample, int count) {
            this.labels = bySample;
            this.classes = count;
            return this;
        }

        /**
         * Sets the encoder's size.
         *
         * @param width d_model, a multiple of {@code heads}
         * @param depth encoder layers
         * @param headCount attention heads
         * @return this builder
         */
        public Builder optModel(int width, int depth, int headCount) {
            this.dModel = width;
            this.layers = depth;
            this.heads = headCount;
            return this;
        }

        /**
         * Sets the share of each cell's gene tokens masked for the masked-gene objective (default 0.15).
         *
         * @param share in (0, 1)
         * @return this builder
         */
        public Builder optMaskShare(double share) {
            this.maskShare = (float) share;
            return this;
        }

        /**
         * Runs in bfloat16 with float32 master weights ({@code bf16-mixed}), or in float32 (default).
         *
         * @param on true for bf16-mixed
         * @return this builder
         */
        public Builder optBf16(boolean on) {
            this.bf16 = on;
            return this;
        }

        /**
         * Validates and builds.
         *
         * @return the transformer
         * @throws IllegalArgumentException when a setting is missing or out of range
         */
        public GeneTransformer build() {
            validate();
            if (tokens == null) {
                throw new IllegalArgumentException("setTokens(RankValueTokens.fit(...)) is required");
            }
            if (dModel < 1 || layers < 1 || heads < 1 || dModel % heads != 0) {
                throw new IllegalArgumentException("optModel needs d_model, layers and heads >= 1, d_model a multiple of "
                        + "heads; got " + dModel + ", " + layers + ", " + heads);
            }
            if (bf16 && !bf16Supported()) {
                throw new IllegalArgumentException("optBf16(true): DJL " + ai.djl.engine.Engine.getDjlVersion() + "'s "
                        + "PyTorch engine cannot hold bfloat16 arrays (its native layer aborts the process); train in "
                        + "float32 (optBf16(false), training.precision: 32-true)");
            }
            if (!(maskShare > 0 && maskShare < 1)) {
                throw new IllegalArgumentException("optMaskShare needs a share in (0, 1), got " + maskShare);
            }
            if (labels != null) {
                if (classes < 2) {
                    throw new IllegalArgumentException("optLabels needs at least 2 classes, got " + classes);
                }
                checkLabels(labels, classes, "optLabels");
            }
            return new GeneTransformer(this);
        }
    }
}
