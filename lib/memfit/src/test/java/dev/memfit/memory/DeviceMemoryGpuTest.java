package dev.memfit.memory;

import ai.djl.Device;
import ai.djl.engine.Engine;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.Shape;
import ai.djl.util.cuda.CudaUtils;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * Device memory as memfit reads it, on a real GPU: the probe's readings follow an allocation, and releasing
 * PyTorch's cache hands freed blocks back to the driver. Runs only where DJL sees a GPU; skipped elsewhere.
 * The device's "used" is the driver's figure (cudaMemGetInfo: everything reserved on the device, by this process and
 * others), which is what DJL exposes; PyTorch's allocated-vs-reserved split is not reachable through DJL.
 */
class DeviceMemoryGpuTest {

    private static final long MIB = 1L << 20;
    /** 256 MiB of floats: far above the driver's granularity and the allocator's rounding. */
    private static final long FLOATS = 64L * MIB;

    @BeforeEach
    void needsAGpu() {   // per test, not @BeforeAll: Surefire then reports each test as skipped
        assumeTrue(Engine.getInstance().getGpuCount() > 0, "no GPU visible to DJL (./memfit gpu-setup points it at one)");
    }

    @Test
    void theProbeSeesADeviceAllocation() {
        Device gpu = Device.gpu(0);
        MemoryTimeline timeline;
        try (NDManager manager = NDManager.newBaseManager(gpu)) {
            DeviceMemory.releaseCache(gpu);
            try (MemoryProbe probe = MemoryProbe.start("gpu", Duration.ofMillis(5), gpu)) {
                NDArray block = manager.ones(new Shape(FLOATS));
                assertEquals(1f, block.getFloat(0));   // also waits for the kernel that fills it
                timeline = probe.stop();           // the last reading is taken with the block alive
            }
        }
        List<MemorySample> samples = timeline.samples();
        long before = samples.getFirst().device();
        long after = samples.getLast().device();
        System.out.printf("device memory used: %d MiB before, %d MiB with a %d MiB array%n", before / MIB, after / MIB,
                FLOATS * 4 / MIB);
        assertTrue(before > 0, "the probe read the device's memory: " + before);
        assertTrue(after - before >= FLOATS * 4, "a " + FLOATS * 4 / MIB + " MiB array raised the device's use by "
                + (after - before) / MIB + " MiB");
    }

    @Test
    void releasingTheCacheReturnsFreedBlocksToTheDriver() {
        Device gpu = Device.gpu(0);
        DeviceMemory.releaseCache(gpu);
        long empty = CudaUtils.getGpuMemory(gpu).getUsed();
        try (NDManager manager = NDManager.newBaseManager(gpu)) {
            NDArray block = manager.ones(new Shape(FLOATS));
            block.getFloat(0);
            block.close();
        }
        long cached = CudaUtils.getGpuMemory(gpu).getUsed();   // freed, but still held by PyTorch's caching allocator
        boolean released = DeviceMemory.releaseCache(gpu);
        long afterRelease = CudaUtils.getGpuMemory(gpu).getUsed();
        System.out.printf("device memory used: %d MiB empty, %d MiB after freeing a %d MiB array, %d MiB after releaseCache%n",
                empty / MIB, cached / MIB, FLOATS * 4 / MIB, afterRelease / MIB);
        assertTrue(released);
        assertTrue(cached - empty >= FLOATS * 4, "a freed array stays reserved until the cache is released: "
                + (cached - empty) / MIB + " MiB");
        assertTrue(cached - afterRelease >= FLOATS * 4, "releaseCache handed back " + (cached - afterRelease) / MIB
                + " MiB (a JNI built without USE_CUDA makes it a no-op: rebuild with ./memfit gpu-setup)");
    }
}
