package dev.memfit.cli;

import com.fasterxml.jackson.databind.ObjectMapper;
import dev.memfit.bench.ConversionBenchmark;
import dev.memfit.bench.ShardBenchmark;
import dev.memfit.bench.H5adBenchmark;
import dev.memfit.bench.LoaderBenchmark;
import dev.memfit.bench.TopicBenchmark;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import tech.tablesaw.api.DoubleColumn;
import tech.tablesaw.api.IntColumn;
import tech.tablesaw.api.StringColumn;
import tech.tablesaw.api.Table;

import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.Callable;

/** {@code memfit bench loader|topics}: benchmarks printed as tables (and JSON rows with --json). */
@Command(name = "bench", mixinStandardHelpOptions = true, description = "Benchmarks, side by side with reference tools.",
        subcommands = {BenchCommand.Loader.class, BenchCommand.Topics.class, BenchCommand.Checkpoints.class, BenchLazy.class, BenchCommand.H5ad.class,
                BenchCommand.Conversion.class, BenchCommand.Shards.class, BenchCloud.class, BenchStartup.class, BenchGpu.class, BenchDisk.class, BenchTransformer.class})
final class BenchCommand implements Runnable {

    @Override
    public void run() {
        new picocli.CommandLine(this).usage(System.out);
    }

    private static void printJson(List<?> rows) throws Exception {
        ObjectMapper mapper = new ObjectMapper();
        for (Object row : rows) {
            System.out.println(mapper.writeValueAsString(row));
        }
    }

    @Command(name = "loader", mixinStandardHelpOptions = true,
            description = "Random batches from a page-cached memory-mapped .npy: memfit vs C mmap+memcpy vs numpy.")
    static final class Loader implements Callable<Integer> {
        @Option(names = "--file", description = "the .npy to read (created if missing; default build/bench/loader-<GB>g.npy)")
        private Path file;
        @Option(names = "--gb", defaultValue = "2", description = "data size when creating the file (default ${DEFAULT-VALUE})")
        private double gigabytes;
        @Option(names = "--columns", defaultValue = "5000", description = "float32 columns per row (default ${DEFAULT-VALUE})")
        private int columns;
        @Option(names = "--batch", defaultValue = "256", description = "rows per batch (default ${DEFAULT-VALUE})")
        private int batch;
        @Option(names = "--epochs", defaultValue = "20", description = "epochs: the first on a fresh mapping, the rest steady state (default ${DEFAULT-VALUE}; fewer make the steady part a fraction of a second, too short on a shared machine)")
        private int epochs;
        @Option(names = "--threads", defaultValue = "1,2", split = ",", description = "threads copying rows: C threads, or memfit background readers + the caller (default ${DEFAULT-VALUE})")
        private List<Integer> threads;
        @Option(names = "--prefetch", defaultValue = "2", description = "batches read ahead per loader thread (default ${DEFAULT-VALUE})")
        private int prefetch;
        @Option(names = "--warmup-seconds", defaultValue = "2", description = "memfit's untimed epochs after the first, until the JIT has compiled the loader (default ${DEFAULT-VALUE} s; the C baselines need none)")
        private double warmupSeconds;
        @Option(names = "--seed", defaultValue = "7")
        private long seed;
        @Option(names = "--no-baselines", description = "skip the C and numpy baselines")
        private boolean noBaselines;
        @Option(names = "--json", description = "print JSON rows instead of a table")
        private boolean json;

