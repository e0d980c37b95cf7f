package dev.memfit.cli;

import dev.memfit.MemfitException;
import dev.memfit.bench.CloudBenchmark;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import tech.tablesaw.api.DoubleColumn;
import tech.tablesaw.api.StringColumn;
import tech.tablesaw.api.Table;

import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.Callable;

/** {@code memfit bench cloud}: the object-storage cache against local files and a simulated link, in one run. */
@Command(name = "cloud", mixinStandardHelpOptions = true,
        description = "A .npy (written by numpy) in a local S3 server (S3Proxy on loopback): cold epoch through a "
                + "simulated WAN link vs its bandwidth; warm epoch and random batches from the verified cache vs the "
                + "local file.")
final class BenchCloud implements Callable<Integer> {

    @Option(names = "--mib", defaultValue = "1024", description = "data size in MiB (default ${DEFAULT-VALUE}; 64 is a smoke run of seconds)")
    private long mib;
    @Option(names = "--columns", defaultValue = "1024", description = "float32 values per row (default ${DEFAULT-VALUE})")
    private int columns;
    @Option(names = "--batch", defaultValue = "256", description = "rows per batch (default ${DEFAULT-VALUE})")
    private int batch;
    @Option(names = "--threads", defaultValue = "8", description = "lazy reader threads (default ${DEFAULT-VALUE})")
    private int threads;
    @Option(names = "--block-mib", defaultValue = "8", description = "cache block size in MiB (default ${DEFAULT-VALUE})")
    private int blockMib;
    @Option(names = "--parallel", defaultValue = "8", description = "range requests in flight (default ${DEFAULT-VALUE})")
    private int parallel;
    @Option(names = "--rtt-ms", defaultValue = "20", description = "simulated round trip per request, ms (default ${DEFAULT-VALUE})")
    private long rttMs;
    @Option(names = "--bandwidth-mib", defaultValue = "100", description = "simulated link bandwidth, MiB/s (default ${DEFAULT-VALUE})")
    private long bandwidthMib;
    @Option(names = "--epochs", defaultValue = "10", description = "warm epochs per side, alternating, the best counts: a warm epoch of a GiB takes about 0.1 s, so fewer are noise (default ${DEFAULT-VALUE})")
    private int epochs;
    @Option(names = "--dir", defaultValue = "build/bench/cloud", description = "data, server objects and caches (default ${DEFAULT-VALUE})")
    private Path dir;
    @Option(names = "--seed", defaultValue = "7")
    private long seed;

    @Override
    public Integer call() {
        if (mib < 1 || columns < 1 || batch < 1 || threads < 1 || blockMib < 1 || parallel < 1 || rttMs < 0
                || bandwidthMib < 1 || epochs < 1) {
            throw new MemfitException("bench cloud: sizes, counts and the bandwidth must be positive (the round trip may "
                    + "be 0)");
        }
        CloudBenchmark.Result result = CloudBenchmark.run(new CloudBenchmark.Settings(dir, mib << 20, columns, batch,
                threads, blockMib << 20, parallel, Duration.ofMillis(rttMs), bandwidthMib << 20, epochs, seed));
        Table table = Table.create(String.format("%,d rows x %d float32 (%.0f MiB, np.save) in a local S3 server; "
                        + "cold epoch over the %s; %d MiB blocks, %d requests in flight, lazy(%d), batch %d",
                result.samples(), columns, result.dataBytes() / 1048576.0, result.link(), blockMib, parallel, threads,
                batch));
        StringColumn measure = StringColumn.create("measure");
        StringColumn memfit = StringColumn.create("memfit");
        DoubleColumn memfitSeconds = DoubleColumn.create("s");
        DoubleColumn speed = DoubleColumn.create("MiB/s");
        StringColumn reference = StringColumn.create("reference");
        DoubleColumn referenceSeconds = DoubleColumn.create("reference s");
        DoubleColumn ratio = DoubleColumn.create("ratio");
        StringColumn target = StringColumn.create("target");
        for (CloudBenchmark.Row row : result.rows()) {
            measure.append(row.measure());
            memfit.append(row.memfit());
            memfitSeconds.append(BenchCommand.round(row.memfitSeconds(), 3));
            speed.append(BenchCommand.round(row.megabytesPerSecond(), 0));
            reference.append(row.reference());
            referenceSeconds.append(BenchCommand.round(row.referenceSeconds(), 3));
            ratio.append(BenchCommand.round(row.ratio(), 3));
            target.append(row.target() <= 0 ? "no target" : ">= " + row.target() + (row.met() ? " met" : " MISSED"));
        }
        table.addColumns(measure, memfit, memfitSeconds, speed, reference, referenceSeconds, ratio, target);
        System.out.println(table.printAll());
        System.out.println("cold epoch: " + result.cold());
        return 0;
    }
}
