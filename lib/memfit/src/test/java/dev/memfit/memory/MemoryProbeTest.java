package dev.memfit.memory;

import dev.memfit.ProcessMemory;

import dev.memfit.NativeMemory;
import dev.memfit.source.ArraySource;
import dev.memfit.DType;
import org.junit.jupiter.api.Test;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.time.Duration;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

class MemoryProbeTest {

    @Test
    void seesNativeMemoryBeingTouchedAndFreed() throws Exception {
        long size = 256L << 20;
        MemoryTimeline timeline;
        MemorySample before;
        MemorySample during;
        long baselineNative = NativeMemory.ALLOCATED.bytes();
        try (MemoryProbe probe = MemoryProbe.start("touch", Duration.ofMillis(10))) {
            before = MemoryProbe.now();
            try (ArraySource source = ArraySource.allocate("big", size / 4, new ai.djl.ndarray.types.Shape(1), DType.FLOAT32)) {
                MemorySegment data = source.data();
                for (long offset = 0; offset < size; offset += 4096) {
                    data.set(ValueLayout.JAVA_BYTE, offset, (byte) 1);
                }
                probe.mark("touched");
                Thread.sleep(60);
                during = MemoryProbe.now();
                assertEquals(baselineNative + size, during.nativeAllocated());
            }
            assertEquals(baselineNative, NativeMemory.ALLOCATED.bytes());
            MemorySample after = MemoryProbe.now();
            // RSS is process-wide (other tests' memory comes and goes), so the bounds leave room for that.
            assertTrue(during.rssAnon() - before.rssAnon() > size / 2,
                    "touching 256 MB should grow RSS anon, grew by " + (during.rssAnon() - before.rssAnon()));
            assertTrue(during.rssAnon() - after.rssAnon() > size / 2,
                    "freeing 256 MB should shrink RSS anon, shrank by " + (during.rssAnon() - after.rssAnon()));
            timeline = probe.stop();
        }
        assertTrue(timeline.samples().size() >= 5, "samples: " + timeline.samples().size());
        assertEquals("touched", timeline.marks().getFirst().label());
        assertTrue(timeline.peak(MemorySample::nativeAllocated) >= baselineNative + size);
        assertTrue(timeline.peakRss() >= timeline.peakRssAnon());
        assertTrue(timeline.peakHeap() > 0 && timeline.samples().getFirst().heapMax() > 0);
        assertEquals(-1, timeline.peak(MemorySample::device), "no device given: not measured");
    }

    /** The C allocator's bytes in use (glibc's mallinfo2) follow a native allocation, and the probe keeps its peak. */
    @Test
    void theAllocatorsBytesInUseFollowANativeAllocation() throws Exception {
        org.junit.jupiter.api.Assumptions.assumeTrue("glibc".equals(ProcessMemory.allocator()),
                "malloc is " + ProcessMemory.allocator() + " here, not glibc's");
        long size = 64L << 20;
        long before = ProcessMemory.mallocInUse();
        assertTrue(before > 0, "the JVM and its libraries hold malloc'd memory: " + before);
        MemoryProbe probe = MemoryProbe.start("malloc", Duration.ofMillis(5));
        try (ArraySource source = ArraySource.allocate("big", size / 4, new ai.djl.ndarray.types.Shape(1), DType.FLOAT32)) {
            long during = ProcessMemory.mallocInUse();
            // other tests' threads allocate and free meanwhile: a margin, not an equality
            assertTrue(Math.abs(during - before - size) < size / 4, "in use grew by " + (during - before));
            Thread.sleep(40);
        }
        Thread.sleep(20);
        MemoryTimeline timeline = probe.stop();
        assertTrue(probe.mallocPeakGrowth() >= size * 3 / 4, "peak growth " + probe.mallocPeakGrowth());
        assertEquals(timeline.samples().size(), probe.mallocInUse().length, "one reading per sample");
        assertTrue(ProcessMemory.mallocInUse() - before < size / 4, "freed: back near where it was");
    }

    @Test
    void offHeapMemoryShowsOutsideTheHeapWhateverTheHeapDoes() {
        MemorySample before = MemoryProbe.now();
        assertTrue(before.heapCommitted() >= before.heapUsed() && before.heapCommitted() > 0, before.toString());
        assertEquals(before.rssAnon() - before.heapCommitted(), before.anonOutsideHeap());
        long size = 128L << 20;
        try (ArraySource source = ArraySource.allocate("off heap", size / 4, new ai.djl.ndarray.types.Shape(1), DType.FLOAT32)) {
            source.data().fill((byte) 1);
            long grew = MemoryProbe.now().anonOutsideHeap() - before.anonOutsideHeap();
            assertTrue(grew > size / 2, "128 MiB written off the heap: grew " + (grew >> 20) + " MiB");
        }
        assertEquals(-1, new MemorySample(0, 0, 0, 0, 0, 0, -1, -1, -1, -1, 0).anonOutsideHeap(), "no /proc: not measured");
    }

    @Test
    void freedNativeMemoryGoesBackToTheSystemWhenAsked() {
        org.junit.jupiter.api.Assumptions.assumeTrue(ProcessMemory.returnFreedMemory(), "no malloc_trim (not glibc)");
        // 100 KiB blocks come from malloc's heap (below its mmap threshold); freeing every other one leaves holes
        // that free() cannot give back (live blocks sit above them), and malloc_trim(0) can
        int blocks = 400;
        java.util.List<java.lang.foreign.Arena> kept = new java.util.ArrayList<>();
        java.util.List<java.lang.foreign.Arena> freed = new java.util.ArrayList<>();
        try {
            for (int i = 0; i < blocks; i++) {
                java.lang.foreign.Arena arena = java.lang.foreign.Arena.ofConfined();
                arena.allocate(100 << 10).fill((byte) 1);
                (i % 2 == 0 ? freed : kept).add(arena);
            }
            freed.forEach(java.lang.foreign.Arena::close);
            long held = MemoryProbe.now().rssAnon();
            ProcessMemory.returnFreedMemory();
            long after = MemoryProbe.now().rssAnon();
            assertTrue(held - after > (blocks / 2) * (100L << 10) / 2, "malloc_trim gave back " + ((held - after) >> 10)
                    + " KiB of " + (blocks / 2) * 100 + " KiB freed");
        } finally {
            kept.forEach(java.lang.foreign.Arena::close);
        }
    }
}
