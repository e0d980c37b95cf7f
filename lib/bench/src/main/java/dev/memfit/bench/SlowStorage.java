package dev.memfit.bench;

import dev.memfit.io.storage.Storage;

import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.locks.LockSupport;

/**
 * Simulated slow storage (a stand-in for a network file system or a spinning disk, and labelled as such): each
 * request waits a fixed latency, concurrently with other requests; opening a file that is not among the
 * {@value #OPEN_FILES} most recently used costs one more latency (the metadata round trip of a network file system);
 * and the transfers of all requests share one bandwidth cap. The bytes themselves come from the inner storage.
 */
public final class SlowStorage implements Storage {

    private static final int OPEN_FILES = 256;

    private final Storage inner;
    private final long latencyNanos;
    private final long bytesPerSecond;
    private final java.util.Map<Path, Boolean> open = new java.util.LinkedHashMap<>(64, 0.75f, true) {
        @Override
        protected boolean removeEldestEntry(java.util.Map.Entry<Path, Boolean> eldest) {
            return size() > OPEN_FILES;
        }
    };
    private long busyUntilNanos;

    private SlowStorage(Storage inner, Duration latency, long bytesPerSecond) {
        this.inner = inner;
        this.latencyNanos = latency.toNanos();
        this.bytesPerSecond = bytesPerSecond;
    }

    /**
     * A clearly simulated slow storage: every request waits {@code latency} (requests overlap, as on a network file
     * system or a disk queue), and all requests together share {@code bytesPerSecond}.
     *
     * @param inner where the bytes really come from
     * @param latency the wait per request
     * @param bytesPerSecond the shared bandwidth cap; 0 for none
     * @return the storage
     */
    public static Storage over(Storage inner, Duration latency, long bytesPerSecond) {
        if (latency.isNegative() || bytesPerSecond < 0) {
            throw new IllegalArgumentException("latency and bandwidth must not be negative: " + latency + ", "
                    + bytesPerSecond + " B/s");
        }
        return new SlowStorage(inner, latency, bytesPerSecond);
    }

    @Override
    public void read(Path file, long position, MemorySegment into) {
        long start = System.nanoTime();
        boolean opening;
        synchronized (open) {
            opening = open.put(file, Boolean.TRUE) == null;
        }
        long latency = opening ? 2 * latencyNanos : latencyNanos;
        long transferEnd = start + latency;
        if (bytesPerSecond > 0) {
            long transfer = into.byteSize() * 1_000_000_000L / bytesPerSecond;
            synchronized (this) {
                // The shared link is free again at busyUntil: transfers queue behind one another.
                long transferStart = Math.max(start + latency, busyUntilNanos);
                busyUntilNanos = transferStart + transfer;
                transferEnd = busyUntilNanos;
            }
        }
        inner.read(file, position, into);
        parkUntil(transferEnd);
    }

    /**
     * Waits until {@code System.nanoTime()} reaches a deadline, or the thread is interrupted (an interrupted thread
     * would otherwise spin: parking returns at once while the flag is set). The simulated storages' one way to wait.
     *
     * @param deadlineNanos the deadline on {@link System#nanoTime()}'s clock
     */
    static void parkUntil(long deadlineNanos) {
        long wait;
        while ((wait = deadlineNanos - System.nanoTime()) > 0 && !Thread.currentThread().isInterrupted()) {
            LockSupport.parkNanos(wait);
        }
    }

    @Override
    public long size(Path file) {
        return inner.size(file);
    }

    @Override
    public String describe() {
        return String.format("simulated slow storage (%.1f ms per request, one more to open a file%s)", latencyNanos / 1e6,
                bytesPerSecond > 0 ? String.format(", %.1f MiB/s shared", bytesPerSecond / (1024.0 * 1024.0)) : "");
    }

    @Override
    public void close() {
        inner.close();
    }
}