        @Override
        public Integer call() throws Exception {
            long bytes = (long) (gigabytes * 1e9);
            Path target = file != null ? file : Path.of("build", "bench", String.format("loader-%sg.npy", gigabytes));
            java.nio.file.Files.createDirectories(target.toAbsolutePath().getParent());
            List<LoaderBenchmark.Row> rows = LoaderBenchmark.run(new LoaderBenchmark.Settings(target, bytes, columns,
                    batch, epochs, threads, prefetch, seed, !noBaselines, warmupSeconds));
            if (json) {
                printJson(rows);
                return 0;
            }
            Table table = Table.create("Random batches of " + batch + " rows from " + target + " (page-cached, mapped)");
            StringColumn method = StringColumn.create("method");
            IntColumn threadColumn = IntColumn.create("threads");
            DoubleColumn first = DoubleColumn.create("first epoch GB/s");
            DoubleColumn steady = DoubleColumn.create("steady GB/s");
            DoubleColumn rowsPerSecond = DoubleColumn.create("steady rows/s");
            DoubleColumn vsC = DoubleColumn.create("steady vs C gather");
            DoubleColumn vsCLoader = DoubleColumn.create("steady vs C loader");
            for (LoaderBenchmark.Row row : rows) {
                method.append(row.method());
                threadColumn.append(row.threads());
                first.append(round(row.firstEpochGbps(), 2));
                steady.append(round(row.steadyGbps(), 2));
                rowsPerSecond.append(Math.round(row.steadyRowsPerSecond()));
                appendRatio(vsC, row, rows, LoaderBenchmark.C_GATHER);
                appendRatio(vsCLoader, row, rows, LoaderBenchmark.C_LOADER);
            }
            table.addColumns(method, threadColumn, first, steady, rowsPerSecond, vsC, vsCLoader);
            System.out.println(table.printAll());
            return 0;
        }
        /** This row's steady GB/s over the named C baseline's with the same threads, or missing without it. */
        private static void appendRatio(DoubleColumn column, LoaderBenchmark.Row row, List<LoaderBenchmark.Row> rows, String baseline) {
            double c = rows.stream().filter(r -> r.method().equals(baseline) && r.threads() == row.threads())
                    .mapToDouble(LoaderBenchmark.Row::steadyGbps).findFirst().orElse(Double.NaN);
            appendFigure(column, row.steadyGbps() / c, 3);
        }
    }

    @Command(name = "topics", mixinStandardHelpOptions = true,
            description = "Seconds per epoch of the topic model: memfit vs tinytopics' loop in torch, same data and threads.")
    static final class Topics implements Callable<Integer> {
        @Option(names = "--documents", defaultValue = "20000")
        private int documents;
        @Option(names = "--terms", defaultValue = "2000")
        private int terms;
        @Option(names = "--topics", defaultValue = "10")
        private int topics;
        @Option(names = "--batch", defaultValue = "16,256", split = ",")
        private List<Integer> batches;
        @Option(names = "--epochs", defaultValue = "3")
        private int epochs;
        @Option(names = "--threads", defaultValue = "1", description = "PyTorch compute threads on both sides (default ${DEFAULT-VALUE})")
        private int threads;
        @Option(names = "--lr", defaultValue = "0.01")
        private double learningRate;
        @Option(names = "--no-baseline", description = "skip the torch baseline")
        private boolean noBaseline;
        @Option(names = "--json")
        private boolean json;

        @Override
        public Integer call() throws Exception {
            // Must be set before the engine starts; the launcher starts a fresh JVM per command.
            System.setProperty("ai.djl.pytorch.num_threads", Integer.toString(threads));
            System.setProperty("ai.djl.pytorch.num_interop_threads", "1");
            List<TopicBenchmark.Row> rows = TopicBenchmark.run(new TopicBenchmark.Settings(Path.of("build", "bench"),
                    documents, terms, topics, batches, epochs, threads, learningRate, !noBaseline));
            if (json) {
                printJson(rows);
                return 0;
            }
            Table table = Table.create("Topic model n=" + documents + " m=" + terms + " k=" + topics + ", "
                    + threads + " thread(s), CPU");
            StringColumn method = StringColumn.create("method");
            IntColumn batch = IntColumn.create("batch");
            DoubleColumn first = DoubleColumn.create("first epoch s");
            DoubleColumn later = DoubleColumn.create("s/epoch (later)");
            DoubleColumn loss = DoubleColumn.create("final loss");
            for (TopicBenchmark.Row row : rows) {
                method.append(row.method());
                batch.append(row.batchSize());
                first.append(round(row.firstEpochSeconds(), 3));
                later.append(round(row.epochSeconds(), 3));
                loss.append(round(row.finalLoss(), 3));
            }
            table.addColumns(method, batch, first, later, loss);
            System.out.println(table.printAll());
            return 0;
        }
    }

