package dev.memfit.cli;

import dev.memfit.MemfitException;
import dev.memfit.bench.TransformerBenchmark;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import tech.tablesaw.api.DoubleColumn;
import tech.tablesaw.api.StringColumn;
import tech.tablesaw.api.Table;

import java.nio.file.Path;
import java.util.Locale;
import java.util.concurrent.Callable;

/** {@code memfit bench transformer}: the gene-token transformer's training steps, memfit beside PyTorch. */
@Command(name = "transformer", mixinStandardHelpOptions = true,
        description = "Tokens/s of the gene-token transformer's training steps on the CPU: memfit beside the same model in "
                + "PyTorch (Debian's python3-torch), from the same initial weights on the same masked batches, with "
                + "the loss curves compared step by step.")
final class BenchTransformer implements Callable<Integer> {

    @Option(names = "--cells", defaultValue = "2048", description = "cells of the synthetic atlas, a multiple of --batch (default ${DEFAULT-VALUE})")
    private int cells;
    @Option(names = "--genes", defaultValue = "2000", description = "genes of the atlas (default ${DEFAULT-VALUE})")
    private int genes;
    @Option(names = "--vocabulary", defaultValue = "1024", description = "gene tokens, the most expressed genes (default ${DEFAULT-VALUE})")
    private int vocabulary;
    @Option(names = "--max-length", defaultValue = "256", description = "tokens per cell (default ${DEFAULT-VALUE})")
    private int maxLength;
    @Option(names = "--d-model", defaultValue = "64", description = "model width (default ${DEFAULT-VALUE})")
    private int dModel;
    @Option(names = "--layers", defaultValue = "2", description = "encoder layers (default ${DEFAULT-VALUE})")
    private int layers;
    @Option(names = "--heads", defaultValue = "4", description = "attention heads, dividing --d-model (default ${DEFAULT-VALUE})")
    private int heads;
    @Option(names = "--batch", defaultValue = "64", description = "cells a step (default ${DEFAULT-VALUE})")
    private int batch;
    @Option(names = "--epochs", defaultValue = "3", description = "passes; the first is warm-up (default ${DEFAULT-VALUE})")
    private int epochs;
    @Option(names = "--threads", defaultValue = "2", description = "PyTorch compute threads on both sides (default ${DEFAULT-VALUE})")
    private int threads;
    @Option(names = "--lr", defaultValue = "0.001", description = "Adam's learning rate, both sides (default ${DEFAULT-VALUE})")
    private double learningRate;
    @Option(names = "--no-baseline", description = "skip the torch side")
    private boolean noBaseline;

    @Override
    public Integer call() throws Exception {
        if (cells < 1 || genes < 1 || vocabulary < 1 || maxLength < 1 || batch < 1 || epochs < 1 || threads < 1) {
            throw new MemfitException("bench transformer: sizes and counts must be positive");
        }
        // before the engine starts; the launcher starts a fresh JVM per command
        System.setProperty("ai.djl.pytorch.num_threads", Integer.toString(threads));
        System.setProperty("ai.djl.pytorch.num_interop_threads", "1");
        TransformerBenchmark.Result result = TransformerBenchmark.run(new TransformerBenchmark.Settings(
                Path.of("build", "bench"), cells, genes, vocabulary, maxLength, dModel, layers, heads, batch, epochs,
                threads, learningRate, !noBaseline));
        Table table = Table.create(String.format(Locale.ROOT, "Gene-token transformer, d_model %d, %d layers, %d heads, "
                        + "%,d parameters; %,d cells x %d tokens, batch %d (%d steps an epoch), %d epochs, %d thread(s), CPU, "
                        + "allocator %s on both sides",
                dModel, layers, heads, result.parameters(), cells, maxLength, batch, result.stepsPerEpoch(), epochs, threads,
                dev.memfit.ProcessMemory.allocator()));
        StringColumn method = StringColumn.create("method");
        DoubleColumn first = DoubleColumn.create("first epoch s");
        DoubleColumn later = DoubleColumn.create("s/epoch (later)");
        DoubleColumn tokens = DoubleColumn.create("tokens/s (later)");
        DoubleColumn ratio = DoubleColumn.create("vs torch");
        DoubleColumn lastLoss = DoubleColumn.create("last step loss");
        double torch = result.rows().size() > 1 ? result.rows().get(1).tokensPerSecond() : Double.NaN;
        for (TransformerBenchmark.Row row : result.rows()) {
            method.append(row.method());
            first.append(BenchCommand.round(row.firstEpochSeconds(), 2));
            later.append(BenchCommand.round(row.laterEpochSeconds(), 2));
            tokens.append(Math.round(row.tokensPerSecond()));
            BenchCommand.appendFigure(ratio, row.tokensPerSecond() / torch, 3);
            lastLoss.append(BenchCommand.round(row.stepLosses()[row.stepLosses().length - 1], 4));
        }
        table.addColumns(method, first, later, tokens, ratio, lastLoss);
        System.out.println(table.printAll());
        if (result.rows().size() > 1) {
            System.out.printf(Locale.ROOT, "loss curves, same initial weights and batches: first step apart by %.2e "
                            + "(relative), at most %.2e over all %d steps%n", result.firstStepRelativeDifference(),
                    result.largestRelativeDifference(), result.rows().getFirst().stepLosses().length);
        } else if (!noBaseline) {
            System.out.println("no torch side: " + result.noTorch());
        }
        return 0;
    }
}
