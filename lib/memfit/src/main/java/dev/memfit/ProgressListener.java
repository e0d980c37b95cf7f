package dev.memfit;

/**
 * Where long work reports its progress. Library code that takes a while (loading, packing, copying, writing) calls a
 * listener passed in and never prints by itself; the default, {@link #console()}, draws a bar in a terminal and in a
 * notebook, and {@link #silent()} reports nothing.
 *
 * <pre>{@code
 * Npy.load(file, ProgressListener.silent());
 * Pack.pack(folder, output, (task, total, unit) -> myWidget.start(task, total));   // your own display
 * }</pre>
 */
@FunctionalInterface
public interface ProgressListener {

    /**
     * Starts reporting one task.
     *
     * @param task what is being done, such as "Packing samples"
     * @param total the number of steps, or -1 when unknown
     * @param unit the name of a step, such as "files" or "MiB"
     * @return the task's progress, advanced by the work and closed when it ends
     */
    Task start(String task, long total, String unit);

    /**
     * Reports one line worth keeping, such as where a fit resumed from (default: nothing; the console prints it).
     *
     * @param line the line
     */
    default void note(String line) {
    }

    /** The progress of one task: {@code steps -> ...} is a task that only counts. */
    @FunctionalInterface
    interface Task extends AutoCloseable {

        /**
         * Advances the task.
         *
         * @param steps steps done since the last call
         */
        void step(long steps);

        /**
         * Shows a short message beside the progress, such as the current loss.
         *
         * @param message the message
         */
        default void message(String message) {
        }

        /** Ends the task. */
        @Override
        default void close() {
        }
    }

    /**
     * A console progress bar (carriage-return updates on standard output, which notebooks show in place), silenced
     * with {@code -Dmemfit.progress=false} or {@code MEMFIT_PROGRESS=false}.
     *
     * @return the listener
     */
    static ProgressListener console() {
        return new ProgressListener() {
            @Override
            public Task start(String task, long total, String unit) {
                return Progress.bar(task, total, unit);
            }

            @Override
            public void note(String line) {
                System.out.println(line);
            }
        };
    }

    /**
     * Reports nothing.
     *
     * @return the listener
     */
    static ProgressListener silent() {
        return (task, total, unit) -> steps -> {
        };
    }
}