    @Command(name = "checkpoints", mixinStandardHelpOptions = true,
            description = "What a topic-model checkpoint costs as the data grows: size, write and resume seconds, "
                    + "beside torch.save of the same arrays.")
    static final class Checkpoints implements Callable<Integer> {
        @Option(names = "--documents", defaultValue = "20000,200000", split = ",")
        private List<Integer> documents;
        @Option(names = "--terms", defaultValue = "500")
        private int terms;
        @Option(names = "--topics", defaultValue = "20")
        private int topics;
        @Option(names = "--batch", defaultValue = "256")
        private int batch;
        @Option(names = "--per-epoch", defaultValue = "4", description = "checkpoints during the measured epoch")
        private int perEpoch;
        @Option(names = "--threads", defaultValue = "1", description = "PyTorch compute threads (default ${DEFAULT-VALUE})")
        private int threads;
        @Option(names = "--no-baseline", description = "skip torch.save")
        private boolean noBaseline;

        @Override
        public Integer call() throws Exception {
            System.setProperty("ai.djl.pytorch.num_threads", Integer.toString(threads));
            System.setProperty("ai.djl.pytorch.num_interop_threads", "1");
            List<dev.memfit.bench.CheckpointBenchmark.Row> rows = dev.memfit.bench.CheckpointBenchmark.run(
                    new dev.memfit.bench.CheckpointBenchmark.Settings(Path.of("build", "bench"), documents, terms, topics,
                            batch, perEpoch, !noBaseline));
            Table table = Table.create("Topic model checkpoints, m=" + terms + " k=" + topics + ", batch " + batch + ", "
                    + threads + " thread(s), CPU; sparse document updates (parameters + Adam moments)");
            IntColumn n = IntColumn.create("documents");
            DoubleColumn mib = DoubleColumn.create("checkpoint MiB");
            DoubleColumn write = DoubleColumn.create("write s");
            DoubleColumn speed = DoubleColumn.create("MiB/s");
            DoubleColumn torch = DoubleColumn.create("torch.save s");
            DoubleColumn ratio = DoubleColumn.create("memfit / torch.save");
            DoubleColumn step = DoubleColumn.create("s/step");
            DoubleColumn onePercent = DoubleColumn.create("steps for 1% overhead");
            DoubleColumn resume = DoubleColumn.create("resume s");
            for (dev.memfit.bench.CheckpointBenchmark.Row row : rows) {
                double size = row.bytes() / (1024.0 * 1024.0);
                n.append(row.documents());
                mib.append(round(size, 2));
                write.append(round(row.writeSeconds(), 3));
                speed.append(round(size / row.writeSeconds(), 0));
                torch.append(round(row.torchWriteSeconds(), 3));
                ratio.append(round(row.writeSeconds() / row.torchWriteSeconds(), 2));
                step.append(round(row.stepSeconds(), 4));
                onePercent.append(round(row.stepsForOnePercent(), 0));
                resume.append(round(row.resumeSeconds(), 3));
            }
            table.addColumns(n, mib, write, speed, torch, ratio, step, onePercent, resume);
            System.out.println(table.printAll());
            return 0;
        }
    }

