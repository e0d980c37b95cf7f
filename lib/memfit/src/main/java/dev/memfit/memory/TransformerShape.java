package dev.memfit.memory;

import dev.memfit.MemfitException;

/**
 * The sizes of a gene-token transformer ({@code dev.memfit.train.GeneTransformer}) that decide its memory: what
 * {@link MemoryEstimator.Builder#setTransformer} counts.
 *
 * <p>The counts follow memfit's encoder as it runs on DJL, where every operator's output stays allocated until the
 * step's scope closes after the backward pass (DJL frees arrays with their manager, not when the autograd graph lets
 * go of them, as PyTorch in Python does). Per cell and layer that is {@value #VALUES_PER_TOKEN_AND_WIDTH} x tokens x
 * d_model values (layer norms, the query-key-value projection and the copies matmul makes of its strided operands, the
 * attention output and its projection, the feed-forward's 4 x d_model input and GELU, residual sums) and
 * {@value #SCORE_COPIES} x heads x tokens² (the scores, scaled, masked and soft-maxed); then the embeddings, the final
 * norm, the pooled cell and the masked-gene head's logits and log-probabilities over the vocabulary.
 *
 * @param vocabulary gene tokens plus the padding and mask tokens
 * @param maxLength tokens per cell
 * @param dModel the model width
 * @param layers encoder layers
 * @param heads attention heads
 * @param classes cell types of the cell-type head (0 without one)
 * @param maskShare the share of a cell's tokens masked (the masked-gene head runs on those)
 */
public record TransformerShape(long vocabulary, long maxLength, long dModel, long layers, long heads, long classes,
                               double maskShare) {

    /** Values of tokens x d_model that a layer holds per cell until the backward pass has run. */
    public static final int VALUES_PER_TOKEN_AND_WIDTH = 22;
    /** Copies of the heads x tokens² attention scores a layer holds per cell. */
    public static final int SCORE_COPIES = 4;
    /**
     * What a fit allocates beside the model's arrays, whatever its size: a residual fitted to measurements, not
     * derived. It covers the compute libraries' working memory (MKL's packing buffers, the autograd engine's), the JVM
     * compiling the loop while it warms up, the loader's batch buffers and the tokens of a batch. Measured on DJL 0.35
     * / PyTorch 2.7.1 on the CPU as the C allocator's peak above everything else counted here, at d_model 32 with
     * 64 tokens and batch 64, 128 tokens and batch 64, and 64 tokens and batch 128: 21, 32 and 24 MiB.
     */
    public static final long RUNTIME_BYTES = 20L << 20;

    /**
     * Checks the sizes.
     *
     * @throws MemfitException when a size is out of range
     */
    public TransformerShape {
        if (vocabulary < 3 || maxLength < 1 || dModel < 1 || layers < 1 || heads < 1 || dModel % heads != 0
                || classes < 0 || !(maskShare > 0 && maskShare < 1)) {
            throw new MemfitException("a transformer needs a vocabulary of at least 3 tokens, max_length, d_model, layers "
                    + "and heads >= 1, d_model a multiple of heads, classes >= 0 and a mask share in (0, 1); got "
                    + vocabulary + ", " + maxLength + ", " + dModel + ", " + layers + ", " + heads + ", " + classes
                    + ", " + maskShare);
        }
    }

    /**
     * The parameters, as {@code GeneTransformer} makes them: token and position embeddings, per layer two layer
     * norms, the attention's in and out projections and the 4 x d_model feed-forward, the final norm, the masked-gene
     * head and the cell-type head.
     *
     * @return values
     */
    public long parameters() {
        long d = dModel;
        long perLayer = 2 * 2 * d + (3 * d * d + 3 * d) + (d * d + d) + (4 * d * d + 4 * d) + (4 * d * d + d);
        long heads = (vocabulary * d + vocabulary) + (classes > 0 ? classes * d + classes : 0);
        return vocabulary * d + maxLength * d + layers * perLayer + 2 * d + heads;
    }

    /**
     * The attention scores held per cell until the backward pass: {@value #SCORE_COPIES} x heads x tokens² per layer.
     *
     * @return values
     */
    public long scoreValuesPerCell() {
        return layers * SCORE_COPIES * heads * maxLength * maxLength;
    }

    /**
     * Everything else held per cell until the backward pass: the layers' token x d_model values, the embeddings, the
     * final norm and pooling, and the masked-gene head's logits and log-probabilities.
     *
     * @return values
     */
    public long otherActivationValuesPerCell() {
        long t = maxLength;
        long masked = Math.max(1, Math.round(maskShare * t));
        return layers * (VALUES_PER_TOKEN_AND_WIDTH * t * dModel + 4 * t) + 4 * t * dModel + 2 * masked * vocabulary
                + masked * dModel + 4 * t;
    }

    /**
     * The gradients the backward pass holds at once at its widest point, per cell: where it starts, the masked-gene
     * head's (the logits' and the log-probabilities' over the vocabulary), or in a layer, the scores' gradient and the
     * one it becomes beside the layer's token x d_model gradients, whichever is larger.
     *
     * @return values
     */
    public long backwardValuesPerCell() {
        long masked = Math.max(1, Math.round(maskShare * maxLength));
        return Math.max(2 * heads * maxLength * maxLength + 8 * maxLength * dModel, 2 * masked * vocabulary + masked * dModel);
    }
}
