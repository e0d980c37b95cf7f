package dev.memfit.data;

import dev.memfit.DType;
import dev.memfit.MemfitException;
import dev.memfit.PythonPeer;
import dev.memfit.sample.Sampler;
import dev.memfit.source.ArraySource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** What each option of {@link LoaderBuilder} does, on rows whose values are their index (row i is {i, i + 0.5}). */
class LoaderBuilderTest {

    private static ArraySource rows(int n) {
        float[][] rows = new float[n][];
        for (int i = 0; i < n; i++) {
            rows[i] = new float[]{i, i + 0.5f};
        }
        return ArraySource.of("rows", rows);
    }

    /** The row indices of every batch of an epoch, read back from the batch data (not from Batch.indices()). */
    private static List<long[]> epoch(Loader loader, long epoch) {
        return epoch(loader, epoch, true);
    }

    private static List<long[]> epoch(Loader loader, long epoch, boolean indicesAreRows) {
        List<long[]> batches = new ArrayList<>();
        for (Batch batch : loader.epoch(epoch)) {
            float[] values = batch.toFloatArray();
            long[] rows = new long[batch.size()];
            for (int i = 0; i < rows.length; i++) {
                assertEquals(values[2 * i] + 0.5f, values[2 * i + 1], "row " + i + " is whole");
                rows[i] = (long) values[2 * i];
            }
            if (indicesAreRows) {
                assertArrayEquals(batch.indices(), rows, "indices name the rows in the batch");
            }
            batches.add(rows);
        }
        return batches;
    }

    @Test
    void defaultsAreSequentialBatchesOf32KeepingTheLastPartialOne() {
        try (ArraySource source = rows(70); Loader loader = Datasets.of(source).build()) {
            List<long[]> batches = epoch(loader, 0);
            assertEquals(List.of(32, 32, 6), batches.stream().map(b -> b.length).toList());
            assertEquals(0, batches.getFirst()[0]);
            assertEquals(69, batches.getLast()[5]);
            assertEquals(3, loader.batchesPerEpoch());
            assertEquals(DType.FLOAT32, loader.outputType());
        }
    }

    @Test
    void shuffleIsSeededPerEpochAndDropLastDropsThePartialBatch() {
        try (ArraySource source = rows(50);
             Loader a = Datasets.of(source).optBatchSize(8).optShuffle(3).optDropLast(true).build();
             Loader b = Datasets.of(source).optBatchSize(8).optShuffle(3).optDropLast(true).optThreads(2).optPrefetch(4).build();
             Loader other = Datasets.of(source).optBatchSize(8).optShuffle(4).optDropLast(true).build()) {
            List<long[]> first = epoch(a, 0);
            assertEquals(6, first.size(), "50 / 8 = 6 whole batches");
            for (int i = 0; i < first.size(); i++) {
                assertArrayEquals(first.get(i), epoch(b, 0).get(i), "threads and prefetch do not change the order");
            }
            assertNotEquals(flat(first), flat(epoch(a, 1)), "another epoch, another order");
            assertNotEquals(flat(first), flat(epoch(other, 0)), "another seed, another order");
            assertEquals(48, flat(first).stream().distinct().count(), "no row twice in an epoch");
        }
    }

    private static List<Long> flat(List<long[]> batches) {
        List<Long> all = new ArrayList<>();
        batches.forEach(batch -> {
            for (long row : batch) {
                all.add(row);
            }
        });
        return all;
    }

    @Test
    void aSamplerReplacesTheShuffleAndTheLastChoiceWins() {
        Sampler backwards = new Sampler() {
            @Override
            public long epochLength() {
                return 5;
            }

            @Override
            public long[] indices(long epoch) {
                return new long[]{9, 7, 5, 3, 1};
            }
        };
        try (ArraySource source = rows(10);
             Loader sampled = Datasets.of(source).optShuffle(1).optSampler(backwards).optBatchSize(2).build()) {
            assertEquals(List.of(9L, 7L, 5L, 3L, 1L), flat(epoch(sampled, 0)));
        }
    }

    @Test
    void subsetFromIndicesOrFromAFileWrittenByNumpy(@TempDir Path dir) {
        Path file = dir.resolve("keep.npy");
        PythonPeer.run("""
                import sys, numpy as np
                np.save(sys.argv[1], np.array([4, 0, 11], dtype=np.int64))
                """, file);
        try (ArraySource source = rows(12);
             Loader fromArray = Datasets.of(source).optSubset(new long[]{2, 3}).optBatchSize(5).build();
             Loader fromFile = Datasets.of(source).optSubset(file).optBatchSize(5).build()) {
            assertEquals(List.of(2L, 3L), flat(epoch(fromArray, 0, false)), "values are the kept rows'");
            assertEquals(List.of(4L, 0L, 11L), flat(epoch(fromFile, 0, false)));
            for (Batch batch : fromFile.epoch(0)) {
                assertArrayEquals(new long[]{0, 1, 2}, batch.indices(), "indices are positions in the subset");
            }
            assertEquals(3, fromFile.samples(), "renumbered from 0");
        }
    }