    @Command(name = "h5ad", mixinStandardHelpOptions = true,
            description = "Single-cell atlas: streaming an .h5ad (vs anndata backed), random batches from the .h5ad and "
                    + "from shards (vs C gather), shard conversion speed and peak memory; --formats zarr: streaming the "
                    + "same atlas as an AnnData .zarr store (vs zarr-python row blocks and anndata.read_zarr), sides "
                    + "alternated --repeats times, medians.")
    static final class H5ad implements Callable<Integer> {
        @Option(names = "--file", description = "the .h5ad (created if missing; default build/bench/atlas-<cells>x<genes>.h5ad)")
        private Path file;
        @Option(names = "--cells", defaultValue = "200000", description = "cells when creating the atlas (default ${DEFAULT-VALUE})")
        private long cells;
        @Option(names = "--genes", defaultValue = "2000", description = "genes when creating the atlas (default ${DEFAULT-VALUE})")
        private int genes;
        @Option(names = "--chunk", defaultValue = "10000", description = "cells per streamed chunk (default ${DEFAULT-VALUE})")
        private int chunk;
        @Option(names = "--batch", defaultValue = "256,4096", split = ",", description = "cells per batch, each size measured in turn (default ${DEFAULT-VALUE}; annbatch publishes figures at 4096)")
        private List<Integer> batches;
        @Option(names = "--shard-size", defaultValue = "100000", description = "cells per shard (default ${DEFAULT-VALUE})")
        private long shardSize;
        @Option(names = "--random-batches", defaultValue = "100", description = "random batches read from the .h5ad (default ${DEFAULT-VALUE})")
        private int randomBatches;
        @Option(names = "--epochs", defaultValue = "3", description = "epochs over the shards, the first not counted (default ${DEFAULT-VALUE})")
        private int epochs;
        @Option(names = "--threads", defaultValue = "1,2", split = ",", description = "threads: .h5ad stream chunk readers; for random batches from shards, threads copying rows (C threads, or memfit background readers + the caller) (default ${DEFAULT-VALUE})")
        private List<Integer> threads;
        @Option(names = "--seed", defaultValue = "7")
        private long seed;
        @Option(names = "--no-baselines", description = "skip anndata and C")
        private boolean noBaselines;
        @Option(names = "--json", description = "print JSON rows instead of a table")
        private boolean json;
        @Option(names = "--formats", defaultValue = "h5ad", split = ",", description = "h5ad (the tasks above; or some "
                + "of them: stream, random, shards) and/or zarr (the stream over <file>.zarr, written from the .h5ad by anndata's write_zarr when missing, against "
                + "zarr-python and anndata.read_zarr) (default ${DEFAULT-VALUE})")
        private List<String> formats;
        @Option(names = "--repeats", defaultValue = "5", description = "runs of each side of the zarr comparison, "
                + "alternated; medians reported (default ${DEFAULT-VALUE})")
        private int repeats;
        @Option(names = "--chunk-cache-mib", description = "decoded-chunk cache of the stream's and the random reads' .h5ad, MiB (default 64; raised to two bands of a chunked dense X, and to a stream's window)")
        private Long chunkCacheMib;

