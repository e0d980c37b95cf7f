package dev.memfit;

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;

/** A {@link ProgressListener} for tests: remembers every task started, the steps it was advanced by, and its close. */
public final class RecordingProgress implements ProgressListener {

    /**
     * One task as the listener saw it.
     *
     * @param name the task's name
     * @param total the announced number of steps
     * @param unit the name of a step
     * @param steps the sum of all steps reported
     * @param closed whether the task was closed
     */
    public record Seen(String name, long total, String unit, AtomicLong steps, AtomicBoolean closed) {
    }

    private final List<Seen> tasks = new CopyOnWriteArrayList<>();

    @Override
    public Task start(String task, long total, String unit) {
        Seen seen = new Seen(task, total, unit, new AtomicLong(), new AtomicBoolean());
        tasks.add(seen);
        return new Task() {
            @Override
            public void step(long steps) {
                seen.steps().addAndGet(steps);
            }

            @Override
            public void close() {
                seen.closed().set(true);
            }
        };
    }

    /**
     * The tasks started so far, in order.
     *
     * @return the tasks
     */
    public List<Seen> tasks() {
        return List.copyOf(tasks);
    }

    /**
     * The only task started, failing when there were none or several.
     *
     * @return the task
     */
    public Seen only() {
        if (tasks.size() != 1) {
            throw new AssertionError("expected one task, saw " + tasks.stream().map(Seen::name).toList());
        }
        return tasks.getFirst();
    }
}
