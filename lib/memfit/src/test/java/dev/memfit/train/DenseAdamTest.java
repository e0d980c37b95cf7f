package dev.memfit.train;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.training.optimizer.Optimizer;
import ai.djl.training.tracker.Tracker;
import org.junit.jupiter.api.Test;

import java.util.LinkedHashMap;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * {@link DenseAdam} takes exactly the steps DJL's {@code Adam} takes (bit for bit, so trainers moved to it train as
 * before), agrees with {@code torch.optim.Adam}, and continues identically from its saved moments and step count.
 *
 * <p>DJL (and so DenseAdam) adds epsilon to the uncorrected {@code sqrt(v)} and folds the bias corrections into the
 * learning rate; torch adds it to the corrected root. DJL's effective epsilon is therefore {@code 1/sqrt(1 - b2^t)}
 * times larger (31.6 at step 1), which moves a value by up to 6.3e-7 in this trace (step 1, gradient 0.05): the 1e-6
 * tolerance against torch is that gap, not slack.
 */
class DenseAdamTest {

    private static final float[][] START = {{0.5f, -1.0f, 0.25f}, {1.5f, 0.0f, -0.75f}};
    private static final float[][][] GRADIENTS = {
            {{0.3f, -0.2f, 0.05f}, {-0.7f, 0.4f, 0.1f}},
            {{0.5f, -0.35f, 0.2f}, {-0.15f, 0.6f, 0.45f}},
            {{0.2f, 0.1f, -0.3f}, {-0.4f, 0.8f, 0.15f}},
            {{1.5f, -0.05f, 0.3f}, {0.0f, 0.0f, 0.0f}},
            {{-0.25f, 0.3f, -0.6f}, {0.9f, -1.1f, 0.2f}},
            {{-0.5f, 0.65f, 0.7f}, {0.35f, -0.45f, 0.05f}}};

    /** torch.optim.Adam(lr=0.1)'s parameter after each step (environment/bench/adam_trace.py, torch 1.13.1). */
    private static final float[][][] TORCH_TRACE = {
            {{0.4f, -0.9f, 0.15000002f}, {1.6f, -0.1f, -0.85f}},
            {{0.30172083f, -0.8021512f, 0.06156238f}, {1.6811163f, -0.19908074f, -0.93717206f}},
            {{0.20912752f, -0.74413145f, 0.07551665f}, {1.7670243f, -0.29780543f, -1.0210221f}},
            {{0.12656423f, -0.6899934f, 0.047360614f}, {1.8373948f, -0.3786747f, -1.0897069f}},
            {{0.0659114f, -0.68465036f, 0.07555865f}, {1.8370639f, -0.38746202f, -1.1641921f}},
            {{0.031145982f, -0.72274864f, 0.05815486f}, {1.8223482f, -0.3800666f, -1.2330623f}}};

    @Test
    void takesDjlAdamsStepsBitForBitAndTorchsToRounding() {
        try (NDManager manager = Fit.engine().newBaseManager()) {
            NDArray ours = manager.create(START);
            NDArray djls = manager.create(START);
            DenseAdam adam = new DenseAdam(0.1f, Map.of("w", ours));
            Optimizer reference = Optimizer.adam().optLearningRateTracker(Tracker.fixed(0.1f)).build();
            for (int step = 0; step < GRADIENTS.length; step++) {
                adam.beginStep();
                adam.update("w", ours, manager.create(GRADIENTS[step]));
                reference.update("w", djls, manager.create(GRADIENTS[step]));
                assertArrayEquals(djls.toFloatArray(), ours.toFloatArray(), 0f, "step " + (step + 1) + " as DJL's Adam");
                float[] torch = flatten(TORCH_TRACE[step]);
                float[] values = ours.toFloatArray();
                for (int i = 0; i < torch.length; i++) {
                    assertEquals(torch[i], values[i], 1e-6f,
                            "step " + (step + 1) + ", value " + i + " as torch.optim.Adam");
                }
            }
            assertEquals(GRADIENTS.length, adam.steps());
        }
    }

    @Test
    void continuesFromSavedMomentsAndStepsAsIfNeverStopped() {
        try (NDManager manager = Fit.engine().newBaseManager()) {
            NDArray straight = manager.create(START);
            DenseAdam uninterrupted = new DenseAdam(0.1f, Map.of("w", straight));
            NDArray first = manager.create(START);
            DenseAdam before = new DenseAdam(0.1f, Map.of("w", first));
            int stop = 3;
            for (int step = 0; step < GRADIENTS.length; step++) {
                uninterrupted.beginStep();
                uninterrupted.update("w", straight, manager.create(GRADIENTS[step]));
                if (step < stop) {
                    before.beginStep();
                    before.update("w", first, manager.create(GRADIENTS[step]));
                }
            }
            // a new optimizer over a new parameter, given the saved arrays and count, as a checkpoint restores them
            NDArray resumed = manager.create(first.toFloatArray(), first.getShape());
            DenseAdam after = new DenseAdam(0.1f, Map.of("w", resumed));
            Map<String, NDArray> saved = new LinkedHashMap<>();
            before.state("adam/", saved);
            Map<String, NDArray> restoredInto = new LinkedHashMap<>();
            after.state("adam/", restoredInto);
            assertEquals(saved.keySet(), restoredInto.keySet());
            saved.forEach((name, array) -> restoredInto.get(name).set(array.toByteBuffer()));
            after.restoreSteps(before.steps());
            for (int step = stop; step < GRADIENTS.length; step++) {
                after.beginStep();
                after.update("w", resumed, manager.create(GRADIENTS[step]));
            }
            assertArrayEquals(straight.toFloatArray(), resumed.toFloatArray(), 0f);
        }
    }

    private static float[] flatten(float[][] rows) {
        float[] flat = new float[rows.length * rows[0].length];
        for (int r = 0; r < rows.length; r++) {
            System.arraycopy(rows[r], 0, flat, r * rows[0].length, rows[r].length);
        }
        return flat;
    }
}
