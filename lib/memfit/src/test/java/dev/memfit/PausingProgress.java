package dev.memfit;

import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

/** A {@link ProgressListener} for tests whose tasks' first step waits for a latch: holds a writer in mid-work. */
public final class PausingProgress {

    private PausingProgress() {
    }

    /**
     * The listener.
     *
     * @param started counted down when a task's first step arrives
     * @param resume awaited (at most 60 s) before that first step returns
     * @return the listener
     */
    public static ProgressListener of(CountDownLatch started, CountDownLatch resume) {
        return (task, total, unit) -> new ProgressListener.Task() {
            boolean paused;

            @Override
            public void step(long steps) {
                if (!paused) {
                    paused = true;
                    started.countDown();
                    try {
                        if (!resume.await(60, TimeUnit.SECONDS)) {
                            throw new AssertionError("not resumed within 60 s");
                        }
                    } catch (InterruptedException e) {
                        throw new AssertionError(e);
                    }
                }
            }
        };
    }
}
