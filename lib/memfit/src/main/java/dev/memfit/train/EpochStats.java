package dev.memfit.train;

/**
 * What one training epoch did.
 *
 * @param epoch the epoch number, from 0
 * @param loss the mean loss per sample over the epoch
 * @param seconds the wall time of the epoch, loading included
 * @param batches the optimizer steps taken
 * @param samples the samples seen
 */
public record EpochStats(int epoch, double loss, double seconds, long batches, long samples) {
}
