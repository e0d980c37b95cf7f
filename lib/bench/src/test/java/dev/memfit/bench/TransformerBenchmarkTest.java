package dev.memfit.bench;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * The gene-token transformer against the same model in PyTorch (Debian's python3-torch, which {@code ./memfit test}
 * installs): from memfit's initial weights on memfit's masked batches, torch must compute the same losses, step after
 * step. A change to the model on either side (an activation, a norm, where the attention is scaled or masked, how the
 * cells are pooled, Adam) breaks this.
 */
class TransformerBenchmarkTest {

    @Test
    void torchTrainsTheSameModelToTheSameLossesFromTheSameStart(@TempDir Path folder) throws Exception {
        assumeTrue(Baselines.pythonHas("torch"), "/usr/bin/python3 has no torch (apt-get install python3-torch)");
        String home = System.getProperty("memfit.home");
        System.setProperty("memfit.home", Path.of("../..").toAbsolutePath().normalize().toString());
        TransformerBenchmark.Result result;
        try {
            result = TransformerBenchmark.run(new TransformerBenchmark.Settings(folder, 128, 300, 100, 32, 16, 2, 2, 32,
                    3, 1, 3e-3, true));
        } finally {
            if (home == null) {
                System.clearProperty("memfit.home");
            } else {
                System.setProperty("memfit.home", home);
            }
        }
        assertEquals(2, result.rows().size(), "memfit and torch");
        double[] ours = result.rows().get(0).stepLosses();
        double[] theirs = result.rows().get(1).stepLosses();
        assertEquals(12, ours.length, "3 epochs of 4 batches");
        assertEquals(12, theirs.length, "3 epochs of 4 batches");
        assertTrue(result.firstStepRelativeDifference() < 1e-5, "the first step, before any update: "
                + ours[0] + " vs " + theirs[0]);
        assertTrue(result.largestRelativeDifference() < 1e-4, "every step: largest relative difference "
                + result.largestRelativeDifference());
        assertTrue(ours[11] < ours[0] - 0.1, "the losses fell: " + ours[0] + " to " + ours[11]);
    }
}
