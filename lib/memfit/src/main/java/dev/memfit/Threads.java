package dev.memfit;

import java.util.concurrent.ThreadFactory;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Thread factories for memfit's background work (loaders, lazy readers, probes).
 */
public final class Threads {

    private Threads() {
    }

    /**
     * Daemon threads named {@code prefix-1}, {@code prefix-2}...: they never keep a JVM or a notebook kernel
     * alive, and show up by name in thread dumps.
     *
     * @param prefix the name prefix, such as {@code memfit-loader-3}
     * @return the factory
     */
    public static ThreadFactory daemon(String prefix) {
        AtomicInteger count = new AtomicInteger();
        return runnable -> {
            Thread thread = new Thread(runnable, prefix + "-" + count.incrementAndGet());
            thread.setDaemon(true);
            return thread;
        };
    }
}