    @Test
    void convertToChangesTheBatchElementType() {
        try (ArraySource source = rows(4); Loader loader = Datasets.of(source).optConvertTo(DType.FLOAT64).build()) {
            assertEquals(DType.FLOAT64, loader.outputType());
            for (Batch batch : loader.epoch(0)) {
                assertEquals(DType.FLOAT64, batch.dtype());
                assertEquals(3.5, batch.data().getAtIndex(java.lang.foreign.ValueLayout.JAVA_DOUBLE, 7));
            }
        }
    }

    @Test
    void invalidSettingsFailInBuildWithTheValueGiven() {
        try (ArraySource source = rows(5)) {
            assertTrue(assertThrows(MemfitException.class, () -> Datasets.of(source).optBatchSize(0).build())
                    .getMessage().contains("batch size must be at least 1, got 0"));
            assertTrue(assertThrows(MemfitException.class, () -> Datasets.of(source).optPrefetch(-1).build())
                    .getMessage().contains("prefetch must be in [0, 1024] batches, got -1"));
            assertTrue(assertThrows(MemfitException.class, () -> Datasets.of(source).optThreads(2000).build())
                    .getMessage().contains("threads must be in [0, 1024], got 2000"));
            MemfitException tooBig = assertThrows(MemfitException.class,
                    () -> Datasets.of(source).optBatchSize(6).optDropLast(true).build());
            assertTrue(tooBig.getMessage().contains("batch size 6 is larger than the 5 samples"), tooBig.getMessage());
            MemfitException outside = assertThrows(MemfitException.class,
                    () -> Datasets.of(source).optSubset(new long[]{1, 5}).build());
            assertTrue(outside.getMessage().endsWith("expected indices in [0, 5), found index 5 at position 1"),
                    outside.getMessage());
        }
    }

    @Test
    void batchesReadAheadAreSizedToTheMemoryLeftAndWhatCannotFitIsRefusedAtOnce() {
        // 1,000 rows of 2 floats: a batch of 500 is 4,000 bytes
        try (ArraySource source = rows(1_000)) {
            long gib = 1L << 30;
            LoaderBuilder defaults = Datasets.of(source).optBatchSize(500);
            dev.memfit.ProcessMemory roomy = new dev.memfit.ProcessMemory(gib, gib, -1, -1);
            assertEquals(2, defaults.fittingPrefetch(source, DType.FLOAT32, 1, roomy), "room to spare: the default");
            // 3 buffers (2 ahead + 1 held) of 4,000 bytes need 12,000; half of 20,000 is 10,000: one ahead fits
            dev.memfit.ProcessMemory tight = new dev.memfit.ProcessMemory(100_000, 20_000, 60_000, 40_000);   // limit 60 kB
            assertEquals(1, defaults.fittingPrefetch(source, DType.FLOAT32, 1, tight), "the default shrinks to fit");
            dev.memfit.ProcessMemory none = new dev.memfit.ProcessMemory(100_000, 6_000, 60_000, 54_000);
            MemfitException refused = assertThrows(MemfitException.class,
                    () -> defaults.fittingPrefetch(source, DType.FLOAT32, 1, none));
            assertTrue(refused.getMessage().contains("batches of 500 samples of 8 bytes need 2 buffer(s)")
                    && refused.getMessage().contains("more than the 0 MB this process can still get")
                    && refused.getMessage().contains("lower the batch size (optBatchSize)"), refused.getMessage());
            MemfitException explicit = assertThrows(MemfitException.class, () -> Datasets.of(source).optBatchSize(500)
                    .optPrefetch(4).fittingPrefetch(source, DType.FLOAT32, 1, tight));
            assertTrue(explicit.getMessage().contains("need 5 buffer(s)") && explicit.getMessage().contains("over half of")
                    && explicit.getMessage().contains("optPrefetch(1)"), explicit.getMessage());
            assertEquals(2, defaults.fittingPrefetch(source, DType.FLOAT32, 1, new dev.memfit.ProcessMemory(2 * gib, 0, gib, gib)),
                    "in a container, buffers under a sixteenth of its limit are left as set (what looks used may be page cache)");
            assertThrows(MemfitException.class, () -> defaults.fittingPrefetch(source, DType.FLOAT32, 1,
                    new dev.memfit.ProcessMemory(256 * gib, 0, -1, -1)), "outside one, MemAvailable is what is left");
            assertEquals(4, Datasets.of(source).optBatchSize(500).optPrefetch(4).fittingPrefetch(source, DType.FLOAT32, 0, tight),
                    "without reader threads there is one buffer whatever the prefetch");
            assertThrows(MemfitException.class, () -> defaults.fittingPrefetch(source, DType.FLOAT64, 1,
                    new dev.memfit.ProcessMemory(100_000, 12_000, 60_000, 48_000)), "float32 read as float64: 8,000-byte buffers");
            assertEquals(2, defaults.fittingPrefetch(source, DType.FLOAT32, 1, new dev.memfit.ProcessMemory(-1, -1, -1, -1)),
                    "memory unknown: the setting as it is");
        }
    }
}
