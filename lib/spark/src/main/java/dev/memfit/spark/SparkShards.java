package dev.memfit.spark;

import dev.memfit.MemfitException;
import dev.memfit.ProgressListener;
import dev.memfit.io.storage.AtomicMove;
import dev.memfit.io.storage.Folders;
import dev.memfit.io.storage.OutputLock;
import dev.memfit.shard.GeneVocabulary;
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
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.stream.IntStream;
import java.util.stream.Stream;

/**
 * Converts one or many {@code .h5ad} files into a shard folder on Apache Spark, byte for byte the folder
 * {@link ShardWriter} writes from the same inputs and settings (same shard boundaries, files, bytes and checksums).
 *
 * <p>The driver plans the conversion ({@link ShardPlan}: every input opened and checked, nothing written when one is
 * refused); each Spark task writes one shard (a row range of one file, read with memfit's own reader) into a staging
 * folder inside the output, each file under a temporary name renamed when complete, and returns its files' sizes
 * and CRC32C; the driver then moves the shards into the folder and writes the metadata last. A failed task fails the
 * job with memfit's message (naming the file); the staging folder is then removed, and the output folder too when
 * this call created it, so no half-written set is left.
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

    private SparkShards() {
    }

    /**
     * What a conversion did.
     *
     * @param shards shards written
     * @param cells cells in all shards
     * @param genes vocabulary size
     * @param layout how the shards store their cells
     * @param tasks Spark tasks run (one per shard)
     * @param jobSeconds seconds from the job's submission to the metadata written (the session's start excluded)
     */
    public record Result(int shards, long cells, int genes, ShardLayout layout, int tasks, double jobSeconds) {
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

    /** Configures a conversion; {@link #write(Path)} validates the settings and converts. */
    public static final class Builder {

        private List<Path> inputs;
        private long shardSize = 100_000;
        private GeneVocabulary vocabulary;
        private ShardLayout layout;
        private String master = "local[*]";
        private SparkSession session;
        private final Map<String, String> config = new LinkedHashMap<>();
        private ProgressListener progress = ProgressListener.console();

        private Builder() {
        }

        /**
         * Sets the files to convert, in order (required): as {@link ShardWriter.Builder#setInputs}.
         *
         * @param files one or more {@code .h5ad}, on a file system every executor sees
         * @return this builder
         */
        public Builder setInputs(List<Path> files) {
            this.inputs = files == null ? null : new ArrayList<>(files);
            return this;
        }

        /**
         * Sets the number of cells per shard (default 100,000).
         *
         * @param cells at least 1
         * @return this builder
         */
        public Builder optShardSize(long cells) {
            this.shardSize = cells;
            return this;
        }

        /**
         * Sets the genes of every shard (default: the inputs' genes), as {@link ShardWriter.Builder#optVocabulary}.
         *
         * @param genes the vocabulary, or null
         * @return this builder
         */
        public Builder optVocabulary(GeneVocabulary genes) {
            this.vocabulary = genes;
            return this;
        }

        /**
         * Sets the layout (default: sparse for a sparse X), as {@link ShardWriter.Builder#optLayout}.
         *
         * @param shardLayout the layout, or null
         * @return this builder
         */
        public Builder optLayout(ShardLayout shardLayout) {
            this.layout = shardLayout;
            return this;
        }

        /**
         * Sets the Spark master of a session this conversion starts (default {@code local[*]}; ignored when a session
         * is active or given). A local master binds the driver to 127.0.0.1.
         *
         * @param url such as {@code local[2]} or {@code spark://host:7077}
         * @return this builder
         */
        public Builder optMaster(String url) {
            this.master = url;
            return this;
        }

        /**
         * Sets the Spark session to run on (default: the active one, else a new one that is stopped at the end).
         *
         * @param spark the session
         * @return this builder
         */
        public Builder optSession(SparkSession spark) {
            this.session = spark;
            return this;
        }

        /**
         * Adds a Spark setting for a session this conversion starts.
         *
         * @param key such as {@code spark.ui.enabled}
         * @param value its value
         * @return this builder
         */
        public Builder addConfig(String key, String value) {
            config.put(key, value);
            return this;
        }

        /**
         * Sets where progress goes (default {@link ProgressListener#console()}), in cells, as tasks finish.
         *
         * @param listener the listener
         * @return this builder
         */
        public Builder optProgress(ProgressListener listener) {
            this.progress = listener;
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
            if (master == null || master.isBlank()) {
                throw new MemfitException("optMaster: give a Spark master such as local[2]");
            }
            if (progress == null) {
                throw new MemfitException("optProgress(null): pass ProgressListener.silent() to report nothing");
            }
            // every input opened and checked before the folder is touched
            ShardPlan plan = ShardPlan.builder().setInputs(inputs).optShardSize(shardSize).optVocabulary(vocabulary)
                    .optLayout(layout).optProgress(progress).plan();
            return SparkShards.write(this, plan, outputDir);
        }
    }

    private static Result write(Builder settings, ShardPlan plan, Path outputDir) {
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
                Result result = run(settings, plan, outputDir, staging);
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

    private static Result run(Builder settings, ShardPlan plan, Path outputDir, Path staging) throws IOException {
        SparkSession spark = settings.session;
        boolean own = false;
        if (spark == null) {
            spark = SparkSession.getActiveSession().getOrElse(() -> null);
        }
        if (spark == null) {
            spark = start(settings.master, settings.config);
            own = true;
        }
        try {
            JavaSparkContext context = JavaSparkContext.fromSparkContext(spark.sparkContext());
            String group = "memfit-shard-" + UUID.randomUUID();
            int shards = plan.shards();
            String folder = staging.toAbsolutePath().toString();
            long start = System.nanoTime();
            List<ShardPlan.WrittenShard> written;
            try (ProgressListener.Task progress = settings.progress.start("Sharding " + plan.inputs().size()
                    + " file(s) on Spark", plan.cells(), "cells")) {
                TaskProgress listener = new TaskProgress(group, plan, progress);
                context.sc().addSparkListener(listener);
                // a failed task cancels its siblings at once (interrupted), so none writes after the staging folder is gone
                context.setJobGroup(group, "memfit shard: " + shards + " shards", true);
                try {
                    written = context.parallelize(IntStream.range(0, shards).boxed().toList(), Math.max(1, shards))
                            .map(shard -> writeShard(plan, shard, folder)).collect();
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
            for (ShardPlan.WrittenShard shard : written) {
                for (ShardPlan.ShardFile file : shard.files()) {
                    AtomicMove.replace(staging.resolve(file.file()), outputDir.resolve(file.file()));
                }
            }
            plan.writeMetadata(outputDir, written);
            double seconds = (System.nanoTime() - start) / 1e9;
            return new Result(shards, plan.cells(), plan.vocabulary().genes().size(), plan.layout(), shards, seconds);
        } finally {
            if (own) {
                spark.stop();
            }
        }
    }

    /**
     * Starts a Spark session for a conversion: a local master binds to 127.0.0.1 (Spark picks a network interface
     * otherwise); the settings given are applied last.
     *
     * @param master the master URL
     * @param config extra settings
     * @return the session
     */
    static SparkSession start(String master, Map<String, String> config) {
        SparkSession.Builder builder = SparkSession.builder().master(master).appName("memfit shard");
        if (master.startsWith("local")) {
            builder.config("spark.driver.host", "127.0.0.1").config("spark.driver.bindAddress", "127.0.0.1");
        }
        config.forEach(builder::config);
        return builder.getOrCreate();
    }

    /** One Spark task: one shard written into the staging folder. */
    private static ShardPlan.WrittenShard writeShard(ShardPlan plan, int shard, String staging) {
        Path folder = Path.of(staging);
        if (!Files.isDirectory(folder)) {
            // the job failed or was cancelled and the driver removed its staging folder: write nothing
            throw new MemfitException(folder + ": the staging folder of this conversion is gone (job cancelled)");
        }
        try (ShardPlan.Input input = plan.open(plan.input(shard));
             ProgressListener.Task progress = ProgressListener.silent().start("shard " + shard, plan.cells(shard), "cells")) {
            return input.write(shard, folder, progress);
        }
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

    /** Steps the driver's progress by a shard's cells as each task of the conversion's job succeeds. */
    private static final class TaskProgress extends SparkListener {
        private final String group;
        private final ShardPlan plan;
        private final ProgressListener.Task progress;
        private final Set<Integer> stages = ConcurrentHashMap.newKeySet();
        private final java.util.concurrent.atomic.AtomicInteger running = new java.util.concurrent.atomic.AtomicInteger();
        private volatile int jobId = -1;
        private boolean jobEnded;
        private volatile boolean stopped;

        TaskProgress(String group, ShardPlan plan, ProgressListener.Task progress) {
            this.group = group;
            this.plan = plan;
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
                    progress.step(plan.cells(task.taskInfo().index()));
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
