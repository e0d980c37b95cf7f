package dev.memfit.plot;

import dev.memfit.MemfitException;
import dev.memfit.data.Batch;
import dev.memfit.data.Loader;
import dev.memfit.memory.MemoryProbe;
import dev.memfit.memory.MemoryTimeline;

import java.time.Duration;
import java.util.function.Supplier;

/**
 * The measurements every notebook takes, in one line each: wall time, the fastest of several passes, epochs of a
 * loader timed (each checked to yield every sample), and the memory timeline of a piece of work.
 *
 * <pre>{@code
 * double[] seconds = Measure.epochs(loader, 3);                       // seconds per epoch
 * var run = Measure.probed("mapped .npy", () -> model.fit(loader));   // the fit and its memory timeline
 * display(Charts.memoryTimeline("memory", run.timeline()));
 * }</pre>
 */
public final class Measure {

    /** How often {@link #probed} samples memory. */
    public static final Duration SAMPLING = Duration.ofMillis(20);

    private Measure() {
    }

    /**
     * A result with the seconds it took.
     *
     * @param value what the work returned
     * @param seconds wall-clock seconds
     * @param <T> the result's type
     */
    public record Timed<T>(T value, double seconds) {
    }

    /**
     * A result with the memory timeline sampled while it was computed.
     *
     * @param value what the work returned
     * @param timeline memory every {@link #SAMPLING}, from start to end
     * @param <T> the result's type
     */
    public record Probed<T>(T value, MemoryTimeline timeline) {
        /**
         * Wall-clock seconds from the first sample to the last.
         *
         * @return seconds
         */
        public double seconds() {
            return timeline.seconds();
        }
    }

    /**
     * The wall-clock seconds a piece of work takes.
     *
     * @param work the work
     * @return seconds
     */
    public static double seconds(Runnable work) {
        long start = System.nanoTime();
        work.run();
        return (System.nanoTime() - start) / 1e9;
    }

    /**
     * A result and the wall-clock seconds it took.
     *
     * @param work the work
     * @param <T> the result's type
     * @return the result and its seconds
     */
    public static <T> Timed<T> timed(Supplier<T> work) {
        long start = System.nanoTime();
        T value = work.get();
        return new Timed<>(value, (System.nanoTime() - start) / 1e9);
    }

    /**
     * The seconds of the fastest of several passes of the same work: the first ones pay for the JIT and bring pages
     * in, and a machine shared with other work slows some passes down, never speeds one up.
     *
     * @param passes at least 1
     * @param work one pass
     * @return the fastest pass's seconds
     */
    public static double fastest(int passes, Runnable work) {
        if (passes < 1) {
            throw new MemfitException("fastest(" + passes + ", ...): at least one pass");
        }
        double best = Double.MAX_VALUE;
        for (int pass = 0; pass < passes; pass++) {
            best = Math.min(best, seconds(work));
        }
        return best;
    }

    /**
     * Runs the work untimed, again and again, until {@code atLeast} has passed (at least once): before timing a few
     * milliseconds of work, so that the JIT has compiled it. On one CPU the compiler competes with the work itself, and
     * four short passes could all run before the hot loop was compiled (a shard read 12-20 times slower than in other
     * runs of the same notebook).
     *
     * @param atLeast how long to warm up
     * @param work one pass
     */
    public static void warmUp(Duration atLeast, Runnable work) {
        long until = System.nanoTime() + atLeast.toNanos();
        do {
            work.run();
        } while (System.nanoTime() < until);
    }

    /**
     * Epochs of a loader, every batch taken and dropped (so that the loading itself is timed): the seconds of each.
     *
     * @param loader the loader
     * @param epochs epochs 0 to {@code epochs - 1}
     * @return seconds per epoch
     * @throws MemfitException when an epoch yields another number of samples than the loader says it has
     */
    public static double[] epochs(Loader loader, int epochs) {
        return epochs(loader, epochs, null);
    }

    /**
     * Epochs of a loader timed as {@link #epochs(Loader, int)} does, each marked on a memory probe ("epoch 1", ...).
     *
     * @param loader the loader
     * @param epochs epochs 0 to {@code epochs - 1}
     * @param probe the probe to mark, or null
     * @return seconds per epoch
     */
    public static double[] epochs(Loader loader, int epochs, MemoryProbe probe) {
        double[] seconds = new double[epochs];
        long expected = -1;     // the first epoch's count: every later epoch must yield as many
        for (int e = 0; e < epochs; e++) {
            long start = System.nanoTime();
            long samples = 0;
            for (Batch batch : loader.epoch(e)) {
                samples += batch.size();
            }
            seconds[e] = (System.nanoTime() - start) / 1e9;
            if (probe != null) {
                probe.mark("epoch " + (e + 1));
            }
            if (expected < 0) {
                expected = samples;
            }
            if (samples != expected || samples == 0 && loader.batchesPerEpoch() > 0) {
                throw new MemfitException(loader.describe() + ": epoch " + (e + 1) + " yielded " + samples
                        + " samples, epoch 1 " + expected);
            }
        }
        return seconds;
    }

    /**
     * A piece of work and the memory timeline sampled every {@link #SAMPLING} while it ran.
     *
     * @param name the timeline's name, for charts
     * @param work the work
     * @param <T> the result's type
     * @return the result and its timeline
     */
    public static <T> Probed<T> probed(String name, Supplier<T> work) {
        try (MemoryProbe probe = MemoryProbe.start(name, SAMPLING)) {
            T value = work.get();
            return new Probed<>(value, probe.stop());
        }
    }

    /**
     * The memory timeline of a piece of work, device memory included (a GPU's, read through PyTorch).
     *
     * @param name the timeline's name, for charts
     * @param device the device whose memory is sampled too
     * @param work the work, given the probe to mark its steps on
     * @return the timeline
     */
    public static MemoryTimeline probed(String name, ai.djl.Device device, java.util.function.Consumer<MemoryProbe> work) {
        try (MemoryProbe probe = MemoryProbe.start(name, SAMPLING, device)) {
            work.accept(probe);
            return probe.stop();
        }
    }

    /**
     * How much a quantity grew during a run: its peak less its first sample (such as
     * {@code Measure.added(run, MemorySample::rssAnon)}: the anonymous memory the run added).
     *
     * @param run the timeline
     * @param quantity what to read from each sample
     * @return bytes
     */
    public static long added(MemoryTimeline run, java.util.function.ToLongFunction<dev.memfit.memory.MemorySample> quantity) {
        return run.peak(quantity) - quantity.applyAsLong(run.samples().getFirst());
    }

    /**
     * The live heap: the least of three readings, each after a full collection (the kernel's own threads allocate now
     * and then, and a reading taken while their buffers are live would count them).
     *
     * @return bytes
     */
    public static long liveHeap() {
        long least = Long.MAX_VALUE;
        Runtime runtime = Runtime.getRuntime();
        for (int i = 0; i < 3; i++) {
            System.gc();
            least = Math.min(least, runtime.totalMemory() - runtime.freeMemory());
            try {
                Thread.sleep(20);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                break;
            }
        }
        return least;
    }

    /**
     * The memory timeline of a piece of work that returns nothing.
     *
     * @param name the timeline's name, for charts
     * @param work the work, given the probe to mark its steps on
     * @return the timeline
     */
    public static MemoryTimeline probed(String name, java.util.function.Consumer<MemoryProbe> work) {
        try (MemoryProbe probe = MemoryProbe.start(name, SAMPLING)) {
            work.accept(probe);
            return probe.stop();
        }
    }
}
