package dev.memfit.spark;

import dev.memfit.DType;
import dev.memfit.MemfitException;
import dev.memfit.ProgressListener;
import dev.memfit.io.storage.AtomicMove;
import dev.memfit.io.storage.Folders;
import dev.memfit.io.storage.OutputLock;
import dev.memfit.shard.ShardSettings;
import dev.memfit.shard.ShardLayout;
import dev.memfit.shard.ShardPlan;
import dev.memfit.shard.ShardWriter;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.scheduler.SparkListener;
import org.apache.spark.scheduler.SparkListenerJobEnd;
import org.apache.spark.scheduler.SparkListenerJobStart;
import org.apache.spark.scheduler.SparkListenerTaskEnd;
import org.apache.spark.scheduler.SparkListenerTaskStart;
import org.apache.spark.sql.SparkSession;

import java.io.IOException;
import java.io.Serializable;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.stream.Stream;

/**
 * Converts one or many {@code .h5ad} files into a shard folder on Apache Spark, byte for byte the folder
 * {@link ShardWriter} writes from the same inputs and settings (same shard boundaries, files, bytes and checksums).
 *
 * <p>The driver plans the conversion ({@link ShardPlan}: every input opened and checked, nothing written when one is
 * refused); each Spark task writes a run of consecutive shards of one file (a row range, read with memfit's own
 * reader, the file opened and its {@code obs} table read once per task) into a staging folder inside the output,
 * each file under a temporary name renamed when complete, and returns its files' sizes and CRC32C; the driver then
 * moves the shards into the folder and writes the metadata last. A failed task fails the job with memfit's message
 * (naming the file); the staging folder is then removed, and the output folder too when this call created it, so no
 * half-written set is left.
 *
 * <pre>{@code
 * SparkShards.Result result = SparkShards.builder().setInputs(List.of(Path.of("a.h5ad"), Path.of("b.h5ad")))
 *         .optShardSize(50_000).optMaster("local[2]").write(Path.of("shards"));
 * }</pre>
 *
 * <p>The JVM needs Spark's module flags ({@code --add-opens ...}); {@code ./memfit shard --engine spark} sets them.
 */
public final class SparkShards {

    private static final String STAGING_PREFIX = ".spark-staging-";
    /** Tasks per core by default: Spark's advice of 2-3 balances uneven tasks; each task reads its input's obs once. */
    private static final int TASKS_PER_CORE = 2;

    private SparkShards() {
    }

    /**
     * What a conversion did.
     *
     * @param shards shards written
     * @param cells cells in all shards
     * @param genes vocabulary size
     * @param layout how the shards store their cells
     * @param tasks Spark tasks run (each writes consecutive shards of one input)
     * @param jobSeconds seconds from the job's submission to the metadata written (the session's start excluded)
     * @param dtype the type of the shards' values
     * @param castFrom the inputs' type when the values were cast to a narrower {@code dtype}, else null
     */
    public record Result(int shards, long cells, int genes, ShardLayout layout, int tasks, double jobSeconds,
                         DType dtype, DType castFrom) {
    }

    /**
     * Starts configuring a conversion: {@code setInputs} is required; defaults are those of {@link ShardWriter}
     * (100,000 cells per shard, the inputs' genes, the layout of their X), the active Spark session or a new one on
     * {@code local[*]}, and a console progress bar.
     *
     * @return the builder
     */
    public static Builder builder() {
        return new Builder();
    }

    /**
     * Configures a conversion: the settings every conversion has ({@link ShardSettings}, progress on the console by
     * default), and Spark's own (master, session, settings, tasks); {@link #write(Path)} validates them and converts.
     */
    public static final class Builder extends ShardSettings<Builder> implements SparkOptions<Builder> {

        private Integer tasks;
        private final SparkSessions spark = new SparkSessions();

        private Builder() {
            super(ProgressListener.console());
        }

        @Override
        public SparkSessions sparkSessions() {
            return spark;
        }

        @Override
        protected Builder self() {
            return this;
        }

