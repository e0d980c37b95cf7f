package dev.memfit;

import ai.djl.Device;
import ai.djl.engine.Engine;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import dev.memfit.data.Batch;
import dev.memfit.data.Datasets;
import dev.memfit.data.Loader;
import dev.memfit.source.ArraySource;
import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Optional;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Pinning a loader's batch buffers: where there is no GPU nothing is pinned and batches are the same; where DJL sees
 * one, the buffers are pinned, the batches reach the device intact, and closing the loader unpins them.
 */
class PinnedMemoryTest {

    @Test
    void batchesAreTheSameWhetherTheirBuffersArePinnedOrNot() {
        boolean gpu = Engine.getInstance().getGpuCount() > 0;
        Device device = gpu ? Device.gpu(0) : Device.cpu();
        try (ArraySource source = ArraySource.allocate("counts", 100, new ai.djl.ndarray.types.Shape(7),
                     dev.memfit.DType.FLOAT32);
             Loader pinned = Datasets.of(source).optBatchSize(16).optShuffle(3).build();
             Loader pageable = Datasets.of(source).optBatchSize(16).optShuffle(3).build();
             NDManager manager = Engine.getInstance().newBaseManager(device)) {
            for (long i = 0; i < 700; i++) {
                source.data().setAtIndex(ValueLayout.JAVA_FLOAT, i, i * 0.5f);
            }
            long bytes = pinned.pinBuffers();
            if (gpu) {
                assertEquals(pinned.bufferMemory(), bytes, "a GPU is visible: every batch buffer is pinned");
            } else {
                assertEquals(0, bytes, "no GPU: nothing can be pinned");
            }
            assertEquals(bytes, pinned.pinBuffers(), "pinning again changes nothing");
            var a = pinned.epoch(0).iterator();
            var b = pageable.epoch(0).iterator();
            int batches = 0;
            while (a.hasNext()) {
                try (Batch x = a.next(); Batch y = b.next(); NDManager scope = manager.newSubManager()) {
                    NDArray onDevice = x.toNDArray(scope);
                    assertEquals(device, onDevice.getDevice());
                    assertArrayEquals(y.toFloatArray(), onDevice.toFloatArray(), 0f, "batch " + batches);
                    batches++;
                }
            }
            assertEquals(7, batches);
        }
    }

    @Test
    void aSegmentIsPinnedOnlyWhereAGpuIsVisible() {
        boolean gpu = Engine.getInstance().getGpuCount() > 0;
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment segment = arena.allocate(1 << 20, 4096);
            Optional<PinnedMemory.Pin> pin = PinnedMemory.pin(segment);
            assertEquals(gpu, pin.isPresent(), "pinned: " + pin + ", unavailable because: "
                    + PinnedMemory.unavailableReason().orElse("-"));
            pin.ifPresent(p -> {
                assertEquals(1 << 20, p.bytes());
                p.close();
                p.close();   // a second close does nothing
            });
            assertTrue(PinnedMemory.pin(MemorySegment.ofArray(new byte[16])).isEmpty(), "heap memory is never pinned");
        }
    }
}
