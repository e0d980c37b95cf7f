package dev.memfit.train;

import dev.memfit.ProgressListener;
import dev.memfit.data.Datasets;
import dev.memfit.data.Loader;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;

/**
 * The process {@link CheckpointKillTest} kills: fits a topic model to a {@code .npy} of counts with checkpoints every
 * 3 steps, appending "batch N" to a progress file after every batch (and pausing briefly, so that a kill lands at a
 * batch the parent chose, give or take one), and on success writes every step's loss and the topics, exactly.
 *
 * <p>Arguments: counts.npy, checkpoint folder (or "none"), progress file, result file.
 */
public final class TrainerKillChild {

    private TrainerKillChild() {
    }

    public static void main(String[] args) throws Exception {
        Path counts = Path.of(args[0]);
        Path progressFile = Path.of(args[2]);
        Path result = Path.of(args[3]);
        TopicModel.Builder builder = TopicModel.builder().setTopics(3).optEpochs(4).optLearningRate(0.05).optSeed(3)
                .optProgress(progress(progressFile));
        if (!args[1].equals("none")) {
            builder.optCheckpoints(Checkpoints.builder().setFolder(Path.of(args[1])).optEverySteps(3).optKeep(2).build());
        }
        try (TopicModel model = builder.build();
             Loader loader = Datasets.npy(counts).mapped().optBatchSize(32).optShuffle(5).build()) {
            FitResult fit = model.fit(loader);
            List<String> lines = new ArrayList<>();
            lines.add("resumed at step " + fit.checkpoints().resumedAtStep());
            for (double loss : fit.stepLosses()) {
                lines.add("step loss " + Double.toHexString(loss));
            }
            for (float[] topic : model.topicTerms()) {
                StringBuilder row = new StringBuilder("topic");
                for (float value : topic) {
                    row.append(' ').append(Float.toHexString(value));
                }
                lines.add(row.toString());
            }
            Files.write(result, lines, StandardCharsets.UTF_8);
        }
    }

    /** Counts batches into a file the parent watches; each batch takes at least 15 ms, so kills are placed. */
    private static ProgressListener progress(Path file) {
        return new ProgressListener() {
            @Override
            public Task start(String task, long total, String unit) {
                return new Task() {
                    long done;

                    @Override
                    public void step(long steps) {
                        done += steps;
                        try {
                            Files.writeString(file, "batch " + done + "\n", StandardCharsets.UTF_8,
                                    StandardOpenOption.CREATE, StandardOpenOption.APPEND);
                            Thread.sleep(15);
                        } catch (IOException e) {
                            throw new UncheckedIOException(e);
                        } catch (InterruptedException e) {
                            Thread.currentThread().interrupt();
                        }
                    }
                };
            }

            @Override
            public void note(String line) {
                System.out.println(line);
            }
        };
    }
}
