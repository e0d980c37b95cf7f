package dev.memfit.synthetic;

import dev.memfit.MemfitException;
import dev.memfit.ProgressListener;
import dev.memfit.io.hdf5.H5adWriter;
import org.apache.commons.rng.UniformRandomProvider;
import org.apache.commons.rng.sampling.PermutationSampler;
import org.apache.commons.rng.sampling.distribution.AhrensDieterMarsagliaTsangGammaSampler;
import org.apache.commons.rng.sampling.distribution.ContinuousSampler;
import org.apache.commons.rng.sampling.distribution.GaussianSampler;
import org.apache.commons.rng.sampling.distribution.PoissonSampler;
import org.apache.commons.rng.sampling.distribution.ZigguratSampler;
import org.apache.commons.rng.simple.RandomSource;

import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.stream.IntStream;

/**
 * A synthetic single-cell atlas with known cell types, written as {@code .h5ad} chunk by chunk (memory bounded by a
 * few chunks whatever the number of cells).
 *
 * <p>Counts are negative binomial (a gamma-Poisson mixture, the usual model of UMI counts): cell {@code c} of type
 * {@code t} has for gene {@code g} the mean {@code size_c * base_g * fold_{t,g}}, where {@code base_g} is log-normal
 * across genes (a few highly expressed genes, many rare ones), {@code size_c} is a log-normal library size, and each
 * type multiplies its own program of genes by {@code foldChange}. Types are drawn with the given proportions (e.g. 90%,
 * 9%, 1%), so rare types are really rare. Everything follows from the seed: the same settings write the same bytes,
 * whatever the number of threads.
 *
 * <p>The file is laid out as anndata's {@code write_h5ad()} leaves it by default (chunked {@code X} of h5py's chunk
 * length, so notebooks and benchmarks read files shaped like the ones users bring); see {@link Builder#optLayout}.
 */
public final class SyntheticAtlas {

    private static final int CHUNK = 2048;
    /** Chunks generated before the file is opened, to estimate the stored values h5py's chunk length follows from. */
    private static final int ESTIMATE_CHUNKS = 8;

    private SyntheticAtlas() {
    }

    /** The validated settings of one atlas (what {@link Builder} collects). */
    private record Spec(long cells, int genes, List<String> types, double[] proportions, int programGenes,
                        double foldChange, double meanExpression, double dispersion, long seed,
                        H5adWriter.Layout layout) {
    }

    /**
     * Starts configuring an atlas: {@code setCells} and {@code setGenes} are required. Defaults: three types
     * "common", "uncommon" and "rare" at 90%, 9% and 1%, programs of 5% of the genes each raised 3x, a median
     * baseline mean of 0.04 counts (about 10% of X non-zero), dispersion 0.5, seed 1, anndata's layout uncompressed,
     * a console progress bar.
     *
     * <pre>{@code
     * SyntheticAtlas.Atlas atlas = SyntheticAtlas.builder().setCells(100_000).setGenes(2_000)
     *         .optFoldChange(2.2).optSeed(3).write(Path.of("atlas.h5ad"));
     * }</pre>
     *
     * @return the builder
     */
    public static Builder builder() {
        return new Builder();
    }

    /** Configures an atlas; {@link #write(Path)} validates the settings and writes it. */
    public static final class Builder {

        private long cells;
        private int genes;
        private List<String> types = List.of("common", "uncommon", "rare");
        private double[] proportions = {0.90, 0.09, 0.01};
        private Integer programGenes;
        private double foldChange = 3.0;
        private double meanExpression = 0.04;
        private double dispersion = 0.5;
        private long seed = 1;
        private H5adWriter.Layout layout = H5adWriter.Layout.anndata();
        private ProgressListener progress = ProgressListener.console();

        private Builder() {
        }

        /**
         * Sets the number of cells (required).
         *
         * @param count from 1 to 2^31 - 9
         * @return this builder
         */
        public Builder setCells(long count) {
            this.cells = count;
            return this;
        }

