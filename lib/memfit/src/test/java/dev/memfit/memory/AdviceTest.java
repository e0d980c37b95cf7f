package dev.memfit.memory;

import dev.memfit.data.Loader;
import dev.memfit.io.hdf5.H5ad;
import dev.memfit.sample.Subsets;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Estimate, advice, loader: the advised strategy opens the file the way the advice says, with the right rows. */
class AdviceTest {

    @TempDir
    static Path dir;
    static Path rows;
    static long rowBytes = StrategyFiles.COLUMNS * 4L;
    static long dataBytes = StrategyFiles.ROWS * rowBytes;

    @BeforeAll
    static void write() {
        StrategyFiles.write(dir);
        rows = dir.resolve("rows.npy");
    }

    private static Advice advise(long availableRam, long storageBytesPerSecond) {
        MemoryEstimate estimate = MemoryEstimator.builder()
                .setData(StrategyFiles.ROWS, rowBytes, LoadingStrategy.mapped()).optBatchSize(64).build().estimate();
        return Advice.of(estimate, dataBytes, new Advice.Machine(availableRam, 1L << 30, -1, storageBytesPerSecond));
    }

    @Test
    void plentyOfRamLoadsIntoMemory() {
        Advice advice = advise(1L << 30, -1);
        assertEquals(LoadingStrategy.inMemory(), advice.strategy());
        try (Loader loader = advice.strategy().loader(rows).optBatchSize(64).optShuffle(1).build()) {
            assertEquals("in-memory rows.npy", loader.describe());
            StrategyFiles.assertEveryRowOnce(loader.epoch(0), StrategyFiles.ROWS);
        }
    }

    @Test
    void crowdedRamMapsTheFile() {
        Advice advice = advise((long) (dataBytes / 0.7), -1);
        assertEquals(LoadingStrategy.mapped(), advice.strategy());
        assertTrue(advice.text().contains("memory-map it"), advice.text());
        try (Loader loader = advice.strategy().loader(rows).optBatchSize(64).optShuffle(1).build()) {
            assertEquals("mapped rows.npy", loader.describe());
            StrategyFiles.assertEveryRowOnce(loader.epoch(0), StrategyFiles.ROWS);
        }
    }

    @Test
    void slowStorageReadsLazilyWithSixteenThreads() {
        Advice advice = advise(dataBytes / 2, dataBytes);
        assertEquals(LoadingStrategy.lazy(Advice.LAZY_THREADS), advice.strategy());
        Path folder = dir.resolve("samples");
        try (Loader loader = advice.strategy().loader(folder).optBatchSize(5).optShuffle(1).build()) {
            assertTrue(loader.describe().contains("16 threads"), loader.describe());
            StrategyFiles.assertEveryRowOnce(loader.epoch(0), StrategyFiles.SAMPLES);
        }
    }

    @Test
    void fastStorageBeyondRamStreamsOrMaps() {
        Advice advice = advise(dataBytes / 2, 1L << 30);
        assertEquals(LoadingStrategy.streaming(), advice.strategy());
        try (Loader loader = advice.strategy().loader(rows).optBatchSize(64).optShuffle(1).build()) {
            assertEquals("mapped rows.npy", loader.describe());
            StrategyFiles.assertEveryRowOnce(loader.epoch(0), StrategyFiles.ROWS);
        }
    }

    @Test
    void aLongEpochStartsOnARandomSubsetThatFitsHalfTheRam() {
        // 40,000 bytes at 10 bytes/s: 4,000 s an epoch; half of 20,000 bytes of RAM keeps 10,000 bytes, 500 rows
        Advice advice = advise(dataBytes / 2, 10);
        LoadingStrategy.RandomSubset subset = assertInstanceOf(LoadingStrategy.RandomSubset.class, advice.strategy());
        assertEquals(0.25, subset.fraction(), 1e-12);
        assertEquals(LoadingStrategy.mapped(), subset.then());
        assertTrue(advice.text().contains("random subset of 25.0% of the samples"), advice.text());
        MemoryEstimate estimate = MemoryEstimator.builder().setData(StrategyFiles.ROWS, rowBytes, advice.strategy())
                .optBatchSize(64).build().estimate();
        assertEquals(500 * rowBytes, estimate.total(MemoryEstimate.Where.PAGE_CACHE));
        long[] chosen = Subsets.random(StrategyFiles.ROWS, 500, subset.seed());
        try (Loader loader = advice.strategy().loader(rows).optBatchSize(64).optShuffle(1).build()) {
            assertEquals(500, loader.samples());
            List<Long> seen = StrategyFiles.rowsOf(loader.epoch(0), index -> chosen[(int) index]);
            assertEquals(500, seen.stream().distinct().count());
        }
    }

