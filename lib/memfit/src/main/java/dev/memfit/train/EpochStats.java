package dev.memfit.train;

/**
 * What one training epoch did.
 *
 * @param epoch the epoch number, counted from 1
 * @param loss the mean loss per sample over the epoch
 * @param seconds the wall time of the epoch, loading included
 * @param batches the batches the loader yielded
 * @param steps the optimizer steps taken: {@code batches} divided by the gradient accumulation, rounded up
 * @param samples the samples seen
 */
public record EpochStats(int epoch, double loss, double seconds, long batches, long steps, long samples) {

    /**
     * The training throughput of the epoch.
     *
     * @return samples per second of wall time
     */
    public double samplesPerSecond() {
        return seconds > 0 ? samples / seconds : 0;
    }
}
