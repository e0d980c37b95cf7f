package dev.memfit.cli;

import dev.memfit.ProgressListener;
import dev.memfit.train.TrainConfig;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;

/**
 * {@code memfit train --config atlas.yaml [--set key=value]...}: the single-cell guide's workflow from one config, a
 * gene-token transformer trained on shards ({@link TrainConfig#train}).
 */
@Command(name = "train", mixinStandardHelpOptions = true,
        description = {"Train a gene-token transformer on shards from one YAML config (the single-cell guide's keys: "
                + "data, training, model, tokenizer; see TrainConfig). Every key is checked before anything runs.",
                "Prints each epoch's masked-gene loss beside the best constant prediction of the same genes, and the "
                        + "cell-type loss when the shards' cell tables have the label column."})
final class TrainCommand implements Callable<Integer> {

    @Option(names = "--config", required = true, description = "the YAML config")
    private Path config;

    @Option(names = "--set", description = "override a key, such as --set training.batch_size=64 (repeatable, in order)")
    private List<String> overrides = new ArrayList<>();

    @Option(names = "--print-config", description = "print the config with every key (defaults included) and stop")
    private boolean printConfig;

    @Override
    public Integer call() {
        TrainConfig settings = TrainConfig.load(config, overrides);
        if (printConfig) {
            System.out.print(settings.toYaml());
            return 0;
        }
        try (TrainConfig.Trained run = settings.train(ProgressListener.console())) {
            double[] genes = run.model().maskedGeneLosses();
            double[] unigram = run.model().unigramLosses();
            double[] types = run.model().cellTypeLosses();
            System.out.printf(Locale.ROOT, "%-6s %-18s %-20s %-16s %-9s %s%n", "epoch", "masked-gene loss",
                    "constant prediction", "cell-type loss", "seconds", "cells/s");
            var history = run.fit().history();
            for (int e = 0; e < history.size(); e++) {
                var epoch = history.get(e);
                System.out.printf(Locale.ROOT, "%-6d %-18s %-20s %-16s %-9.1f %.0f%n", epoch.epoch(),
                        figure(genes, e), figure(unigram, e), figure(types, e), epoch.seconds(), epoch.samplesPerSecond());
            }
            System.out.printf(Locale.ROOT, "%d cells a pass, %d gene tokens in the vocabulary, %d tokens a cell%s%n",
                    run.fit().history().isEmpty() ? 0 : run.fit().history().getFirst().samples(),
                    run.tokens().vocabularySize() - 2, run.tokens().maxLength(),
                    run.labels() == null ? "" : ", " + run.labels().names().size() + " cell types ("
                            + settings.training().labelKey() + ")");
        }
        return 0;
    }

    private static String figure(double[] values, int epoch) {
        return epoch < values.length && !Double.isNaN(values[epoch]) ? String.format(Locale.ROOT, "%.4f", values[epoch]) : "-";
    }
}
