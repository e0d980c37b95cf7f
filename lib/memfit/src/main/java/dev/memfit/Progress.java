package dev.memfit;

import me.tongfei.progressbar.ConsoleProgressBarConsumer;
import me.tongfei.progressbar.DefaultProgressBarRenderer;
import me.tongfei.progressbar.ProgressBar;
import me.tongfei.progressbar.ProgressBarBuilder;
import me.tongfei.progressbar.ProgressBarStyle;
import me.tongfei.progressbar.ProgressState;

import java.text.DecimalFormat;
import java.time.Duration;
import java.time.temporal.ChronoUnit;
import java.util.Optional;
import java.util.logging.Level;
import java.util.logging.Logger;

/**
 * A progress bar for long work, in a terminal and in a notebook (carriage-return updates on standard output): the
 * task of {@link ProgressListener#console()}.
 *
 * <p>Silenced with {@code -Dmemfit.progress=false} or {@code MEMFIT_PROGRESS=false}.
 */
public final class Progress implements ProgressListener.Task {

    static {
        // Outside a terminal, JLine (used for the terminal width) warns that it falls back to a dumb terminal.
        Logger.getLogger("org.jline").setLevel(Level.SEVERE);
    }

    private final ProgressBar bar;

    private Progress(ProgressBar bar) {
        this.bar = bar;
    }

    /**
     * Starts a bar.
     *
     * @param task what is being done, such as "Writing rows"
     * @param total the number of steps, or -1 when unknown
     * @param unit the name of a step, such as "rows" or "MiB"
     * @return the bar, to be closed when the work ends
     */
    public static Progress bar(String task, long total, String unit) {
        if (!enabled()) {
            return new Progress(null);
        }
        ProgressBar bar = new ProgressBarBuilder()
                .setTaskName(task)
                .setInitialMax(total)
                .setUnit(" " + unit, 1)
                .setStyle(ProgressBarStyle.ASCII)
                .setMaxRenderedLength(140)
                .setUpdateIntervalMillis(500)
                .setRenderer(new Renderer(" " + unit))
                .setConsumer(new ConsoleProgressBarConsumer(System.out, 140))
                .build();
        return new Progress(bar);
    }

    /**
     * The library's renderer with the rate taken over the elapsed time to the nanosecond: its own divides by whole
     * seconds, so work done in under a second showed "? rows/s" and 2.9 s of work was rated as 2 s.
     */
    static final class Renderer extends DefaultProgressBarRenderer {
        private final String unit;
        private final DecimalFormat format = new DecimalFormat("#,##0.0");

        Renderer(String unit) {
            super(ProgressBarStyle.ASCII, unit, 1, true, new DecimalFormat("#,##0.0"), ChronoUnit.SECONDS, true,
                    Renderer::linearEta);
            this.unit = unit;
        }

        @Override
        protected String speed(ProgressState progress) {
            return rate(progress.getCurrent() - progress.getStart(), progress.getElapsedAfterStart());
        }

        /** Steps per second over {@code elapsed}; "?" before a millisecond has passed. */
        String rate(long steps, Duration elapsed) {
            long nanos = elapsed.toNanos();
            if (nanos < 1_000_000L) {
                return "?" + unit + "/s";
            }
            return format.format(steps * 1e9 / nanos) + unit + "/s";
        }

        /** The remaining steps at the rate so far (what the library's default estimates, which it keeps private). */
        private static Optional<Duration> linearEta(ProgressState progress) {
            long done = progress.getCurrent() - progress.getStart();
            if (progress.getMax() <= 0 || progress.isIndefinite() || done <= 0) {
                return Optional.empty();
            }
            long nanos = progress.getElapsedAfterStart().toNanos();
            return Optional.of(Duration.ofNanos((long) (nanos * (double) (progress.getMax() - progress.getCurrent()) / done)));
        }
    }

    private static boolean enabled() {
        return !Params.string("progress", "true").equalsIgnoreCase("false");
    }

    /**
     * Advances the bar.
     *
     * @param steps steps done since the last call
     */
    @Override
    public void step(long steps) {
        if (bar != null) {
            bar.stepBy(steps);
        }
    }

    /**
     * Shows a short message after the bar, such as the current loss.
     *
     * @param message the message
     */
    @Override
    public void message(String message) {
        if (bar != null) {
            bar.setExtraMessage(" " + message);
        }
    }

    /**
     * Completes the bar and moves to a new line.
     */
    @Override
    public void close() {
        if (bar != null) {
            bar.close();
        }
    }
}
