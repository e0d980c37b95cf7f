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
        subcommands = GenerateCommand.Topics.class)
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
}
