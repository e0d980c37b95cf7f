package dev.memfit.bench;

import dev.memfit.MemfitException;
import dev.memfit.data.Access;
import dev.memfit.data.Batch;
import dev.memfit.data.Datasets;
import dev.memfit.data.Loader;
import dev.memfit.data.LoaderBuilder;
import dev.memfit.data.Order;
import dev.memfit.io.storage.PageCache;
import dev.memfit.memory.Advice;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;

/**
 * Epochs of a memory-mapped {@code .npy} read from storage, beside what the storage itself does: a plain sequential
 * read of the file and random reads of one page, each started with the file dropped from the page cache. Every row
 * counts the bytes this process read from storage during it (the kernel's task I/O accounting, {@code /proc/self/io}
 * {@code read_bytes}), so run inside a memory limit smaller than the file ({@code --memory}) it shows whether the page
 * cache could keep the file between epochs.
 *
 * <p>The storage's sequential figure is read cold, then twice again (the faster of those two is its row); from the
 * fastest and the memory this process can still get, the estimate predicts the most and the least an epoch after the
 * first reads and how long it takes ({@link Advice#epochReads}), two rows of their own ({@link #PREDICTED},
 * {@link #PREDICTED_LEAST}) before the loader's. The
 * epochs in file order run back to back, the file dropped from the page cache before the first only: a second
 * epoch that reads as much as the first is the page cache failing to hold the file. The shuffled epoch reads a random
 * subset of the rows (every row once would take as many random reads as there are rows), and its time per row is set
 * beside the time one random page read takes on this storage.
 */
public final class DiskEpochs {

    /** The row of the estimate's prediction ({@link Advice#epochReads}): the most an epoch after the first reads. */
    public static final String PREDICTED = "predicted (Advice.epochReads): at most, an epoch after the first, in file order";
    /** The row of the least an epoch after the first reads ({@link Advice.EpochReads#leastBytesPerLaterEpoch()}). */
    public static final String PREDICTED_LEAST = "predicted (Advice.epochReads): at least, the page cache keeping all it can";

    /** The row of the storage's random one-page reads. */
    public static final String RANDOM = "storage: random reads of one page";
    /** The row of a sequential read of the file with an empty page cache. */
    public static final String SEQUENTIAL_COLD = "storage: sequential read of the file, cold";
    /** The row of a sequential read of the file right after another one. */
    public static final String SEQUENTIAL_AGAIN = "storage: sequential read of the file, again";

    private static volatile long sink;

    private DiskEpochs() {
    }

    /**
     * What to measure.
     *
     * @param file the {@code .npy} (rows are samples)
     * @param batch rows per batch
     * @param epochs epochs in file order, at least 2 to see the page cache at work
     * @param shuffleFraction share of the rows read in a shuffled order, in (0, 1]
     * @param randomReads random page reads for the storage's own figure
     * @param threads the loader's reader threads
     * @param seed the shuffles' seed
     */
    public record Settings(Path file, int batch, int epochs, double shuffleFraction, int randomReads, int threads, long seed) {
    }

    /**
     * One measurement.
     *
     * @param what what was read: {@code storage: ...} or {@code loader: ...}
     * @param seconds wall time
     * @param bytes bytes delivered (file bytes, or rows x row bytes)
     * @param readFromStorage bytes this process read from storage meanwhile
     * @param operations reads (pages) or rows
     */
    public record Row(String what, double seconds, long bytes, long readFromStorage, long operations) {
        /**
         * Delivered megabytes (1e6 bytes) per second.
         *
         * @return the rate
         */
        public double megabytesPerSecond() {
            return seconds > 0 ? bytes / seconds / 1e6 : Double.NaN;
        }

        /**
         * Microseconds per read or row.
         *
         * @return the time
         */
        public double microsecondsEach() {
            return seconds * 1e6 / Math.max(1, operations);
        }
    }

