package dev.memfit.memory;

import dev.memfit.NativeMemory;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import ai.djl.nn.core.Linear;
import dev.memfit.MemfitException;
import dev.memfit.source.ArraySource;
import dev.memfit.data.Batch;
import dev.memfit.data.Datasets;
import dev.memfit.data.Loader;
import dev.memfit.DType;
import dev.memfit.io.npy.Npy;
import dev.memfit.io.npy.NpyHeader;
import dev.memfit.io.npy.NpyWriter;
import dev.memfit.synthetic.SyntheticParticles;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.Iterator;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class MemoryEstimatorTest {

    private static final long MB = 1 << 20;

    @Test
    void theWholeProcessAddsTheBaselineWhatTheRunAddsAndTheMappedPagesAnEpochTouches() {
        long mib = 1 << 20;
        MemoryEstimate loaded = MemoryEstimator.builder().setData(1_000, mib, LoadingStrategy.inMemory()).optBatchSize(10)
                .optPrefetch(2).setModel(1_000_000, 0).optProcessBaseline(400 * mib).build().estimate();
        assertEquals(400 * mib, loaded.total(MemoryEstimate.Where.PROCESS));
        long run = loaded.total(MemoryEstimate.Where.HEAP) + loaded.total(MemoryEstimate.Where.NATIVE);
        assertEquals(1_000 * mib + 3 * 10 * mib, loaded.total(MemoryEstimate.Where.NATIVE), "data + three batch buffers");
        assertEquals(400 * mib + run + loaded.total(MemoryEstimate.Where.DEVICE), loaded.residentPeak(true),
                "training on the CPU: the model's memory is this process's too");
        assertEquals(400 * mib + run, loaded.residentPeak(false), "on a GPU the model's memory is not host memory");
        assertTrue(loaded.toString().contains("this process before the run"), loaded.toString());

        MemoryEstimate mapped = MemoryEstimator.builder().setData(1_000, mib, LoadingStrategy.mapped()).optBatchSize(10)
                .optProcessBaseline(400 * mib).build().estimate();
        assertEquals(400 * mib + mapped.total(MemoryEstimate.Where.HEAP) + mapped.total(MemoryEstimate.Where.NATIVE) + 1_000 * mib,
                mapped.residentPeak(false), "an epoch touches every page of the mapped file");
        MemoryEstimate rank = MemoryEstimator.builder().setData(1_000, mib, LoadingStrategy.shards(4)).optBatchSize(10)
                .build().estimate();
        assertEquals(0, rank.total(MemoryEstimate.Where.PROCESS), "no baseline given, none assumed");
        assertEquals(rank.total(MemoryEstimate.Where.HEAP) + rank.total(MemoryEstimate.Where.NATIVE) + 250 * mib,
                rank.residentPeak(false), "one rank of four touches only its shards' pages of the mappings");
        assertThrows(MemfitException.class, () -> MemoryEstimator.builder().optProcessBaseline(-1));
    }

    @Test
    void componentsAddUp() {
        MemoryEstimate estimate = MemoryEstimator.builder().setData(1_000, 400, LoadingStrategy.inMemory())
                .setModel(10_000, 100).optOptimizer(MemoryEstimator.Optimizer.ADAM).optBatchSize(50).optPrefetch(2).build().estimate();
        assertEquals(400_000 + 3 * 50 * 400, estimate.total(MemoryEstimate.Where.NATIVE));
        assertEquals(8_000, estimate.total(MemoryEstimate.Where.HEAP));
        // weights + gradients + 2 Adam states + activations + the batch copy
        assertEquals(40_000 + 40_000 + 80_000 + 100 * 50 * 4 + 50 * 400, estimate.total(MemoryEstimate.Where.DEVICE));
        assertTrue(estimate.rows().size() > 5);
        assertTrue(estimate.rows().stream().anyMatch(r -> r.component().equals("total") && r.where().equals("native")),
                estimate.rows().toString());
        assertTrue(estimate.toString().startsWith("Memory estimate"), estimate.toString());
        assertTrue(estimate.toString().contains(estimate.rows().getFirst().component()), estimate.toString());
        MemoryEstimate sgd = MemoryEstimator.builder().setData(1_000, 400, LoadingStrategy.mapped())
                .setModel(10_000, 0).optOptimizer(MemoryEstimator.Optimizer.SGD).optPrecision(2).optBatchSize(50).build().estimate();
        assertEquals(20_000 + 20_000 + 50 * 400, sgd.total(MemoryEstimate.Where.DEVICE));
        assertEquals(400_000, sgd.total(MemoryEstimate.Where.MAPPED));
        assertEquals(400_000, sgd.total(MemoryEstimate.Where.PAGE_CACHE));
    }

    @Test
    void countsTheParametersOfADjlBlock() {
        try (NDManager manager = NDManager.newBaseManager()) {
            Linear linear = Linear.builder().setUnits(10).build();
            linear.initialize(manager, DataType.FLOAT32, new Shape(1, 20));
            assertEquals(20 * 10 + 10, MemoryEstimator.parameterCount(linear));
        }
    }

    @Test
    void impossibleRequestsSayWhy() {
        MemfitException negative = assertThrows(MemfitException.class,
                () -> MemoryEstimator.builder().setData(-5, 4, LoadingStrategy.mapped()).build());
        assertTrue(negative.getMessage().contains("count >= 1"), negative.getMessage());
        MemfitException devices = assertThrows(MemfitException.class,
                () -> MemoryEstimator.builder().setData(10, 4, LoadingStrategy.mapped()).optBatchSize(2).optDevices(0).build());
        assertTrue(devices.getMessage().contains("devices must be at least 1"), devices.getMessage());
        MemfitException batch = assertThrows(MemfitException.class,
                () -> MemoryEstimator.builder().setData(10, 4, LoadingStrategy.mapped()).optBatchSize(11).build());
        assertTrue(batch.getMessage().contains("batch size must be in [1, 10]"), batch.getMessage());
        assertThrows(MemfitException.class, () -> MemoryEstimator.builder().setData(10, 4, LoadingStrategy.mapped())
                .setModel(-1, 0).build());
    }

    @Test
    void adviceFollowsTheDocumentedThresholds() {
        long gb = 1L << 30;
        MemoryEstimate small = MemoryEstimator.builder().setData(1000, 1000, LoadingStrategy.inMemory()).build().estimate();
        Advice.Machine machine = new Advice.Machine(16 * gb, 4 * gb, -1, -1);
        assertEquals(LoadingStrategy.inMemory(), Advice.of(small, 8 * gb, machine).strategy());
        assertEquals(LoadingStrategy.mapped(), Advice.of(small, 8 * gb + 1, machine).strategy());
        assertEquals(LoadingStrategy.mapped(), Advice.of(small, (long) (14.4 * gb), machine).strategy());
        assertEquals(LoadingStrategy.streaming(), Advice.of(small, 15 * gb, machine).strategy());
        Advice slow = Advice.of(small, 100 * gb, new Advice.Machine(16 * gb, 4 * gb, -1, 100_000_000));
        assertEquals(LoadingStrategy.lazy(16), slow.strategy());
        assertTrue(slow.text().contains("16 reader threads"), slow.text());
        // an epoch of 1000 GB at 100 MB/s: a subset of 8 GB (half the RAM), which reads in about 86 s
        Advice subset = Advice.of(small, 1000 * gb, new Advice.Machine(16 * gb, 4 * gb, -1, 100_000_000));
        assertEquals(new LoadingStrategy.RandomSubset(8.0 / 1000, 0, LoadingStrategy.mapped()), subset.strategy());
        assertTrue(subset.text().contains("random subset of 0.800% of the samples (8.0 GiB"), subset.text());
        MemoryEstimate big = MemoryEstimator.builder().setData(1000, 1000, LoadingStrategy.inMemory())
                .setModel(1_000_000_000L, 0).build().estimate();
        Advice device = Advice.of(big, gb, new Advice.Machine(16 * gb, 4 * gb, 8 * gb, -1));
        assertTrue(device.reduceBatch(), device.text());
        assertTrue(device.text().contains("gradient accumulation"), device.text());
    }

    /** Native bytes memfit holds and live heap, measured while an epoch is under way, against the estimate. */
    @Test
    void atlasStrategyFollowsTheSingleCellGuide() {
        long gb = 1L << 30;
        Advice.Machine big = new Advice.Machine(512 * gb, 32 * gb, -1, -1);
        // 10% dense CSR of 2,000 genes: 200 values of 8 bytes per cell
        assertEquals(LoadingStrategy.inMemory(), Advice.atlasStrategy(400_000, 2000, 400_000L * 200, 1, big));
        assertEquals(LoadingStrategy.streaming(), Advice.atlasStrategy(600_000, 2000, 600_000L * 200, 1, big));
        assertEquals(LoadingStrategy.streaming(), Advice.atlasStrategy(8_000_000, 2000, 8_000_000L * 200, 1, big));
        assertEquals(LoadingStrategy.shards(4), Advice.atlasStrategy(8_000_000, 2000, 8_000_000L * 200, 4, big));
        // a small atlas on a small machine: 400k cells of 30,000 genes at 30% is 29 GB of CSR, more than half of 16 GB
        Advice.Machine small = new Advice.Machine(16 * gb, 4 * gb, -1, -1);
        assertEquals(LoadingStrategy.streaming(), Advice.atlasStrategy(400_000, 30_000, 400_000L * 9000, 1, small));
        assertTrue(Advice.atlasText(8_000_000, 2000, 1, 4, big).contains("rank r takes shards r, r+4"));
    }

    private static void assertWithin15Percent(String what, long estimated, long measured) {
        double ratio = measured / (double) estimated;
        assertTrue(ratio > 0.85 && ratio < 1.15, what + ": estimated " + estimated + ", measured " + measured
                + " (ratio " + String.format("%.3f", ratio) + ")");
    }

    private static long liveHeap() {
        for (int i = 0; i < 3; i++) {
            System.gc();
        }
        Runtime runtime = Runtime.getRuntime();
        return runtime.totalMemory() - runtime.freeMemory();
    }

    private static void checkDuringAnEpoch(Loader loader, MemoryEstimate estimate, long nativeBefore, long mappedBefore,
                                           long heapBefore) {
        Iterator<Batch> epoch = loader.epoch(0).iterator();
        epoch.next();
        epoch.next();
        long nativeNow = NativeMemory.ALLOCATED.bytes() - nativeBefore;
        long mappedNow = NativeMemory.MAPPED.bytes() - mappedBefore;
        long heapNow = liveHeap() - heapBefore;
        assertWithin15Percent("native", estimate.total(MemoryEstimate.Where.NATIVE), nativeNow);
        if (estimate.total(MemoryEstimate.Where.MAPPED) > 0) {
            assertWithin15Percent("mapped", estimate.total(MemoryEstimate.Where.MAPPED), mappedNow);
        }
        assertWithin15Percent("heap", estimate.total(MemoryEstimate.Where.HEAP), heapNow);
    }

    @Test
    void estimateMatchesMeasurementInMemory() {
        long rows = 3_000_000;
        long heapBefore = liveHeap();
        long nativeBefore = NativeMemory.ALLOCATED.bytes();
        try (ArraySource data = ArraySource.allocate("rows", rows, new Shape(16), DType.FLOAT32);
             Loader loader = Datasets.of(data).optBatchSize(256).optShuffle(1).optPrefetch(2).build()) {
            MemoryEstimate estimate = MemoryEstimator.builder().setData(rows, 64, LoadingStrategy.inMemory())
                    .optBatchSize(256).optPrefetch(2).build().estimate();
            checkDuringAnEpoch(loader, estimate, nativeBefore, NativeMemory.MAPPED.bytes(), heapBefore);
        }
    }

    @Test
    void estimateMatchesMeasurementMapped(@TempDir Path dir) {
        long rows = 3_000_000;
        Path file = dir.resolve("rows.npy");
        try (NpyWriter writer = Npy.create(file, NpyHeader.of(DType.FLOAT32, rows, 16))) {
            writer.commit();
        }
        long heapBefore = liveHeap();
        long nativeBefore = NativeMemory.ALLOCATED.bytes();
        long mappedBefore = NativeMemory.MAPPED.bytes();
        try (Loader loader = Datasets.npy(file).mapped().optBatchSize(512).optShuffle(1).optPrefetch(4).build()) {
            MemoryEstimate estimate = MemoryEstimator.builder().setData(rows, 64, LoadingStrategy.mapped())
                    .optBatchSize(512).optPrefetch(4).build().estimate();
            checkDuringAnEpoch(loader, estimate, nativeBefore, mappedBefore, heapBefore);
        }
    }

    @Test
    void estimateMatchesMeasurementForParticles(@TempDir Path dir) {
        SyntheticParticles.Written written = SyntheticParticles.builder().setParticles(4_000).setSize(32)
                .optPerStack(1_000).optNoise(0.1).optMaxAngle(30).optSeed(1).write(dir);
        long imageBytes = 32 * 32 * 4;
        for (LoadingStrategy loading : new LoadingStrategy[]{LoadingStrategy.inMemory(), LoadingStrategy.lazy(4)}) {
            long heapBefore = liveHeap();
            long nativeBefore = NativeMemory.ALLOCATED.bytes();
            try (Loader loader = loading.loader(written.star()).optBatchSize(64).optShuffle(1).optPrefetch(2).build()) {
                MemoryEstimate estimate = MemoryEstimator.builder().setData(4_000, imageBytes, loading)
                        .optBatchSize(64).optPrefetch(2).build().estimate();
                long nativeNow;
                Iterator<Batch> epoch = loader.epoch(0).iterator();
                epoch.next();
                nativeNow = NativeMemory.ALLOCATED.bytes() - nativeBefore;
                assertWithin15Percent(loading + " native", estimate.total(MemoryEstimate.Where.NATIVE), nativeNow);
                long heapNow = liveHeap() - heapBefore;
                // 32 KB of epoch order: the heap is dominated by the particle index (16 bytes per particle) and
                // bookkeeping, so only an upper bound is meaningful at this size.
                assertTrue(heapNow < 4 * MB, loading + " heap grew by " + heapNow);
            }
        }
    }
}
