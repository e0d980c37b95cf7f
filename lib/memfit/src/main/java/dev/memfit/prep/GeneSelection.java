package dev.memfit.prep;

import dev.memfit.MemfitException;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Arrays;
import java.util.Comparator;
import java.util.SplittableRandom;
import java.util.stream.IntStream;

/**
 * Chooses, per batch, which genes (columns) the model sees: all of them, the {@code k} most expressed in the batch,
 * or {@code k} drawn at random among the genes expressed in the batch. Fewer genes per cell means fewer tokens for a
 * transformer and less memory for any model.
 */
public final class GeneSelection {

    /** The selection rule. */
    public enum Mode {
        /** Every gene. */
        ALL,
        /** The k genes with the largest total expression in the batch (ties by lower index). */
        MOST_EXPRESSED,
        /** k genes drawn without replacement among those expressed (non-zero) in the batch. */
        RANDOM_EXPRESSED
    }

    /**
     * What was selected for a batch, and how to copy it out.
     *
     * @param genes the selected columns, increasing
     * @param cells the rows of the batch
     * @param columns all genes of the batch, selected or not
     */
    public record Selection(int[] genes, int cells, int columns) {

        /**
         * The tokens of the whole batch.
         *
         * @return cells x all genes
         */
        public long tokensBefore() {
            return (long) cells * columns;
        }

        /**
         * The tokens kept.
         *
         * @return cells x selected genes
         */
        public long tokensAfter() {
            return (long) cells * genes.length;
        }

        /**
         * The share of tokens kept.
         *
         * @return after / before
         */
        public double keptShare() {
            return tokensBefore() == 0 ? 1 : tokensAfter() / (double) tokensBefore();
        }

        /**
         * Copies the selected columns of the batch this selection was made for.
         *
         * @param batch {@code cells x columns} float32
         * @param into {@code cells x genes().length} float32
         */
        public void gather(MemorySegment batch, MemorySegment into) {
            for (int c = 0; c < cells; c++) {
                for (int i = 0; i < genes.length; i++) {
                    into.setAtIndex(ValueLayout.JAVA_FLOAT, (long) c * genes.length + i,
                            batch.getAtIndex(ValueLayout.JAVA_FLOAT, (long) c * columns + genes[i]));
                }
            }
        }
    }

    private final Mode mode;
    private final int k;
    private final long seed;

    /**
     * Creates a rule.
     *
     * @param mode the rule
     * @param k genes to keep (ignored for {@link Mode#ALL})
     * @param seed for {@link Mode#RANDOM_EXPRESSED}, mixed with the batch number
     */
    public GeneSelection(Mode mode, int k, long seed) {
        if (mode != Mode.ALL && k < 1) {
            throw new MemfitException("gene selection needs k >= 1, got " + k);
        }
        this.mode = mode;
        this.k = k;
        this.seed = seed;
    }

    /**
     * Selects genes for a batch.
     *
     * @param batch {@code cells x genes} float32 values
     * @param cells the number of cells
     * @param genes the number of genes
     * @param batchNumber distinguishes batches for the random rule
     * @return the selection
     */
    public Selection select(MemorySegment batch, int cells, int genes, long batchNumber) {
        if (mode == Mode.ALL) {
            return new Selection(IntStream.range(0, genes).toArray(), cells, genes);
        }
        double[] totals = new double[genes];
        for (int c = 0; c < cells; c++) {
            for (int g = 0; g < genes; g++) {
                totals[g] += batch.getAtIndex(ValueLayout.JAVA_FLOAT, (long) c * genes + g);
            }
        }
        int[] chosen;
        if (mode == Mode.MOST_EXPRESSED) {
            chosen = IntStream.range(0, genes).boxed().sorted(Comparator.<Integer>comparingDouble(g -> -totals[g])
                    .thenComparingInt(g -> g)).limit(Math.min(k, genes)).mapToInt(Integer::intValue).toArray();
        } else {
            int[] expressed = IntStream.range(0, genes).filter(g -> totals[g] != 0).toArray();
            SplittableRandom random = new SplittableRandom(seed * 0x9E3779B97F4A7C15L + batchNumber);
            for (int i = expressed.length - 1; i > 0; i--) {
                int j = random.nextInt(i + 1);
                int swap = expressed[i];
                expressed[i] = expressed[j];
                expressed[j] = swap;
            }
            chosen = Arrays.copyOf(expressed, Math.min(k, expressed.length));
        }
        Arrays.sort(chosen);
        return new Selection(chosen, cells, genes);
    }
}
