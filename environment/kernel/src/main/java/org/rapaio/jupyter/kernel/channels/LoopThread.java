package org.rapaio.jupyter.kernel.channels;

import java.util.logging.Level;
import java.util.logging.Logger;

/**
 * memfit's drop-in replacement for rapaio-jupyter-kernel 3.0.1's channel loop thread, placed ahead of the kernel jar
 * on the class path (same name, same public API).
 *
 * <p>It fixes the two start-up races that made about one kernel start in eight hang:
 * <ol>
 *   <li>3.0.1 sets its {@code running} flag <em>after</em> {@code Thread.start()}, so a loop could read
 *       {@code false} and end at once, leaving a channel (often the shell) unserved forever. Here the flag is set
 *       before the thread starts.</li>
 *   <li>The shell socket is bound before the kernel registers its message handlers; a request arriving in that
 *       window threw inside the loop body and killed the loop thread. Here an exception in one iteration is logged
 *       and the loop goes on: that request is dropped, and Jupyter clients resend {@code kernel_info_request} until
 *       they get a reply.</li>
 * </ol>
 */
public final class LoopThread extends Thread {

    private static final Logger LOGGER = Logger.getLogger(LoopThread.class.getSimpleName());

    private volatile boolean running;
    private final long sleep;
    private final Runnable loopBody;

    /**
     * Creates the loop.
     *
     * @param name the thread's name
     * @param sleep milliseconds between iterations
     * @param loopBody one iteration: poll the socket, handle what came
     */
    public LoopThread(String name, long sleep, Runnable loopBody) {
        super(name);
        this.sleep = sleep;
        this.loopBody = loopBody;
    }

    @Override
    public void run() {
        while (running) {
            try {
                loopBody.run();
            } catch (RuntimeException e) {
                LOGGER.log(Level.WARNING, getName() + ": dropped a message that could not be handled yet", e);
            }
            try {
                Thread.sleep(sleep);
            } catch (InterruptedException e) {
                running = false;
                Thread.currentThread().interrupt();
                return;
            }
        }
    }

    @Override
    public synchronized void start() {
        running = true;
        super.start();
    }

    /**
     * Ends the loop after the current iteration.
     */
    public void shutdown() {
        running = false;
    }
}
