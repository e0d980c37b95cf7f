package dev.memfit.cli;

import dev.memfit.DType;
import dev.memfit.io.hdf5.H5adWriter;
import dev.memfit.io.npy.Npy;
import dev.memfit.io.npy.NpyHeader;
import dev.memfit.synthetic.SyntheticTopics;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

import java.nio.file.Path;
import java.util.concurrent.Callable;

/** {@code memfit generate topics}: a synthetic count matrix with its true topics. */
@Command(name = "generate", mixinStandardHelpOptions = true, description = "Generate synthetic data sets.",
        subcommands = {GenerateCommand.Topics.class, GenerateCommand.ParticleImages.class, GenerateCommand.Atlas.class})
final class GenerateCommand implements Runnable {

    @Override
    public void run() {
        new picocli.CommandLine(this).usage(System.out);
    }

    @Command(name = "topics", mixinStandardHelpOptions = true,
            description = "Documents x terms counts (float32 .npy) from known topics, plus the true topic-term matrix.")
    static final class Topics implements Callable<Integer> {
        @Option(names = "--documents", defaultValue = "1000")
        private int documents;
        @Option(names = "--terms", defaultValue = "500")
        private int terms;
        @Option(names = "--topics", defaultValue = "5")
        private int topics;
        @Option(names = "--length", defaultValue = "300", description = "mean words per document")
        private double length;
        @Option(names = "--seed", defaultValue = "1")
        private long seed;
        @Option(names = {"-o", "--output"}, required = true, description = "the counts .npy")
        private Path output;
        @Option(names = "--truth", description = "also write the true topic-term matrix (k x m float32 .npy)")
        private Path truth;

        @Override
        public Integer call() {
            try (SyntheticTopics.Corpus corpus = SyntheticTopics.builder().setDocuments(documents).setTerms(terms)
                    .setTopics(topics).setDocumentLength(length).optSeed(seed).generate()) {
                Npy.write(output, NpyHeader.of(DType.FLOAT32, documents, terms), corpus.counts().data());
                if (truth != null) {
                    Npy.write(truth, corpus.trueF());
                }
            }
            System.out.println("wrote " + output + (truth != null ? " and " + truth : ""));
            return 0;
        }
    }

    @Command(name = "particles", mixinStandardHelpOptions = true,
            description = "Cryo-EM-like particle stacks (.mrcs) of two conformations, a RELION .star and conformations.npy.")
    static final class ParticleImages implements Callable<Integer> {
        @Option(names = "--particles", defaultValue = "1000")
        private long particles;
        @Option(names = "--size", defaultValue = "32", description = "image side in pixels")
        private int size;
        @Option(names = "--per-stack", defaultValue = "500", description = "images per .mrcs file")
        private int perStack;
        @Option(names = "--noise", defaultValue = "0.5", description = "noise standard deviation (clean peak about 1)")
        private double noise;
        @Option(names = "--max-angle", defaultValue = "30", description = "largest rotation from the reference view, degrees")
        private double maxAngle;
        @Option(names = "--seed", defaultValue = "1")
        private long seed;
        @Option(names = {"-o", "--output"}, required = true, description = "the folder to write")
        private Path output;

        @Override
        public Integer call() {
            var written = dev.memfit.synthetic.SyntheticParticles.builder().setParticles(particles).setSize(size)
                    .optPerStack(perStack).optNoise(noise).optMaxAngle(maxAngle).optSeed(seed).write(output);
            System.out.println("wrote " + written.stacks().size() + " stack(s) and " + written.star());
            return 0;
        }
    }

    @Command(name = "atlas", mixinStandardHelpOptions = true,
            description = {"A single-cell atlas (.h5ad, CSR counts) of imbalanced cell types with negative-binomial counts.",
                    "By default X is stored as anndata's write_h5ad() stores it (X/data, X/indices, X/indptr chunked "
                            + "with h5py's chunk length, maxshape None), the shape of the files users bring; "
                            + "--compression gzip adds what write_h5ad(compression='gzip') does, --layout contiguous "
                            + "writes memfit's own unchunked layout (fastest to read by mapping)."})
    static final class Atlas implements Callable<Integer> {

        /** How X is stored. */
        enum Layout { anndata, contiguous }

        /** The compression of X's chunks. */
        enum Compression { none, gzip }

        @Option(names = "--cells", defaultValue = "10000")
        private long cells;
        @Option(names = "--genes", defaultValue = "2000")
        private int genes;
        @Option(names = "--types", split = ",", defaultValue = "common,uncommon,rare", description = "cell type names")
        private java.util.List<String> types;
        @Option(names = "--proportions", split = ",", defaultValue = "0.90,0.09,0.01", description = "share of each type")
        private double[] proportions;
        @Option(names = "--program-genes", description = "genes in each type's program (default: 5%% of the genes)")
        private Integer programGenes;
        @Option(names = "--fold-change", defaultValue = "3", description = "how much a type raises its program's genes")
        private double foldChange;
        @Option(names = "--mean-expression", defaultValue = "0.04",
                description = "median baseline mean count of a gene (0.04 gives about 10%% non-zero)")
        private double meanExpression;
        @Option(names = "--dispersion", defaultValue = "0.5", description = "negative binomial dispersion")
        private double dispersion;
        @Option(names = "--seed", defaultValue = "1")
        private long seed;
        @picocli.CommandLine.Spec
        private picocli.CommandLine.Model.CommandSpec spec;
        @Option(names = "--layout", defaultValue = "anndata",
                description = "how X is stored: anndata (chunked, as write_h5ad() does; the default) or contiguous")
        private Layout layout;
        @Option(names = "--compression", defaultValue = "none",
                description = "none (the default) or gzip (deflate, as h5py's compression='gzip'); anndata layout only")
        private Compression compression;
        @Option(names = "--compression-level", defaultValue = "4", description = "gzip level 0-9 (h5py's default: 4)")
        private int compressionLevel;
        @Option(names = "--shuffle", description = "HDF5's shuffle filter before gzip (h5py's shuffle=True)")
        private boolean shuffle;
        @Option(names = {"-o", "--output"}, required = true, description = "the .h5ad to write")
        private Path output;

        @Override
        public Integer call() {
            if (layout == Layout.contiguous && (compression != Compression.none || shuffle)) {
                throw new picocli.CommandLine.ParameterException(spec.commandLine(),
                        "--compression and --shuffle need chunks: use --layout anndata");
            }
            H5adWriter.Layout storage = layout == Layout.contiguous ? H5adWriter.Layout.contiguous() : H5adWriter.Layout.anndata();
            if (shuffle) {
                storage = storage.shuffle();
            }
            if (compression == Compression.gzip) {
                storage = storage.gzip(compressionLevel);
            }
            var builder = dev.memfit.synthetic.SyntheticAtlas.builder().setCells(cells).setGenes(genes)
                    .optTypes(types, proportions).optFoldChange(foldChange).optMeanExpression(meanExpression)
                    .optDispersion(dispersion).optSeed(seed).optLayout(storage);
            if (programGenes != null) {
                builder.optProgramGenes(programGenes);
            }
            var atlas = builder.write(output);
            System.out.printf("wrote %s: %d cells x %d genes, %.1f%% non-zero, cells per type %s, X %s%n", output, cells,
                    genes, 100 * atlas.density(genes), java.util.Arrays.toString(atlas.typeCounts()), storage);
            return 0;
        }
    }
}