    @Test
    void atlasAdviceOpensTheH5ad() {
        Path cells = dir.resolve("cells.h5ad");
        long stored;
        try (H5ad h5ad = H5ad.open(cells)) {
            stored = h5ad.storedValues();
        }
        Advice.Machine machine = new Advice.Machine(1L << 30, 1L << 30, -1, -1);
        LoadingStrategy small = Advice.atlasStrategy(StrategyFiles.CELLS, StrategyFiles.COLUMNS, stored, 1, machine);
        assertEquals(LoadingStrategy.inMemory(), small);
        assertTrue(Advice.atlasText(StrategyFiles.CELLS, StrategyFiles.COLUMNS, stored, 1, machine)
                .contains("LoadingStrategy.inMemory() holds it as dense float32"));
        try (Loader loader = small.loader(cells).optBatchSize(16).optShuffle(1).build()) {
            assertEquals("in-memory cells.h5ad", loader.describe());
            StrategyFiles.assertEveryRowOnce(loader.epoch(0), StrategyFiles.CELLS);
        }
        // the same file on a machine with too little RAM for it: streamed block-shuffled
        Advice.Machine tiny = new Advice.Machine(1000, 1L << 30, -1, -1);
        LoadingStrategy.Streaming streaming = assertInstanceOf(LoadingStrategy.Streaming.class,
                Advice.atlasStrategy(StrategyFiles.CELLS, StrategyFiles.COLUMNS, stored, 1, tiny));
        try (var stream = streaming.loader(cells).optBatchSize(16).optShuffle(1).build()) {
            List<Long> seen = StrategyFiles.rowsOf(stream.epoch(0), index -> index);
            assertEquals(StrategyFiles.CELLS, seen.stream().distinct().count());
        }
    }

    @Test
    void laterEpochsReadNothingWhenTheDataFitsAndBetweenAllOfItAndItLessTheRoomWhenItDoesNot() {
        Advice.Machine container = new Advice.Machine(300L << 20, 1L << 30, -1, -1, 512L << 20).withStorageSpeed(2_000_000_000L);
        Advice.EpochReads fits = Advice.epochReads(200L << 20, container);
        assertEquals(0, fits.bytesPerLaterEpoch(), "the page cache keeps 200 MiB in 300 MiB of room");
        assertEquals(0.0, fits.secondsPerLaterEpoch());
        Advice.EpochReads large = Advice.epochReads(1L << 30, container);
        assertEquals(1L << 30, large.bytesPerLaterEpoch(), "1 GiB in 300 MiB of room: every epoch reads all of it");
        assertEquals((1L << 30) / 2e9, large.secondsPerLaterEpoch(), 1e-12, "at the storage's measured speed");
        assertEquals((1L << 30) - (300L << 20), large.leastBytesPerLaterEpoch(),
                "the page cache may keep at most its 300 MiB of room of the file");
        assertEquals(((1L << 30) - (300L << 20)) / 2e9, large.leastSecondsPerLaterEpoch(), 1e-12);
        assertEquals(0, fits.leastBytesPerLaterEpoch(), "nothing to read when all of it fits");
        assertEquals(0.0, fits.leastSecondsPerLaterEpoch());
        Advice.EpochReads unmeasured = Advice.epochReads(1L << 30, new Advice.Machine(300L << 20, 1L << 30, -1, -1));
        assertEquals(-1.0, unmeasured.secondsPerLaterEpoch(), "no measured speed, no time");
        assertEquals(-1.0, unmeasured.leastSecondsPerLaterEpoch(), "no measured speed, no time");
        assertEquals(0, Advice.epochReads(1L << 30, new Advice.Machine(-1, 1L << 30, -1, -1)).leastBytesPerLaterEpoch(),
                "room unknown: no bound below");
    }
}
