package dev.memfit.spark;

import dev.memfit.MemfitException;
import dev.memfit.ProgressListener;
import dev.memfit.io.AnnDataFiles;
import dev.memfit.io.anndata.AnnData;
import dev.memfit.io.hdf5.H5adWriter;
import dev.memfit.io.storage.OutputLock;
import dev.memfit.prep.GeneSums;
import dev.memfit.prep.Preprocess;
import org.apache.spark.api.java.JavaSparkContext;

import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.IOException;
import java.io.ObjectInputStream;
import java.io.ObjectOutputStream;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.List;
import java.util.UUID;
import java.util.stream.LongStream;

/**
 * {@code memfit preprocess} on Apache Spark: the same genes and the same values as {@link Preprocess} on one machine.
 *
 * <p>Pass one: each task reads a range of blocks of rows with memfit's reader ({@link Preprocess.Pass#sums}) and
 * returns its per-gene sums; the driver adds them in range order ({@link GeneSums#add}) and selects the genes with
 * {@link GeneSums#statistics}, the code the single-process run uses. The ranges are aligned to a power of two of
 * blocks and the sums combine in a fixed tree over the block numbers, so the statistics equal the single-process ones
 * to the last bit for the same block size. Pass two: each task writes its range's processed rows
 * ({@link Preprocess.Pass#forEachSelected}) to a staging folder beside the output; the driver appends them in order
 * to the {@code .h5ad} (one file, one writer), renamed into place when complete. On failure the staging folder and the
 * unfinished output are removed.
 *
 * <pre>{@code
 * Preprocess.Result result = SparkPreprocess.builder().setInput(raw).optHighlyVariable(2_000)
 *         .optMaster("local[4]").run(processed);
 * }</pre>
 */
public final class SparkPreprocess {

    private SparkPreprocess() {
    }

    /**
     * Starts configuring a run: {@code setInput} is required; defaults as {@link Preprocess#builder()}, the active
     * Spark session or a new one on {@code local[*]}, about four tasks per core.
     *
     * @return the builder
     */
    public static Builder builder() {
        return new Builder();
    }

    /** Configures a run; {@link #run(Path)} validates the settings. */
    public static final class Builder implements SparkOptions<Builder> {
        private Path input;
        private int highlyVariable = 4_000;
        private double targetSum = 1e4;
        private long blockRows;
        private final SparkSessions spark = new SparkSessions();
        private ProgressListener progress = ProgressListener.console();
        private String layer = "X";

        private Builder() {
        }

        @Override
        public SparkSessions sparkSessions() {
            return spark;
        }

        /**
         * Sets the matrix preprocessed (default {@code X}), as {@link Preprocess.Builder#optLayer}.
         *
         * @param matrix {@code X}, {@code raw/X} or a layer such as {@code counts}
         * @return this builder
         */
        public Builder optLayer(String matrix) {
            this.layer = matrix;
            return this;
        }

        /**
         * Sets the raw counts (required), on a file system every executor sees.
         *
         * @param file an {@code .h5ad}
         * @return this builder
         */
        public Builder setInput(Path file) {
            this.input = file;
            return this;
        }

        /**
         * Sets the number of highly variable genes (default 4,000), as {@link Preprocess.Builder#optHighlyVariable}.
         *
         * @param genes at least 1
         * @return this builder
         */
        public Builder optHighlyVariable(int genes) {
            this.highlyVariable = genes;
            return this;
        }

        /**
         * Sets the counts per cell after normalization (default 10,000), as {@link Preprocess.Builder#optTargetSum}.
         *
         * @param counts positive
         * @return this builder
         */
        public Builder optTargetSum(double counts) {
            this.targetSum = counts;
            return this;
        }

        /**
         * Sets the rows per block (default: 16 MB of dense rows), as {@link Preprocess.Builder#optBlockRows}: the
         * same value gives the same bits as the single-process run.
         *
         * @param rows at least 1
         * @return this builder
         */
        public Builder optBlockRows(long rows) {
            this.blockRows = rows;
            return this;
        }

        /**
         * Sets where progress goes (default console): one task per pass, in cells, on the driver.
         *
         * @param listener the listener
         * @return this builder
         */
        public Builder optProgress(ProgressListener listener) {
            this.progress = listener;
            return this;
        }

