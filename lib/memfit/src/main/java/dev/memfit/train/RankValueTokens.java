package dev.memfit.train;

import dev.memfit.ProgressListener;
import dev.memfit.data.Batch;
import dev.memfit.data.Loader;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Arrays;

/**
 * Rank-value tokens of cells, as Geneformer makes them: a cell becomes the ids of its expressed genes ordered by
 * normalized expression, highest first, the top {@code maxLength} of them, padded with {@link #PAD}. Expression is
 * normalized twice: by the cell's total (its library size) and by the gene's typical normalized expression over the
 * corpus, so that a gene ranks high where it is unusually high for that gene, not merely because it is abundant
 * everywhere (Geneformer divides by the gene's non-zero median; here its non-zero mean, which one pass over the shards
 * gives exactly).
 *
 * <p>The vocabulary is fitted on a loader's cells ({@link #fit}): the {@code n} genes with the largest total counts
 * ({@code most_expressed}), or every gene expressed at all. Id 0 is padding, 1 the mask token of the masked-gene
 * objective, genes follow from {@link #FIRST_GENE} in column order.
 */
public final class RankValueTokens {

    /** The padding id. */
    public static final int PAD = 0;
    /** The id that replaces a masked gene. */
    public static final int MASK = 1;
    /** The id of the first gene of the vocabulary. */
    public static final int FIRST_GENE = 2;

    private final int[] tokenOfColumn;
    private final int[] columnOfToken;
    private final float[] scale;
    private final int maxLength;

    private RankValueTokens(int[] tokenOfColumn, float[] scale, int maxLength) {
        this.tokenOfColumn = tokenOfColumn;
        this.scale = scale;
        this.maxLength = maxLength;
        this.columnOfToken = new int[(int) Arrays.stream(tokenOfColumn).filter(t -> t >= 0).count() + FIRST_GENE];
        Arrays.fill(columnOfToken, -1);
        for (int column = 0; column < tokenOfColumn.length; column++) {
            if (tokenOfColumn[column] >= 0) {
                columnOfToken[tokenOfColumn[column]] = column;
            }
        }
    }

    /**
     * Fits the vocabulary and the genes' normalizations in one pass over a loader's cells (sparse batches read
     * fastest; {@code optSparseBatches(true)}).
     *
     * @param cells the cells, float32 counts or normalized values, dense or sparse
     * @param genes the genes kept: the {@code genes} with the largest totals, or every expressed gene when
     *              {@code genes <= 0} or it is at least the genes expressed
     * @param maxLength tokens per cell
     * @param progress shows the pass
     * @return the tokenizer
     */
    public static RankValueTokens fit(Loader cells, int genes, int maxLength, ProgressListener progress) {
        if (maxLength < 1) {
            throw new IllegalArgumentException("max_length must be at least 1, got " + maxLength);
        }
        int columns = Math.toIntExact(cells.sampleShape().size());
        double[] totals = new double[columns];
        double[] normalized = new double[columns];
        long[] expressed = new long[columns];
        try (ProgressListener.Task task = progress.start("gene statistics for tokens", cells.batchesPerEpoch(), "batches")) {
            for (Batch batch : cells.epoch(0)) {
                forEachCell(batch, (cell, columnsOf, valuesOf, n) -> {
                    double total = positiveTotal(valuesOf, n);
                    if (total <= 0) {
                        return;
                    }
                    for (int k = 0; k < n; k++) {
                        if (valuesOf[k] > 0) {
                            totals[columnsOf[k]] += valuesOf[k];
                            normalized[columnsOf[k]] += valuesOf[k] / total;
                            expressed[columnsOf[k]]++;
                        }
                    }
                });
                task.step(1);
            }
        }
        Integer[] order = new Integer[columns];
        for (int c = 0; c < columns; c++) {
            order[c] = c;
        }
        // the largest totals first, ties by column: the same vocabulary for the same data, whatever the batch order
        Arrays.sort(order, (a, b) -> totals[a] != totals[b] ? Double.compare(totals[b], totals[a]) : Integer.compare(a, b));
        int kept = (int) Arrays.stream(expressed).filter(n -> n > 0).count();
        if (genes > 0) {
            kept = Math.min(kept, genes);
        }
        boolean[] chosen = new boolean[columns];
        for (int i = 0; i < kept; i++) {
            chosen[order[i]] = true;
        }
        int[] tokenOfColumn = new int[columns];
        float[] scale = new float[columns];
        int next = FIRST_GENE;
        for (int c = 0; c < columns; c++) {
            tokenOfColumn[c] = chosen[c] ? next++ : -1;
            scale[c] = expressed[c] == 0 ? 1f : (float) (normalized[c] / expressed[c]);
        }
        return new RankValueTokens(tokenOfColumn, scale, maxLength);
    }

