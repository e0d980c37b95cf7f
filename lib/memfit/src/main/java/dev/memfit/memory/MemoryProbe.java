package dev.memfit.memory;

import dev.memfit.NativeMemory;
import ai.djl.Device;
import ai.djl.util.cuda.CudaUtils;
import dev.memfit.Threads;

import java.io.IOException;
import java.lang.management.BufferPoolMXBean;
import java.lang.management.ManagementFactory;
import java.lang.management.MemoryMXBean;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;

/**
 * Samples the process's memory on a background timer: heap, direct buffers, memfit's native and mapped memory,
 * resident set size split into anonymous and file-backed pages (from {@code /proc/self/status}), and device memory
 * when a GPU is given.
 *
 * <pre>{@code
 * MemoryTimeline timeline;
 * try (MemoryProbe probe = MemoryProbe.start("mapped", Duration.ofMillis(50))) {
 *     train();
 *     timeline = probe.stop();
 * }
 * long peakRss = timeline.peakRss();
 * }</pre>
 */
public final class MemoryProbe implements AutoCloseable {

    private static final Path PROC_STATUS = Path.of("/proc/self/status");

    private final String name;
    private final Device device;
    private final long start = System.nanoTime();
    private final List<MemorySample> samples = Collections.synchronizedList(new ArrayList<>());
    private final List<MemoryTimeline.Mark> marks = Collections.synchronizedList(new ArrayList<>());
    private final ScheduledExecutorService timer;
    private MemoryTimeline result;
    private final long mallocAtStart = dev.memfit.ProcessMemory.mallocInUse();
    private final java.util.concurrent.atomic.AtomicLong mallocPeak = new java.util.concurrent.atomic.AtomicLong(mallocAtStart);
    /** The C allocator's bytes in use at each reading, in the order of {@link #samples}. */
    private final List<Long> mallocReadings = new ArrayList<>();
    /** The readings as {@link #stop()} left them, aligned with its timeline; null while sampling. */
    private long[] mallocFinal;

    private MemoryProbe(String name, Duration interval, Device device) {
        this.name = name;
        this.device = device;
        this.timer = Executors.newSingleThreadScheduledExecutor(Threads.daemon("memfit-memory-probe"));
        sample();
        timer.scheduleAtFixedRate(this::sample, interval.toNanos(), interval.toNanos(), TimeUnit.NANOSECONDS);
    }

    /**
     * Starts sampling host memory.
     *
     * @param name a label for plots
     * @param interval time between readings (10-100 ms is typical)
     * @return the running probe
     */
    public static MemoryProbe start(String name, Duration interval) {
        return new MemoryProbe(name, interval, null);
    }

    /**
     * Starts sampling host memory and the memory of a device (measured when it is a GPU).
     *
     * @param name a label for plots
     * @param interval time between readings
     * @param device the device training runs on
     * @return the running probe
     */
    public static MemoryProbe start(String name, Duration interval, Device device) {
        return new MemoryProbe(name, interval, device);
    }

    /**
     * Labels the current moment, such as "epoch 2".
     *
     * @param label the label
     */
    public void mark(String label) {
        marks.add(new MemoryTimeline.Mark(elapsed(), label));
    }

    /**
     * One reading now, outside any probe.
     *
     * @return the reading (its time is 0)
     */
    public static MemorySample now() {
        return read(0, null);
    }

    /**
     * One reading now, outside any probe, with the memory used on a GPU.
     *
     * @param device where training runs: a GPU's used memory is read ({@code deviceBytes}), none for the CPU
     * @return the reading (its time is 0)
     */
    public static MemorySample now(Device device) {
        return read(0, device);
    }

    private double elapsed() {
        return (System.nanoTime() - start) / 1e9;
    }

