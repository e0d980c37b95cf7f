package dev.memfit.bench;

import dev.memfit.io.storage.Storage;

import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;

/**
 * A simulated spinning disk (and labelled as such): one head serves one request at a time. Reaching a request costs
 * a seek (growing with the square root of the distance, from track-to-track to full stroke) and the wait for the
 * platter to turn to it; reading costs its length at the media rate. Requests queued by several threads are served
 * in the order that reaches the next one soonest (rotational position ordering, what a disk's command queue does),
 * so more threads mean shorter seeks and waits: the speed-up with threads comes from the queue and saturates, as on
 * the hard drives cryoDRGN users measure (about 3x with 16 threads). The bytes come from the inner storage.
 *
 * <p>Files are laid out on the simulated disk one after another in the order they are first read; a request
 * continuing where the last one ended costs no positioning.
 */
public final class SpinningDisk implements Storage {

    /**
     * The disk's mechanics.
     *
     * @param trackToTrackNanos the shortest seek
     * @param fullStrokeNanos the longest seek, across {@code spanBytes}
     * @param rotationNanos one turn of the platter
     * @param bytesPerSecond the media transfer rate
     * @param spanBytes the bytes a full-stroke seek crosses
     */
    public record Model(long trackToTrackNanos, long fullStrokeNanos, long rotationNanos, long bytesPerSecond, long spanBytes) {

        /** Checks the values. */
        public Model {
            if (trackToTrackNanos < 0 || fullStrokeNanos < trackToTrackNanos || rotationNanos <= 0 || bytesPerSecond <= 0
                    || spanBytes <= 0) {
                throw new IllegalArgumentException("disk model needs 0 <= track-to-track <= full stroke, a positive "
                        + "rotation, rate and span: " + this);
            }
        }

        /**
         * A 7,200 rpm desktop drive: 1 ms track to track, 16 ms full stroke (about 8.5 ms on average), 8.3 ms a turn
         * (4.2 ms average wait), 150 MB/s, over a span as wide as the data (short-stroked: the data set alone).
         *
         * @param spanBytes the data's extent on the disk
         * @return the model
         */
        public static Model desktop7200(long spanBytes) {
            return new Model(1_000_000L, 16_000_000L, 60_000_000_000L / 7_200, 150_000_000L, Math.max(1, spanBytes));
        }

        /**
         * The seek time over a distance.
         *
         * @param distance bytes between the head and the request
         * @return nanoseconds; 0 for no distance
         */
        public long seekNanos(long distance) {
            if (distance == 0) {
                return 0;
            }
            double fraction = Math.min(1.0, Math.abs(distance) / (double) spanBytes);
            return trackToTrackNanos + Math.round((fullStrokeNanos - trackToTrackNanos) * Math.sqrt(fraction));
        }

        /**
         * The angle (a fraction of a turn) at which a disk address passes under the head: a fixed pseudo-random
         * function of the address, so the same data always sits at the same place.
         *
         * @param address the disk address
         * @return in [0, 1)
         */
        public double angle(long address) {
            long z = address * 0x9E3779B97F4A7C15L;
            z = (z ^ (z >>> 31)) * 0xBF58476D1CE4E5B9L;
            return ((z ^ (z >>> 29)) >>> 11) * 0x1.0p-53;
        }
    }

    /** The head: where it is and when the disk is next free, in the disk's own clock. */
    static final class Head {
        long address;
        long freeAt;
        boolean placed;
    }

    /** One queued request, in disk addresses. */
    record Request(long address, long length) {
    }

    /**
     * Serves the queued request that can start soonest (seek plus rotational wait from the head's state), moves the
     * head past it and returns its index; {@code head.freeAt} becomes the time its transfer ends.
     *
     * @param model the disk
     * @param head the head, updated
     * @param queue the queued requests (not modified)
     * @param now the disk clock when the choice is made
     * @return the index of the request served
     */
    static int serveNext(Model model, Head head, List<Request> queue, long now) {
        long start = Math.max(now, head.freeAt);
        int best = -1;
        long bestReady = Long.MAX_VALUE;
        for (int i = 0; i < queue.size(); i++) {
            long ready = start + positioning(model, head, queue.get(i), start);
            if (ready < bestReady) {
                bestReady = ready;
                best = i;
            }
        }
        Request chosen = queue.get(best);
        head.address = chosen.address() + chosen.length();
        head.placed = true;
        head.freeAt = bestReady + chosen.length() * 1_000_000_000L / model.bytesPerSecond();
        return best;
    }

