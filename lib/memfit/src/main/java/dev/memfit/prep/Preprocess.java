package dev.memfit.prep;

import dev.memfit.DType;
import dev.memfit.InvalidFileException;
import dev.memfit.MemfitException;
import dev.memfit.ProgressListener;
import dev.memfit.io.anndata.FrameColumn;
import dev.memfit.io.AnnDataFiles;
import dev.memfit.io.anndata.AnnData;
import dev.memfit.io.hdf5.H5adWriter;
import dev.memfit.io.storage.OutputLock;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.Map;

/**
 * Offline preprocessing of raw-count AnnData (an {@code .h5ad}, a {@code .zarr} folder or {@code .zarr.zip}), out of core in two passes over {@code X}: each cell normalized to
 * {@code targetSum} counts and {@code log1p}-transformed, then restricted to the highly variable genes, written as a
 * new {@code .h5ad} readable by anndata.
 *
 * <p>Highly variable genes follow Seurat's method as scanpy implements it ({@code flavor='seurat'}): per gene, the
 * mean and variance (ddof 1) of the normalized counts; dispersion = variance / mean; log of the dispersion and log1p of
 * the mean; genes binned into 20 equal-width bins of mean; the dispersion normalized within its bin (z-score; a bin of
 * one gene gets mean 0 and its own value as spread); the {@code n} genes of largest normalized dispersion kept, in
 * their original order, and more on ties: every gene whose normalized dispersion equals the {@code n}-th largest
 * (scanpy's rule), so a run can keep a few more than {@code n}. Pass one accumulates the per-gene sums; pass two
 * writes the selected columns. Memory: one chunk of rows plus a few doubles per gene.
 *
 * <p>Precision follows the source's ({@link AnnData#floatType()}), as scanpy's does: a float32 (or integer) X is
 * normalized in float64, its {@code log1p} rounded to float32 and written as float32, as scanpy stores it; a float64
 * X (FPKM, TPM, values far below float32's range) is read, normalized (each value times
 * {@code 1 / (total / targetSum)}, scanpy's formula for a sparse X), log1p-transformed and summed in float64, and
 * written as float64, so its genes and values are those scanpy computes from the float64 matrix.
 *
 * <p>Both passes read X in blocks of rows ({@link Pass}); the per-gene sums are added per block and the blocks
 * pairwise in a fixed tree ({@link GeneSums}), so that memfit's Spark engine, each task a range of blocks, selects the
 * same genes and writes the same file byte for byte.
 */
public final class Preprocess {

    private static final int BINS = 20;
    /** The obs column of each cell's raw total that the output adds. */
    private static final String RAW_TOTALS = "n_counts_raw";
    /** The var columns of statistics that the output adds. */
    private static final List<String> STATISTICS = List.of("highly_variable", "means", "dispersions", "dispersions_norm");

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
     * @param genes the genes kept: the highly variable genes asked for, more when genes tie with the last one, fewer
     *              when the file has fewer
     * @param statistics the per-gene statistics of all genes
     * @param valueType the type X was computed and written in: the source's ({@link Pass#valueType()})
     */
    public record Result(Path output, long cells, int genes, GeneStatistics statistics, DType valueType) {
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
        private long blockRows;
        private String layer = "X";

        private Builder() {
        }

        /**
         * Sets the matrix preprocessed (default {@code X}): {@code raw/X} or a layer such as {@code counts}, for files
         * whose X already holds normalized values and keep the counts beside it; the output's genes are that
         * matrix's ({@code raw/var} for {@code raw/X}).
         *
         * @param matrix the matrix
         * @return this builder
         */
        public Builder optLayer(String matrix) {
            this.layer = matrix;
            return this;
        }

        /**
         * Sets the rows per block of the per-gene sums (default: 16 MB of dense rows). Sums are added per block, then
         * the blocks pairwise in a fixed tree, so a distributed run with the same value gives the same statistics to
         * the last bit.
         *
         * @param rows at least 1
         * @return this builder
         */
        public Builder optBlockRows(long rows) {
            this.blockRows = rows;
            return this;
        }

        /**
         * Sets the raw counts (required).
         *
         * @param file an {@code .h5ad}, a {@code .zarr} folder or a {@code .zarr.zip}
         * @return this builder
         */
        public Builder setInput(Path file) {
            this.input = file;
            return this;
        }

