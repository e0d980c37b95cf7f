package dev.memfit;

import me.tongfei.progressbar.ConsoleProgressBarConsumer;
import me.tongfei.progressbar.ProgressBar;
import me.tongfei.progressbar.ProgressBarBuilder;
import me.tongfei.progressbar.ProgressBarStyle;

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
                .setMaxRenderedLength(100)
                .setUpdateIntervalMillis(500)
                .showSpeed()
                .setConsumer(new ConsoleProgressBarConsumer(System.out, 100))
                .build();
        return new Progress(bar);
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
