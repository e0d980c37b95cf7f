package dev.memfit.data;

import dev.memfit.source.ArraySource;
import dev.memfit.source.NpySource;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.Shape;
import ai.djl.training.dataset.Batch;
import dev.memfit.MemfitException;
import dev.memfit.DType;
import dev.memfit.io.npy.Npy;
import dev.memfit.io.npy.NpyHeader;
import dev.memfit.io.npy.NpyWriter;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class LoaderTest {

    private static final int ROWS = 103;
    private static final int COLS = 7;

    /** A float32 matrix whose element (r, c) is r * 1000 + c. */
    private static Path matrix(Path dir, String name, NpyHeader layout) {
        Path file = dir.resolve(name);
        float[] values = new float[ROWS * COLS];
        for (int r = 0; r < ROWS; r++) {
            for (int c = 0; c < COLS; c++) {
                values[r * COLS + c] = r * 1000 + c;
            }
        }
        try (NpyWriter writer = Npy.create(file, layout)) {
            writer.writeRows(0, MemorySegment.ofArray(values));
            writer.commit();
        }
        return file;
    }

    private static Path matrix(Path dir) {
        return matrix(dir, "m.npy", NpyHeader.of(DType.FLOAT32, ROWS, COLS));
    }

    private static List<float[]> collect(Loader loader, long epoch) {
        List<float[]> batches = new ArrayList<>();
        for (dev.memfit.data.Batch batch : loader.epoch(epoch)) {
            batches.add(batch.toFloatArray());
        }
        return batches;
    }

    @Test
    void everyRowOncePerEpochWithItsOwnValues(@TempDir Path dir) {
        try (Loader loader = Datasets.npy(matrix(dir)).mapped().optBatchSize(10).optShuffle(1).build()) {
            assertEquals(11, loader.batchesPerEpoch());
            Set<Long> seen = new HashSet<>();
            for (dev.memfit.data.Batch batch : loader.epoch(0)) {
                float[] values = batch.toFloatArray();
                long[] indices = batch.indices();
                assertEquals(new Shape(indices.length, COLS), batch.shape());
                for (int i = 0; i < indices.length; i++) {
                    assertTrue(seen.add(indices[i]), "row " + indices[i] + " twice");
                    for (int c = 0; c < COLS; c++) {
                        assertEquals(indices[i] * 1000 + c, values[i * COLS + c], 0f);
                    }
                }
            }
            assertEquals(ROWS, seen.size());
        }
    }

    @Test
    void sameSeedSameBatchesWhateverTheSource(@TempDir Path dir) {
        Path file = matrix(dir);
        Path fortranBigEndian = matrix(dir, "fb.npy", NpyHeader.of(DType.FLOAT32, ROWS, COLS)
                .withFortranOrder(true).withByteOrder(ByteOrder.BIG_ENDIAN));
        List<List<float[]>> runs = new ArrayList<>();
        try (Loader mapped = Datasets.npy(file).mapped().optBatchSize(16).optShuffle(7).optThreads(2).optPrefetch(3).build();
             Loader memory = Datasets.npy(file).inMemory().optBatchSize(16).optShuffle(7).optThreads(0).build();
             Loader translated = Datasets.npy(fortranBigEndian).mapped().optBatchSize(16).optShuffle(7).build();
             NpySource source = NpySource.inMemory(file);
             ArraySource copy = ArraySource.allocate("copy", ROWS, new Shape(COLS), DType.FLOAT32)) {
            MemorySegment.copy(source.array().data(), 0, copy.data(), 0, copy.totalBytes());
            try (Loader array = Datasets.of(copy).optBatchSize(16).optShuffle(7).build()) {
                for (Loader loader : List.of(mapped, memory, translated, array)) {
                    runs.add(collect(loader, 3));
                }
            }
        }
        for (List<float[]> run : runs.subList(1, runs.size())) {
            assertEquals(runs.get(0).size(), run.size());
            for (int b = 0; b < run.size(); b++) {
                assertArrayEquals(runs.get(0).get(b), run.get(b), "batch " + b);
            }
        }
    }

    @Test
    void shuffleDiffersPerEpochAndSeedButRepeats(@TempDir Path dir) {
        Path file = matrix(dir);
        try (Loader a = Datasets.npy(file).mapped().optBatchSize(ROWS).optShuffle(5).build();
             Loader b = Datasets.npy(file).mapped().optBatchSize(ROWS).optShuffle(6).build()) {
            float[] epoch0 = collect(a, 0).get(0);
            float[] epoch1 = collect(a, 1).get(0);
            float[] again0 = collect(a, 0).get(0);
            float[] otherSeed = collect(b, 0).get(0);
            assertArrayEquals(epoch0, again0);
            assertNotEquals(Arrays.toString(epoch0), Arrays.toString(epoch1));
            assertNotEquals(Arrays.toString(epoch0), Arrays.toString(otherSeed));
        }
    }

    @Test
    void dropLastAndPartialLastBatch(@TempDir Path dir) {
        Path file = matrix(dir);
        try (Loader keep = Datasets.npy(file).mapped().optBatchSize(25).build();
             Loader drop = Datasets.npy(file).mapped().optBatchSize(25).optDropLast(true).build()) {
            List<Integer> sizes = new ArrayList<>();
            keep.epoch(0).forEach(batch -> sizes.add(batch.size()));
            assertEquals(List.of(25, 25, 25, 25, 3), sizes);
            sizes.clear();
            drop.epoch(0).forEach(batch -> sizes.add(batch.size()));
            assertEquals(List.of(25, 25, 25, 25), sizes);
        }
        MemfitException e = assertThrows(MemfitException.class,
                () -> Datasets.npy(file).mapped().optBatchSize(500).optDropLast(true).build());
        assertTrue(e.getMessage().contains("batch size 500 is larger than the 103 samples"), e.getMessage());
        assertThrows(MemfitException.class, () -> Datasets.npy(file).mapped().optBatchSize(0).build());
    }

    /**
     * Rows of {@code value == index}; the read of the batch holding sample 0 blocks until another batch has been read,
     * and every read records its thread.
     */
    private static final class StallingSource implements dev.memfit.source.SampleSource {
        final java.util.concurrent.CountDownLatch firstBatchStarted = new java.util.concurrent.CountDownLatch(1);
        final java.util.concurrent.CountDownLatch otherBatchRead = new java.util.concurrent.CountDownLatch(1);
        final java.util.Map<Long, String> readerOfFirstSample = new java.util.concurrent.ConcurrentHashMap<>();

        @Override
        public long size() {
            return 40;
        }

        @Override
        public Shape sampleShape() {
            return new Shape(1);
        }

        @Override
        public DType dtype() {
            return DType.FLOAT32;
        }

        @Override
        public void read(long index, MemorySegment into) {
            into.set(ValueLayout.JAVA_FLOAT, 0, index);
        }

        @Override
        public void readBatch(long[] indices, MemorySegment into) {
            if (indices[0] == 0) {
                firstBatchStarted.countDown();
                try {
                    assertTrue(otherBatchRead.await(60, java.util.concurrent.TimeUnit.SECONDS), "nobody read another batch");
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
            dev.memfit.source.SampleSource.super.readBatch(indices, into);
            readerOfFirstSample.put(indices[0], Thread.currentThread().getName());
            if (indices[0] != 0) {
                otherBatchRead.countDown();
            }
        }

        @Override
        public void close() {
        }
    }

    @Test
    @org.junit.jupiter.api.Timeout(60)
    void theCallerReadsBatchesNoReaderHasStartedInsteadOfWaiting() throws InterruptedException {
        StallingSource source = new StallingSource();
        String caller = Thread.currentThread().getName();
        // one background reader, stuck on batch 0 until some other batch is read: only the caller can unstick it
        try (Loader loader = Datasets.of(source).optBatchSize(10).optThreads(1).optPrefetch(3).build()) {
            long expected = 0;
            var batches = loader.epoch(0).iterator();
            assertTrue(source.firstBatchStarted.await(60, java.util.concurrent.TimeUnit.SECONDS));
            while (batches.hasNext()) {
                dev.memfit.data.Batch batch = batches.next();
                for (int i = 0; i < batch.size(); i++) {
                    assertEquals(expected++, batch.data().getAtIndex(ValueLayout.JAVA_FLOAT, i), 0f);
                }
            }
            assertEquals(40, expected, "every sample once, in order, whoever read it");
        }
        assertTrue(source.readerOfFirstSample.get(0L).startsWith("memfit-loader-"), source.readerOfFirstSample.toString());
        assertEquals(caller, source.readerOfFirstSample.get(10L), "the caller read batch 1 while the reader was stuck on batch 0");
    }

    @Test
    void aSourceOfMoreThan2To31SamplesIsShuffledWithoutAnEpochArray() {
        long size = 5_000_000_000L;
        dev.memfit.source.SampleSource huge = new dev.memfit.source.SampleSource() {
            @Override
            public long size() {
                return size;
            }

            @Override
            public Shape sampleShape() {
                return new Shape(1);
            }

            @Override
            public DType dtype() {
                return DType.INT64;
            }

            @Override
            public void read(long index, MemorySegment into) {
                into.set(ValueLayout.JAVA_LONG, 0, index);
            }

            @Override
            public void close() {
            }
        };
        try (Loader loader = Datasets.of(huge).optBatchSize(1000).optShuffle(5).optThreads(1).build()) {
            assertEquals(5_000_000L, loader.batchesPerEpoch());
            Set<Long> seen = new HashSet<>();
            var batches = loader.epoch(0).iterator();
            for (int b = 0; b < 3; b++) {
                dev.memfit.data.Batch batch = batches.next();
                for (int i = 0; i < batch.size(); i++) {
                    long index = batch.indices()[i];
                    assertTrue(index >= 0 && index < size, "index " + index);
                    assertEquals(index, batch.data().getAtIndex(ValueLayout.JAVA_LONG, i), "the sample carries its own index");
                    assertTrue(seen.add(index), "no sample twice");
                }
            }
            assertTrue(seen.stream().anyMatch(index -> index > Integer.MAX_VALUE), "positions past 2^31 are drawn");
        }
    }

    @Test
    void withoutReadersOneBufferServesEveryBatch(@TempDir Path dir) {
        try (Loader loader = Datasets.npy(matrix(dir)).mapped().optBatchSize(10).optShuffle(3).optThreads(0).optPrefetch(4).build()) {
            assertEquals(10L * COLS * Float.BYTES, loader.bufferMemory(), "nothing is read ahead, so one batch buffer");
            Set<Long> addresses = new HashSet<>();
            Set<Long> rows = new HashSet<>();
            for (dev.memfit.data.Batch batch : loader.epoch(0)) {
                addresses.add(batch.data().address());
                for (int i = 0; i < batch.size(); i++) {
                    long row = batch.indices()[i];
                    assertEquals(row * 1000f, batch.data().getAtIndex(ValueLayout.JAVA_FLOAT, (long) i * COLS), 0f);
                    rows.add(row);
                }
            }
            assertEquals(1, addresses.size(), "the same (cache-warm) buffer every batch");
            assertEquals(ROWS, rows.size());
        }
    }

    @Test
    void leavingAnEpochEarlyDoesNotBlockTheNext(@TempDir Path dir) {
        try (Loader loader = Datasets.npy(matrix(dir)).mapped().optBatchSize(4).optShuffle(2).optPrefetch(4).optThreads(2).build()) {
            for (dev.memfit.data.Batch batch : loader.epoch(0)) {
                if (batch.number() == 2) {
                    break;
                }
            }
            assertEquals(26, collect(loader, 1).size());
            assertEquals(26, collect(loader, 1).size());
        }
    }

    @Test
    void batchesAreReleasedWhenTheNextIsTaken(@TempDir Path dir) {
        try (Loader loader = Datasets.npy(matrix(dir)).mapped().optBatchSize(10).build()) {
            var iterator = loader.epoch(0).iterator();
            dev.memfit.data.Batch first = iterator.next();
            iterator.next();
            IllegalStateException e = assertThrows(IllegalStateException.class, first::data);
            assertTrue(e.getMessage().contains("was released"));
        }
    }

    @Test
    void convertsIntegerCountsToFloat(@TempDir Path dir) {
        Path file = dir.resolve("counts.npy");
        int[] counts = new int[ROWS * COLS];
        for (int i = 0; i < counts.length; i++) {
            counts[i] = i * 3;
        }
        Npy.write(file, NpyHeader.of(DType.INT32, ROWS, COLS), MemorySegment.ofArray(counts));
        try (Loader loader = Datasets.npy(file).mapped().optBatchSize(8).optConvertTo(DType.FLOAT32).build()) {
            dev.memfit.data.Batch batch = loader.epoch(0).iterator().next();
            assertEquals(DType.FLOAT32, batch.dtype());
            float[] values = batch.toFloatArray();
            for (int i = 0; i < values.length; i++) {
                assertEquals(i * 3, values[i], 0f);
            }
        }
        Path doubles = dir.resolve("doubles.npy");
        double[] values = new double[ROWS * COLS];
        Arrays.setAll(values, i -> i + 0.5);
        Npy.write(doubles, NpyHeader.of(DType.FLOAT64, ROWS, COLS), MemorySegment.ofArray(values));
        try (Loader loader = Datasets.npy(doubles).mapped().optBatchSize(8).optConvertTo(DType.FLOAT32).build()) {
            float[] batch = loader.epoch(0).iterator().next().toFloatArray();
            assertEquals(8 * COLS, batch.length);
            assertEquals(55.5f, batch[55], 0f);
        }
    }

    @Test
    void ndArraySharesTheBatchMemory(@TempDir Path dir) {
        try (Loader loader = Datasets.npy(matrix(dir)).inMemory().optBatchSize(5).build();
             NDManager manager = NDManager.newBaseManager()) {
            dev.memfit.data.Batch batch = loader.epoch(0).iterator().next();
            NDArray x = batch.toNDArray(manager);
            assertEquals(new Shape(5, COLS), x.getShape());
            assertEquals(2003f, x.getFloat(2, 3), 0f);
            batch.data().set(ValueLayout.JAVA_FLOAT, (2L * COLS + 3) * Float.BYTES, -1f);
            assertEquals(-1f, x.getFloat(2, 3), 0f, "the NDArray must view the batch buffer, not a copy");
        }
    }

    @Test
    void djlDatasetAdapterYieldsTheRows(@TempDir Path dir) throws Exception {
        try (NpySource source = NpySource.mapped(matrix(dir)); NDManager manager = NDManager.newBaseManager()) {
            SourceDataset dataset = SourceDataset.builder().setSource(source).setSampling(20, false).build();
            assertEquals(ROWS, dataset.size());
            int batches = 0;
            long rows = 0;
            for (Batch batch : dataset.getData(manager)) {
                NDArray x = batch.getData().singletonOrThrow();
                assertEquals(COLS, x.getShape().get(1));
                assertEquals(rows * 1000 + 6, x.getFloat(0, 6), 0f);
                rows += x.getShape().get(0);
                batches++;
                batch.close();
            }
            assertEquals(6, batches);
            assertEquals(ROWS, rows);
        }
    }
}