        /**
         * Sets the number of highly variable genes to keep (default 4,000; all genes when larger than n_vars): the
         * genes whose normalized dispersion reaches the n-th largest, so more than n when others tie with it, as
         * scanpy keeps them.
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
            if (java.nio.file.Files.isDirectory(output)) {
                // found now, not after both passes when the finished file is renamed onto it
                throw new MemfitException("the output " + output + " is a folder; give the name of the .h5ad to write");
            }
            return Preprocess.run(input, output, this);
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
            try (AnnData h5ad = AnnDataFiles.builder().setFile(input).optLayer(layer).optProgress(progress).open()) {
                Pass pass = pass(input, h5ad, targetSum);
                pass.checkCells();
                h5ad.prepareRows();   // a CSC X is transposed here, its progress before the pass's
                if (blockRows > 0) {
                    pass.optBlockRows(blockRows);
                }
                try (ProgressListener.Task task = progress.start("pass 1/2: gene statistics", h5ad.observations(), "cells")) {
                    return pass.sums(0, pass.blocks(), task).statistics(h5ad.index("var"), highlyVariable);
                }
            }
        }

        private void check() {
            if (input == null) {
                throw new MemfitException("setInput(file) is required: the raw-count .h5ad or .zarr");
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
            if (blockRows < 0) {
                throw new MemfitException("optBlockRows(rows) needs rows >= 1, got " + blockRows);
            }
        }
    }

    private static Result run(Path input, Path output, Builder settings) {
        ProgressListener listener = settings.progress;
        // the output is locked before pass one: a second run writing it fails at once, not after a pass over X
        try (OutputLock lock = OutputLock.acquire(output);
             AnnData h5ad = AnnDataFiles.builder().setFile(input).optLayer(settings.layer).optProgress(listener).open()) {
            Pass pass = pass(input, h5ad, settings.targetSum);
            pass.checkInput();   // a column the output cannot carry is refused before any pass over X
            h5ad.prepareRows();   // a CSC X is transposed here, its progress before pass one's
            if (settings.blockRows > 0) {
                pass.optBlockRows(settings.blockRows);
            }
            GeneStatistics statistics;
            try (ProgressListener.Task progress = listener.start("pass 1/2: gene statistics", h5ad.observations(), "cells")) {
                statistics = pass.sums(0, pass.blocks(), progress).statistics(h5ad.index("var"), settings.highlyVariable);
            }
            checkSelected(input, statistics, h5ad.observations());
            int[] keep = statistics.selected();
            double[] totals = new double[Math.toIntExact(h5ad.observations())];
            try (H5adWriter writer = pass.createOutput(output, statistics);
                 ProgressListener.Task progress = listener.start("pass 2/2: writing " + output.getFileName(), h5ad.observations(), "cells")) {
                pass.forEachSelected(0, pass.blocks(), keep, slice -> {
                    slice.appendTo(writer);
                    System.arraycopy(slice.totals(), 0, totals, Math.toIntExact(slice.first()), slice.count());
                    progress.step(slice.count());
                });
                pass.finishOutput(writer, statistics, totals);
                writer.commit();
            }
            return new Result(output, h5ad.observations(), keep.length, statistics, pass.valueType());
        }
    }

    /**
     * Reads the normalized counts of an open {@code .h5ad} for preprocessing, in blocks of rows: the one code both
     * the single-process run and a distributed one (each worker a range of blocks) use, so that both give the same
     * genes and the same values.
     *
     * @param input the file (named in errors)
     * @param h5ad the file, open
     * @param targetSum counts per cell after normalization
     * @return the pass, with blocks of about 16 MB of dense rows
     */
    public static Pass pass(Path input, AnnData h5ad, double targetSum) {
        return new Pass(input, h5ad, targetSum);
    }

    /**
     * Blocks of rows of one file: per-gene sums of a range of blocks ({@link #sums}) and the selected genes of a
     * range of blocks ({@link #forEachSelected}). Block {@code b} holds rows {@code [b * blockRows(), ...)}.
     */
    public static final class Pass {
        private final Path input;
        private final AnnData h5ad;
        private final double targetSum;
        private final int genes;
        /** Whether X is float64, read and computed in float64 and written so ({@link AnnData#floatType()}). */
        private final boolean wide;
        private long blockRows;
        /** The input's obs and var columns, read by {@link #checkInput} or {@link #finishOutput}. */
        private List<Map<String, FrameColumn>> frames;
        /** Each cell's total, kept by a {@link #sums} over every block for pass two (which recomputes them otherwise). */
        private double[] cellTotals;