        /**
         * Validates the settings and preprocesses the input.
         *
         * @param output the processed file (replaced only once complete)
         * @return what was written
         * @throws MemfitException naming the setting, the file refused or the failed task's problem
         */
        public Preprocess.Result run(Path output) {
            if (input == null) {
                throw new MemfitException("setInput(file) is required: the raw-count .h5ad");
            }
            if (output == null) {
                throw new MemfitException("run(output) needs the processed .h5ad to write");
            }
            if (input.toAbsolutePath().normalize().equals(output.toAbsolutePath().normalize())) {
                throw new MemfitException("the output " + output + " would replace the input; choose another name");
            }
            if (java.nio.file.Files.isDirectory(output)) {
                throw new MemfitException("the output " + output + " is a folder; give the name of the .h5ad to write");
            }
            if (highlyVariable < 1) {
                throw new MemfitException("optHighlyVariable(n) needs n >= 1 (--hvg on the command line), got " + highlyVariable);
            }
            if (!(targetSum > 0 && targetSum < Double.POSITIVE_INFINITY)) {
                throw new MemfitException("optTargetSum(counts) needs a positive, finite sum such as 10000, got " + targetSum);
            }
            if (blockRows < 0) {
                throw new MemfitException("optBlockRows(rows) needs rows >= 1, got " + blockRows);
            }
            spark.check();
            if (progress == null) {
                throw new MemfitException("optProgress(null): pass ProgressListener.silent() to report nothing");
            }
            return SparkPreprocess.run(this, output);
        }
    }

