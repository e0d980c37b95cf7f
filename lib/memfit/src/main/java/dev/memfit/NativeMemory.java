package dev.memfit;

import dev.memfit.memory.MemoryProbe;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Counts the native memory memfit allocates and maps through {@code java.lang.foreign}.
 *
 * <p>The JVM's buffer-pool beans see neither {@code Arena} allocations nor segment mappings, so memfit keeps its own
 * tally, which {@link MemoryProbe} reports beside heap and RSS.
 */
public final class NativeMemory {

    /** Native memory allocated for data and batch buffers. */
    public static final NativeMemory ALLOCATED = new NativeMemory("allocated");
    /** Bytes of files currently memory-mapped (address space, not resident memory). */
    public static final NativeMemory MAPPED = new NativeMemory("mapped");

    private final String name;
    private final AtomicLong bytes = new AtomicLong();

    private NativeMemory(String name) {
        this.name = name;
    }

    /**
     * Adds bytes to the tally until the returned reservation is closed.
     *
     * @param size bytes allocated or mapped
     * @return the reservation; closing it more than once subtracts once
     */
    public Reservation reserve(long size) {
        bytes.addAndGet(size);
        return new Reservation(this, size);
    }

    /**
     * The bytes currently counted.
     *
     * @return the tally
     */
    public long bytes() {
        return bytes.get();
    }

    @Override
    public String toString() {
        return "NativeMemory[" + name + ": " + bytes.get() + " bytes]";
    }

    /** Bytes counted in a {@link NativeMemory} tally until closed. */
    public static final class Reservation implements AutoCloseable {
        private final NativeMemory owner;
        private final long size;
        private final AtomicBoolean released = new AtomicBoolean();

        private Reservation(NativeMemory owner, long size) {
            this.owner = owner;
            this.size = size;
        }

        /**
         * Subtracts the reserved bytes, once.
         */
        @Override
        public void close() {
            if (released.compareAndSet(false, true)) {
                owner.bytes.addAndGet(-size);
            }
        }
    }
}