        private Pass(Path input, AnnData h5ad, double targetSum) {
            this.input = input;
            this.h5ad = h5ad;
            this.targetSum = targetSum;
            this.genes = Math.toIntExact(h5ad.variables());
            this.wide = h5ad.floatType() == DType.FLOAT64;
            this.blockRows = Math.max(1, (16L << 20) / Math.max(1, h5ad.variables() * h5ad.floatType().byteSize()));
        }

        /**
         * The type the values are read, computed and written in: the source's ({@link AnnData#floatType()}).
         *
         * @return {@code FLOAT32} or {@code FLOAT64}
         */
        public DType valueType() {
            return wide ? DType.FLOAT64 : DType.FLOAT32;
        }

        /**
         * Sets the rows of a block (default: 16 MB of dense rows of the source's float type). The sums, hence the
         * statistics, depend on it in their last bits: runs to compare use the same value.
         *
         * @param rows at least 1
         * @return this pass
         */
        public Pass optBlockRows(long rows) {
            if (rows < 1) {
                throw new MemfitException("optBlockRows(rows) needs rows >= 1, got " + rows);
            }
            this.blockRows = rows;
            return this;
        }

        /**
         * The rows of a block.
         *
         * @return rows
         */
        public long blockRows() {
            return blockRows;
        }

        /**
         * The number of blocks.
         *
         * @return blocks covering all rows
         */
        public long blocks() {
            return (h5ad.observations() + blockRows - 1) / blockRows;
        }

        /**
         * Refuses what {@link #checkCells} refuses, and a file whose {@code obs} or {@code var} the output cannot
         * carry: a column of a kind memfit does not carry exactly, or one named as a column preprocessing adds
         * ({@code n_counts_raw} in obs; {@code highly_variable}, {@code means}, {@code dispersions},
         * {@code dispersions_norm} in var), which it would replace. Reads both dataframes (kept for
         * {@link #finishOutput}), before any pass over X.
         *
         * @throws InvalidFileException naming the file and the column
         * @throws MemfitException naming the column that clashes
         */
        public void checkInput() {
            checkCells();
            frames();
        }

        /** The input's obs columns and var columns, read once. */
        private List<Map<String, FrameColumn>> frames() {
            if (frames == null) {
                Map<String, FrameColumn> obs = h5ad.frameColumns("obs");
                Map<String, FrameColumn> var = h5ad.frameColumns("var");
                clash(obs, "obs", List.of(RAW_TOTALS));
                clash(var, "var", STATISTICS);
                frames = List.of(obs, var);
            }
            return frames;
        }

        private void clash(Map<String, FrameColumn> columns, String frame, List<String> added) {
            List<String> both = added.stream().filter(columns::containsKey).toList();
            if (!both.isEmpty()) {
                throw new MemfitException(input + ": " + frame + " already has the column(s) " + both + ", which preprocess "
                        + "writes itself (its statistics of the normalized counts); rename or drop them in anndata "
                        + "(adata." + frame + ".drop(columns=[...])) and write the file again");
            }
        }

        /**
         * Refuses a file without cells: gene variances of no cells are undefined.
         *
         * @throws InvalidFileException naming the file
         */
        public void checkCells() {
            if (h5ad.observations() == 0) {
                throw new InvalidFileException(input, -1, "at least one cell to preprocess", "n_obs = 0 (X of shape [0, "
                        + h5ad.variables() + "])");
            }
        }