        /**
         * Sets the number of Spark tasks (default: two per core of the session, {@code defaultParallelism}). Each task
         * writes consecutive shards of one input and reads that input's {@code obs} table once, so fewer tasks read
         * less; more balance uneven cores. Each input gets at least one task and at most one per shard.
         *
         * @param count at least 1
         * @return this builder
         */
        public Builder optTasks(int count) {
            this.tasks = count;
            return this;
        }

        /**
         * Validates the settings and converts the inputs into a new folder.
         *
         * @param outputDir the shard folder: absent or empty (created if needed)
         * @return what was done
         * @throws MemfitException naming the setting to change, the input refused, or the failed task's problem
         */
        public Result write(Path outputDir) {
            if (outputDir == null) {
                throw new MemfitException("write(outputDir) needs the folder to write the shards to");
            }
            spark.check();
            if (tasks != null && tasks < 1) {
                throw new MemfitException("optTasks(n) needs n >= 1, got " + tasks);
            }
            if (readsThroughStorage()) {
                throw new MemfitException("optStorage/optSource: Spark's executors read local or shared files; convert "
                        + "inputs in a bucket with ShardWriter (./memfit shard without --engine spark)");
            }
            // every input opened and checked (with every setting) before the folder is touched
            ShardPlan plan = planShards();
            return SparkShards.write(this, progress(), plan, outputDir);
        }
    }

    private static Result write(Builder settings, ProgressListener listener, ShardPlan plan, Path outputDir) {
        boolean existed = Files.exists(outputDir);
        boolean done = false;
        try (OutputLock lock = OutputLock.acquireFolder(outputDir)) {
            List<String> present = contents(outputDir);
            if (!present.isEmpty()) {
                throw new MemfitException(outputDir + ": the spark engine writes a new shard folder, found " + present.size()
                        + " file(s) in it (" + String.join(", ", present.subList(0, Math.min(5, present.size())))
                        + "); remove them or choose another folder (memfit shard without --engine spark resumes a folder)");
            }
            Path staging = outputDir.resolve(STAGING_PREFIX + UUID.randomUUID());
            try {
                Files.createDirectory(staging);
                Result result = run(settings, listener, plan, outputDir, staging);
                done = true;
                return result;
            } finally {
                deleteTree(staging);
                if (!done) {
                    // shards moved in before a failure: the folder must not keep part of a set
                    for (String name : contents(outputDir)) {
                        Files.deleteIfExists(outputDir.resolve(name));
                    }
                }
            }
        } catch (IOException e) {
            throw new UncheckedIOException("cannot write shards to " + outputDir, e);
        } finally {
            if (!done && !existed) {
                try {
                    Files.deleteIfExists(outputDir);   // empty by now, its lock released
                } catch (IOException ignored) {
                    // best effort after a failure: the failure is what gets reported
                }
            }
        }
    }

