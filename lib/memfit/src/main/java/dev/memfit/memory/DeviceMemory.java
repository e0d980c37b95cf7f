package dev.memfit.memory;

import ai.djl.Device;
import ai.djl.pytorch.jni.JniUtils;

/**
 * The accelerator's memory as PyTorch manages it.
 */
public final class DeviceMemory {

    private DeviceMemory() {
    }

    /**
     * Hands memory PyTorch's caching allocator holds but no tensor uses back to the GPU driver
     * ({@code torch.cuda.empty_cache()}), so that other processes and the probe see what training really holds.
     * Does nothing on the CPU, where there is no such cache.
     *
     * @param device the training device
     * @return true when a cache was released
     */
    public static boolean releaseCache(Device device) {
        if (device == null || !device.isGpu()) {
            return false;
        }
        JniUtils.emptyCudaCache();
        return true;
    }
}
