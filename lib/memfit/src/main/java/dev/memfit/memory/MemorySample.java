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
 */
public record MemorySample(double seconds, long heapUsed, long heapMax, long directBuffers, long nativeAllocated,
                           long mapped, long rss, long rssAnon, long rssFile, long device) {
}
