package dev.memfit.train;

import ai.djl.Device;

import java.util.List;

/**
 * What a {@link Trainer#fit} did: one entry per epoch, the wall time of the epochs and the device. What the model
 * learned stays with the model (for example {@link TopicModel#topicTerms()}).
 *
 * @param history one entry per epoch, epochs counted from 1 (fewer than configured when training stopped early)
 * @param seconds the wall time of all epochs together (setting up parameters and copying results out excluded)
 * @param device the device the model trained on, such as {@code cpu()} or {@code gpu(0)}
 */
public record FitResult(List<EpochStats> history, double seconds, Device device) {

    /**
     * Copies the history so that the result cannot change afterwards.
     *
     * @param history one entry per epoch
     * @param seconds the wall time of all epochs
     * @param device the training device
     */
    public FitResult {
        history = List.copyOf(history);
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
