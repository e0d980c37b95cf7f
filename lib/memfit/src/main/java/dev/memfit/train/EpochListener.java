package dev.memfit.train;

/**
 * Called by a trainer after each epoch, with what the epoch did: to mark a memory probe, plot a curve as it grows or
 * log. To stop training early, see {@link TrainerBuilder#optStopWhen(java.util.function.Predicate)}.
 *
 * <pre>{@code
 * TopicModel.builder().setTopics(10).optEpochListener(stats -> probe.mark("epoch " + stats.epoch())).build();
 * }</pre>
 */
@FunctionalInterface
public interface EpochListener {

    /**
     * Receives the statistics of an epoch that just ended.
     *
     * @param stats the epoch's statistics; epochs are counted from 1
     */
    void onEpoch(EpochStats stats);
}
