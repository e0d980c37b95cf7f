package dev.memfit.cli;

import com.fasterxml.jackson.databind.ObjectMapper;
import dev.memfit.bench.DiskEpochs;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import tech.tablesaw.api.DoubleColumn;
import tech.tablesaw.api.LongColumn;
import tech.tablesaw.api.StringColumn;
import tech.tablesaw.api.Table;

import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.Callable;

/**
 * {@code memfit bench disk}: epochs of a memory-mapped {@code .npy} read from storage, beside the storage's own
 * sequential and random reads, each row with the bytes read from storage meanwhile ({@link DiskEpochs}). Run it inside
 * a memory limit smaller than the file ({@code ./memfit bench disk --file F --memory 512m}) to see data larger than
 * memory: the page cache cannot keep the file, and every epoch reads it again.
 */
@Command(name = "disk", mixinStandardHelpOptions = true,
        description = "Epochs of a mapped .npy from storage vs the storage's sequential and random reads, with bytes read "
                + "from storage per row (run with --memory below the file's size for data > RAM).")
final class BenchDisk implements Callable<Integer> {

    @Option(names = "--file", required = true, description = "the .npy to read")
    private Path file;
    @Option(names = "--batch", defaultValue = "256", description = "rows per batch (default ${DEFAULT-VALUE})")
    private int batch;
    @Option(names = "--epochs", defaultValue = "3", description = "epochs in file order, back to back (default ${DEFAULT-VALUE})")
    private int epochs;
    @Option(names = "--shuffle-fraction", defaultValue = "0.01", description = "share of the rows read shuffled (default ${DEFAULT-VALUE})")
    private double shuffleFraction;
    @Option(names = "--random-reads", defaultValue = "20000", description = "random one-page reads for the storage's figure (default ${DEFAULT-VALUE})")
    private int randomReads;
    @Option(names = "--threads", defaultValue = "1", description = "the loader's reader threads (default ${DEFAULT-VALUE})")
    private int threads;
    @Option(names = "--seed", defaultValue = "7")
    private long seed;
    @Option(names = "--json", description = "print JSON rows instead of a table")
    private boolean json;

    @Override
    public Integer call() throws Exception {
        List<DiskEpochs.Row> rows = DiskEpochs.run(new DiskEpochs.Settings(file, batch, epochs, shuffleFraction,
                randomReads, threads, seed));
        if (json) {
            ObjectMapper mapper = new ObjectMapper();
            for (DiskEpochs.Row row : rows) {
                System.out.println(mapper.writeValueAsString(row));
            }
            return 0;
        }
        Table table = Table.create(file + ": the storage, then the loader (each row's bytes read from storage)");
        StringColumn what = StringColumn.create("what");
        DoubleColumn seconds = DoubleColumn.create("seconds");
        DoubleColumn rate = DoubleColumn.create("MB/s delivered");
        DoubleColumn each = DoubleColumn.create("µs per read or row");
        LongColumn readMib = LongColumn.create("MiB read from storage");
        for (DiskEpochs.Row row : rows) {
            what.append(row.what());
            seconds.append(BenchCommand.round(row.seconds(), 3));
            rate.append(BenchCommand.round(row.megabytesPerSecond(), 1));
            each.append(BenchCommand.round(row.microsecondsEach(), 2));
            readMib.append(row.readFromStorage() < 0 ? -1 : row.readFromStorage() >> 20);
        }
        table.addColumns(what, seconds, rate, each, readMib);
        System.out.println(table.printAll());
        return 0;
    }
}
