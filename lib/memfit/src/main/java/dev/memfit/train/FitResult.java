package dev.memfit.train;

import ai.djl.Device;

import java.nio.file.Path;
import java.util.List;
import java.util.Optional;

/**
 * What a {@link Trainer#fit} did: one entry per epoch, the wall time of the epochs and the device. What the model
 * learned stays with the model (for example {@link TopicModel#topicTerms()}).
 *
 * @param history one entry per epoch, epochs counted from 1 (fewer than configured when training stopped early)
 * @param seconds the wall time of all epochs together (setting up parameters and copying results out excluded)
 * @param device the device the model trained on, such as {@code cpu()} or {@code gpu(0)}
 * @param stepLosses the mean loss per sample of every optimizer step, in order (those before a resume included)
 * @param checkpoints where the fit resumed from and what its checkpoints cost ({@link CheckpointReport#NONE} without)
 */
public record FitResult(List<EpochStats> history, double seconds, Device device, double[] stepLosses,
                        CheckpointReport checkpoints) {

    /**
     * Copies the history so that the result cannot change afterwards.
     *
     * @param history one entry per epoch
     * @param seconds the wall time of all epochs (of the runs before a resume too)
     * @param device the training device
     * @param stepLosses the loss of every step
     * @param checkpoints the checkpoints' report
     */
    public FitResult {
        history = List.copyOf(history);
        stepLosses = stepLosses.clone();
    }

    /**
     * A result without step losses or checkpoints.
     *
     * @param history one entry per epoch
     * @param seconds the wall time of all epochs
     * @param device the training device
     */
    public FitResult(List<EpochStats> history, double seconds, Device device) {
        this(history, seconds, device, new double[0], CheckpointReport.NONE);
    }

    /**
     * The loss of every optimizer step (a copy).
     *
     * @return losses by step
     */
    @Override
    public double[] stepLosses() {
        return stepLosses.clone();
    }

    /**
     * The checkpoint this fit resumed from.
     *
     * @return its file, or empty when the fit started from the beginning
     */
    public Optional<Path> resumedFrom() {
        return Optional.ofNullable(checkpoints.resumedFrom());
    }

    /**
     * What a fit's checkpoints did.
     *
     * @param resumedFrom the checkpoint the fit resumed from, or null
     * @param resumedAtStep the optimizer steps that checkpoint had taken (0 without one)
     * @param written the checkpoints this fit wrote
     * @param seconds the wall time spent writing them (included in the epochs' times)
     * @param lastBytes the size of the last one written (0 without one)
     * @param skipped the corrupt checkpoints passed over when resuming, with what was wrong
     */
    public record CheckpointReport(Path resumedFrom, long resumedAtStep, int written, double seconds, long lastBytes,
                                   List<String> skipped) {

        /** A fit without checkpoints. */
        public static final CheckpointReport NONE = new CheckpointReport(null, 0, 0, 0, 0, List.of());

        /**
         * Copies the list.
         *
         * @param resumedFrom the checkpoint resumed from, or null
         * @param resumedAtStep its steps
         * @param written checkpoints written
         * @param seconds time writing them
         * @param lastBytes size of the last
         * @param skipped corrupt ones passed over
         */
        public CheckpointReport {
            skipped = List.copyOf(skipped);
        }

        /**
         * The mean time to write one checkpoint.
         *
         * @return seconds, 0 without checkpoints
         */
        public double secondsPerCheckpoint() {
            return written == 0 ? 0 : seconds / written;
        }
    }

    /**
     * The number of epochs trained.
     *
     * @return epochs
     */
    public int epochs() {
        return history.size();
    }

    /**
     * The mean loss of each epoch, for plotting.
     *
     * @return losses by epoch
     */
    public double[] losses() {
        return history.stream().mapToDouble(EpochStats::loss).toArray();
    }

    /**
     * The wall time of each epoch.
     *
     * @return seconds by epoch
     */
    public double[] epochSeconds() {
        return history.stream().mapToDouble(EpochStats::seconds).toArray();
    }

    /**
     * The samples seen over all epochs.
     *
     * @return samples
     */
    public long samples() {
        return history.stream().mapToLong(EpochStats::samples).sum();
    }

    /**
     * The optimizer steps taken over all epochs.
     *
     * @return steps
     */
    public long steps() {
        return history.stream().mapToLong(EpochStats::steps).sum();
    }

    /**
     * The training throughput over all epochs.
     *
     * @return samples per second of {@link #seconds()}
     */
    public double samplesPerSecond() {
        return seconds > 0 ? samples() / seconds : 0;
    }
}