    /**
     * The rows of one run by role.
     *
     * @param sequentialCold the storage's sequential read, cold
     * @param sequentialAgain the faster of its two reads right after
     * @param randomReads the storage's random one-page reads
     * @param predicted the estimate's prediction for an epoch after the first: the most it reads
     * @param predictedLeast the least it reads, the page cache keeping all it can of the file
     * @param fileOrder the loader's epochs in file order, first to last
     * @param shuffled the loader's shuffled pass over a subset
     */
    public record Summary(Row sequentialCold, Row sequentialAgain, Row randomReads, Row predicted, Row predictedLeast,
                          List<Row> fileOrder, Row shuffled) {

        /**
         * Sorts a run's rows by role (before the prediction's rows exist, they are null).
         *
         * @param rows what {@link #run} returned (or its JSON read back)
         * @return the summary
         */
        public static Summary of(List<Row> rows) {
            Row cold = null, again = null, random = null, predicted = null, least = null, shuffled = null;
            List<Row> epochs = new ArrayList<>();
            for (Row row : rows) {
                switch (row.what()) {
                    case SEQUENTIAL_COLD -> cold = row;
                    case SEQUENTIAL_AGAIN -> again = row;
                    case RANDOM -> random = row;
                    case PREDICTED -> predicted = row;
                    case PREDICTED_LEAST -> least = row;
                    default -> {
                        // a row this version does not know (such as another version's prediction) is left out
                        if (row.what().startsWith("loader: shuffled")) {
                            shuffled = row;
                        } else if (row.what().startsWith("loader: file order")) {
                            epochs.add(row);
                        }
                    }
                }
            }
            return new Summary(cold, again, random, predicted, least, List.copyOf(epochs), shuffled);
        }

        /**
         * The storage's sequential speed: the faster of its reads (other work on a shared machine only slows one).
         *
         * @return MB/s
         */
        public double diskMegabytesPerSecond() {
            // the read right after counts only where it came from storage (inside a limit smaller than the file),
            // not from the page cache
            boolean fromStorage = sequentialAgain.readFromStorage() >= 0.9 * sequentialAgain.bytes();
            return fromStorage ? Math.max(sequentialCold.megabytesPerSecond(), sequentialAgain.megabytesPerSecond())
                    : sequentialCold.megabytesPerSecond();
        }

        /**
         * The fastest epoch in file order.
         *
         * @return MB/s
         */
        public double bestEpochMegabytesPerSecond() {
            return fileOrder.stream().mapToDouble(Row::megabytesPerSecond).max().orElse(0);
        }

        /**
         * The fastest epoch after the first, what {@link #predicted()} is about.
         *
         * @return the row
         */
        public Row bestLaterEpoch() {
            return fileOrder.stream().skip(1).min(java.util.Comparator.comparingDouble(Row::seconds)).orElseThrow();
        }
    }

    /**
     * A run inside a memory limit: its rows, by role, and the figures of its control group.
     *
     * @param rows the rows, as printed
     * @param summary the rows by role
     * @param group the group's limit, peak, OOM kills and reads
     */
    public record InLimit(List<Row> rows, Summary summary, dev.memfit.plot.Contained.Group group) {
    }

    /**
     * Runs {@code ./memfit bench disk --json} on a file in a fresh JVM inside a memory limit
     * ({@link dev.memfit.plot.Contained}), or says in one printed line why no limit can be made here.
     *
     * @param memory the limit, such as {@code 512m}
     * @param file the {@code .npy}
     * @param options more options of the command, such as {@code --shuffle-fraction 0.01}
     * @return the run, or null where this machine lets no limit be made
     */
    public static InLimit inLimit(String memory, Path file, String... options) {
        String why = dev.memfit.plot.Contained.available();
        if (why != null) {
            System.out.println("No memory limit can be made here (" + why + "): not measured on this machine.");
            return null;
        }
        List<String> arguments = new ArrayList<>(List.of("bench", "disk", "--file", file.toString(), "--json"));
        arguments.addAll(List.of(options));
        var run = dev.memfit.plot.Contained.memfit(memory, 1, arguments.toArray(String[]::new));
        List<Row> rows = run.json(Row.class);
        return new InLimit(rows, Summary.of(rows), run.group());
    }

    /**
     * Runs the measurements.
     *
     * @param settings what to measure
     * @return the storage's sequential and random reads, then each loader epoch
     */
    public static List<Row> run(Settings settings) {
        Path file = settings.file();
        if (settings.epochs() < 2) {
            throw new MemfitException("--epochs " + settings.epochs() + ": give at least 2 epochs in file order (the "
                    + "second shows whether the page cache kept the file)");
        }
        if (!(settings.shuffleFraction() > 0 && settings.shuffleFraction() <= 1) || settings.randomReads() < 1) {
            throw new MemfitException("--shuffle-fraction must be in (0, 1] and --random-reads at least 1, got "
                    + settings.shuffleFraction() + " and " + settings.randomReads());
        }
        if (!Files.isRegularFile(file)) {
            throw new MemfitException(file + ": no such file; write one first (./memfit generate, or notebook 03)");
        }
        List<Row> rows = new ArrayList<>();
        Row first = sequentialRead(file, true);
        Row second = sequentialRead(file, false);
        Row third = sequentialRead(file, false);
        rows.add(first);
        rows.add(second.seconds() <= third.seconds() ? second : third);
        rows.add(randomPageReads(file, settings.randomReads(), settings.seed()));
        PageCache.evict(file);
        // the estimate's prediction, from this process's room (read with the file out of the page cache: a
        // container's usage counts its cache) and the storage's measured speed
        Summary measured = Summary.of(rows);
        long fileBytes = first.bytes();
        Advice.EpochReads predicted = Advice.epochReads(fileBytes,
                Advice.Machine.current().withStorageSpeed((long) (measured.diskMegabytesPerSecond() * 1e6)));
        long fileRows = fileBytes / Math.max(1, Datasets.describe(file).sampleBytes());
        rows.add(new Row(PREDICTED, predicted.secondsPerLaterEpoch(), fileBytes, predicted.bytesPerLaterEpoch(), fileRows));
        rows.add(new Row(PREDICTED_LEAST, predicted.leastSecondsPerLaterEpoch(), fileBytes,
                predicted.leastBytesPerLaterEpoch(), fileRows));
        try (Loader inOrder = settings(file, settings).optOrder(Order.sequential()).build()) {
            for (int epoch = 0; epoch < settings.epochs(); epoch++) {
                rows.add(epoch("loader: file order, epoch " + (epoch + 1), inOrder, epoch));
            }
        }
        PageCache.evict(file);
        try (Loader shuffled = settings(file, settings).optRandomSubset(settings.shuffleFraction(), settings.seed())
                .optOrder(Order.shuffle(settings.seed())).build()) {
            rows.add(epoch(String.format(java.util.Locale.ROOT, "loader: shuffled, %.3g%% of the rows",
                    100 * settings.shuffleFraction()), shuffled, 0));
        }
        return rows;
    }