    private static Result run(Builder settings, ProgressListener bar, ShardPlan plan, Path outputDir, Path staging) throws IOException {
        try (SparkSessions.Use use = settings.spark.use("memfit shard")) {
            JavaSparkContext context = JavaSparkContext.fromSparkContext(use.spark().sparkContext());
            String group = "memfit-shard-" + UUID.randomUUID();
            int shards = plan.shards();
            String folder = staging.toAbsolutePath().toString();
            long start = System.nanoTime();
            List<ShardPlan.WrittenShard> written;
            int tasks;
            List<ShardRange> ranges = ranges(plan, settings.tasks != null ? settings.tasks
                    : TASKS_PER_CORE * context.defaultParallelism());
            try (ProgressListener.Task progress = bar.start("Sharding " + plan.inputs().size()
                    + " file(s) on Spark", plan.cells(), "cells")) {
                TaskProgress listener = new TaskProgress(group, ranges, progress);
                context.sc().addSparkListener(listener);
                // a failed task cancels its siblings at once (interrupted), so none writes after the staging folder is gone
                context.setJobGroup(group, "memfit shard: " + shards + " shards in " + ranges.size() + " tasks", true);
                try {
                    written = context.parallelize(ranges, ranges.size())
                            .flatMap(range -> writeShards(plan, range, folder).iterator()).collect();
                } catch (Exception e) {
                    // the job is aborted, its other tasks are being killed: wait for them, for a task writing a file
                    // recreates the folder it writes into (a file's lock does), and the staging folder goes next
                    listener.awaitTasksEnded(60_000);
                    // Spark's failure is a checked SparkException thrown past collect()'s signature
                    throw memfitFailure(e);
                } finally {
                    context.clearJobGroup();
                    context.sc().removeSparkListener(listener);
                    listener.stop();
                }
            }
            tasks = ranges.size();
            for (ShardPlan.WrittenShard shard : written) {
                for (ShardPlan.ShardFile file : shard.files()) {
                    AtomicMove.replace(staging.resolve(file.file()), outputDir.resolve(file.file()));
                }
            }
            plan.writeMetadata(outputDir, written);
            double seconds = (System.nanoTime() - start) / 1e9;
            return new Result(shards, plan.cells(), plan.vocabulary().genes().size(), plan.layout(), tasks, seconds,
                    plan.dtype(), plan.castFrom());
        }
    }

    /**
     * Starts a Spark session for a conversion (as {@link SparkSessions#start}): a local master binds to 127.0.0.1.
     *
     * @param master the master URL
     * @param config extra settings
     * @return the session
     */
    static SparkSession start(String master, Map<String, String> config) {
        return SparkSessions.start(master, "memfit", config);
    }

    /**
     * Consecutive shards of one input, written by one task: the input is opened and its {@code obs} table read once
     * per task, not once per shard (reading 200,000 barcodes takes about as long as writing two shards of 10,000
     * cells).
     *
     * @param input the input's index in the plan
     * @param first the first shard
     * @param count the number of shards
     * @param cells their cells
     */
    record ShardRange(int input, int first, int count, long cells) implements Serializable {
    }

    /**
     * Cuts the plan's shards into about {@code tasks} ranges: each input gets a share of the tasks by its cells (at
     * least one, at most one per shard), and its shards are split into that many runs of consecutive shards, as
     * equal as whole shards allow.
     */
    static List<ShardRange> ranges(ShardPlan plan, int tasks) {
        List<ShardRange> ranges = new ArrayList<>();
        double total = plan.cells();
        int shard = 0;
        for (int input = 0; input < plan.inputs().size(); input++) {
            int from = shard;
            long cells = 0;
            while (shard < plan.shards() && plan.input(shard) == input) {
                cells += plan.cells(shard++);
            }
            int shards = shard - from;
            int share = (int) Math.max(1, Math.min(shards, Math.round(tasks * (cells / total))));
            for (int part = 0, next = from; part < share; part++) {
                int count = shards / share + (part < shards % share ? 1 : 0);
                long partCells = 0;
                for (int s = next; s < next + count; s++) {
                    partCells += plan.cells(s);
                }
                ranges.add(new ShardRange(input, next, count, partCells));
                next += count;
            }
        }
        return ranges;
    }

    /** One Spark task: a range of shards of one input written into the staging folder, the input opened once. */
    private static List<ShardPlan.WrittenShard> writeShards(ShardPlan plan, ShardRange range, String staging) {
        Path folder = Path.of(staging);
        List<ShardPlan.WrittenShard> written = new ArrayList<>(range.count());
        try (ShardPlan.Input input = plan.open(range.input());
             ProgressListener.Task progress = ProgressListener.silent().start("shards", range.cells(), "cells")) {
            for (int shard = range.first(); shard < range.first() + range.count(); shard++) {
                if (!Files.isDirectory(folder)) {
                    // the job failed or was cancelled and the driver removed its staging folder: write nothing more
                    throw new MemfitException(folder + ": the staging folder of this conversion is gone (job cancelled)");
                }
                written.add(input.write(shard, folder, progress));
            }
        }
        return written;
    }

