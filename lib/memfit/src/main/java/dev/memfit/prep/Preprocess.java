package dev.memfit.prep;

import dev.memfit.InvalidFileException;
import dev.memfit.MemfitException;
import dev.memfit.ProgressListener;
import dev.memfit.io.hdf5.H5ad;
import dev.memfit.io.hdf5.H5adWriter;
import dev.memfit.io.storage.OutputLock;

import java.lang.foreign.ValueLayout;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Map;

/**
 * Offline preprocessing of a raw-count {@code .h5ad}, out of core in two passes over {@code X}: each cell normalized to
 * {@code targetSum} counts and {@code log1p}-transformed, then restricted to the highly variable genes, written as a
 * new {@code .h5ad} readable by anndata.
 *
 * <p>Highly variable genes follow Seurat's method as scanpy implements it ({@code flavor='seurat'}): per gene, the
 * mean and variance (ddof 1) of the normalized counts; dispersion = variance / mean; log of the dispersion and log1p of
 * the mean; genes binned into 20 equal-width bins of mean; the dispersion normalized within its bin (z-score; a bin of
 * one gene gets mean 0 and its own value as spread); the {@code n} genes of largest normalized dispersion kept, in
 * their original order. Pass one accumulates the per-gene sums; pass two writes the selected columns. Memory: one
 * chunk of rows plus a few doubles per gene.
 */
public final class Preprocess {

    private static final int BINS = 20;

    private Preprocess() {
    }

    /**
     * Per-gene statistics and the selection.
     *
     * @param genes all gene names
     * @param means log1p of the mean normalized count
     * @param dispersions log of variance / mean (NaN when the variance is 0)
     * @param normalizedDispersions z-score of the dispersion within its mean bin (NaN when undefined)
     * @param selected indices of the highly variable genes, ascending
     */
    public record GeneStatistics(String[] genes, double[] means, double[] dispersions, double[] normalizedDispersions,
                                 int[] selected) {
    }

    /**
     * What was written.
     *
     * @param output the file
     * @param cells cells
     * @param genes the genes kept
     * @param statistics the per-gene statistics of all genes
     */
    public record Result(Path output, long cells, int genes, GeneStatistics statistics) {
    }

    /**
     * Starts configuring a preprocessing run: {@code setInput} is required; defaults are 4,000 highly variable
     * genes, 10,000 counts per cell and a console progress bar (one per pass).
     *
     * <pre>{@code
     * Preprocess.Result result = Preprocess.builder().setInput(raw).optHighlyVariable(2_000).run(processed);
     * Preprocess.GeneStatistics statistics = Preprocess.builder().setInput(raw).statistics();   // pass one only
     * }</pre>
     *
     * @return the builder
     */
    public static Builder builder() {
        return new Builder();
    }

    /** Configures a run; {@link #run(Path)} and {@link #statistics()} validate the settings first. */
    public static final class Builder {

        private Path input;
        private int highlyVariable = 4_000;
        private double targetSum = 1e4;
        private ProgressListener progress = ProgressListener.console();

        private Builder() {
        }

        /**
         * Sets the raw counts (required).
         *
         * @param file an {@code .h5ad}
         * @return this builder
         */
        public Builder setInput(Path file) {
            this.input = file;
            return this;
        }

        /**
         * Sets the number of highly variable genes to keep (default 4,000; all genes when larger than n_vars).
         *
         * @param genes at least 1
         * @return this builder
         */
        public Builder optHighlyVariable(int genes) {
            this.highlyVariable = genes;
            return this;
        }

        /**
         * Sets the counts per cell after normalization (default 10,000, the usual choice).
         *
         * @param counts positive
         * @return this builder
         */
        public Builder optTargetSum(double counts) {
            this.targetSum = counts;
            return this;
        }

        /**
         * Sets where progress goes (default {@link ProgressListener#console()}): one task per pass, in cells.
         *
         * @param listener the listener, such as {@link ProgressListener#silent()}
         * @return this builder
         */
        public Builder optProgress(ProgressListener listener) {
            this.progress = listener;
            return this;
        }

        /**
         * Validates the settings and preprocesses the input in two passes.
         *
         * @param output the processed file (replaced only once complete)
         * @return what was written
         * @throws MemfitException naming the setting to change
         */
        public Result run(Path output) {
            check();
            if (output == null) {
                throw new MemfitException("run(output) needs the processed .h5ad to write");
            }
            if (input.toAbsolutePath().normalize().equals(output.toAbsolutePath().normalize())) {
                throw new MemfitException("the output " + output + " would replace the input; choose another name");
            }
            return Preprocess.run(input, output, highlyVariable, targetSum, progress);
        }

        /**
         * Validates the settings and runs pass one only: per-gene statistics of the normalized counts and the
         * highly variable genes, without writing anything.
         *
         * @return the statistics
         * @throws MemfitException naming the setting to change
         */
        public GeneStatistics statistics() {
            check();
            try (H5ad h5ad = H5ad.builder().setFile(input).optProgress(progress).open()) {
                h5ad.prepareRows();   // a CSC X is transposed here, its progress before the pass's
                return Preprocess.statistics(input, h5ad, highlyVariable, targetSum,
                        new double[Math.toIntExact(h5ad.observations())], progress);
            }
        }