        /**
         * Pass one over a range of blocks: per block, the sums of the normalized counts and of their squares per gene,
         * added into a {@link GeneSums} in block order.
         *
         * @param firstBlock the first block
         * @param count the number of blocks
         * @param progress stepped by the cells of each block
         * @return the sums of the range
         * @throws InvalidFileException for a value that is no count, naming the file, cell and gene
         */
        public GeneSums sums(long firstBlock, long count, ProgressListener.Task progress) {
            GeneSums sums = new GeneSums(genes);
            double[] totals = firstBlock == 0 && count >= blocks() ? new double[Math.toIntExact(h5ad.observations())] : null;
            forEachBlock(firstBlock, count, (first, rowCount, rows) -> {
                double[] sum = new double[genes];
                double[] sumOfSquares = new double[genes];
                for (int r = 0; r < rowCount; r++) {
                    long base = (long) r * genes;
                    double total = wide ? rowTotalWide(rows, base, genes) : rowTotal(rows, base, genes);
                    if (!(total >= 0 && total < Double.POSITIVE_INFINITY)) {
                        throw notACount(input, h5ad, first + r, rows, base, genes, wide);
                    }
                    if (totals != null) {
                        totals[Math.toIntExact(first + r)] = total;
                    }
                    if (total <= 0) {
                        continue;
                    }
                    if (wide) {
                        double scale = 1 / (total / targetSum);
                        for (int g = 0; g < genes; g++) {
                            double raw = rows.getAtIndex(ValueLayout.JAVA_DOUBLE, base + g);
                            if (raw != 0) {
                                // expm1 of the stored log1p, as scanpy's highly_variable_genes sees it
                                double normalized = Math.expm1(Math.log1p(raw * scale));
                                sum[g] += normalized;
                                sumOfSquares[g] += normalized * normalized;
                            }
                        }
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
                sums.addBlock(rowCount, sum, sumOfSquares);
                progress.step(rowCount);
            });
            cellTotals = totals;
            return sums;
        }

        /**
         * Pass two over a range of blocks: each block's cells, normalized, log1p-transformed and restricted to the
         * selected genes, as CSR rows.
         *
         * @param firstBlock the first block
         * @param count the number of blocks
         * @param keep the selected genes, ascending
         * @param consumer receives each block, in order
         */
        public void forEachSelected(long firstBlock, long count, int[] keep, java.util.function.Consumer<Slice> consumer) {
            double[] known = cellTotals;
            forEachBlock(firstBlock, count, (first, rowCount, rows) -> {
                int[] starts = new int[rowCount + 1];
                int[] columns = new int[rowCount * keep.length];
                float[] values = wide ? null : new float[columns.length];
                double[] wideValues = wide ? new double[columns.length] : null;
                double[] totals = new double[rowCount];
                int k = 0;
                for (int r = 0; r < rowCount; r++) {
                    long base = (long) r * genes;
                    // the same value either way: a row's total is summed in one order
                    double total = known != null ? known[Math.toIntExact(first + r)]
                            : wide ? rowTotalWide(rows, base, genes) : rowTotal(rows, base, genes);
                    totals[r] = total;
                    if (wide) {
                        double scale = total > 0 ? 1 / (total / targetSum) : 0;
                        for (int j = 0; j < keep.length; j++) {
                            double raw = rows.getAtIndex(ValueLayout.JAVA_DOUBLE, base + keep[j]);
                            if (raw != 0) {
                                columns[k] = j;
                                wideValues[k++] = Math.log1p(raw * scale);
                            }
                        }
                        starts[r + 1] = k;
                        continue;
                    }
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
                consumer.accept(new Slice(first, rowCount, starts, Arrays.copyOf(columns, k),
                        wide ? null : Arrays.copyOf(values, k), wide ? Arrays.copyOf(wideValues, k) : null, totals));
            });
        }

        /**
         * Starts the processed file: the selected genes as its {@code var} index, X of the source's float type
         * ({@link #valueType()}).
         *
         * @param output the file to write
         * @param statistics the selection
         * @return the writer, to fill with {@link #forEachSelected}'s slices, then {@link #finishOutput}
         */
        public H5adWriter createOutput(Path output, GeneStatistics statistics) {
            String[] keptNames = Arrays.stream(statistics.selected()).mapToObj(g -> statistics.genes()[g]).toArray(String[]::new);
            return H5adWriter.create(output, keptNames, H5adWriter.Layout.contiguous().values(valueType()));
        }

        /**
         * Writes the tables of the processed file once its cells are in: the input's {@code obs} columns, each with
         * its type, plus each cell's raw total ({@code n_counts_raw}); the input's {@code var} columns on the selected
         * genes, plus their statistics ({@code highly_variable}, {@code means}, {@code dispersions},
         * {@code dispersions_norm}); the index names of both. The caller commits. The totals are written in the
         * source's float type ({@link #valueType()}).
         *
         * @param writer the output
         * @param statistics the selection
         * @param totals each cell's raw total, in row order
         */
        public void finishOutput(H5adWriter writer, GeneStatistics statistics, double[] totals) {
            int[] keep = statistics.selected();
            String[] cellNames = h5ad.index("obs");
            if (cellNames.length == totals.length) {
                writer.cellNames(cellNames);
            }
            writer.obsIndexName(h5ad.indexName("obs")).varIndexName(h5ad.indexName("var"));
            List<Map<String, FrameColumn>> frames = frames();
            // every input column with its type; var's on the selected genes only
            frames.get(0).forEach(writer::obs);
            if (wide) {
                writer.obs(RAW_TOTALS, totals);
            } else {
                float[] narrow = new float[totals.length];
                for (int i = 0; i < narrow.length; i++) {
                    narrow[i] = (float) totals[i];
                }
                writer.obs(RAW_TOTALS, narrow);
            }
            frames.get(1).forEach((name, column) -> writer.var(name, column.subset(keep)));
            writer.var("highly_variable", fill(keep.length))
                    .var("means", pick(statistics.means(), keep))
                    .var("dispersions", pick(statistics.dispersions(), keep))
                    .var("dispersions_norm", pick(statistics.normalizedDispersions(), keep));
        }

        private void forEachBlock(long firstBlock, long count, AnnData.RowsConsumer consumer) {
            long cells = h5ad.observations();
            long from = Math.min(cells, firstBlock * blockRows);
            long to = Math.min(cells, (firstBlock + count) * blockRows);
            if (from >= to) {
                return;
            }
            int capacity = (int) Math.min(blockRows, to - from);
            DType type = valueType();
            try (Arena arena = Arena.ofConfined()) {
                MemorySegment rows = arena.allocate((long) capacity * genes * type.byteSize(), 8);
                for (long first = from; first < to; first += blockRows) {
                    int rowCount = (int) Math.min(blockRows, to - first);
                    h5ad.readRows(first, rowCount, rows, type);
                    consumer.accept(first, rowCount, rows);
                }
            }
        }
    }

    /**
     * One block of processed cells.
     *
     * @param first the first cell
     * @param count cells
     * @param rowStarts CSR row pointers, {@code count + 1}
     * @param columns column of each value (index into the selected genes)
     * @param values log1p of the normalized counts, float32 (null for a float64 source)
     * @param wideValues log1p of the normalized counts, float64, for a float64 source (else null)
     * @param totals each cell's raw total
     */
    public record Slice(long first, int count, int[] rowStarts, int[] columns, float[] values, double[] wideValues,
                        double[] totals) implements java.io.Serializable {

        /**
         * Appends the cells to the processed file, in their type.
         *
         * @param writer the output, from {@link Pass#createOutput}
         */
        public void appendTo(H5adWriter writer) {
            if (wideValues != null) {
                writer.appendSparse(count, rowStarts, columns, wideValues);
            } else {
                writer.appendSparse(count, rowStarts, columns, values);
            }
        }
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

    /**
     * Refuses a file in which no gene has a normalized dispersion, so that no gene is highly variable (scanpy fails on
     * it too), rather than writing an output without a single gene.
     *
     * @param input the file, for the message
     * @param statistics its gene statistics
     * @param cells its cells
     * @throws MemfitException when no gene was selected
     */
    public static void checkSelected(Path input, GeneStatistics statistics, long cells) {
        if (statistics.selected().length == 0) {
            throw new MemfitException(input + ": no highly variable gene: no gene of the " + statistics.genes().length
                    + " has a normalized dispersion (" + (cells < 2 ? cells + " cell: no variance to measure"
                    : "every gene's normalized counts are the same in all " + cells + " cells") + "); nothing was written");
        }
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
    private static InvalidFileException notACount(Path input, AnnData h5ad, long row, java.lang.foreign.MemorySegment rows,
                                                  long base, int genes, boolean wide) {
        int gene = 0;
        while (gene < genes - 1 && isCount(value(rows, base + gene, wide))) {
            gene++;
        }
        Object value = wide ? (Object) value(rows, base + gene, true) : (Object) (float) value(rows, base + gene, false);
        String[] cells = h5ad.index("obs");
        String[] names = h5ad.index("var");
        String cell = row < cells.length ? " ('" + cells[(int) row] + "')" : "";
        String name = gene < names.length ? " ('" + names[gene] + "')" : "";
        return new InvalidFileException(input, -1, "raw counts in X (finite and not negative) to normalize",
                value + " in cell " + row + cell + ", gene " + gene + name
                        + "; preprocess reads raw counts (anndata's .raw.X or layers['counts'] saved as X)");
    }

    private static boolean isCount(double value) {
        return value >= 0 && value < Double.POSITIVE_INFINITY;
    }

    private static double value(MemorySegment rows, long index, boolean wide) {
        return wide ? rows.getAtIndex(ValueLayout.JAVA_DOUBLE, index) : rows.getAtIndex(ValueLayout.JAVA_FLOAT, index);
    }

    /** The row's total of float64 values, or NaN when it holds a negative value. */
    private static double rowTotalWide(MemorySegment rows, long base, int genes) {
        double total = 0;
        double least = 0;
        for (int g = 0; g < genes; g++) {
            double value = rows.getAtIndex(ValueLayout.JAVA_DOUBLE, base + g);
            total += value;
            least = Math.min(least, value);
        }
        return least < 0 ? Double.NaN : total;
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