    private void sample() {
        // its own lock, not the probe's: stop() holds that while it waits for the timer's last reading
        synchronized (mallocReadings) {
            if (mallocFinal != null) {
                return;
            }
            samples.add(read(elapsed(), device));
            long inUse = dev.memfit.ProcessMemory.mallocInUse();
            mallocReadings.add(inUse);
            mallocPeak.accumulateAndGet(inUse, Math::max);
        }
    }

    /**
     * The C allocator's bytes in use ({@link dev.memfit.ProcessMemory#mallocInUse()}) at each reading of the timeline
     * {@link #stop()} returns, in its order: to draw beside the resident set.
     *
     * @return bytes per reading, -1 each where the allocator cannot be read
     */
    public long[] mallocInUse() {
        synchronized (mallocReadings) {
            return mallocFinal != null ? mallocFinal.clone() : mallocReadings.stream().mapToLong(Long::longValue).toArray();
        }
    }

    /**
     * How far the C allocator's memory in use ({@link dev.memfit.ProcessMemory#mallocInUse()}: PyTorch's CPU tensors,
     * native buffers) rose above what it was when the probe started, at the highest reading so far: the memory a run
     * added, without what the allocator keeps after frees or the JVM's heap. Short peaks between readings are missed:
     * sample at a few milliseconds to see a training step's.
     *
     * @return bytes, or -1 where the allocator cannot be read (not glibc)
     */
    public long mallocPeakGrowth() {
        return mallocAtStart < 0 ? -1 : mallocPeak.get() - mallocAtStart;
    }

    private static MemorySample read(double seconds, Device device) {
        MemoryMXBean memory = ManagementFactory.getMemoryMXBean();
        long direct = 0;
        for (BufferPoolMXBean pool : ManagementFactory.getPlatformMXBeans(BufferPoolMXBean.class)) {
            if (pool.getName().equals("direct")) {
                direct = pool.getMemoryUsed();
            }
        }
        long[] rss = readRss();
        long deviceBytes = -1;
        if (device != null && device.isGpu()) {
            deviceBytes = CudaUtils.getGpuMemory(device).getUsed();
        }
        java.lang.management.MemoryUsage heap = memory.getHeapMemoryUsage();   // one reading: used <= committed
        return new MemorySample(seconds, heap.getUsed(), heap.getMax(), direct, NativeMemory.ALLOCATED.bytes(),
                NativeMemory.MAPPED.bytes(), rss[0], rss[1], rss[2], deviceBytes, heap.getCommitted());
    }

    /** VmRSS, RssAnon and RssFile in bytes, or -1 each where /proc is not there. */
    private static long[] readRss() {
        long[] values = {-1, -1, -1};
        try {
            for (String line : Files.readAllLines(PROC_STATUS)) {
                int field = line.startsWith("VmRSS:") ? 0 : line.startsWith("RssAnon:") ? 1 : line.startsWith("RssFile:") ? 2 : -1;
                if (field >= 0) {
                    String[] parts = line.substring(line.indexOf(':') + 1).trim().split("\\s+");
                    values[field] = Long.parseLong(parts[0]) * 1024;
                }
            }
        } catch (IOException | RuntimeException e) {
            // Not Linux: RSS is reported as -1 (not measured), never guessed.
        }
        return values;
    }

    /**
     * Stops sampling, takes a last reading and returns the timeline. Idempotent.
     *
     * @return the timeline
     */
    public synchronized MemoryTimeline stop() {
        if (result == null) {
            timer.shutdownNow();
            try {
                timer.awaitTermination(1, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            synchronized (mallocReadings) {
                // the timer may still be finishing a reading (its wait above timed out): the last one and the copy of
                // both lists happen under the readings' lock, and no reading is added after it
                sample();
                result = new MemoryTimeline(name, List.copyOf(samples), List.copyOf(marks));
                mallocFinal = mallocReadings.stream().mapToLong(Long::longValue).toArray();
            }
        }
        return result;
    }

    /** Stops sampling. */
    @Override
    public void close() {
        stop();
    }
}