        /**
         * Sets the number of genes (required).
         *
         * @param count at least 1
         * @return this builder
         */
        public Builder setGenes(int count) {
            this.genes = count;
            return this;
        }

        /**
         * Sets the cell types and the expected share of each (default 90%, 9% and 1% of "common", "uncommon" and
         * "rare"); types are drawn with these proportions, so rare types are really rare.
         *
         * @param names the type names
         * @param shares one share per type, non-negative, summing to 1
         * @return this builder
         */
        public Builder optTypes(List<String> names, double... shares) {
            this.types = names == null ? null : List.copyOf(names);
            this.proportions = shares == null ? null : shares.clone();
            return this;
        }

        /**
         * Sets the number of genes in each type's program, disjoint between types (default 5% of the genes, at
         * least 1).
         *
         * @param count at least 0; the programs of all types must fit in the genes
         * @return this builder
         */
        public Builder optProgramGenes(int count) {
            this.programGenes = count;
            return this;
        }

        /**
         * Sets how much a type's program raises its genes' means (default 3).
         *
         * @param factor positive
         * @return this builder
         */
        public Builder optFoldChange(double factor) {
            this.foldChange = factor;
            return this;
        }

        /**
         * Sets the median over genes of the baseline mean count, which sets the density of X (default 0.04, about
         * 10% non-zero).
         *
         * @param mean positive
         * @return this builder
         */
        public Builder optMeanExpression(double mean) {
            this.meanExpression = mean;
            return this;
        }

        /**
         * Sets the negative binomial dispersion: variance = mean + dispersion * mean^2 (default 0.5).
         *
         * @param value positive
         * @return this builder
         */
        public Builder optDispersion(double value) {
            this.dispersion = value;
            return this;
        }

        /**
         * Sets the seed (default 1): the same settings write the same bytes, whatever the number of threads.
         *
         * @param value the seed
         * @return this builder
         */
        public Builder optSeed(long value) {
            this.seed = value;
            return this;
        }

        /**
         * Sets how X is stored (default {@link H5adWriter.Layout#anndata()}: chunked like anndata's
         * {@code write_h5ad()}, uncompressed). Unless the layout sets {@code expectedValues}, the chunk length is h5py's
         * for the stored values estimated from the first 16,384 cells (exact when there are no more cells).
         *
         * @param value such as {@code H5adWriter.Layout.anndata().gzip()} or {@code H5adWriter.Layout.contiguous()}
         * @return this builder
         */
        public Builder optLayout(H5adWriter.Layout value) {
            this.layout = value;
            return this;
        }

        /**
         * Sets where progress goes (default {@link ProgressListener#console()}).
         *
         * @param listener the listener, such as {@link ProgressListener#silent()}
         * @return this builder
         */
        public Builder optProgress(ProgressListener listener) {
            this.progress = listener;
            return this;
        }

        /**
         * Validates the settings, then generates and writes the atlas.
         *
         * @param output the {@code .h5ad} to write (replaced only once complete)
         * @return what was written
         * @throws MemfitException naming the setting to change
         */
        public Atlas write(Path output) {
            if (output == null) {
                throw new MemfitException("write(output) needs the .h5ad file to write");
            }
            if (cells < 1 || cells > Integer.MAX_VALUE - 8) {
                throw new MemfitException("setCells(n) is required, with n from 1 to 2^31 - 9, got " + cells);
            }
            if (genes < 1) {
                throw new MemfitException("setGenes(n) is required, with n >= 1, got " + genes);
            }
            if (types == null || proportions == null || types.isEmpty() || types.size() != proportions.length) {
                throw new MemfitException("optTypes needs one proportion per type name, got "
                        + (types == null ? 0 : types.size()) + " types and "
                        + (proportions == null ? 0 : proportions.length) + " proportions");
            }
            if (Math.abs(Arrays.stream(proportions).sum() - 1) > 1e-6 || Arrays.stream(proportions).anyMatch(p -> !(p >= 0))) {
                throw new MemfitException("optTypes needs proportions that are non-negative and sum to 1, got "
                        + Arrays.toString(proportions));
            }
            int program = programGenes != null ? programGenes : Math.max(1, genes / 20);
            if (program < 0 || (long) program * types.size() > genes) {
                throw new MemfitException(types.size() + " programs of " + program + " genes do not fit in " + genes
                        + " genes; lower optProgramGenes or raise setGenes");
            }
            if (!(foldChange > 0) || !(meanExpression > 0) || !(dispersion > 0)) {
                throw new MemfitException("optFoldChange, optMeanExpression and optDispersion must be positive, got "
                        + foldChange + ", " + meanExpression + " and " + dispersion);
            }
            if (progress == null) {
                throw new MemfitException("optProgress(null): pass ProgressListener.silent() to report nothing");
            }
            if (layout == null) {
                throw new MemfitException("optLayout(null): pass H5adWriter.Layout.anndata() or contiguous()");
            }
            Spec spec = new Spec(cells, genes, types, proportions.clone(), program, foldChange, meanExpression,
                    dispersion, seed, layout);
            return SyntheticAtlas.write(output, spec, progress);
        }
    }