    /**
     * The failure of a job as memfit reports it: the task's own message (it names the file, the position and what was
     * expected) when the task failed with a memfit exception, else Spark's first line.
     */
    static MemfitException memfitFailure(Exception failure) {
        for (Throwable cause = failure; cause != null; cause = cause.getCause()) {
            if (cause instanceof MemfitException memfit) {
                return new MemfitException(memfit.getMessage(), failure);
            }
            if (cause instanceof UncheckedIOException io) {
                return new MemfitException(io.getMessage() + ": " + io.getCause().getMessage(), failure);
            }
        }
        if (failure instanceof MemfitException memfit) {
            return memfit;
        }
        String message = String.valueOf(failure.getMessage());
        return new MemfitException("the Spark job failed: " + message.lines().findFirst().orElse(message), failure);
    }

    /** The folder's files but its lock. */
    private static List<String> contents(Path folder) throws IOException {
        try (Stream<Path> files = Files.list(folder)) {
            return files.map(f -> f.getFileName().toString()).filter(name -> !name.equals(OutputLock.FOLDER_LOCK))
                    .sorted().toList();
        }
    }

    /** Removes a folder and what it holds; a task cancelled late may still add a file, hence the retries. */
    private static void deleteTree(Path folder) throws IOException {
        for (int attempt = 0; Files.exists(folder); attempt++) {
            try {
                Folders.deleteTree(folder);
            } catch (IOException e) {
                if (attempt >= 20) {
                    throw e;
                }
                try {
                    Thread.sleep(50);
                } catch (InterruptedException interrupted) {
                    Thread.currentThread().interrupt();
                    throw e;
                }
            }
        }
    }

    /** Steps the driver's progress by a range's cells as each task of the conversion's job succeeds. */
    private static final class TaskProgress extends SparkListener {
        private final String group;
        private final List<ShardRange> ranges;
        private final ProgressListener.Task progress;
        private final Set<Integer> stages = ConcurrentHashMap.newKeySet();
        private final java.util.concurrent.atomic.AtomicInteger running = new java.util.concurrent.atomic.AtomicInteger();
        private volatile int jobId = -1;
        private boolean jobEnded;
        private volatile boolean stopped;

        TaskProgress(String group, List<ShardRange> ranges, ProgressListener.Task progress) {
            this.group = group;
            this.ranges = ranges;
            this.progress = progress;
        }

        @Override
        public void onJobStart(SparkListenerJobStart job) {
            if (job.properties() != null && group.equals(job.properties().getProperty("spark.jobGroup.id"))) {
                for (Object stage : scala.jdk.javaapi.CollectionConverters.asJava(job.stageIds())) {
                    stages.add((Integer) stage);
                }
                jobId = job.jobId();
            }
        }

        @Override
        public void onJobEnd(SparkListenerJobEnd job) {
            if (job.jobId() == jobId) {
                synchronized (this) {
                    jobEnded = true;
                    notifyAll();
                }
            }
        }

        @Override
        public void onTaskStart(SparkListenerTaskStart task) {
            if (stages.contains(task.stageId())) {
                running.incrementAndGet();
            }
        }

        @Override
        public synchronized void onTaskEnd(SparkListenerTaskEnd task) {
            if (stages.contains(task.stageId())) {
                running.decrementAndGet();
                notifyAll();
                if (!stopped && task.taskInfo().successful()) {
                    progress.step(ranges.get(task.taskInfo().index()).cells());
                }
            }
        }

        /** Waits until the job has ended and none of its tasks runs any more (killed tasks end late), at most so long. */
        synchronized void awaitTasksEnded(long millis) {
            long deadline = System.currentTimeMillis() + millis;
            try {
                while (!(jobEnded && running.get() <= 0) && System.currentTimeMillis() < deadline) {
                    wait(Math.max(1, Math.min(100, deadline - System.currentTimeMillis())));
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }

        synchronized void stop() {
            stopped = true;
        }
    }
}