        private void check() {
            if (input == null) {
                throw new MemfitException("setInput(file) is required: the raw-count .h5ad");
            }
            if (highlyVariable < 1) {
                throw new MemfitException("optHighlyVariable(n) needs n >= 1 (--hvg on the command line), got " + highlyVariable);
            }
            if (!(targetSum > 0 && targetSum < Double.POSITIVE_INFINITY)) {
                throw new MemfitException("optTargetSum(counts) needs a positive, finite sum such as 10000 (--target-sum on "
                        + "the command line), got " + targetSum);
            }
            if (progress == null) {
                throw new MemfitException("optProgress(null): pass ProgressListener.silent() to report nothing");
            }
        }
    }

    private static Result run(Path input, Path output, int highlyVariable, double targetSum, ProgressListener listener) {
        // the output is locked before pass one: a second run writing it fails at once, not after a pass over X
        try (OutputLock lock = OutputLock.acquire(output);
             H5ad h5ad = H5ad.builder().setFile(input).optProgress(listener).open()) {
            if (h5ad.observations() == 0) {
                // gene variances of no cells are undefined: no highly variable genes to choose
                throw new InvalidFileException(input, -1, "at least one cell to preprocess", "n_obs = 0 (X of shape [0, "
                        + h5ad.variables() + "])");
            }
            h5ad.prepareRows();   // a CSC X is transposed here, its progress before pass one's
            double[] cellTotals = new double[Math.toIntExact(h5ad.observations())];
            GeneStatistics statistics = statistics(input, h5ad, highlyVariable, targetSum, cellTotals, listener);
            int[] keep = statistics.selected();
            String[] keptNames = Arrays.stream(keep).mapToObj(g -> statistics.genes()[g]).toArray(String[]::new);
            int genes = Math.toIntExact(h5ad.variables());
            try (H5adWriter writer = H5adWriter.create(output, keptNames);
                 ProgressListener.Task progress = listener.start("pass 2/2: writing " + output.getFileName(), h5ad.observations(), "cells")) {
                h5ad.forEachChunk((first, count, rows) -> {
                    int[] starts = new int[count + 1];
                    int[] columns = new int[count * keep.length];
                    float[] values = new float[columns.length];
                    int k = 0;
                    for (int r = 0; r < count; r++) {
                        long base = (long) r * genes;
                        double total = cellTotals[Math.toIntExact(first + r)];   // summed in pass one
                        double scale = total > 0 ? targetSum / total : 0;
                        for (int j = 0; j < keep.length; j++) {
                            float raw = rows.getAtIndex(ValueLayout.JAVA_FLOAT, base + keep[j]);
                            if (raw != 0) {
                                columns[k] = j;
                                values[k++] = (float) Math.log1p(raw * scale);
                            }
                        }
                        starts[r + 1] = k;
                    }
                    writer.appendSparse(count, starts, columns, values);
                    progress.step(count);
                });
                String[] cellNames = h5ad.index("obs");
                if (cellNames.length == cellTotals.length) {
                    writer.cellNames(cellNames);
                }
                for (Map.Entry<String, Object> column : h5ad.columns("obs").entrySet()) {
                    writer.obs(column.getKey(), column.getValue());
                }
                float[] totals = new float[cellTotals.length];
                for (int c = 0; c < totals.length; c++) {
                    totals[c] = (float) cellTotals[c];
                }
                writer.obs("n_counts_raw", totals);
                writer.var("highly_variable", fill(keep.length))
                        .var("means", pick(statistics.means(), keep))
                        .var("dispersions", pick(statistics.dispersions(), keep))
                        .var("dispersions_norm", pick(statistics.normalizedDispersions(), keep));
                writer.commit();
            }
            return new Result(output, h5ad.observations(), keep.length, statistics);
        }
    }

