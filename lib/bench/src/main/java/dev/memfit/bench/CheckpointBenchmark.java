package dev.memfit.bench;

import com.fasterxml.jackson.databind.JsonNode;
import dev.memfit.ProgressListener;
import dev.memfit.data.Datasets;
import dev.memfit.data.Loader;
import dev.memfit.io.npy.Npy;
import dev.memfit.io.npy.NpyHeader;
import dev.memfit.io.storage.Folders;
import dev.memfit.synthetic.SyntheticTopics;
import dev.memfit.train.Checkpoints;
import dev.memfit.train.FitResult;
import dev.memfit.train.TopicModel;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * What a checkpoint of the topic model costs as the data grows (its document table grows with it): size, seconds to
 * write (temporary name, fsync, rename), seconds per training step, and the time to resume, beside {@code torch.save}
 * of tensors of the same shapes written the same way (when Debian's python3-torch is installed), in one run.
 */
public final class CheckpointBenchmark {

    /**
     * The benchmark's settings.
     *
     * @param directory where the count matrices and checkpoints are written
     * @param documents the data sizes to measure
     * @param terms m
     * @param topics k
     * @param batchSize documents per batch
     * @param checkpointsPerEpoch checkpoints taken during the measured epoch
     * @param baseline whether to time torch.save
     */
    public record Settings(Path directory, List<Integer> documents, int terms, int topics, int batchSize,
                           int checkpointsPerEpoch, boolean baseline) {
    }

    /**
     * One measured data size.
     *
     * @param documents n
     * @param bytes the size of one checkpoint
     * @param writeSeconds the mean seconds to write one
     * @param stepSeconds the mean seconds of a training step without checkpoints
     * @param resumeSeconds the wall time of a fit that only resumes (the run was finished): read, verify, restore
     * @param torchBytes torch.save's file size for the same arrays (0 without the baseline)
     * @param torchWriteSeconds torch.save's seconds (NaN without the baseline)
     */
    public record Row(int documents, long bytes, double writeSeconds, double stepSeconds, double resumeSeconds,
                      long torchBytes, double torchWriteSeconds) {

        /**
         * The checkpoint interval, in steps, at which writing costs 1% of the training time.
         *
         * @return steps
         */
        public double stepsForOnePercent() {
            return writeSeconds / (0.01 * stepSeconds);
        }
    }

    private CheckpointBenchmark() {
    }

    /**
     * Runs the benchmark.
     *
     * @param settings the settings
     * @return one row per data size
     * @throws IOException when files cannot be written
     */
    public static List<Row> run(Settings settings) throws IOException {
        Files.createDirectories(settings.directory());
        List<Row> rows = new ArrayList<>();
        for (int documents : settings.documents()) {
            Path file = settings.directory().resolve("topics-" + documents + "x" + settings.terms() + ".npy");
            if (!Files.exists(file)) {
                try (SyntheticTopics.Corpus corpus = SyntheticTopics.builder().setDocuments(documents)
                        .setTerms(settings.terms()).setTopics(settings.topics()).setDocumentLength(300).optSeed(42).generate()) {
                    Npy.write(file, NpyHeader.of(dev.memfit.DType.FLOAT32, documents, settings.terms()), corpus.counts().data());
                }
            }
            Path folder = settings.directory().resolve("checkpoints-" + documents);
            Folders.deleteTree(folder);
            FitResult plain = fit(settings, file, null);
            long steps = plain.steps();
            // once first, so that class loading and compilation of the writer are not counted as checkpoint time
            Path warmUp = settings.directory().resolve("checkpoints-warm-up");
            long every = Math.max(1, steps / settings.checkpointsPerEpoch());
            fit(settings, file, Checkpoints.builder().setFolder(warmUp).optEverySteps(every).optKeep(1).optResume(false).build());
            Folders.deleteTree(warmUp);
            Checkpoints policy = Checkpoints.builder().setFolder(folder).optEverySteps(every).optKeep(1).build();
            FitResult saved = fit(settings, file, policy);
            long start = System.nanoTime();
            FitResult resumed = fit(settings, file, policy);
            double resumeSeconds = (System.nanoTime() - start) / 1e9;
            if (resumed.resumedFrom().isEmpty()) {
                throw new IllegalStateException("the second fit did not resume from " + folder);
            }
            long torchBytes = 0;
            double torchSeconds = Double.NaN;
            if (settings.baseline() && Baselines.pythonHas("torch")) {
                String table = documents + "x" + settings.topics();
                String terms = settings.topics() + "x" + settings.terms();
                // the same arrays: topic logits and their two moments, the document table and its two row moments
                JsonNode json = Baselines.json(List.of("/usr/bin/python3",
                        Baselines.sources().resolve("checkpoint_torch.py").toString(), folder.toString(), "3",
                        terms, terms, terms, table, table, table), 3600).orElse(null);
                if (json != null) {
                    torchBytes = json.get("bytes").asLong();
                    torchSeconds = json.get("write_seconds").asDouble();
                }
            }
            rows.add(new Row(documents, saved.checkpoints().lastBytes(), saved.checkpoints().secondsPerCheckpoint(),
                    plain.seconds() / steps, resumeSeconds, torchBytes, torchSeconds));
            Folders.deleteTree(folder);
        }
        return rows;
    }

    private static FitResult fit(Settings settings, Path file, Checkpoints policy) {
        TopicModel.Builder builder = TopicModel.builder().setTopics(settings.topics()).optEpochs(1).optLearningRate(0.01)
                .optProgress(ProgressListener.silent());
        if (policy != null) {
            builder.optCheckpoints(policy);
        }
        try (TopicModel model = builder.build();
             Loader loader = Datasets.npy(file).mapped().optBatchSize(settings.batchSize()).optShuffle(1).build()) {
            return model.fit(loader);
        }
    }
}
