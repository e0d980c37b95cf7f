package dev.memfit.train;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.Shape;
import ai.djl.training.GradientCollector;
import org.junit.jupiter.api.Test;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;

/**
 * A constant in the backward pass survives a garbage collection between the forward and the backward pass: the
 * gradient of {@code times(x, c)} is {@code c} though the collector ran and Java memory of the same size was handed
 * out and overwritten meanwhile (DJL's {@code x.mul(c)} keeps the constant in Java memory it has let go of).
 */
class BlockTrainingTest {

    @Test
    void aConstantOfTheBackwardPassSurvivesACollection() {
        try (NDManager manager = Fit.engine().newBaseManager()) {
            for (int round = 0; round < 20; round++) {
                try (NDManager scope = manager.newSubManager()) {
                    NDArray x = scope.create(new float[]{1f, 2f, 3f}, new Shape(3)).duplicate();
                    x.setRequiresGradient(true);
                    try (GradientCollector collector = Fit.engine().newGradientCollector()) {
                        NDArray y = BlockTraining.times(x, 0.125f, scope).sum();
                        scrubJavaMemory();
                        collector.backward(y);
                    }
                    assertArrayEquals(new float[]{0.125f, 0.125f, 0.125f}, x.getGradient().toFloatArray(), 0f,
                            "round " + round);
                }
            }
        }
    }

    /** Collects, then hands out small direct buffers filled with another value, as later batches would. */
    private static void scrubJavaMemory() {
        System.gc();
        System.gc();
        List<ByteBuffer> filler = new ArrayList<>();
        for (int i = 0; i < 2_000; i++) {
            ByteBuffer buffer = ByteBuffer.allocateDirect(4).order(ByteOrder.nativeOrder());
            buffer.putFloat(0, 1e6f);
            filler.add(buffer);
        }
        filler.clear();
    }
}
