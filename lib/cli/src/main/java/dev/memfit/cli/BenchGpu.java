package dev.memfit.cli;

import ai.djl.Device;
import ai.djl.engine.Engine;
import dev.memfit.MemfitException;
import dev.memfit.bench.GpuBenchmark;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import tech.tablesaw.api.DoubleColumn;
import tech.tablesaw.api.IntColumn;
import tech.tablesaw.api.LongColumn;
import tech.tablesaw.api.StringColumn;
import tech.tablesaw.api.Table;

import java.util.List;
import java.util.concurrent.Callable;

/** {@code memfit bench gpu}: host-to-device copies and the topic model on the GPU, beside torch on the same device. */
@Command(name = "gpu", mixinStandardHelpOptions = true,
        description = "Host-to-device copies of loader batches (pageable, pinned) and the topic model's s/epoch and "
                + "ms/step with the counts in host RAM, beside torch's copies and tinytopics' loop on the same GPU.")
final class BenchGpu implements Callable<Integer> {

    @Option(names = "--documents", defaultValue = "100000", description = "n, documents in host RAM (default ${DEFAULT-VALUE})")
    private long documents;
    @Option(names = "--terms", defaultValue = "100000", description = "m (default ${DEFAULT-VALUE}: 40 GB of float32 counts)")
    private int terms;
    @Option(names = "--topics", defaultValue = "20")
    private int topics;
    @Option(names = "--batch", defaultValue = "256", split = ",", description = "batch sizes at n x m (default ${DEFAULT-VALUE})")
    private List<Integer> batches;
    @Option(names = "--baseline-batch", defaultValue = "256,16", split = ",",
            description = "batch sizes of memfit and torch at the baseline's size (default ${DEFAULT-VALUE})")
    private List<Integer> baselineBatches;
    @Option(names = "--epochs", defaultValue = "3")
    private int epochs;
    @Option(names = "--threads", defaultValue = "8", description = "loader threads gathering batches (default ${DEFAULT-VALUE})")
    private int threads;
    @Option(names = "--copies", defaultValue = "20", description = "batches timed per copy row (default ${DEFAULT-VALUE})")
    private int copies;
    @Option(names = "--python", description = "the Python whose torch runs the baselines (default: none)")
    private String python;
    @Option(names = "--baseline-documents", defaultValue = "20000")
    private long baselineDocuments;
    @Option(names = "--baseline-terms", defaultValue = "2000")
    private int baselineTerms;
    @Option(names = "--cpu", description = "measure on the CPU (a check of the command where there is no GPU)")
    private boolean cpu;

    @Override
    public Integer call() {
        if (documents < 1 || terms < 1 || topics < 1 || epochs < 1 || threads < 1 || copies < 1 || batches.isEmpty()
                || batches.stream().anyMatch(b -> b < 1) || baselineBatches.stream().anyMatch(b -> b < 1)) {
            throw new MemfitException("bench gpu: sizes, counts and batch sizes must be positive");
        }
        Device device;
        if (cpu) {
            device = Device.cpu();
        } else if (Engine.getInstance().getGpuCount() > 0) {
            device = Device.gpu(0);
        } else {
            throw new MemfitException("bench gpu: DJL sees no GPU (run ./memfit gpu-setup on a machine with one, or "
                    + "give --cpu to check the command on the CPU)");
        }
        GpuBenchmark.Result result = GpuBenchmark.run(new GpuBenchmark.Settings(documents, terms, topics, batches,
                epochs, threads, copies, python, baselineDocuments, baselineTerms, baselineBatches, device));
        System.out.printf("device %s, PyTorch %s; pinned memory: %s; %,d x %,d float32 counts (%.1f GB) generated in host RAM "
                        + "in %.1f s%n", result.device(), Engine.getInstance().getVersion(), result.pinning(), documents,
                terms, documents * (double) terms * 4 / 1e9, result.generationSeconds());
        Table copy = Table.create("Host to device copies of one batch");
        StringColumn method = StringColumn.create("copy");
        DoubleColumn megabytes = DoubleColumn.create("MB");
        DoubleColumn rate = DoubleColumn.create("GB/s");
        for (GpuBenchmark.CopyRow row : result.copies()) {
            method.append(row.method());
            megabytes.append(BenchCommand.round(row.bytesPerCopy() / 1e6, 1));
            rate.append(BenchCommand.round(row.gigabytesPerSecond(), 2));
        }
        copy.addColumns(method, megabytes, rate);
        System.out.println(copy.printAll());
        Table train = Table.create("Topic model, k=" + topics + ", " + epochs + " epochs a row");
        StringColumn who = StringColumn.create("method");
        LongColumn n = LongColumn.create("n");
        IntColumn m = IntColumn.create("m");
        IntColumn batch = IntColumn.create("batch");
        LongColumn steps = LongColumn.create("steps/epoch");
        DoubleColumn first = DoubleColumn.create("first epoch s");
        DoubleColumn later = DoubleColumn.create("s/epoch (later)");
        DoubleColumn perStep = DoubleColumn.create("ms/step");
        for (GpuBenchmark.TrainRow row : result.training()) {
            who.append(row.method());
            n.append(row.documents());
            m.append(row.terms());
            batch.append(row.batchSize());
            steps.append(row.stepsPerEpoch());
            first.append(BenchCommand.round(row.firstEpochSeconds(), 3));
            later.append(BenchCommand.round(row.epochSeconds(), 3));
            perStep.append(BenchCommand.round(row.msPerStep(), 3));   // losses are not compared: each side has its own data
        }
        train.addColumns(who, n, m, batch, steps, first, later, perStep);
        System.out.println(train.printAll());
        return 0;
    }
}
