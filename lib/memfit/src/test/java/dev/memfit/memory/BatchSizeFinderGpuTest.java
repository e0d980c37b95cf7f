package dev.memfit.memory;

import ai.djl.Device;
import ai.djl.engine.Engine;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.Shape;
import ai.djl.util.cuda.CudaUtils;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * {@link BatchSizeFinder#confirmByTrial} against a real CUDA out-of-memory: a step whose activations take 1/64 of
 * the device per sample, started at a batch of 128 (twice the device), backs off by halving to a batch that fits.
 * Runs only where DJL sees a GPU; skipped elsewhere.
 */
class BatchSizeFinderGpuTest {

    @BeforeEach
    void needsAGpu() {   // per test, not @BeforeAll: Surefire then reports each test as skipped
        assumeTrue(Engine.getInstance().getGpuCount() > 0, "no GPU visible to DJL (./memfit gpu-setup points it at one)");
    }

    @Test
    void backsOffFromARealCudaOutOfMemory() {
        Device gpu = Device.gpu(0);
        long deviceBytes = CudaUtils.getGpuMemory(gpu).getMax();
        long floatsPerSample = deviceBytes / 64 / Float.BYTES;
        List<Integer> tried = new ArrayList<>();
        int found = BatchSizeFinder.confirmByTrial(128, batch -> {
            tried.add(batch);
            try (NDManager step = NDManager.newBaseManager(gpu)) {
                NDArray activations = step.ones(new Shape(batch, floatsPerSample));
                return activations.sum().getFloat() > 0;   // the sum also waits for the device
            }
        });
        DeviceMemory.releaseCache(gpu);
        System.out.printf("device %d MiB, %d MiB per sample: tried %s, confirmed %d%n", deviceBytes >> 20,
                floatsPerSample * Float.BYTES >> 20, tried, found);
        assertEquals(128, tried.getFirst());
        assertTrue(tried.size() >= 2, "a batch of 128 x 1/64 of the device cannot fit: " + tried);
        assertTrue(found <= 32 && found >= 8, "halved to a batch that fits in the device (32, or less with the "
                + "context's share): " + found);
        assertEquals(found, (int) tried.getLast());
    }
}
