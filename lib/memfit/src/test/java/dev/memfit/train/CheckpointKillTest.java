package dev.memfit.train;

import dev.memfit.ChildJvm;
import dev.memfit.PythonPeer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.SplittableRandom;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A fit in a child JVM killed with SIGKILL at random batches (no shutdown hook, no finally block runs) and started
 * again until it finishes: its loss at every step and its topics equal, bit for bit, those of a child that ran
 * uninterrupted, and after every kill the folder's checkpoints all verify (a kill during a write leaves only a
 * temporary file). The counts are a {@code .npy} written by numpy with its defaults.
 */
class CheckpointKillTest {

    @Test
    void aFitKilledThreeTimesEndsExactlyAsAnUninterruptedOne(@TempDir Path dir) throws IOException {
        Path counts = dir.resolve("counts.npy");
        PythonPeer.run("""
                import sys, numpy as np
                rng = np.random.default_rng(7)
                rates = rng.gamma(1.0, 2.0, size=(3, 60))
                mix = rng.dirichlet(np.ones(3), size=300)
                np.save(sys.argv[1], rng.poisson(mix @ rates * 3).astype(np.float32))
                """, counts);
        List<String> straight = run(dir.resolve("straight"), counts, "none", -1);
        assertEquals("resumed at step 0", straight.getFirst());
        assertEquals(1 + 40 + 3, straight.size(), "40 steps (4 epochs of 10 batches) and 3 topics");

        Path checkpoints = dir.resolve("checkpoints");
        SplittableRandom random = new SplittableRandom(20261124);
        // three kills at seeded batches, each later than the last resume, spread over the 40 batches
        long[] killAt = {5 + random.nextInt(6), 16 + random.nextInt(8), 28 + random.nextInt(8)};
        for (int attempt = 0; attempt < killAt.length; attempt++) {
            run(dir.resolve("killed" + attempt), counts, checkpoints.toString(), killAt[attempt]);
            List<Checkpoints.Saved> saved = Checkpoints.list(checkpoints);
            assertFalse(saved.isEmpty(), "a checkpoint exists after the kill at batch " + killAt[attempt]);
            for (Checkpoints.Saved checkpoint : saved) {
                Checkpoints.verify(checkpoint.file());
            }
        }
        List<String> resumed = run(dir.resolve("final"), counts, checkpoints.toString(), -1);
        long resumedAt = Long.parseLong(resumed.getFirst().substring("resumed at step ".length()));
        assertTrue(resumedAt >= killAt[2] - 3 && resumedAt <= 39, "resumed at step " + resumedAt + " after a kill at batch "
                + killAt[2]);
        assertEquals(straight.subList(1, straight.size()), resumed.subList(1, resumed.size()),
                "every step's loss and every topic value, as hexadecimal floats");
    }

    /** Runs the child to its end, or kills it once its progress file reaches {@code killAt} batches. */
    private static List<String> run(Path work, Path counts, String checkpoints, long killAt) throws IOException {
        Files.createDirectories(work);
        Path progress = work.resolve("progress.txt");
        Path result = work.resolve("result.txt");
        try (ChildJvm child = ChildJvm.start(work.resolve("child.log"), TrainerKillChild.class, counts.toString(), checkpoints,
                progress.toString(), result.toString())) {
            if (killAt < 0) {
                child.awaitSuccess(Duration.ofMinutes(2));
                return Files.readAllLines(result, StandardCharsets.UTF_8);
            }
            String line = "batch " + killAt + "\n";
            child.waitUntil(Duration.ofMinutes(2), "batch " + killAt, () -> contains(progress, line));
            child.kill();
            assertFalse(Files.exists(result), "killed before it finished");
            return List.of();
        }
    }

    private static boolean contains(Path file, String line) {
        try {
            return Files.exists(file) && Files.readString(file, StandardCharsets.UTF_8).contains(line);
        } catch (IOException e) {
            return false;
        }
    }
}
