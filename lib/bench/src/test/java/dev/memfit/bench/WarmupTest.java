package dev.memfit.bench;

import dev.memfit.data.Datasets;
import dev.memfit.data.Loader;
import dev.memfit.source.ArraySource;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The benches' warm-up runs untimed epochs for the time asked, numbered on from the first it is given. */
class WarmupTest {

    @Test
    void runsEpochsUntilTheTimeIsUpAndNoneWhenAskedForNone() {
        float[][] rows = new float[64][8];
        try (ArraySource source = ArraySource.of("rows", rows);
             Loader loader = Datasets.of(source).optBatchSize(16).optShuffle(3).build()) {
            assertEquals(5, Warmup.epochs(loader, 5, 0), "no warm-up: the next epoch is the one given");
            long started = System.nanoTime();
            long next = Warmup.epochs(loader, 1, 0.05);
            double seconds = (System.nanoTime() - started) / 1e9;
            assertTrue(seconds >= 0.05, "warmed up for " + seconds + " s");
            assertTrue(next > 2, "epochs 1 to " + (next - 1) + " in 50 ms of 4 batches each");
        }
    }
}
