package dev.memfit.data;

import dev.memfit.MemfitException;
import dev.memfit.PythonPeer;
import dev.memfit.io.hdf5.H5ad;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The cells of AnnData through the one loader ({@link Datasets#h5ad(Path)}, {@code source.AnnDataSource}): every cell
 * once per epoch exactly as anndata reads it (CSR and CSC, empty cells, threads), block-shuffled batches drawn from
 * windows of whole blocks, a compressed file's chunks decoded about once per epoch however small the chunk cache was
 * set, a short last batch dropped, an epoch left early.
 */
class AnnDataLoaderTest {

    private static final int CELLS = 203;
    private static final int GENES = 25;

    @TempDir
    static Path dir;
    static Path file;
    /** X as anndata reads it, dense float32, row by row. */
    static MemorySegment expected;

    @BeforeAll
    static void atlas() throws IOException {
        file = dir.resolve("stream.h5ad");
        // every 7th cell empty; CSR and CSC of the same X; a larger gzip file of many chunks
        assertEquals("ok", PythonPeer.run("""
                import sys, numpy as np, scipy.sparse as sp, anndata as ad
                d = sys.argv[1]
                rng = np.random.default_rng(2)
                x = ((rng.random((%d, %d)) < 0.3) * rng.integers(1, 50, (%d, %d))).astype(np.float32)
                x[::7] = 0
                ad.AnnData(sp.csr_matrix(x)).write_h5ad(d + '/stream.h5ad')
                ad.AnnData(sp.csc_matrix(x)).write_h5ad(d + '/csc.h5ad')
                for name in ('stream', 'csc'):
                    back = ad.read_h5ad(d + '/' + name + '.h5ad').X.toarray()
                    assert back.dtype == np.float32 and np.array_equal(back, x)
                back.astype('<f4').tofile(d + '/expected.f32')
                big = ((rng.random((6000, 300)) < 0.1) * rng.integers(1, 50, (6000, 300))).astype(np.float32)
                ad.AnnData(sp.csr_matrix(big)).write_h5ad(d + '/gzip.h5ad', compression='gzip')
                print('ok')
                """.formatted(CELLS, GENES, CELLS, GENES), dir));
        expected = MemorySegment.ofArray(Files.readAllBytes(dir.resolve("expected.f32")));
    }

    /** The cells of an epoch in order, checking each row against anndata's and the batch sizes. */
    private static List<Long> order(Loader loader, long epoch) {
        List<Long> order = new ArrayList<>();
        long rowBytes = GENES * Float.BYTES;
        long batches = 0;
        for (Batch batch : loader.epoch(epoch)) {
            assertEquals(batches++, batch.number());
            boolean last = batches == loader.batchesPerEpoch();
            assertEquals(last ? CELLS - (batches - 1) * loader.batchSize() : loader.batchSize(), batch.size());
            assertEquals(new ai.djl.ndarray.types.Shape(batch.size(), GENES), batch.shape());
            long[] indices = batch.indices();
            for (int i = 0; i < indices.length; i++) {
                assertEquals(-1, batch.data().asSlice(i * rowBytes, rowBytes).mismatch(
                        expected.asSlice(indices[i] * rowBytes, rowBytes)), "cell " + indices[i] + " as anndata reads it");
                order.add(indices[i]);
            }
        }
        assertEquals(loader.batchesPerEpoch(), batches);
        return order;
    }

    @ParameterizedTest
    @ValueSource(strings = {"stream.h5ad", "csc.h5ad"})
    void everyCellOncePerEpochAsAnndataReadsItInANewOrder(String name) {
        Path cells = dir.resolve(name);
        try (Loader three = Datasets.h5ad(cells).optBlockShuffle(16, 3).optBatchSize(10).optThreads(3).optShuffle(7).build();
             Loader one = Datasets.h5ad(cells).optBlockShuffle(16, 3).optBatchSize(10).optThreads(1).optShuffle(7).build()) {
            List<Long> first = order(three, 0);
            List<Long> second = order(three, 1);
            for (List<Long> epoch : List.of(first, second)) {
                assertEquals(CELLS, epoch.size());
                assertEquals(CELLS, new HashSet<>(epoch).size(), "every cell once");
            }
            assertNotEquals(first, second, "a different order every epoch");
            assertEquals(first, order(one, 0), "same seed, same order, whatever the number of readers");
            // nothing of the data is buffered: the batch in hand and two read ahead
            assertEquals(3 * 10 * GENES * 4L, three.bufferMemory());
            assertEquals(CELLS, three.samples());
            assertEquals(21, three.batchesPerEpoch());
            assertEquals(new ai.djl.ndarray.types.Shape(GENES), three.sampleShape());
            assertTrue(three.describe().contains(name) && three.describe().contains(CELLS + " x " + GENES), three.describe());
        }
    }

    @Test
    void blockShuffledBatchesComeFromAWindowOfWholeBlocks() {
        // blocks of 16 cells, fetch factor 3 x batch 10 = 30 cells: windows of two blocks
        try (Loader blocks = Datasets.h5ad(file).optBlockShuffle(16, 3).optBatchSize(10).optShuffle(7).build();
             Loader shuffled = Datasets.h5ad(file).optBatchSize(10).optShuffle(7).build()) {
            for (long epoch = 0; epoch < 3; epoch++) {
                List<Long> order = order(blocks, epoch);
                Set<Long> firstBlocks = new HashSet<>();
                for (long cell : order.subList(0, 20)) {
                    firstBlocks.add(cell / 16);
                }
                assertTrue(firstBlocks.size() <= 2, "the first two batches from one window of two blocks: " + firstBlocks);
            }
            Set<Long> spread = new HashSet<>();
            for (long cell : order(shuffled, 0).subList(0, 20)) {
                spread.add(cell / 16);
            }
            assertTrue(spread.size() > 2, "a full shuffle draws from the whole file: " + spread);
        }
    }

    @Test
    void aCompressedFilesChunksAreDecodedAboutOncePerEpochEvenWithAChunkCacheOfNothing() {
        Path gzip = dir.resolve("gzip.h5ad");
        long chunks;
        H5ad.ChunkCacheStatistics before = H5ad.processChunkCacheStatistics();
        try (H5ad h5ad = H5ad.open(gzip)) {
            h5ad.forEachChunk((first, count, rows) -> { });
            chunks = H5ad.processChunkCacheStatistics().minus(before).decodes();
        }
        assertTrue(chunks > 20, "a file of many chunks: " + chunks);
        try (Loader blocks = Datasets.h5ad(gzip).optChunkCacheBytes(0).optBlockShuffle(200, 8).optBatchSize(50)
                .optThreads(2).optShuffle(3).build()) {
            before = H5ad.processChunkCacheStatistics();
            long cells = 0;
            for (Batch batch : blocks.epoch(0)) {
                cells += batch.size();
            }
            assertEquals(6000, cells);
            long decodes = H5ad.processChunkCacheStatistics().minus(before).decodes();
            // the window (8 x 50 cells in blocks of 200) is kept decoded: each chunk once, those a block boundary cuts twice
            assertTrue(decodes <= chunks * 2, decodes + " decodes for " + chunks + " chunks");
        }
        // without the window kept (a cache of 0 bytes read in the same order, not through the loader) chunks are
        // decoded again and again: what the bound above guards against
        try (var cells = dev.memfit.io.AnnDataFiles.builder().setFile(gzip).optChunkCacheBytes(0).open();
             java.lang.foreign.Arena arena = java.lang.foreign.Arena.ofConfined()) {
            var source = new dev.memfit.source.AnnDataSource(cells, gzip.toString(), () -> { });
            var order = dev.memfit.sample.BlockShuffleSampler.builder().setSize(6000).setBlockSize(200).optFetchFactor(8)
                    .setBatchSize(50).optSeed(3).build().indices(0);
            MemorySegment batch = arena.allocate(50L * source.sampleBytes());
            before = H5ad.processChunkCacheStatistics();
            for (int at = 0; at < order.length; at += 50) {
                source.readBatch(java.util.Arrays.copyOfRange(order, at, at + 50), batch);
            }
            long uncached = H5ad.processChunkCacheStatistics().minus(before).decodes();
            assertTrue(uncached > chunks * 3, uncached + " decodes without the window kept, for " + chunks + " chunks");
        }
    }

    @Test
    void dropLastDropsOnlyTheShortBatch() {
        try (Loader loader = Datasets.h5ad(file).optBlockShuffle(16, 1).optBatchSize(12).optShuffle(3).build();
             Loader dropping = Datasets.h5ad(file).optBlockShuffle(16, 1).optBatchSize(12).optShuffle(3).optDropLast(true).build()) {
            List<Long> cells = order(loader, 0);
            assertEquals(CELLS, new HashSet<>(cells).size());
            assertEquals(17, loader.batchesPerEpoch());
            assertEquals(16, dropping.batchesPerEpoch());
            List<Long> dropped = new ArrayList<>();
            for (Batch batch : dropping.epoch(0)) {
                assertEquals(12, batch.size());
                for (long cell : batch.indices()) {
                    dropped.add(cell);
                }
            }
            assertEquals(cells.subList(0, 192), dropped, "the same order, without the short last batch");
        }
    }

    @Test
    void anEpochLeftEarlyDoesNotStarveTheNext() {
        try (Loader loader = Datasets.h5ad(file).optBlockShuffle(16, 3).optBatchSize(10).optThreads(2).optShuffle(7).build()) {
            var early = loader.epoch(0).iterator();
            early.next();
            early.next(); // reads still in flight
            List<Long> next = order(loader, 1);
            assertEquals(CELLS, new HashSet<>(next).size(), "the next epoch still yields every cell once");
            assertEquals(order(loader, 1), next, "and in its own order, unaffected by the abandoned epoch");
        }
    }

    @Test
    void settingsForOtherDataAreRefusedByName() throws IOException {
        assertThrows(MemfitException.class, () -> Datasets.h5ad(file).optBlockShuffle(16, 0).optBatchSize(10).build());
        MemfitException local = assertThrows(MemfitException.class,
                () -> Datasets.h5ad(file).optCache(null));
        assertTrue(local.getMessage().contains("bucket"), local.getMessage());
        Path rows = dir.resolve("rows.npy");
        dev.memfit.io.npy.Npy.write(rows, new float[][]{{1, 2}, {3, 4}});
        MemfitException layer = assertThrows(MemfitException.class, () -> Datasets.open(rows).optLayer("counts"));
        assertTrue(layer.getMessage().contains("layers"), layer.getMessage());
        MemfitException missing = assertThrows(MemfitException.class,
                () -> Datasets.h5ad(file).optLayer("nope").optBatchSize(10).build());
        assertTrue(missing.getMessage().contains("nope"), missing.getMessage());
    }
}