        @Override
        public Integer call() throws Exception {
            if (chunkCacheMib != null) {
                if (chunkCacheMib < 0) {
                    throw new dev.memfit.MemfitException("--chunk-cache-mib: expected a size in MiB >= 0, got " + chunkCacheMib);
                }
            }
            for (String format : formats) {
                if (!List.of("h5ad", "stream", "random", "shards", "zarr").contains(format)) {
                    throw new dev.memfit.MemfitException("--formats: expected h5ad (or some of its tasks: stream, random, "
                            + "shards) and/or zarr, found '" + format + "'");
                }
            }
            if (repeats < 1) {
                throw new dev.memfit.MemfitException("--repeats: expected at least 1 run, got " + repeats);
            }
            Path target = file != null ? file : Path.of("build", "bench", "atlas-" + cells + "x" + genes + ".h5ad");
            java.nio.file.Files.createDirectories(target.toAbsolutePath().getParent());
            List<H5adBenchmark.Row> all = new java.util.ArrayList<>();
            List<Integer> batchOfRow = new java.util.ArrayList<>();
            for (int batch : batches) {
                if (batch < 1) {
                    throw new dev.memfit.MemfitException("--batch: expected cells per batch >= 1, got " + batch);
                }
                for (H5adBenchmark.Row row : H5adBenchmark.run(new H5adBenchmark.Settings(target, cells, genes, chunk,
                        batch, shardSize, randomBatches, epochs, threads, seed, !noBaselines, formats, repeats,
                        chunkCacheMib == null ? dev.memfit.io.hdf5.H5ad.DEFAULT_CHUNK_CACHE_BYTES : chunkCacheMib << 20))) {
                    all.add(row);
                    batchOfRow.add(batch);
                }
            }
            if (json) {
                List<java.util.Map<String, Object>> tagged = new java.util.ArrayList<>();
                for (int index = 0; index < all.size(); index++) {
                    tagged.add(java.util.Map.of("batch", batchOfRow.get(index), "row", all.get(index)));
                }
                printJson(tagged);
                return 0;
            }
            long fileBytes = java.nio.file.Files.size(target);
            String where = dev.memfit.ProcessMemory.current().fitsInMemory(fileBytes) ? "page-cached"
                    : String.format(java.util.Locale.ROOT, "%,d MB, larger than the memory this process may use: "
                    + "read from storage", fileBytes / 1_000_000);
            Table table = Table.create("Single-cell atlas " + target + " (" + where + "); ratios against the other method of the same task and threads");
            StringColumn task = StringColumn.create("task");
            StringColumn method = StringColumn.create("method");
            IntColumn batchColumn = IntColumn.create("batch");
            IntColumn threadColumn = IntColumn.create("threads");
            DoubleColumn cellsPerSecond = DoubleColumn.create("cells/s");
            DoubleColumn gbps = DoubleColumn.create("GB/s (dense)");
            DoubleColumn ratio = DoubleColumn.create("memfit / baseline");
            DoubleColumn peak = DoubleColumn.create("peak RSS MB");
            DoubleColumn peakAnonymous = DoubleColumn.create("peak anon RSS MB");
            for (int index = 0; index < all.size(); index++) {
                H5adBenchmark.Row row = all.get(index);
                int batch = batchOfRow.get(index);
                // the rows measured at this batch size: a ratio never mixes sizes
                List<H5adBenchmark.Row> rows = new java.util.ArrayList<>();
                for (int other = 0; other < all.size(); other++) {
                    if (batchOfRow.get(other) == batch) {
                        rows.add(all.get(other));
                    }
                }
                task.append(row.task());
                batchColumn.append(batch);
                method.append(row.method());
                threadColumn.append(row.threads());
                // a task that did not run (such as buffers refused as not fitting) has NaN rates: no figure, no ratio
                appendFigure(cellsPerSecond, row.cellsPerSecond(), 0);
                appendFigure(gbps, row.gigabytesPerSecond(), 3);
                // the baseline of a memfit row: the non-memfit row of the same task (and thread count when it has one)
                double baseline = !row.method().startsWith("memfit") ? Double.NaN : rows.stream()
                        .filter(r -> r.task().equals(row.task()) && !r.method().startsWith("memfit"))
                        .filter(r -> r.threads() == row.threads() || rows.stream().noneMatch(o -> o.task().equals(row.task())
                                && !o.method().startsWith("memfit") && o.threads() == row.threads()))
                        .mapToDouble(H5adBenchmark.Row::cellsPerSecond).findFirst().orElse(Double.NaN);
                appendFigure(ratio, row.cellsPerSecond() / baseline, 2);
                if (row.peakMegabytes() > 0) {
                    peak.append(Math.round(row.peakMegabytes()));
                    peakAnonymous.append(Math.round(row.peakAnonymousMegabytes()));
                } else {
                    peak.appendMissing();
                    peakAnonymous.appendMissing();
                }
            }
            table.addColumns(task, method, batchColumn, threadColumn, cellsPerSecond, gbps, ratio, peak, peakAnonymous);
            System.out.println(table.printAll());
            return 0;
        }
    }

    @Command(name = "conversion", mixinStandardHelpOptions = true,
            description = "Peak memory of .h5ad -> shards as the file doubles (CSC transposed out of core, gzip), each in a fresh JVM.")
    static final class Conversion implements Callable<Integer> {
        @Option(names = "--file", description = "the source .h5ad (a synthetic CSR atlas is written when missing; default build/bench/atlas-<cells>x<genes>.h5ad)")
        private Path file;
        @Option(names = "--cells", defaultValue = "50000", description = "cells when creating the atlas (default ${DEFAULT-VALUE})")
        private long cells;
        @Option(names = "--genes", defaultValue = "2000", description = "genes when creating the atlas (default ${DEFAULT-VALUE})")
        private int genes;
        @Option(names = "--layout", defaultValue = "csc", description = "X of the measured files: csc, csr or as-is (default ${DEFAULT-VALUE})")
        private String layout;
        @Option(names = "--gzip", description = "write the measured files with compression='gzip'")
        private boolean gzip;
        @Option(names = "--sizes", defaultValue = "1,2", split = ",", description = "multiples of the source's cells, stacked by anndata (default ${DEFAULT-VALUE})")
        private List<Integer> sizes;
        @Option(names = "--shard-size", defaultValue = "100000", description = "cells per shard (default ${DEFAULT-VALUE})")
        private long shardSize;
        @Option(names = "--transpose-budget", defaultValue = "-1", description = "CSC transpose memory budget in bytes (default: 256 MiB)")
        private long budget;
        @Option(names = "--json", description = "print JSON rows instead of a table")
        private boolean json;

