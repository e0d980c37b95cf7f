package dev.memfit.cli;

import dev.memfit.ProgressListener;
import dev.memfit.train.GeneTransformer;
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
                "Prints each epoch's masked-gene loss beside the best prediction of the same genes from their rank "
                        + "alone, and the cell-type loss when the shards' cell tables have the label column."})
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
            java.util.Map<Integer, GeneTransformer.EpochLosses> parts = new java.util.HashMap<>();
            run.model().epochLosses().forEach(losses -> parts.put(losses.epoch(), losses));
            System.out.printf(Locale.ROOT, "%-6s %-18s %-17s %-17s %-16s %-9s %s%n", "epoch", "masked-gene loss",
                    "gene frequencies", "from rank alone", "cell-type loss", "seconds", "cells/s");
            for (var epoch : run.fit().history()) {
                // epochs restored from a checkpoint have no parts here: their losses are the loop's only
                GeneTransformer.EpochLosses losses = parts.get(epoch.epoch());
                System.out.printf(Locale.ROOT, "%-6d %-18s %-17s %-17s %-16s %-9.1f %.0f%s%n", epoch.epoch(),
                        losses == null ? "-" : figure(losses.maskedGenes()), losses == null ? "-" : figure(losses.unigramBaseline()),
                        losses == null ? "-" : figure(losses.rankBaseline()),
                        losses == null ? "-" : figure(losses.cellType()), epoch.seconds(), epoch.samplesPerSecond(),
                        losses == null ? String.format(Locale.ROOT, " (before the resume: total loss %.4f)", epoch.loss()) : "");
            }
            System.out.printf(Locale.ROOT, "%d cells a pass, %d gene tokens in the vocabulary, %d tokens a cell%s%n",
                    run.fit().history().isEmpty() ? 0 : run.fit().history().getFirst().samples(),
                    run.tokens().vocabularySize() - 2, run.tokens().maxLength(),
                    run.labels() == null ? "" : ", " + run.labels().names().size() + " cell types ("
                            + settings.training().labelKey() + ")");
        }
        return 0;
    }

    private static String figure(double value) {
        return Double.isNaN(value) ? "-" : String.format(Locale.ROOT, "%.4f", value);
    }
}
