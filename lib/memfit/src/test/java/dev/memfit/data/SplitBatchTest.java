package dev.memfit.data;

import ai.djl.ndarray.types.Shape;
import dev.memfit.DType;
import dev.memfit.MemfitException;
import dev.memfit.source.ArraySource;
import dev.memfit.source.SampleSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Batches read in parts by several threads ({@link SampleSource#readsFromMemory}): the same batches, in the same
 * order, as one thread reads whole; a part that fails fails its batch and nothing else; an epoch left early frees
 * every buffer.
 */
class SplitBatchTest {

    /** 16 KiB rows: four of them reach a part's 64 KiB minimum, so batches of 32 split into parts of 8. */
    private static final int COLUMNS = 4096;
    private static final int ROWS = 300;

    /** Rows from memory whose element (r, c) is r * 10_000 + c, recording which threads read which samples. */
    private static final class MemoryRows implements SampleSource {
        final ArraySource rows = ArraySource.allocate("rows", ROWS, new Shape(COLUMNS), DType.FLOAT32);
        final Set<String> readers = ConcurrentHashMap.newKeySet();
        final AtomicInteger calls = new AtomicInteger();
        volatile long failAt = -1;
        /** A sample whose read, on a loader thread, waits for {@link #release}, counting {@link #stalled} down first. */
        volatile long stallAt = -1;
        final java.util.concurrent.CountDownLatch stalled = new java.util.concurrent.CountDownLatch(1);
        final java.util.concurrent.CountDownLatch release = new java.util.concurrent.CountDownLatch(1);

        MemoryRows() {
            for (long r = 0; r < ROWS; r++) {
                for (long c = 0; c < COLUMNS; c++) {
                    rows.data().setAtIndex(ValueLayout.JAVA_FLOAT, r * COLUMNS + c, r * 10_000f + c);
                }
            }
        }

        @Override
        public long size() {
            return ROWS;
        }

        @Override
        public Shape sampleShape() {
            return new Shape(COLUMNS);
        }

        @Override
        public DType dtype() {
            return DType.FLOAT32;
        }

        @Override
        public boolean readsFromMemory() {
            return true;
        }

        @Override
        public void read(long index, MemorySegment into) {
            rows.read(index, into);
        }

        @Override
        public void readBatch(long[] indices, MemorySegment into) {
            calls.incrementAndGet();
            readers.add(Thread.currentThread().getName());
            for (long index : indices) {
                if (index == failAt) {
                    throw new MemfitException("sample " + index + " is damaged");
                }
                if (index == stallAt && Thread.currentThread().getName().startsWith("memfit-loader")) {
                    stalled.countDown();
                    try {
                        release.await();
                    } catch (InterruptedException e) {
                        // interrupted by the loader's close: read on, as a copy would
                    }
                }
            }
            rows.readBatch(indices, into);
        }

        @Override
        public void close() {
            rows.close();
        }
    }

    private static List<float[]> epoch(Loader loader, long epoch) {
        List<float[]> batches = new ArrayList<>();
        for (Batch batch : loader.epoch(epoch)) {
            batches.add(batch.toFloatArray());
        }
        return batches;
    }

    @Test
    void partsAreTwoPerCopyingThreadAndNeverUnder64KiB() {
        try (MemoryRows source = new MemoryRows()) {
            assertEquals(8, RandomAccessPipeline.partRows(source, 32, 1, false), "32 rows, 2 threads copying: 4 parts");
            assertEquals(6, RandomAccessPipeline.partRows(source, 32, 2, false), "3 threads copying: 6 parts");
            assertEquals(4, RandomAccessPipeline.partRows(source, 8, 1, false), "never under 4 rows of 16 KiB");
            assertEquals(32, RandomAccessPipeline.partRows(source, 32, 0, false), "no reader to share with");
            assertEquals(32, RandomAccessPipeline.partRows(source, 32, 1, true), "sparse or converted: whole");
        }
        try (ArraySource narrow = ArraySource.allocate("narrow", 1000, new Shape(7), DType.FLOAT32)) {
            assertEquals(256, RandomAccessPipeline.partRows(narrow, 256, 1, false), "rows of 28 bytes: a batch is one part");
        }
    }

    @Test
    @Timeout(120)
    void splitBatchesEqualWholeOnesInTheSameOrder() {
        try (MemoryRows source = new MemoryRows()) {
            List<float[]> whole;
            try (Loader one = Datasets.of(source).optBatchSize(32).optShuffle(11).optThreads(0).build()) {
                whole = epoch(one, 2);
            }
            int wholeCalls = source.calls.getAndSet(0);
            assertEquals(10, wholeCalls, "one call a batch without readers");
            for (int threads : new int[]{1, 3}) {
                source.readers.clear();
                source.calls.set(0);
                try (Loader split = Datasets.of(source).optBatchSize(32).optShuffle(11).optThreads(threads).optPrefetch(2).build()) {
                    for (int repeat = 0; repeat < 3; repeat++) {
                        List<float[]> parts = epoch(split, 2);
                        assertEquals(whole.size(), parts.size());
                        for (int b = 0; b < whole.size(); b++) {
                            assertArrayEquals(whole.get(b), parts.get(b), threads + " readers, batch " + b);
                        }
                    }
                }
                assertTrue(source.calls.get() > 3 * wholeCalls, "batches were read in parts: " + source.calls.get() + " calls");
                if (threads == 3) {
                    assertTrue(source.readers.size() >= 2, "parts were read by several threads: " + source.readers);
                }
            }
            // the last batch holds 300 - 9 * 32 = 12 rows: parts of 8 and 4
            assertEquals(12, whole.get(9).length / COLUMNS);
        }
    }

    @Test
    @Timeout(120)
    void aFailedPartFailsItsBatchAndTheLoaderReadsOn() {
        try (MemoryRows source = new MemoryRows();
             Loader loader = Datasets.of(source).optBatchSize(32).optThreads(1).optPrefetch(2).build()) {
            long buffers = loader.bufferMemory();
            source.failAt = 70; // batch 2 (rows 64-95), in its first part (rows 64-71)
            var batches = loader.epoch(0).iterator();
            batches.next();
            batches.next();
            MemfitException failure = assertThrows(MemfitException.class, batches::next);
            assertEquals("sample 70 is damaged", failure.getMessage());
            source.failAt = -1;
            // the failed batch counts as handed out: the epoch goes on with batch 3 and ends after batch 9
            long next = 3;
            while (batches.hasNext()) {
                Batch batch = batches.next();
                assertEquals(next++, batch.number());
                assertEquals(batch.number() * 32, batch.indices()[0], "file order: the batch's own rows");
            }
            assertEquals(10, next);
            List<float[]> again = epoch(loader, 1);
            assertEquals(10, again.size(), "the next epoch is whole");
            for (float[] batch : again) {
                for (int row = 0; row < batch.length / COLUMNS; row++) {
                    float first = batch[row * COLUMNS];
                    assertEquals(first + COLUMNS - 1, batch[row * COLUMNS + COLUMNS - 1], 0f, "a row is its own values");
                }
            }
            assertEquals(buffers, loader.bufferMemory(), "no buffer added");
            assertEquals(2, ((RandomAccessPipeline) loader.pipeline()).freeBufferCount(),
                    "every buffer back but the last batch's (3 in all)");
        }
    }

    @Test
    @Timeout(120)
    void anEpochLeftEarlyGivesEveryBufferBack() {
        try (MemoryRows source = new MemoryRows();
             Loader loader = Datasets.of(source).optBatchSize(32).optShuffle(5).optThreads(2).optPrefetch(3).build()) {
            for (int round = 0; round < 20; round++) {
                for (Batch batch : loader.epoch(round)) {
                    if (batch.number() == round % 4) {
                        break;
                    }
                }
            }
            // had a buffer been lost, the loader would run out of them and this epoch would never finish
            List<float[]> all = epoch(loader, 0);
            assertEquals(10, all.size());
            for (int b = 0; b < all.size(); b++) {
                assertEquals(b == 9 ? 12 * COLUMNS : 32 * COLUMNS, all.get(b).length, "batch " + b);
            }
        }
    }

    @Test
    @Timeout(120)
    void anEpochAbandonedGivesEveryBufferBackEvenWhenItsThreadIsInterrupted() {
        try (MemoryRows source = new MemoryRows();
             Loader loader = Datasets.of(source).optBatchSize(32).optShuffle(2).optThreads(2).optPrefetch(3).build()) {
            RandomAccessPipeline pipeline = (RandomAccessPipeline) loader.pipeline();
            int buffers = pipeline.freeBufferCount();
            assertEquals(4, buffers, "prefetch 3 plus the one handed out");
            for (int round = 0; round < 30; round++) {
                Loader.Epoch epoch = pipeline.start(round, 0);
                for (int b = 0; b <= round % 5; b++) {
                    epoch.next();
                }
                if (round % 2 == 1) {
                    Thread.currentThread().interrupt();
                }
                epoch.abandon();
                assertEquals(round % 2 == 1, Thread.interrupted(), "the interrupt is kept for the caller");
                assertEquals(buffers, pipeline.freeBufferCount(), "round " + round + ": every buffer back");
            }
        }
    }

    @Test
    @Timeout(120)
    void anInterruptedAbandonStillWaitsForThePartsBeingRead() throws InterruptedException {
        try (MemoryRows source = new MemoryRows();
             Loader loader = Datasets.of(source).optBatchSize(32).optThreads(1).optPrefetch(2).build()) {
            RandomAccessPipeline pipeline = (RandomAccessPipeline) loader.pipeline();
            assertEquals(3, pipeline.freeBufferCount());
            source.stallAt = 8; // batch 0 (file order), its second part: the reader stops there
            Loader.Epoch epoch = pipeline.start(0, 0);
            assertTrue(source.stalled.await(60, java.util.concurrent.TimeUnit.SECONDS), "the reader reached sample 8");
            Thread releaser = Thread.ofPlatform().start(() -> {
                try {
                    Thread.sleep(300);
                } catch (InterruptedException e) {
                    return;
                }
                source.release.countDown();
            });
            Thread.currentThread().interrupt();
            epoch.abandon();
            assertTrue(Thread.interrupted(), "the interrupt is kept for the caller");
            // had abandon() given up on the interrupt, batch 0's buffer would still be under the stalled reader
            assertEquals(3, pipeline.freeBufferCount(), "every buffer back once abandon() returns");
            releaser.join();
        }
    }
}
