package dev.memfit.memory;

import ai.djl.engine.EngineException;
import dev.memfit.MemfitException;

import java.util.Locale;
import java.util.function.IntPredicate;
import java.util.function.LongUnaryOperator;

/**
 * Choosing batch sizes that fit: the largest divisor under a cap, the largest batch an estimate allows under a
 * memory budget, the largest batch that really runs (trial steps that back off on out-of-memory), and the
 * effective batch size across devices and accumulation steps.
 */
public final class BatchSizeFinder {

    private BatchSizeFinder() {
    }

    /**
     * The largest divisor of {@code n} not above {@code cap}: batches that split {@code n} items evenly (the trick
     * of cutting a batch from 32 to 4 to stop running out of device memory without uneven last batches).
     *
     * @param n the number of items, at least 1
     * @param cap the largest batch allowed, at least 1
     * @return the divisor
     */
    public static long largestDivisorAtMost(long n, long cap) {
        if (n < 1 || cap < 1) {
            throw new MemfitException("need n >= 1 and cap >= 1, got n=" + n + ", cap=" + cap);
        }
        long best = 1;
        for (long d = 1; d * d <= n; d++) {
            if (n % d == 0) {
                if (d <= cap) {
                    best = Math.max(best, d);
                }
                long other = n / d;
                if (other <= cap) {
                    best = Math.max(best, other);
                }
            }
        }
        return best;
    }

    /**
     * The largest batch whose estimated memory fits a budget, by binary search on a non-decreasing estimate.
     *
     * @param budgetBytes the memory available
     * @param maxBatch the largest batch worth considering (e.g. the data size)
     * @param bytesForBatch the estimated peak memory of a batch size
     * @return the batch size
     * @throws MemfitException when not even a batch of one fits, saying by how much
     */
    public static int largestFitting(long budgetBytes, int maxBatch, LongUnaryOperator bytesForBatch) {
        if (budgetBytes <= 0 || maxBatch < 1) {
            throw new MemfitException("need a positive budget and maxBatch >= 1, got budget " + budgetBytes + " bytes, maxBatch " + maxBatch);
        }
        long one = bytesForBatch.applyAsLong(1);
        if (one > budgetBytes) {
            throw new MemfitException(String.format(Locale.ROOT,
                    "a budget of %,d bytes cannot hold even one sample's step (%,d bytes estimated): raise the budget, "
                            + "use a smaller model or lower precision", budgetBytes, one));
        }
        int low = 1;
        int high = maxBatch;
        while (low < high) {
            int mid = (int) (((long) low + high + 1) / 2);
            if (bytesForBatch.applyAsLong(mid) <= budgetBytes) {
                low = mid;
            } else {
                high = mid - 1;
            }
        }
        return low;
    }

    /**
     * Confirms a batch size by running trial steps, halving on out-of-memory ({@link OutOfMemoryError}, or a DJL
     * {@link EngineException} that says it ran out of memory) until a step succeeds.
     *
     * @param start the batch size to try first (usually the estimate)
     * @param trialStep runs one step at a batch size and releases what it allocated (try-with-resources); returns
     *                  false to reject the size for another reason
     * @return the largest size tried that succeeded
     * @throws MemfitException when even a batch of one fails
     */
    public static int confirmByTrial(int start, IntPredicate trialStep) {
        if (start < 1) {
            throw new MemfitException("the first batch size to try must be at least 1, got " + start);
        }
        int size = start;
        while (true) {
            boolean ok;
            try {
                ok = trialStep.test(size);
            } catch (OutOfMemoryError e) {
                ok = false;
            } catch (EngineException e) {
                if (!isOutOfMemory(e)) {
                    throw e;
                }
                ok = false;
            }
            if (ok) {
                return size;
            }
            if (size == 1) {
                throw new MemfitException("even a batch of 1 ran out of memory: the model or one sample does not fit");
            }
            size = Math.max(1, size / 2);
        }
    }

    private static boolean isOutOfMemory(Throwable error) {
        for (Throwable cause = error; cause != null; cause = cause.getCause()) {
            String message = String.valueOf(cause.getMessage()).toLowerCase(Locale.ROOT);
            if (message.contains("out of memory") || message.contains("cannot allocate") || message.contains("oom")) {
                return true;
            }
        }
        return false;
    }

    /**
     * The number of samples behind one optimizer step.
     *
     * @param batchSize samples per device per micro-batch
     * @param devices data-parallel devices
     * @param accumulation micro-batches per step
     * @return batch x devices x accumulation
     */
    public static long effectiveBatchSize(int batchSize, int devices, int accumulation) {
        if (batchSize < 1 || devices < 1 || accumulation < 1) {
            throw new MemfitException("batch size, devices and accumulation steps must be at least 1, got "
                    + batchSize + ", " + devices + ", " + accumulation);
        }
        return (long) batchSize * devices * accumulation;
    }
}