    /**
     * The ids: padding, mask and the genes kept.
     *
     * @return {@code FIRST_GENE + genes}
     */
    public int vocabularySize() {
        return columnOfToken.length;
    }

    /**
     * The tokens per cell.
     *
     * @return max_length
     */
    public int maxLength() {
        return maxLength;
    }

    /**
     * The column (gene) of a token id.
     *
     * @param token an id from {@link #FIRST_GENE}
     * @return the gene's column in the cells
     */
    public int columnOf(int token) {
        return columnOfToken[token];
    }

    /**
     * A gene's normalization: its mean expression over the cells that express it, each cell's values divided by the
     * cell's total first. A cell's genes rank by value / cell total / this.
     *
     * @param column the gene's column
     * @return the scale (1 for a gene no cell expresses)
     */
    public double geneScale(int column) {
        return scale[column];
    }

    /**
     * The tokens of a batch's cells.
     *
     * @param batch cells, dense or sparse, with the columns the tokenizer was fitted on
     * @return {@code size x maxLength} ids, row after row, and each cell's count of gene tokens
     */
    public Tokens tokenize(Batch batch) {
        int cells = batch.size();
        long[] ids = new long[cells * maxLength];
        int[] lengths = new int[cells];
        forEachCell(batch, (cell, columnsOf, valuesOf, n) -> {
            // a cell's size is its positive values: a negative value (scaled data) is not an expression to rank
            double total = positiveTotal(valuesOf, n);
            long[] keys = new long[n];
            int m = 0;
            for (int k = 0; k < n; k++) {
                int token = tokenOfColumn[columnsOf[k]];
                if (token >= 0 && valuesOf[k] > 0) {
                    float rank = (float) (valuesOf[k] / total / scale[columnsOf[k]]);
                    // ascending keys = descending normalized expression (positive floats order as their bits), then id
                    keys[m++] = (long) (Integer.MAX_VALUE - Float.floatToIntBits(rank)) << 32 | token;
                }
            }
            Arrays.sort(keys, 0, m);
            int length = Math.min(m, maxLength);
            for (int t = 0; t < length; t++) {
                ids[cell * maxLength + t] = (int) keys[t];
            }
            lengths[cell] = length;
        });
        return new Tokens(cells, maxLength, ids, lengths);
    }

    private static double positiveTotal(double[] values, int count) {
        double total = 0;
        for (int k = 0; k < count; k++) {
            total += Math.max(0, values[k]);
        }
        return total;
    }

    /**
     * A batch as tokens.
     *
     * @param cells the cells
     * @param length tokens per cell (padded)
     * @param ids {@code cells x length} ids, {@link #PAD} after each cell's genes
     * @param lengths the gene tokens of each cell
     */
    public record Tokens(int cells, int length, long[] ids, int[] lengths) {
    }

    private interface CellVisitor {
        void visit(int cell, int[] columns, double[] values, int count);
    }

    /** Each cell's stored (or, for a dense batch, non-zero) values with their columns. */
    private static void forEachCell(Batch batch, CellVisitor visitor) {
        int cells = batch.size();
        int width = Math.toIntExact(batch.shape().size() / Math.max(1, cells));
        int[] columns = new int[width];
        double[] values = new double[width];
        if (batch.isSparse()) {
            MemorySegment offsets = batch.rowOffsets();
            MemorySegment genes = batch.columnIndices();
            MemorySegment stored = batch.values();
            dev.memfit.DType type = batch.dtype();
            int size = type.byteSize();
            for (int cell = 0; cell < cells; cell++) {
                long from = offsets.getAtIndex(ValueLayout.JAVA_LONG, cell);
                int n = Math.toIntExact(offsets.getAtIndex(ValueLayout.JAVA_LONG, cell + 1) - from);
                for (int k = 0; k < n; k++) {
                    columns[k] = genes.getAtIndex(ValueLayout.JAVA_INT, from + k);
                    values[k] = type == dev.memfit.DType.FLOAT32 ? stored.getAtIndex(ValueLayout.JAVA_FLOAT, from + k)
                            : type.getDouble(stored, (from + k) * size, java.nio.ByteOrder.nativeOrder());
                }
                visitor.visit(cell, columns, values, n);
            }
            return;
        }
        float[] dense = batch.toFloatArray();
        for (int cell = 0; cell < cells; cell++) {
            int n = 0;
            for (int c = 0; c < width; c++) {
                float value = dense[cell * width + c];
                if (value != 0) {
                    columns[n] = c;
                    values[n++] = value;
                }
            }
            visitor.visit(cell, columns, values, n);
        }
    }
}