    /** Pass one, also keeping each cell's total count for pass two; refuses what is not a count. */
    private static GeneStatistics statistics(Path input, H5ad h5ad, int highlyVariable, double targetSum,
                                             double[] cellTotals, ProgressListener listener) {
        int genes = Math.toIntExact(h5ad.variables());
        long cells = h5ad.observations();
        double[] sum = new double[genes];
        double[] sumOfSquares = new double[genes];
        try (ProgressListener.Task progress = listener.start("pass 1/2: gene statistics", cells, "cells")) {
            h5ad.forEachChunk((first, count, rows) -> {
                for (int r = 0; r < count; r++) {
                    long base = (long) r * genes;
                    double total = rowTotal(rows, base, genes);
                    if (!(total >= 0 && total < Double.POSITIVE_INFINITY)) {
                        throw notACount(input, h5ad, first + r, rows, base, genes);
                    }
                    cellTotals[Math.toIntExact(first + r)] = total;
                    if (total <= 0) {
                        continue;
                    }
                    double scale = targetSum / total;
                    for (int g = 0; g < genes; g++) {
                        float raw = rows.getAtIndex(ValueLayout.JAVA_FLOAT, base + g);
                        if (raw != 0) {
                            // the round trip through float32 log1p and back, as scanpy sees expm1 of the stored data
                            double normalized = Math.expm1((float) Math.log1p(raw * scale));
                            sum[g] += normalized;
                            sumOfSquares[g] += normalized * normalized;
                        }
                    }
                }
                progress.step(count);
            });
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
        double[] normalized = normalizeWithinBins(means, dispersions);
        return new GeneStatistics(h5ad.index("var"), means, dispersions, normalized, top(normalized, highlyVariable));
    }

    /** pandas' {@code cut(means, 20)}: equal-width bins, right-closed, the lowest edge lowered by 0.1% of the range. */
    static double[] normalizeWithinBins(double[] means, double[] dispersions) {
        double min = Arrays.stream(means).min().orElse(0);
        double max = Arrays.stream(means).max().orElse(0);
        int[] bin = new int[means.length];
        double width = (max - min) / BINS;
        for (int g = 0; g < means.length; g++) {
            int b = width == 0 ? 0 : (int) Math.ceil((means[g] - min) / width) - 1;
            bin[g] = Math.clamp(b, 0, BINS - 1);
        }
        double[] count = new double[BINS];
        double[] sum = new double[BINS];
        for (int g = 0; g < means.length; g++) {
            if (!Double.isNaN(dispersions[g])) {
                count[bin[g]]++;
                sum[bin[g]] += dispersions[g];
            }
        }
        double[] binMean = new double[BINS];
        double[] binStd = new double[BINS];
        for (int b = 0; b < BINS; b++) {
            binMean[b] = count[b] > 0 ? sum[b] / count[b] : Double.NaN;
        }
        double[] squares = new double[BINS];
        for (int g = 0; g < means.length; g++) {
            if (!Double.isNaN(dispersions[g])) {
                double d = dispersions[g] - binMean[bin[g]];
                squares[bin[g]] += d * d;
            }
        }
        for (int b = 0; b < BINS; b++) {
            binStd[b] = count[b] > 1 ? Math.sqrt(squares[b] / (count[b] - 1)) : Double.NaN;
            if (count[b] == 1) {
                // scanpy: a bin of one gene gets its own dispersion as spread and 0 as centre
                binStd[b] = binMean[b];
                binMean[b] = 0;
            }
        }
        double[] normalized = new double[means.length];
        for (int g = 0; g < means.length; g++) {
            normalized[g] = (dispersions[g] - binMean[bin[g]]) / binStd[bin[g]];
        }
        return normalized;
    }

    /** The genes whose normalized dispersion reaches the n-th largest (NaN counted as 0), ascending, as scanpy. */
    static int[] top(double[] normalized, int n) {
        double[] defined = Arrays.stream(normalized).filter(v -> !Double.isNaN(v)).sorted().toArray();
        if (defined.length == 0) {
            return new int[0];
        }
        double cutOff = defined[Math.max(0, defined.length - Math.min(n, defined.length))];
        return java.util.stream.IntStream.range(0, normalized.length)
                .filter(g -> (Double.isNaN(normalized[g]) ? 0 : normalized[g]) >= cutOff).toArray();
    }

    /**
     * The error for a cell holding a value that is no count (NaN, infinite or negative), naming the file, the cell
     * (row and obs name), the gene and the value: normalizing it would give a row of NaN or zeros without a word.
     */
    private static InvalidFileException notACount(Path input, H5ad h5ad, long row, java.lang.foreign.MemorySegment rows,
                                                  long base, int genes) {
        int gene = 0;
        while (gene < genes - 1 && isCount(rows.getAtIndex(ValueLayout.JAVA_FLOAT, base + gene))) {
            gene++;
        }
        float value = rows.getAtIndex(ValueLayout.JAVA_FLOAT, base + gene);
        String[] cells = h5ad.index("obs");
        String[] names = h5ad.index("var");
        String cell = row < cells.length ? " ('" + cells[(int) row] + "')" : "";
        String name = gene < names.length ? " ('" + names[gene] + "')" : "";
        return new InvalidFileException(input, -1, "raw counts in X (finite and not negative) to normalize",
                value + " in cell " + row + cell + ", gene " + gene + name
                        + "; preprocess reads raw counts (anndata's .raw.X or layers['counts'] saved as X)");
    }

    private static boolean isCount(float value) {
        return value >= 0 && value < Float.POSITIVE_INFINITY;
    }

    /** The row's total, or NaN when it holds a negative value (which positive ones could hide in the total). */
    private static double rowTotal(java.lang.foreign.MemorySegment rows, long base, int genes) {
        double total = 0;
        float least = 0;
        for (int g = 0; g < genes; g++) {
            float value = rows.getAtIndex(ValueLayout.JAVA_FLOAT, base + g);
            total += value;
            least = Math.min(least, value);
        }
        return least < 0 ? Double.NaN : total;
    }

    private static boolean[] fill(int n) {
        boolean[] values = new boolean[n];
        Arrays.fill(values, true);
        return values;
    }

    private static double[] pick(double[] values, int[] indices) {
        return Arrays.stream(indices).mapToDouble(i -> values[i]).toArray();
    }
}
