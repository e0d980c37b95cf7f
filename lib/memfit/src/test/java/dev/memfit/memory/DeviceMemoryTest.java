package dev.memfit.memory;

import ai.djl.Device;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertFalse;

class DeviceMemoryTest {

    @Test
    void releasingTheCacheIsANoOpOffTheGpu() {
        assertFalse(DeviceMemory.releaseCache(Device.cpu()), "no caching allocator to empty on the CPU");
        assertFalse(DeviceMemory.releaseCache(null));
    }
}