    /** Seek plus the wait for the platter; nothing for a request that continues where the head is. */
    static long positioning(Model model, Head head, Request request, long start) {
        if (head.placed && request.address() == head.address) {
            return 0;
        }
        long seek = head.placed ? model.seekNanos(request.address() - head.address) : model.fullStrokeNanos() / 3;
        long arrival = start + seek;
        double under = (arrival % model.rotationNanos()) / (double) model.rotationNanos();
        double turn = model.angle(request.address()) - under;
        if (turn < 0) {
            turn += 1;
        }
        return seek + Math.round(turn * model.rotationNanos());
    }

    private final Storage inner;
    private final Model model;
    private final Head head = new Head();
    private final Map<Path, Long> layout = new HashMap<>();
    private long nextBase;
    private final List<Pending> queue = new ArrayList<>();
    private Thread arm;
    private boolean closed;
    private final long epochNanos = System.nanoTime();

    /** A request and its completion; identity, not value, equality (two reads of one place are two requests). */
    private static final class Pending {
        private final Request request;
        private final CompletableFuture<Long> done;

        Pending(Request request, CompletableFuture<Long> done) {
            this.request = request;
            this.done = done;
        }

        Request request() {
            return request;
        }

        CompletableFuture<Long> done() {
            return done;
        }
    }

    private SpinningDisk(Storage inner, Model model) {
        this.inner = inner;
        this.model = model;
    }

    /**
     * A clearly simulated spinning disk over real storage.
     *
     * @param inner where the bytes really come from
     * @param model the disk's mechanics, e.g. {@link Model#desktop7200(long)}
     * @return the storage
     */
    public static Storage over(Storage inner, Model model) {
        return new SpinningDisk(inner, model);
    }

    @Override
    public void read(Path file, long position, MemorySegment into) {
        Pending pending;
        synchronized (this) {
            if (closed) {
                throw new IllegalStateException("the simulated disk over " + inner.describe() + " is closed");
            }
            Long base = layout.get(file);
            if (base == null) {
                base = nextBase;
                layout.put(file, base);
                nextBase += inner.size(file);
            }
            pending = new Pending(new Request(base + position, into.byteSize()), new CompletableFuture<>());
            queue.add(pending);
            if (arm == null) {
                arm = Thread.ofPlatform().daemon().name("memfit-simulated-disk").start(this::serveQueue);
            }
            notifyAll();
        }
        long end;
        try {
            end = pending.done().get();
        } catch (InterruptedException e) {
            synchronized (this) {
                queue.remove(pending);     // not served: the arm should not spend simulated time on it
            }
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while waiting for the simulated disk", e);
        } catch (ExecutionException e) {
            throw new IllegalStateException("simulated disk failed", e.getCause());
        }
        inner.read(file, position, into);
        SlowStorage.parkUntil(epochNanos + end);
    }

    /**
     * The disk's arm, on a thread of its own: takes the queued request that can start soonest when the head is free,
     * then waits, in real time, until its transfer ends, so requests that arrive meanwhile join the next choice.
     */
    private void serveQueue() {
        while (true) {
            Pending next;
            long freeAt;
            synchronized (this) {
                while (queue.isEmpty()) {
                    if (closed) {
                        arm = null;
                        return;
                    }
                    try {
                        wait();
                    } catch (InterruptedException e) {
                        return;
                    }
                }
                List<Request> requests = queue.stream().map(Pending::request).toList();
                int chosen = serveNext(model, head, requests, System.nanoTime() - epochNanos);
                next = queue.remove(chosen);
                freeAt = head.freeAt;
            }
            next.done().complete(freeAt);
            SlowStorage.parkUntil(epochNanos + freeAt);
        }
    }

    @Override
    public long size(Path file) {
        return inner.size(file);
    }

    @Override
    public String describe() {
        return String.format("simulated spinning disk (one head, seeks %.1f-%.1f ms, %.0f rpm, %.0f MiB/s, queued requests "
                        + "served nearest first)", model.trackToTrackNanos() / 1e6, model.fullStrokeNanos() / 1e6,
                60e9 / model.rotationNanos(), model.bytesPerSecond() / (1024.0 * 1024.0));
    }

    @Override
    public void close() {
        synchronized (this) {
            closed = true;
            notifyAll();
        }
        inner.close();
    }
}