    /**
     * What was written.
     *
     * @param file the {@code .h5ad}
     * @param labels each cell's type index into the types of {@link Builder#optTypes}
     * @param typeCounts cells per type
     * @param storedValues non-zero values in X
     */
    public record Atlas(Path file, int[] labels, long[] typeCounts, long storedValues) {

        /**
         * The fraction of X that is non-zero.
         *
         * @param genes the number of genes
         * @return the density
         */
        public double density(int genes) {
            return (double) storedValues / ((double) labels.length * genes);
        }
    }

    private static Atlas write(Path output, Spec spec, ProgressListener listener) {
        int cells = Math.toIntExact(spec.cells());
        UniformRandomProvider rng = RandomSource.XO_RO_SHI_RO_128_PP.create(spec.seed());
        int[] labels = new int[cells];
        double[] cumulative = new double[spec.proportions().length];
        for (int t = 0; t < cumulative.length; t++) {
            cumulative[t] = (t == 0 ? 0 : cumulative[t - 1]) + spec.proportions()[t];
        }
        long[] typeCounts = new long[cumulative.length];
        for (int c = 0; c < cells; c++) {
            double u = rng.nextDouble();
            int t = 0;
            while (t < cumulative.length - 1 && u >= cumulative[t]) {
                t++;
            }
            labels[c] = t;
            typeCounts[t]++;
        }
        ContinuousSampler normal = GaussianSampler.of(ZigguratSampler.NormalizedGaussian.of(rng), 0, 1);
        double[] baseMean = new double[spec.genes()];
        for (int g = 0; g < baseMean.length; g++) {
            baseMean[g] = spec.meanExpression() * Math.exp(1.5 * normal.sample());
        }
        // disjoint random programs: the first programGenes * types entries of a random permutation of the genes
        int[] permutation = PermutationSampler.natural(spec.genes());
        PermutationSampler.shuffle(rng, permutation);
        float[][] fold = new float[cumulative.length][spec.genes()];
        String[] program = new String[spec.genes()];
        Arrays.fill(program, "none");
        for (float[] row : fold) {
            Arrays.fill(row, 1f);
        }
        for (int t = 0; t < cumulative.length; t++) {
            for (int i = 0; i < spec.programGenes(); i++) {
                int gene = permutation[t * spec.programGenes() + i];
                fold[t][gene] = (float) spec.foldChange();
                program[gene] = spec.types().get(t);
            }
        }
        String[] geneNames = new String[spec.genes()];
        for (int g = 0; g < geneNames.length; g++) {
            geneNames[g] = String.format("GENE%05d", g);
        }
        String[] typeNames = new String[cells];
        String[] donors = new String[cells];
        float[] totals = new float[cells];
        long stored = 0;
        int chunks = (cells + CHUNK - 1) / CHUNK;
        int window = Math.max(1, Runtime.getRuntime().availableProcessors());
        try (ProgressListener.Task progress = listener.start("generating " + output.getFileName(), cells, "cells")) {
            // the first chunks are generated before the file is opened: a fixed number of them, so the estimate
            // (and the bytes written) do not depend on the number of threads
            int first = Math.min(chunks, ESTIMATE_CHUNKS);
            List<Chunk> generated = generate(spec, 0, first, labels, baseMean, fold);
            H5adWriter.Layout layout = spec.layout();
            if (layout.chunked() && layout.expectedValues() < 0) {
                long sample = 0;
                long sampleCells = 0;
                for (Chunk chunk : generated) {
                    sample += chunk.starts[chunk.count];
                    sampleCells += chunk.count;
                }
                layout = layout.expectedValues(Math.round((double) sample * cells / sampleCells));
            }
            try (H5adWriter writer = H5adWriter.create(output, geneNames, layout)) {
                for (int from = first; ; from += window) {
                    for (Chunk chunk : generated) {
                        writer.appendSparse(chunk.count, chunk.starts, chunk.columns, chunk.values);
                        stored += chunk.starts[chunk.count];
                        System.arraycopy(chunk.totals, 0, totals, chunk.first, chunk.count);
                        progress.step(chunk.count);
                    }
                    if (from >= chunks) {
                        break;
                    }
                    // a window of chunks generated in parallel, written in order: same bytes for any thread count
                    generated = generate(spec, from, Math.min(chunks, from + window), labels, baseMean, fold);
                }
                for (int c = 0; c < cells; c++) {
                    typeNames[c] = spec.types().get(labels[c]);
                    donors[c] = "donor" + (c % 4);
                }
                writer.obs("cell_type", typeNames).obs("donor", donors).obs("n_counts", totals);
                writer.var("program", program).var("base_mean", baseMean.clone());
                writer.commit();
            }
        }
        return new Atlas(output, labels, typeCounts, stored);
    }

