package dev.memfit.memory;

import dev.memfit.NativeMemory;

/**
 * One reading of the process's memory. Byte counts; -1 where the quantity cannot be measured here.
 *
 * @param seconds time since the probe started
 * @param heapUsed Java heap in use
 * @param heapMax the heap limit ({@code -Xmx})
 * @param directBuffers NIO direct buffers (DJL and others allocate these)
 * @param nativeAllocated native memory memfit allocated ({@link NativeMemory#ALLOCATED})
 * @param mapped bytes of files memfit has mapped ({@link NativeMemory#MAPPED}; address space, not RAM)
 * @param rss resident set size of the process ({@code VmRSS})
 * @param rssAnon resident anonymous memory: heap, native allocations, PyTorch tensors ({@code RssAnon})
 * @param rssFile resident file-backed pages: mapped data that is in RAM now ({@code RssFile})
 * @param device memory used on the accelerator, or -1 without one
 * @param heapCommitted Java heap the JVM has committed (its touched pages are part of {@code rssAnon})
 */
public record MemorySample(double seconds, long heapUsed, long heapMax, long directBuffers, long nativeAllocated,
                           long mapped, long rss, long rssAnon, long rssFile, long device, long heapCommitted) {

    /**
     * Resident anonymous memory outside the Java heap: {@code rssAnon} less the committed heap. Off-heap data (an eager
     * loader's images, PyTorch's tensors) shows here without the heap's own growing and shrinking, which can hide it:
     * a JVM that gives back garbage-collected heap while a loader allocates leaves {@code rssAnon} flat.
     *
     * @return bytes, or -1 where RSS is not measured
     */
    public long anonOutsideHeap() {
        return rssAnon < 0 ? -1 : rssAnon - heapCommitted;
    }
}