        @Override
        public Integer call() throws Exception {
            if (!List.of("csc", "csr", "as-is").contains(layout)) {
                throw new picocli.CommandLine.ParameterException(new picocli.CommandLine(this), "--layout is csc, csr or as-is, not " + layout);
            }
            Path target = file != null ? file : Path.of("build", "bench", "atlas-" + cells + "x" + genes + ".h5ad");
            java.nio.file.Files.createDirectories(target.toAbsolutePath().getParent());
            List<ConversionBenchmark.Row> rows = ConversionBenchmark.run(new ConversionBenchmark.Settings(target, cells, genes,
                    layout, gzip, sizes, shardSize, budget));
            if (json) {
                printJson(rows);
                return 0;
            }
            Table table = Table.create(".h5ad -> shards as the file grows, each in a fresh JVM (-Xmx512m); from " + target);
            StringColumn name = StringColumn.create("file");
            StringColumn x = StringColumn.create("X");
            DoubleColumn cellColumn = DoubleColumn.create("cells");
            DoubleColumn stored = DoubleColumn.create("stored values");
            DoubleColumn megabytes = DoubleColumn.create("MB on disk");
            DoubleColumn seconds = DoubleColumn.create("seconds");
            DoubleColumn transpose = DoubleColumn.create("transpose s");
            DoubleColumn anonymous = DoubleColumn.create("peak anon RSS MB");
            DoubleColumn rss = DoubleColumn.create("peak RSS MB");
            DoubleColumn heap = DoubleColumn.create("peak heap MB");
            for (ConversionBenchmark.Row row : rows) {
                name.append(row.file());
                x.append(row.layout());
                cellColumn.append(row.cells());
                stored.append(row.storedValues());
                megabytes.append(round(row.megabytes(), 1));
                seconds.append(round(row.seconds(), 2));
                transpose.append(round(row.transposeSeconds(), 2));
                anonymous.append(Math.round(row.peakAnonymousMegabytes()));
                rss.append(Math.round(row.peakMegabytes()));
                heap.append(Math.round(row.peakHeapMegabytes()));
            }
            table.addColumns(name, x, cellColumn, stored, megabytes, seconds, transpose, anonymous, rss, heap);
            System.out.println(table.printAll());
            if (rows.size() > 1) {
                ConversionBenchmark.Row small = rows.getFirst();
                ConversionBenchmark.Row big = rows.getLast();
                System.out.printf("peak anon RSS %s x%.1f for x%.1f the stored values (flat: close to x1.0)%n",
                        big.file(), big.peakAnonymousMegabytes() / small.peakAnonymousMegabytes(),
                        (double) big.storedValues() / small.storedValues());
            }
            return 0;
        }
    }

    /** A value to so many decimals, for the bench tables (shared by the bench commands). */
    /**
     * A rounded figure, or a missing cell where it is NaN: a task that did not run, or a ratio without its baseline
     * (NaN either side of a division gives NaN; rounding it would print 0).
     */
    static void appendFigure(DoubleColumn column, double value, int digits) {
        if (Double.isNaN(value)) {
            column.appendMissing();
        } else {
            column.append(round(value, digits));
        }
    }

    static double round(double value, int digits) {
        double scale = Math.pow(10, digits);
        return Math.round(value * scale) / scale;
    }

