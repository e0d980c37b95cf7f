package dev.memfit.memory;

import ai.djl.engine.EngineException;
import dev.memfit.MemfitException;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class BatchSizeFinderTest {

    @Test
    void largestDivisorUnderACap() {
        assertEquals(4, BatchSizeFinder.largestDivisorAtMost(100, 4));
        assertEquals(25, BatchSizeFinder.largestDivisorAtMost(100, 30));
        assertEquals(1, BatchSizeFinder.largestDivisorAtMost(97, 32), "a prime has only 1 below it");
        assertEquals(32, BatchSizeFinder.largestDivisorAtMost(1024, 32));
        assertEquals(6, BatchSizeFinder.largestDivisorAtMost(6, 1000));
        assertThrows(MemfitException.class, () -> BatchSizeFinder.largestDivisorAtMost(0, 3));
    }

    @Test
    void largestBatchUnderABudget() {
        // 1 MB fixed + 10 KB per sample
        assertEquals(300, BatchSizeFinder.largestFitting(1_000_000 + 3_000_000, 10_000, b -> 1_000_000 + 10_000 * b));
        assertEquals(50, BatchSizeFinder.largestFitting(1L << 40, 50, b -> b), "capped by the data size");
        MemfitException e = assertThrows(MemfitException.class,
                () -> BatchSizeFinder.largestFitting(500_000, 100, b -> 1_000_000 + 10_000 * b));
        assertTrue(e.getMessage().contains("cannot hold even one sample"), e.getMessage());
    }

    @Test
    void trialStepsBackOffOnOutOfMemory() {
        List<Integer> tried = new ArrayList<>();
        int confirmed = BatchSizeFinder.confirmByTrial(256, size -> {
            tried.add(size);
            if (size > 100) {
                throw new OutOfMemoryError("Java heap space");
            }
            if (size > 48) {
                throw new EngineException("CUDA out of memory. Tried to allocate 2.00 GiB");
            }
            return true;
        });
        assertEquals(32, confirmed);
        assertEquals(List.of(256, 128, 64, 32), tried);
        assertThrows(EngineException.class, () -> BatchSizeFinder.confirmByTrial(8, size -> {
            throw new EngineException("shape mismatch");
        }), "other engine errors are not swallowed");
        assertThrows(MemfitException.class, () -> BatchSizeFinder.confirmByTrial(4, size -> {
            throw new OutOfMemoryError();
        }));
    }

    @Test
    void effectiveBatch() {
        assertEquals(512, BatchSizeFinder.effectiveBatchSize(32, 4, 4));
        assertThrows(MemfitException.class, () -> BatchSizeFinder.effectiveBatchSize(32, 0, 1));
    }
}
