package dev.memfit.cli;

import dev.memfit.io.DType;
import dev.memfit.io.Npy;
import dev.memfit.io.NpyHeader;
import dev.memfit.train.SyntheticTopics;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

import java.nio.file.Path;
import java.util.concurrent.Callable;

/** {@code memfit generate topics}: a synthetic count matrix with its true topics. */
@Command(name = "generate", mixinStandardHelpOptions = true, description = "Generate synthetic data sets.",
        subcommands = {GenerateCommand.Topics.class, GenerateCommand.ParticleImages.class})
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
            try (SyntheticTopics.Corpus corpus = SyntheticTopics.generate(documents, terms, topics, length, seed)) {
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
            var written = dev.memfit.train.SyntheticParticles.write(output, particles, size, perStack, noise, maxAngle, seed);
            System.out.println("wrote " + written.stacks().size() + " stack(s) and " + written.star());
            return 0;
        }
    }
}
