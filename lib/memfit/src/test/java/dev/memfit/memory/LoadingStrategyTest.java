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
    void streamingReadsAnH5adBlockShuffled() {
        LoadingStrategy.Streaming streaming = LoadingStrategy.streaming(16, 3, 2);
        try (Loader stream = streaming.loader(cells).optBatchSize(10).optShuffle(3).build()) {
            assertTrue(stream.describe().contains("cells.h5ad"), stream.describe());
            assertTrue(stream.state().sampler().contains("blocks of 16"), stream.state().sampler());
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
        assertThrows(MemfitException.class, () -> LoadingStrategy.streaming(16, 0, 1), "a window of no batches");
        assertEquals(new LoadingStrategy.Streaming(1_000, 16, 1), LoadingStrategy.streaming());
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
    void anH5adIsReadAtRandomByTheOtherStrategies() {
        for (LoadingStrategy strategy : List.of(LoadingStrategy.mapped(), LoadingStrategy.lazy(4))) {
            try (Loader loader = strategy.loader(cells).optBatchSize(7).optShuffle(2).build()) {
                StrategyFiles.assertEveryRowOnce(loader.epoch(0), StrategyFiles.CELLS);
            }
        }
        try (Loader half = LoadingStrategy.randomSubset(0.5, LoadingStrategy.mapped()).loader(cells).optBatchSize(7).build()) {
            assertEquals(StrategyFiles.CELLS / 2, half.samples());
            long[] chosen = Subsets.random(StrategyFiles.CELLS, (int) (StrategyFiles.CELLS / 2), 0);
            List<Long> seen = StrategyFiles.rowsOf(half.epoch(0), index -> chosen[(int) index]);
            assertEquals(StrategyFiles.CELLS / 2, seen.stream().distinct().count(), "the subset's cells, each its own row");
        }
    }

    @Test
    void appliedToTheOneBuilderEachStrategyGivesTheBatchesItsLoaderGives() {
        List<LoadingStrategy> strategies = List.of(LoadingStrategy.inMemory(), LoadingStrategy.mapped(),
                LoadingStrategy.lazy(3), LoadingStrategy.streaming(8, 2, 1),
                LoadingStrategy.randomSubset(0.5, LoadingStrategy.mapped()), LoadingStrategy.shards(1));
        for (LoadingStrategy strategy : strategies) {
            Path data = strategy instanceof LoadingStrategy.Shards ? shards : cells;
            try (Loader opened = strategy.loader(data).optBatchSize(7).optShuffle(5).build();
                 Loader applied = strategy.applyTo(dev.memfit.data.Datasets.open(data.toString())).optBatchSize(7)
                         .optShuffle(5).build()) {
                assertEquals(opened.samples(), applied.samples(), strategy.describe());
                assertEquals(values(opened), values(applied), strategy.describe() + ": the same batches");
            }
        }
        Advice advice = new Advice(LoadingStrategy.randomSubset(0.25, LoadingStrategy.lazy(2)), false, "why");
        try (Loader quarter = advice.applyTo(dev.memfit.data.Datasets.open(rows.toString())).optBatchSize(16).build()) {
            assertEquals(Math.round(0.25 * StrategyFiles.ROWS), quarter.samples(), "the advice's subset, on the one builder");
        }
    }

    /** Every value of epoch 1, batch by batch, in order. */
    private static List<Float> values(Loader loader) {
        List<Float> all = new java.util.ArrayList<>();
        for (dev.memfit.data.Batch batch : loader.epoch(1)) {
            for (float value : batch.toFloatArray()) {
                all.add(value);
            }
        }
        assertTrue(all.size() > 0);
        return all;
    }

    @Test
    void estimatesFollowTheStrategy() {
        long rowBytes = StrategyFiles.COLUMNS * 4L;
        MemoryEstimate subset = MemoryEstimator.builder().setData(1000, rowBytes,
                LoadingStrategy.randomSubset(0.25, LoadingStrategy.mapped())).optBatchSize(10).build().estimate();
        assertEquals(1000 * rowBytes, subset.total(MemoryEstimate.Where.MAPPED), "the whole file is mapped");
        assertEquals(250 * rowBytes, subset.total(MemoryEstimate.Where.PAGE_CACHE), "only the subset is read");
        assertEquals(2 * 8 * 250, subset.total(MemoryEstimate.Where.HEAP), "subset indices and epoch order");
        MemoryEstimate streamed = MemoryEstimator.builder().setData(100_000, rowBytes, LoadingStrategy.streaming(500, 20, 1))
                .optBatchSize(10).build().estimate();
        // three batch buffers; a window of one block (20 x 10 cells in whole blocks of 500): its decoded chunks (at most
        // dense rows) and its order; one epoch-order entry per block
        assertEquals(3 * 10 * rowBytes, streamed.total(MemoryEstimate.Where.NATIVE));
        assertEquals(500 * rowBytes + 8 * 500 + 8 * 200, streamed.total(MemoryEstimate.Where.HEAP));
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
        assertEquals("streamed block-shuffled: blocks of 1,000 cells, windows of 16 batches, 1 reader thread",
                LoadingStrategy.streaming().describe());
    }
}
