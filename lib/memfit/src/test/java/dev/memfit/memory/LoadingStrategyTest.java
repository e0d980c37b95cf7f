package dev.memfit.memory;

import dev.memfit.MemfitException;
import dev.memfit.data.Loader;
import dev.memfit.sample.Subsets;
import dev.memfit.shard.ShardWriter;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Each {@link LoadingStrategy} builds the loader it names, on files numpy and anndata wrote, with the right rows. */
class LoadingStrategyTest {

    @TempDir
    static Path dir;
    static Path rows;
    static Path samples;
    static Path cells;
    static Path shards;

    @BeforeAll
    static void write() {
        StrategyFiles.write(dir);
        rows = dir.resolve("rows.npy");
        samples = dir.resolve("samples");
        cells = dir.resolve("cells.h5ad");
        shards = dir.resolve("shards");
        ShardWriter.builder().setInput(cells).optShardSize(16).write(shards);
    }

    @Test
    void inMemoryReadsEveryFormatIntoMemory() {
        for (Path path : List.of(rows, samples, cells, shards)) {
            try (Loader loader = LoadingStrategy.inMemory().loader(path).optBatchSize(64).optShuffle(3).build()) {
                assertTrue(loader.describe().startsWith("in-memory "), path + ": " + loader.describe());
                long expected = path == rows ? StrategyFiles.ROWS : path == samples ? StrategyFiles.SAMPLES : StrategyFiles.CELLS;
                StrategyFiles.assertEveryRowOnce(loader.epoch(0), expected);
            }
        }
    }

    @Test
    void mappedMapsAnNpyAndShards() {
        try (Loader loader = LoadingStrategy.mapped().loader(rows).optBatchSize(128).optShuffle(3).build()) {
            assertEquals("mapped rows.npy", loader.describe());
            StrategyFiles.assertEveryRowOnce(loader.epoch(0), StrategyFiles.ROWS);
        }
        try (Loader loader = LoadingStrategy.mapped().loader(shards).optBatchSize(7).build()) {
            assertTrue(loader.describe().endsWith("shards in shards"), loader.describe());
            StrategyFiles.assertEveryRowOnce(loader.epoch(0), StrategyFiles.CELLS);
        }
    }

    @Test
    void lazyReadsOnDemandWithItsThreads() {
        try (Loader loader = LoadingStrategy.lazy(3).loader(samples).optBatchSize(5).optShuffle(3).build()) {
            assertTrue(loader.describe().startsWith("lazy ") && loader.describe().contains("3 threads"), loader.describe());
            StrategyFiles.assertEveryRowOnce(loader.epoch(0), StrategyFiles.SAMPLES);
        }
        try (Loader loader = LoadingStrategy.lazy(3).loader(rows).optBatchSize(100).optShuffle(3).build()) {
            assertEquals("mapped rows.npy", loader.describe(), "a .npy is paged in on demand through its mapping");
            StrategyFiles.assertEveryRowOnce(loader.epoch(0), StrategyFiles.ROWS);
        }
        assertThrows(MemfitException.class, () -> LoadingStrategy.lazy(0));
    }

    @Test
    void streamingStreamsAnH5adThroughItsBuffer() {
        LoadingStrategy.Streaming streaming = LoadingStrategy.streaming(16, 32, 2);
        try (Loader stream = streaming.loader(cells).optBatchSize(10).optShuffle(3).build()) {
            assertTrue(stream.describe().startsWith("stream of "), stream.describe());
            MemoryEstimate estimate = MemoryEstimator.builder().setData(StrategyFiles.CELLS, StrategyFiles.COLUMNS * 4L, streaming)
                    .optBatchSize(10).build().estimate();
            assertEquals(stream.bufferMemory(), estimate.total(MemoryEstimate.Where.NATIVE),
                    "the estimate counts what the stream allocates: " + estimate);
            List<Long> first = StrategyFiles.rowsOf(stream.epoch(0), index -> index);
            assertEquals(StrategyFiles.CELLS, first.size());
            assertEquals(StrategyFiles.CELLS, first.stream().distinct().count());
            assertNotEquals(first.subList(0, 20), java.util.stream.LongStream.range(0, 20).boxed().toList(), "shuffled");
        }
        // other formats are read on demand, every epoch from storage
        try (Loader mapped = streaming.loader(rows).optBatchSize(256).build()) {
            StrategyFiles.assertEveryRowOnce(mapped.epoch(0), StrategyFiles.ROWS);
        }
        assertThrows(MemfitException.class, () -> LoadingStrategy.streaming(16, 8, 1), "buffer smaller than a chunk");
        assertEquals(new LoadingStrategy.Streaming(10_000, 40_000, 1), LoadingStrategy.streaming());
    }

    @Test
    void randomSubsetReadsOnlyItsSamples() {
        LoadingStrategy.RandomSubset subset = new LoadingStrategy.RandomSubset(0.1, 5, LoadingStrategy.lazy(2));
        long[] chosen = Subsets.random(StrategyFiles.ROWS, 200, 5);
        try (Loader loader = subset.loader(rows).optBatchSize(32).optShuffle(3).build()) {
            assertEquals(200, loader.samples());
            assertEquals("200 of mapped rows.npy", loader.describe());
            List<Long> seen = StrategyFiles.rowsOf(loader.epoch(0), index -> chosen[(int) index]);
            assertEquals(200, seen.stream().distinct().count());
        }
        try (Loader loader = LoadingStrategy.randomSubset(0.5, LoadingStrategy.mapped()).loader(shards).optBatchSize(8).build()) {
            assertEquals(45, loader.samples());
        }
        assertThrows(MemfitException.class, () -> new LoadingStrategy.RandomSubset(0, 1, LoadingStrategy.mapped()));
        assertThrows(MemfitException.class, () -> LoadingStrategy.randomSubset(0.5, LoadingStrategy.inMemory()),
                "an in-memory load would read everything first");
    }