    @Command(name = "shards", mixinStandardHelpOptions = true,
            description = "Random batches from sparse (CSR) shards vs dense shards of the same .h5ad vs a C loop "
                    + "densifying the same CSR rows; bytes on disk of each layout.")
    static final class Shards implements Callable<Integer> {
        @Option(names = "--file", description = "the .h5ad to shard (default build/bench/anndata-default.h5ad)")
        private Path file;
        @Option(names = "--shard-size", defaultValue = "100000", description = "cells per shard (default ${DEFAULT-VALUE})")
        private long shardSize;
        @Option(names = "--batch", defaultValue = "256", description = "cells per batch (default ${DEFAULT-VALUE})")
        private int batch;
        @Option(names = "--epochs", defaultValue = "8", description = "epochs, the first not counted (default ${DEFAULT-VALUE}; an epoch of a page-cached atlas takes a tenth of a second, and fewer leave the timed part too short on a shared machine)")
        private int epochs;
        @Option(names = "--threads", defaultValue = "1,2", split = ",", description = "threads copying rows: C threads, or memfit background readers + the caller (default ${DEFAULT-VALUE})")
        private List<Integer> threads;
        @Option(names = "--warmup-seconds", defaultValue = "2", description = "memfit's untimed epochs after the first, until the JIT has compiled the loader (default ${DEFAULT-VALUE} s; the C loops need none)")
        private double warmupSeconds;
        @Option(names = "--seed", defaultValue = "7")
        private long seed;
        @Option(names = "--no-baselines", description = "skip the C loops")
        private boolean noBaselines;
        @Option(names = "--json", description = "print JSON rows instead of a table")
        private boolean json;

        @Override
        public Integer call() throws Exception {
            Path target = file != null ? file : Path.of("build", "bench", "anndata-default.h5ad");
            if (!java.nio.file.Files.exists(target)) {
                throw new dev.memfit.MemfitException(target + ": no such .h5ad; pass --file (a CSR X, such as "
                        + "anndata's default write_h5ad)");
            }
            List<ShardBenchmark.Row> rows = ShardBenchmark.run(new ShardBenchmark.Settings(target, shardSize, batch,
                    epochs, threads, seed, !noBaselines, warmupSeconds));
            if (json) {
                printJson(rows);
                return 0;
            }
            Table table = Table.create("Random batches of " + batch + " cells (shuffled) from shards of " + target
                    + " (page-cached)");
            StringColumn layout = StringColumn.create("layout");
            StringColumn method = StringColumn.create("method");
            IntColumn threadColumn = IntColumn.create("threads");
            DoubleColumn cellsPerSecond = DoubleColumn.create("cells/s");
            DoubleColumn gbps = DoubleColumn.create("GB/s (dense)");
            DoubleColumn disk = DoubleColumn.create("MB on disk");
            DoubleColumn vsDense = DoubleColumn.create("vs dense shards, memfit");
            DoubleColumn vsC = DoubleColumn.create("vs C, same layout");
            DoubleColumn vsCLoader = DoubleColumn.create("vs C loader");
            for (ShardBenchmark.Row row : rows) {
                layout.append(row.layout());
                method.append(row.method());
                threadColumn.append(row.threads());
                // a task that did not run (such as buffers refused as not fitting) has NaN rates: no figure, no ratio
                appendFigure(cellsPerSecond, row.cellsPerSecond(), 0);
                appendFigure(gbps, row.gigabytesPerSecond(), 3);
                disk.append(round(row.megabytesOnDisk(), 1));
                boolean memfit = row.method().startsWith("memfit");
                double dense = !memfit ? Double.NaN : rows.stream().filter(r -> r.layout().equals("dense")
                                && r.method().startsWith("memfit") && r.threads() == row.threads())
                        .mapToDouble(ShardBenchmark.Row::cellsPerSecond).findFirst().orElse(Double.NaN);
                double c = !memfit ? Double.NaN : rows.stream().filter(r -> r.layout().equals(row.layout())
                                && r.method().startsWith("C ") && !r.method().equals(ShardBenchmark.C_LOADER)
                                && r.threads() == row.threads())
                        .mapToDouble(ShardBenchmark.Row::cellsPerSecond).findFirst().orElse(Double.NaN);
                double cLoader = !memfit ? Double.NaN : rows.stream().filter(r -> r.layout().equals(row.layout())
                                && r.method().equals(ShardBenchmark.C_LOADER) && r.threads() == row.threads())
                        .mapToDouble(ShardBenchmark.Row::cellsPerSecond).findFirst().orElse(Double.NaN);
                appendFigure(vsDense, row.cellsPerSecond() / dense, 3);
                appendFigure(vsC, row.cellsPerSecond() / c, 3);
                appendFigure(vsCLoader, row.cellsPerSecond() / cLoader, 3);
            }
            table.addColumns(layout, method, threadColumn, cellsPerSecond, gbps, disk, vsDense, vsC, vsCLoader);
            System.out.println(table.printAll());
            return 0;
        }
    }
}