    private static List<Chunk> generate(Spec spec, int from, int to, int[] labels, double[] baseMean, float[][] fold) {
        return IntStream.range(from, to).parallel().mapToObj(i -> chunk(spec, i, labels, baseMean, fold)).toList();
    }

    private record Chunk(int first, int count, int[] starts, int[] columns, float[] values, float[] totals) {
    }

    private static Chunk chunk(Spec spec, int index, int[] labels, double[] baseMean, float[][] fold) {
        UniformRandomProvider rng = RandomSource.XO_RO_SHI_RO_128_PP.create(new long[]{spec.seed(), index + 1L});
        ContinuousSampler normal = GaussianSampler.of(ZigguratSampler.NormalizedGaussian.of(rng), 0, 0.3);
        double shape = 1 / spec.dispersion();
        ContinuousSampler gamma = AhrensDieterMarsagliaTsangGammaSampler.of(rng, shape, 1);
        int first = index * CHUNK;
        int count = Math.min(CHUNK, labels.length - first);
        int genes = baseMean.length;
        int[] starts = new int[count + 1];
        int[] columns = new int[Math.max(16, (int) Math.min((long) count * genes, 1L << 20))];
        float[] values = new float[columns.length];
        float[] totals = new float[count];
        int k = 0;
        for (int r = 0; r < count; r++) {
            double size = Math.exp(normal.sample());
            float[] typeFold = fold[labels[first + r]];
            for (int g = 0; g < genes; g++) {
                double mean = size * baseMean[g] * typeFold[g];
                double lambda = mean * spec.dispersion() * gamma.sample();
                int value = lambda <= 0 ? 0 : PoissonSampler.of(rng, lambda).sample();
                if (value != 0) {
                    if (k == columns.length) {
                        columns = Arrays.copyOf(columns, columns.length * 2);
                        values = Arrays.copyOf(values, values.length * 2);
                    }
                    columns[k] = g;
                    values[k++] = value;
                    totals[r] += value;
                }
            }
            starts[r + 1] = k;
        }
        return new Chunk(first, count, starts, columns, values, totals);
    }
}
