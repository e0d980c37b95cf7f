package dev.memfit.sample;

import ai.djl.ndarray.types.Shape;
import dev.memfit.DType;
import dev.memfit.MemfitException;
import dev.memfit.data.Batch;
import dev.memfit.data.Datasets;
import dev.memfit.data.Loader;
import dev.memfit.source.ArraySource;
import org.junit.jupiter.api.Test;

import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class BlockShuffleTest {

    private static BlockShuffleSampler sampler(long size, int block, int batch, int fetch, long seed) {
        return BlockShuffleSampler.builder().setSize(size).setBlockSize(block).setBatchSize(batch)
                .optFetchFactor(fetch).optSeed(seed).build();
    }

    private static void assertPermutation(long[] order, long size, String what) {
        assertEquals(size, order.length, what);
        long[] sorted = order.clone();
        Arrays.sort(sorted);
        for (int i = 0; i < sorted.length; i++) {
            assertEquals(i, sorted[i], what + ": every sample exactly once");
        }
    }

    /**
     * Cuts an epoch into its fetches and checks each is whole blocks: a segment closes as soon as it holds
     * {@code fetchBlocks} complete blocks and no incomplete one; nothing may be left open at the end.
     *
     * @return the number of blocks in each fetch
     */
    private static List<Integer> fetches(long[] order, long size, int block, int fetchBlocks) {
        List<Integer> fetches = new ArrayList<>();
        Map<Long, Integer> seen = new HashMap<>();
        int complete = 0;
        for (long index : order) {
            long b = index / block;
            int count = seen.merge(b, 1, Integer::sum);
            if (count == Math.min(block, size - b * block)) {
                complete++;
            }
            if (complete == fetchBlocks && seen.size() == fetchBlocks) {
                fetches.add(complete);
                seen.clear();
                complete = 0;
            }
        }
        if (!seen.isEmpty()) {
            assertEquals(seen.size(), complete, "the last fetch is whole blocks too");
            fetches.add(complete);
        }
        return fetches;
    }

    @Test
    void everySampleOncePerEpochForManySizesIncludingAShortLastBlock() {
        for (long size : new long[]{0, 1, 5, 63, 64, 65, 1000, 1003, 4097}) {
            for (int block : new int[]{1, 3, 64}) {
                for (int batch : new int[]{1, 7, 32}) {
                    for (int fetch : new int[]{1, 4}) {
                        for (long limit : new long[]{ShuffledSampler.ARRAY_LIMIT, 2}) {
                            String what = size + " samples, block " + block + ", batch " + batch + ", fetch " + fetch
                                    + ", array limit " + limit;
                            BlockShuffleSampler sampler = BlockShuffleSampler.builder().setSize(size).setBlockSize(block)
                                    .setBatchSize(batch).optFetchFactor(fetch).optSeed(size + block).arrayLimit(limit).build();
                            assertEquals(size, sampler.epochLength());
                            for (long epoch = 0; epoch < 2; epoch++) {
                                long[] indices = sampler.indices(epoch);
                                assertPermutation(indices, size, what);
                                SampleOrder order = sampler.order(epoch);
                                for (long p = size - 1; p >= 0; p -= 3) {   // backwards: each lookup changes fetch
                                    assertEquals(indices[(int) p], order.index(p), what + " position " + p);
                                }
                                int fetchBlocks = (int) ((fetch * batch + block - 1) / block);
                                List<Integer> cut = fetches(indices, size, block, fetchBlocks);
                                long blocks = (size + block - 1) / block;
                                assertEquals((blocks + fetchBlocks - 1) / fetchBlocks, cut.size(), what + ": fetches " + cut);
                            }
                        }
                    }
                }
            }
        }
    }

    @Test
    void blocksComeWholeInARandomOrderAndAreShuffledInsideEachFetch() {
        // 1003 = 100 blocks of 10 and one of 3; a fetch is ceil(5 x 8 / 10) = 4 blocks
        BlockShuffleSampler sampler = sampler(1003, 10, 8, 5, 11);
        assertEquals(40, sampler.fetchSize());
        long[] order = sampler.indices(0);
        List<Integer> cut = fetches(order, 1003, 10, 4);
        assertEquals(26, cut.size(), "101 blocks in fetches of 4: " + cut);
        assertTrue(cut.subList(0, 25).stream().allMatch(n -> n == 4), cut.toString());
        assertEquals(1, cut.get(25));
        int ascending = 0;
        for (int i = 1; i < order.length; i++) {
            ascending += order[i] == order[i - 1] + 1 ? 1 : 0;
        }
        assertTrue(ascending < 100, "samples are shuffled inside a fetch, not left in runs: " + ascending + " steps of +1");
        long[] firstBlocks = new long[40];
        for (int i = 0; i < 40; i++) {
            firstBlocks[i] = order[i] / 10;
        }
        assertFalse(Arrays.stream(firstBlocks).distinct().sorted().boxed().toList().equals(List.of(0L, 1L, 2L, 3L)),
                "the first fetch is not simply the first blocks");
    }

    @Test
    void theSameSeedGivesTheSameOrderAndEpochsAndSeedsDiffer() {
        assertArrayEquals(sampler(5000, 16, 32, 4, 3).indices(2), sampler(5000, 16, 32, 4, 3).indices(2));
        assertFalse(Arrays.equals(sampler(5000, 16, 32, 4, 3).indices(2), sampler(5000, 16, 32, 4, 3).indices(3)));
        assertFalse(Arrays.equals(sampler(5000, 16, 32, 4, 3).indices(2), sampler(5000, 16, 32, 4, 4).indices(2)));
        // the short block lands in different fetches, not always the last one
        int shortBlockLast = 0;
        for (long epoch = 0; epoch < 20; epoch++) {
            long[] order = sampler(1003, 10, 8, 5, 1).indices(epoch);
            shortBlockLast += Arrays.stream(order, 1003 - 3, 1003).anyMatch(i -> i >= 1000) ? 1 : 0;
        }
        assertTrue(shortBlockLast < 5, "the short block is placed at random: last in " + shortBlockLast + " of 20 epochs");
    }

    @Test
    void epochsPast2To31AreComputedFetchByFetch() {
        long size = 5_000_000_003L;   // 78M blocks: the block order is a keyed bijection, no array
        BlockShuffleSampler sampler = sampler(size, 64, 256, 16, 9);
        SampleOrder order = sampler.order(0);
        assertEquals(size, order.length());
        for (long from : new long[]{0, size / 2, size - 4096}) {
            long[] fetch = new long[4096];
            order.copy(from, fetch, fetch.length);
            long[] sorted = fetch.clone();
            Arrays.sort(sorted);
            for (int i = 1; i < sorted.length; i++) {
                assertTrue(sorted[i] > sorted[i - 1], "no sample twice");
            }
            assertTrue(sorted[0] >= 0 && sorted[sorted.length - 1] < size);
            long distinctBlocks = Arrays.stream(sorted).map(i -> i / 64).distinct().count();
            assertTrue(distinctBlocks <= 130, "a fetch's worth of positions spans at most two fetches of 64 blocks: "
                    + distinctBlocks);
        }
        assertThrows(MemfitException.class, () -> sampler.indices(0));
    }

    @Test
    void diversityIsMeasuredExactlyOnASmallOrder() {
        int[] labels = {0, 0, 1, 1, 0, 0, 1, 1};
        BatchDiversity runs = BatchDiversity.builder().setBatchSize(4).setBlockSize(2).optLabels(labels).measure(SampleOrder.of(new long[]{0, 1, 2, 3, 4, 5, 6, 7}));
        assertEquals(2, runs.batches());
        assertEquals(2.0, runs.blocksPerBatch(), 1e-12);
        assertEquals(1.0, runs.labelEntropy(), 1e-12);
        BatchDiversity spread = BatchDiversity.builder().setBatchSize(4).setBlockSize(2).measure(SampleOrder.of(new long[]{0, 2, 4, 6, 1, 3, 5, 7}));
        assertEquals(4.0, spread.blocksPerBatch(), 1e-12);
        assertTrue(Double.isNaN(spread.labelEntropy()));
        BatchDiversity oneClass = BatchDiversity.builder().setBatchSize(4).setBlockSize(2).optLabels(labels).measure(SampleOrder.of(new long[]{0, 1, 4, 5, 2}));
        assertEquals(1, oneClass.batches(), "the partial last batch is left out");
        assertEquals(0.0, oneClass.labelEntropy(), 1e-12);
        assertThrows(MemfitException.class, () -> BatchDiversity.builder().setBatchSize(0).setBlockSize(2).measure(SampleOrder.of(new long[]{0})));
    }

    @Test
    void blockShufflingMixesFewerBlocksAndClassesThanARandomBatch() {
        // 10 classes of 6,400 cells stored one class after the other, as atlases often are
        int[] labels = new int[64_000];
        for (int i = 0; i < labels.length; i++) {
            labels[i] = i / 6_400;
        }
        BatchDiversity random = BatchDiversity.builder().setBatchSize(256).setBlockSize(64).optLabels(labels).measureRandom(labels.length, 5);
        BatchDiversity blocks = BatchDiversity.builder().setBatchSize(256).setBlockSize(64).optLabels(labels).measure(sampler(labels.length, 64, 256, 4, 5).order(0));
        BatchDiversity wider = BatchDiversity.builder().setBatchSize(256).setBlockSize(64).optLabels(labels).measure(sampler(labels.length, 64, 256, 64, 5).order(0));
        BatchDiversity single = BatchDiversity.builder().setBatchSize(256).setBlockSize(64).optLabels(labels).measure(sampler(labels.length, 1, 256, 1, 5).order(0));
        assertEquals(250, blocks.batches());
        // a random batch of 256 from 1,000 blocks touches about 1000 (1 - e^-0.256) = 226 of them
        assertTrue(random.blocksPerBatch() > 200, random.toString());
        assertTrue(blocks.blocksPerBatch() <= 16, "a fetch of 4 batches is 16 blocks: " + blocks);
        assertTrue(wider.blocksPerBatch() > 4 * blocks.blocksPerBatch(), "a larger fetch mixes more blocks: " + wider);
        assertTrue(single.blocksPerBatch() > 200, "blocks of one sample are a uniform shuffle: " + single);
        assertTrue(random.labelEntropy() > 3.2 && random.labelEntropy() <= Math.log(10) / Math.log(2), random.toString());
        assertTrue(blocks.labelEntropy() < random.labelEntropy() - 0.1, blocks + " vs " + random);
        assertTrue(wider.labelEntropy() > blocks.labelEntropy(), wider + " vs " + blocks);
        String line = blocks.versus(random);
        assertTrue(line.contains("distinct blocks per batch of 256 (a random batch: ") && line.contains("label entropy"), line);
    }

    @Test
    void aShardLoaderWithBlockShufflingReadsEveryRowOnce() {
        int rows = 1003;
        try (ArraySource source = ArraySource.allocate("rows", rows, new Shape(1), DType.FLOAT32)) {
            for (int i = 0; i < rows; i++) {
                source.data().setAtIndex(ValueLayout.JAVA_FLOAT, i, i);
            }
            BlockShuffleSampler blocks = sampler(rows, 16, 32, 4, 8);
            List<Long> viaSampler = new ArrayList<>();
            List<Long> viaBuilder = new ArrayList<>();
            try (Loader loader = Datasets.of(source).optBatchSize(32).optThreads(2).optSampler(blocks).build();
                 Loader same = Datasets.of(source).optBatchSize(32).optThreads(0).optBlockShuffle(16, 4, 8).build()) {
                for (Loader l : List.of(loader, same)) {
                    List<Long> seen = l == loader ? viaSampler : viaBuilder;
                    for (Batch batch : l.epoch(1)) {
                        for (int i = 0; i < batch.size(); i++) {
                            long row = batch.indices()[i];
                            assertEquals(row, batch.data().getAtIndex(ValueLayout.JAVA_FLOAT, i), 0f, "the row carries its index");
                            seen.add(row);
                        }
                    }
                }
            }
            assertPermutation(viaSampler.stream().mapToLong(Long::longValue).toArray(), rows, "loader");
            assertEquals(Arrays.stream(blocks.indices(1)).boxed().toList(), viaSampler, "batches follow the sampler's order");
            assertEquals(viaSampler, viaBuilder, "optBlockShuffle builds the same sampler");
        }
    }

    @Test
    void buildNamesTheMissingSetting() {
        MemfitException size = assertThrows(MemfitException.class,
                () -> BlockShuffleSampler.builder().setBlockSize(4).setBatchSize(8).build());
        assertTrue(size.getMessage().contains("setSize"), size.getMessage());
        MemfitException block = assertThrows(MemfitException.class,
                () -> BlockShuffleSampler.builder().setSize(10).setBatchSize(8).build());
        assertTrue(block.getMessage().contains("setBlockSize"), block.getMessage());
        MemfitException batch = assertThrows(MemfitException.class,
                () -> BlockShuffleSampler.builder().setSize(10).setBlockSize(4).build());
        assertTrue(batch.getMessage().contains("setBatchSize"), batch.getMessage());
        MemfitException fetch = assertThrows(MemfitException.class,
                () -> BlockShuffleSampler.builder().setSize(10).setBlockSize(4).setBatchSize(8).optFetchFactor(0).build());
        assertTrue(fetch.getMessage().contains("optFetchFactor"), fetch.getMessage());
    }
}