    private static Preprocess.Result run(Builder settings, Path output) {
        Path absolute = output.toAbsolutePath();
        Path parent = absolute.getParent();
        Path staging = parent.resolve(".spark-staging-" + absolute.getFileName() + "-" + UUID.randomUUID());
        String file = settings.input.toAbsolutePath().toString();
        String layer = settings.layer;
        try (OutputLock lock = OutputLock.acquire(output);
             AnnData h5ad = AnnDataFiles.builder().setFile(settings.input).optLayer(settings.layer).optProgress(settings.progress).open()) {
            Preprocess.Pass pass = pass(Path.of(file), h5ad, settings);
            pass.checkInput();   // as Preprocess: a column the output cannot carry is refused before any pass
            long blockRows = pass.blockRows();
            long blocks = pass.blocks();
            try (SparkSessions.Use use = settings.spark.use("memfit preprocess")) {
                JavaSparkContext context = JavaSparkContext.fromSparkContext(use.spark().sparkContext());
                // ranges of 2^k blocks: their sums add up to the single-process tree (see GeneSums)
                long wanted = Math.max(1, 4L * context.defaultParallelism());
                long group = Long.highestOneBit(Math.max(1, (blocks + wanted - 1) / wanted));
                if (group < (blocks + wanted - 1) / wanted) {
                    group <<= 1;
                }
                long span = group;
                List<Long> ranges = LongStream.range(0, (blocks + span - 1) / span).boxed().toList();
                double targetSum = settings.targetSum;
                List<GeneSums> partial;
                Preprocess.GeneStatistics statistics;
                try (ProgressListener.Task progress = settings.progress.start("pass 1/2: gene statistics on Spark",
                        h5ad.observations(), "cells")) {
                    try {
                        partial = context.parallelize(ranges, Math.max(1, ranges.size())).map(range -> {
                            try (AnnData reader = AnnDataFiles.builder().setFile(Path.of(file)).optLayer(layer).optProgress(ProgressListener.silent()).open();
                                 ProgressListener.Task silent = ProgressListener.silent().start("sums", 1, "cells")) {
                                return Preprocess.pass(Path.of(file), reader, targetSum).optBlockRows(blockRows)
                                        .sums(range * span, span, silent);
                            }
                        }).collect();
                    } catch (Exception e) {
                        throw SparkShards.memfitFailure(e);
                    }
                    GeneSums sums = new GeneSums(Math.toIntExact(h5ad.variables()));
                    partial.forEach(sums::add);   // collect() keeps the ranges' order
                    statistics = sums.statistics(h5ad.index("var"), settings.highlyVariable);
                    progress.step(h5ad.observations());
                }
                Preprocess.checkSelected(settings.input, statistics, h5ad.observations());
                int[] keep = statistics.selected();
                Files.createDirectory(staging);
                String folder = staging.toString();
                try (H5adWriter writer = pass.createOutput(output, statistics);
                     ProgressListener.Task progress = settings.progress.start("pass 2/2: writing " + output.getFileName()
                             + " on Spark", h5ad.observations(), "cells")) {
                    List<String> parts;
                    String jobGroup = "memfit-preprocess-" + UUID.randomUUID();
                    // a failed task cancels its siblings at once (interrupted), so none writes after the staging folder is gone
                    context.setJobGroup(jobGroup, "memfit preprocess: pass 2", true);
                    try {
                        parts = context.parallelize(ranges, Math.max(1, ranges.size())).map(range -> {
                            Path part = Path.of(folder, String.format("part-%06d", range));
                            Path writing = Path.of(folder, String.format(".part-%06d.writing", range));
                            try (AnnData reader = AnnDataFiles.builder().setFile(Path.of(file)).optLayer(layer).optProgress(ProgressListener.silent()).open();
                                 ObjectOutputStream out = new ObjectOutputStream(new BufferedOutputStream(Files.newOutputStream(writing), 1 << 20))) {
                                Preprocess.pass(Path.of(file), reader, targetSum).optBlockRows(blockRows)
                                        .forEachSelected(range * span, span, keep, slice -> {
                                            try {
                                                out.writeObject(slice);
                                                out.reset();   // no back-references kept to written slices
                                            } catch (IOException e) {
                                                throw new UncheckedIOException("cannot write " + writing, e);
                                            }
                                        });
                                out.writeObject(null);
                            }
                            Files.move(writing, part, StandardCopyOption.ATOMIC_MOVE);
                            return part.toString();
                        }).collect();
                    } catch (Exception e) {
                        awaitTasksEnded(context, jobGroup, 60_000);   // killed tasks end late; the staging folder goes next
                        throw SparkShards.memfitFailure(e);
                    } finally {
                        context.clearJobGroup();
                    }
                    double[] totals = new double[Math.toIntExact(h5ad.observations())];
                    for (String part : parts) {
                        try (ObjectInputStream in = new ObjectInputStream(new BufferedInputStream(Files.newInputStream(Path.of(part)), 1 << 20))) {
                            for (Object next = in.readObject(); next != null; next = in.readObject()) {
                                Preprocess.Slice slice = (Preprocess.Slice) next;
                                slice.appendTo(writer);
                                System.arraycopy(slice.totals(), 0, totals, Math.toIntExact(slice.first()), slice.count());
                                progress.step(slice.count());
                            }
                        } catch (ClassNotFoundException e) {
                            throw new MemfitException(part + ": not a part this run wrote (" + e.getMessage() + ")");
                        }
                        Files.delete(Path.of(part));   // the disk holds one copy of the output at a time
                    }
                    pass.finishOutput(writer, statistics, totals);
                    writer.commit();
                }
                return new Preprocess.Result(output, h5ad.observations(), keep.length, statistics, pass.valueType());
            }
        } catch (IOException e) {
            throw new UncheckedIOException("cannot preprocess into " + output, e);
        } finally {
            deleteTree(staging);
        }
    }

    private static Preprocess.Pass pass(Path file, AnnData h5ad, Builder settings) {
        Preprocess.Pass pass = Preprocess.pass(file, h5ad, settings.targetSum);
        return settings.blockRows > 0 ? pass.optBlockRows(settings.blockRows) : pass;
    }

    /** Waits until no task of the group's jobs runs any more, at most so long. */
    private static void awaitTasksEnded(JavaSparkContext context, String group, long millis) {
        long deadline = System.currentTimeMillis() + millis;
        org.apache.spark.api.java.JavaSparkStatusTracker tracker = context.statusTracker();
        while (System.currentTimeMillis() < deadline) {
            boolean running = false;
            for (int job : tracker.getJobIdsForGroup(group)) {
                org.apache.spark.SparkJobInfo info = tracker.getJobInfo(job);
                if (info == null) {
                    continue;
                }
                for (int stage : info.stageIds()) {
                    org.apache.spark.SparkStageInfo stageInfo = tracker.getStageInfo(stage);
                    running |= stageInfo != null && stageInfo.numActiveTasks() > 0;
                }
            }
            if (!running) {
                return;
            }
            try {
                Thread.sleep(50);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return;
            }
        }
    }

    private static void deleteTree(Path folder) {
        try {
            dev.memfit.io.storage.Folders.deleteTree(folder);
        } catch (IOException e) {
            folder.toFile().deleteOnExit();
        }
    }
}
