package dev.memfit.memory;

import java.util.List;
import java.util.function.ToLongFunction;

/**
 * The readings a {@link MemoryProbe} took, with labelled moments, and their peaks.
 *
 * @param name a label for plots and tables
 * @param samples readings in time order
 * @param marks labelled moments
 */
public record MemoryTimeline(String name, List<MemorySample> samples, List<Mark> marks) {

    /**
     * A labelled moment, such as the start of an epoch.
     *
     * @param seconds time since the probe started
     * @param label the label
     */
    public record Mark(double seconds, String label) {
    }

    /**
     * The largest value of one quantity.
     *
     * @param quantity such as {@code MemorySample::rss}
     * @return the peak, or -1 without readings
     */
    public long peak(ToLongFunction<MemorySample> quantity) {
        return samples.stream().mapToLong(quantity).max().orElse(-1);
    }

    /**
     * The peak heap in use.
     *
     * @return bytes
     */
    public long peakHeap() {
        return peak(MemorySample::heapUsed);
    }

    /**
     * The peak resident set size.
     *
     * @return bytes
     */
    public long peakRss() {
        return peak(MemorySample::rss);
    }

    /**
     * The peak resident anonymous memory (everything but file pages).
     *
     * @return bytes
     */
    public long peakRssAnon() {
        return peak(MemorySample::rssAnon);
    }

    /**
     * The duration covered.
     *
     * @return seconds from start to the last reading
     */
    public double seconds() {
        return samples.isEmpty() ? 0 : samples.getLast().seconds();
    }
}
