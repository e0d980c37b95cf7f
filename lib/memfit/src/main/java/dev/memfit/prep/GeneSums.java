package dev.memfit.prep;

import dev.memfit.MemfitException;

import java.io.Serializable;
import java.util.ArrayList;
import java.util.List;

/**
 * Per-gene sums of the normalized counts and of their squares, over blocks of rows added in row order, combined
 * pairwise in a fixed binary tree over the block numbers (block sums, then pairs of blocks, pairs of pairs, ...).
 *
 * <p>Why a tree: floating-point addition is not associative, so sums combined in another order differ in their last
 * bits. The tree depends only on the block numbers, so any split of the blocks into ranges aligned to a power of two
 * (one range per worker) whose sums are then {@link #add added} in range order gives the same bits as one process
 * adding every block: memfit's distributed preprocessing selects the same genes with the same statistics. Memory: at
 * most one pair of arrays per level (log2 of the blocks).
 */
public final class GeneSums implements Serializable {

    private static final long serialVersionUID = 1L;

    /** A subtree: the sums of {@code 2^level} consecutive blocks (fewer for the last ones). */
    private record Node(int level, long cells, double[] sum, double[] sumOfSquares) implements Serializable {
    }

    private final int genes;
    /** Levels strictly decreasing from the bottom: the binary digits of the blocks added so far. */
    private final List<Node> stack = new ArrayList<>();

    /**
     * Creates empty sums.
     *
     * @param genes the number of genes
     */
    public GeneSums(int genes) {
        this.genes = genes;
    }

    /**
     * Adds the next block's sums (the arrays are kept, not copied).
     *
     * @param cells the block's cells
     * @param sum per gene, the sum of the normalized counts
     * @param sumOfSquares per gene, the sum of their squares
     */
    void addBlock(long cells, double[] sum, double[] sumOfSquares) {
        push(new Node(0, cells, sum, sumOfSquares));
    }

    /**
     * Adds the sums of the blocks that follow these ones. Gives the same bits as adding those blocks one by one when
     * the blocks so far are a multiple of {@code 2^k} and {@code later} covers {@code 2^k} blocks, or fewer at the
     * end: the ranges a distributed run splits the blocks into.
     *
     * @param later sums of the next blocks
     * @return this
     */
    public GeneSums add(GeneSums later) {
        if (later.genes != genes) {
            throw new MemfitException("gene sums of " + later.genes + " genes added to sums of " + genes);
        }
        for (Node node : later.stack) {
            push(node);
        }
        return this;
    }

    private void push(Node node) {
        Node right = node;
        while (!stack.isEmpty() && stack.getLast().level() == right.level()) {
            right = merge(stack.removeLast(), right, right.level() + 1);
        }
        stack.add(right);
    }

    private Node merge(Node left, Node right, int level) {
        double[] sum = new double[genes];
        double[] squares = new double[genes];
        for (int g = 0; g < genes; g++) {
            sum[g] = left.sum()[g] + right.sum()[g];
            squares[g] = left.sumOfSquares()[g] + right.sumOfSquares()[g];
        }
        return new Node(level, left.cells() + right.cells(), sum, squares);
    }

    /**
     * The cells summed.
     *
     * @return cells
     */
    public long cells() {
        return stack.stream().mapToLong(Node::cells).sum();
    }

    /**
     * The statistics of all cells summed, and the highly variable genes: Seurat's dispersions, binned by mean and
     * normalized within the bin (see {@link Preprocess}).
     *
     * @param names the gene names
     * @param highlyVariable genes to select
     * @return the statistics
     */
    public Preprocess.GeneStatistics statistics(String[] names, int highlyVariable) {
        long cells = cells();
        double[] sum = new double[genes];
        double[] sumOfSquares = new double[genes];
        // the incomplete subtrees, from the last (smallest) to the first: a fixed order
        for (int i = stack.size() - 1; i >= 0; i--) {
            Node node = stack.get(i);
            for (int g = 0; g < genes; g++) {
                sum[g] = node.sum()[g] + sum[g];
                sumOfSquares[g] = node.sumOfSquares()[g] + sumOfSquares[g];
            }
        }
        double[] means = new double[genes];
        double[] dispersions = new double[genes];
        for (int g = 0; g < genes; g++) {
            double mean = sum[g] / cells;
            double variance = cells > 1 ? (sumOfSquares[g] / cells - mean * mean) * cells / (cells - 1) : 0;
            if (mean == 0) {
                mean = 1e-12;
            }
            double dispersion = variance / mean;
            dispersions[g] = dispersion == 0 ? Double.NaN : Math.log(dispersion);
            means[g] = Math.log1p(mean);
        }
        double[] normalized = Preprocess.normalizeWithinBins(means, dispersions);
        return new Preprocess.GeneStatistics(names, means, dispersions, normalized, Preprocess.top(normalized, highlyVariable));
    }
}
