package dev.memfit.cli;

import dev.memfit.DType;
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
            description = "A single-cell atlas (.h5ad, CSR counts) of imbalanced cell types with negative-binomial counts.")
    static final class Atlas implements Callable<Integer> {
        @Option(names = "--cells", defaultValue = "10000")
        private long cells;
        @Option(names = "--genes", defaultValue = "2000")
        private int genes;
        @Option(names = "--types", split = ",", defaultValue = "common,uncommon,rare", description = "cell type names")
        private java.util.List<String> types;
        @Option(names = "--proportions", split = ",", defaultValue = "0.90,0.09,0.01", description = "share of each type")
        private double[] proportions;
        @Option(names = "--program-genes", description = "genes in each type's program (default: 5% of the genes)")
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
        @Option(names = {"-o", "--output"}, required = true, description = "the .h5ad to write")
        private Path output;

        @Override
        public Integer call() {
            var builder = dev.memfit.synthetic.SyntheticAtlas.builder().setCells(cells).setGenes(genes)
                    .optTypes(types, proportions).optFoldChange(foldChange).optMeanExpression(meanExpression)
                    .optDispersion(dispersion).optSeed(seed);
            if (programGenes != null) {
                builder.optProgramGenes(programGenes);
            }
            var atlas = builder.write(output);
            System.out.printf("wrote %s: %d cells x %d genes, %.1f%% non-zero, cells per type %s%n", output, cells, genes,
                    100 * atlas.density(genes), java.util.Arrays.toString(atlas.typeCounts()));
            return 0;
        }
    }
}