    private static LoaderBuilder settings(Path file, Settings settings) {
        return Datasets.open(file).optAccess(Access.mapped()).optBatchSize(settings.batch()).optThreads(settings.threads());
    }

    private static Row epoch(String what, Loader loader, long epoch) {
        long read = readBytes();
        long started = System.nanoTime();
        long samples = 0;
        long bytes = 0;
        for (Batch batch : loader.epoch(epoch)) {
            samples += batch.size();
            bytes += batch.data().byteSize();
        }
        return new Row(what, (System.nanoTime() - started) / 1e9, bytes, readBytes() - read, samples);
    }

    /**
     * The whole file read in 8 MiB pieces with the kernel's read-ahead: what the storage streams, cold (the file
     * dropped from the page cache first), or right after another read (inside a memory limit, each new page then has
     * to evict an old one first, as in an epoch after the first).
     */
    static Row sequentialRead(Path file, boolean cold) {
        if (cold) {
            PageCache.evict(file);
        }
        try (FileChannel channel = FileChannel.open(file, StandardOpenOption.READ)) {
            ByteBuffer buffer = ByteBuffer.allocateDirect(8 << 20);
            long size = channel.size();
            long read = readBytes();
            long started = System.nanoTime();
            long reads = 0;
            for (long at = 0; at < size; reads++) {
                buffer.clear();
                int n = channel.read(buffer, at);
                if (n <= 0) {
                    throw new IOException(file + ": read failed at byte " + at);
                }
                at += n;
            }
            double seconds = (System.nanoTime() - started) / 1e9;
            return new Row(cold ? SEQUENTIAL_COLD : SEQUENTIAL_AGAIN, seconds, size, readBytes() - read, reads);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /**
     * Single pages at random places, cold, through a mapping advised random reads (no read-ahead: what
     * {@link dev.memfit.source.SampleSource#expectReads} gives a random order): what a random row costs the storage.
     */
    private static Row randomPageReads(Path file, int count, long seed) {
        PageCache.evict(file);
        try (FileChannel channel = FileChannel.open(file, StandardOpenOption.READ); Arena arena = Arena.ofConfined()) {
            MemorySegment mapping = channel.map(FileChannel.MapMode.READ_ONLY, 0, channel.size(), arena);
            PageCache.advise(mapping, PageCache.ReadAdvice.RANDOM);
            long pages = mapping.byteSize() / PageCache.PAGE;
            SplittableRandom random = new SplittableRandom(seed);
            long read = readBytes();
            long started = System.nanoTime();
            long sum = 0;
            for (int i = 0; i < count; i++) {
                sum += mapping.get(ValueLayout.JAVA_BYTE, random.nextLong(pages) * PageCache.PAGE);   // one fault a page
            }
            double seconds = (System.nanoTime() - started) / 1e9;
            sink = sum;   // keeps the reads from being optimized away
            return new Row(RANDOM, seconds, count * PageCache.PAGE, readBytes() - read, count);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /**
     * Bytes this process has read from storage so far ({@code /proc/self/io}, every thread).
     *
     * @return bytes, or -1 where the kernel does not account them
     */
    public static long readBytes() {
        try {
            for (String line : Files.readAllLines(Path.of("/proc/self/io"))) {
                if (line.startsWith("read_bytes:")) {
                    return Long.parseLong(line.substring("read_bytes:".length()).strip());
                }
            }
        } catch (IOException | NumberFormatException e) {
            return -1;
        }
        return -1;
    }
}