    @Test
    void shardsReadTheShardFolder() {
        try (Loader loader = LoadingStrategy.shards(1).loader(shards).optBatchSize(9).optShuffle(3).build()) {
            assertEquals(StrategyFiles.CELLS, loader.samples());
            StrategyFiles.assertEveryRowOnce(loader.epoch(0), StrategyFiles.CELLS);
        }
        MemfitException e = assertThrows(MemfitException.class, () -> LoadingStrategy.shards(2).loader(cells));
        assertTrue(e.getMessage().contains("./memfit shard"), e.getMessage());
    }

    @Test
    void sparseShardsAreDescribedAndEstimatedAtTheBytesTheyTake() throws java.io.IOException {
        // anndata's CSR X makes sparse shards by default: mapped and cached at their real size, densified per batch
        long stored;
        long rowBytes;
        long samples;
        try (dev.memfit.shard.ShardStore store = dev.memfit.shard.ShardStore.open(shards)) {
            assertEquals(dev.memfit.shard.ShardLayout.SPARSE, store.layout());
            stored = store.storedBytes();
            rowBytes = store.sampleBytes();
            samples = store.size();
            long files = 0;
            for (Path file : store.shardFiles()) {
                files += java.nio.file.Files.size(file);
            }
            assertEquals(files, stored);
        }
        String described = LoadingStrategy.shards(1).describe(shards);
        assertTrue(described.startsWith("memory-mapped shards, sparse (CSR, densified per batch), ")
                && described.endsWith(MemoryEstimator.human(stored) + " on disk"), described);
        MemoryEstimate estimate = MemoryEstimator.builder().setData(samples, rowBytes, LoadingStrategy.shards(2))
                .optStoredBytes(stored).optBatchSize(8).build().estimate();
        assertEquals(stored, estimate.total(MemoryEstimate.Where.MAPPED), "the files as stored");
        assertEquals((long) Math.ceil(stored * (double) ((samples + 1) / 2) / samples),
                estimate.total(MemoryEstimate.Where.PAGE_CACHE), "this rank's half of them");
        assertEquals(3 * 8 * rowBytes, estimate.total(MemoryEstimate.Where.NATIVE), "batches hold dense rows");
        assertTrue(estimate.components().stream().anyMatch(c -> c.name().contains("file mappings (as stored")),
                estimate.components().toString());
        // (this tiny file is smaller dense than in three .npy headers per shard; at atlas sizes CSR is the smaller,
        // see SparseShardsTest.sparseShardsTakeAboutTheSourcesBytes)
    }

    @Test
    void anH5adIsNotReadAtRandom() {
        for (LoadingStrategy strategy : List.of(LoadingStrategy.mapped(), LoadingStrategy.lazy(4),
                LoadingStrategy.randomSubset(0.5, LoadingStrategy.mapped()))) {
            MemfitException e = assertThrows(MemfitException.class, () -> strategy.loader(cells));
            assertTrue(e.getMessage().contains("streaming().loader(file)"), e.getMessage());
        }
    }

    @Test
    void estimatesFollowTheStrategy() {
        long rowBytes = StrategyFiles.COLUMNS * 4L;
        MemoryEstimate subset = MemoryEstimator.builder().setData(1000, rowBytes,
                LoadingStrategy.randomSubset(0.25, LoadingStrategy.mapped())).optBatchSize(10).build().estimate();
        assertEquals(1000 * rowBytes, subset.total(MemoryEstimate.Where.MAPPED), "the whole file is mapped");
        assertEquals(250 * rowBytes, subset.total(MemoryEstimate.Where.PAGE_CACHE), "only the subset is read");
        assertEquals(2 * 8 * 250, subset.total(MemoryEstimate.Where.HEAP), "subset indices and epoch order");
        MemoryEstimate streamed = MemoryEstimator.builder().setData(100_000, rowBytes, LoadingStrategy.streaming(500, 2000, 1))
                .optBatchSize(10).build().estimate();
        // the shuffle buffer, two chunks read ahead, two batch buffers; one epoch-order entry per chunk
        assertEquals(2000 * rowBytes + 2 * 500 * rowBytes + 2 * 10 * rowBytes, streamed.total(MemoryEstimate.Where.NATIVE));
        assertEquals(8 * 200, streamed.total(MemoryEstimate.Where.HEAP));
        MemoryEstimate ranks = MemoryEstimator.builder().setData(1000, rowBytes, LoadingStrategy.shards(4))
                .optBatchSize(10).build().estimate();
        assertEquals(250 * rowBytes, ranks.total(MemoryEstimate.Where.PAGE_CACHE), "each rank reads its own shards");
        assertEquals(8 * 250, ranks.total(MemoryEstimate.Where.HEAP));
    }

    @Test
    void describesItselfInWords() {
        assertEquals("in memory", LoadingStrategy.inMemory().describe());
        assertEquals("lazy, 16 reader threads", LoadingStrategy.lazy(16).describe());
        assertEquals("a random 12.5% subset (seed 0), memory-mapped",
                LoadingStrategy.randomSubset(0.125, LoadingStrategy.mapped()).describe());
        assertEquals("streamed in chunks of 10,000 through a shuffle buffer of 40,000, 1 reader thread",
                LoadingStrategy.streaming().describe());
    }
}
