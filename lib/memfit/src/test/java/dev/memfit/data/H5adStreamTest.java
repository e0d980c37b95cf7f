package dev.memfit.data;

import dev.memfit.MemfitException;
import dev.memfit.PythonPeer;
import dev.memfit.io.hdf5.H5ad;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class H5adStreamTest {

    @TempDir
    static Path dir;
    static Path file;

    @BeforeAll
    static void atlas() {
        file = dir.resolve("stream.h5ad");
        assertEquals("ok", PythonPeer.run("""
                import sys, numpy as np, scipy.sparse as sp, anndata as ad
                rng = np.random.default_rng(2)
                x = ((rng.random((203, 25)) < 0.3) * rng.integers(1, 50, (203, 25))).astype(np.float32)
                ad.AnnData(sp.csr_matrix(x)).write_h5ad(sys.argv[1])
                print('ok')
                """, file));
    }

    private static List<Long> order(Loader stream, long epoch, MemorySegment all) {
        List<Long> order = new ArrayList<>();
        long rowBytes = 25 * Float.BYTES;
        long batches = 0;
        for (Batch batch : stream.epoch(epoch)) {
            assertEquals(batches++, batch.number());
            boolean last = batches == stream.batchesPerEpoch();
            assertEquals(last ? 203 - (batches - 1) * stream.batchSize() : stream.batchSize(), batch.size(),
                    "every batch but the last has exactly the batch size, even when the buffer runs low");
            assertEquals(new ai.djl.ndarray.types.Shape(batch.size(), 25), batch.shape());
            long[] indices = batch.indices();
            for (int i = 0; i < indices.length; i++) {
                assertEquals(-1, batch.data().asSlice(i * rowBytes, rowBytes).mismatch(all.asSlice(indices[i] * rowBytes, rowBytes)),
                        "cell " + indices[i] + " carries its own row");
                order.add(indices[i]);
            }
        }
        assertEquals(stream.batchesPerEpoch(), batches);
        return order;
    }

    @Test
    void everyCellOncePerEpochInANewOrder() {
        try (H5ad h5ad = H5ad.open(file); Arena arena = Arena.ofConfined();
             Loader stream = Datasets.h5ad(file).optChunkSize(16).optBufferCells(48).optBatchSize(10).optThreads(3).optShuffle(7).build();
             Loader again = Datasets.h5ad(file).optChunkSize(16).optBufferCells(48).optBatchSize(10).optThreads(1).optShuffle(7).build()) {
            MemorySegment all = arena.allocate(203L * 25 * 4);
            h5ad.readRows(0, 203, all);
            List<Long> first = order(stream, 0, all);
            List<Long> second = order(stream, 1, all);
            for (List<Long> epoch : List.of(first, second)) {
                Set<Long> distinct = new HashSet<>(epoch);
                assertEquals(203, epoch.size());
                assertEquals(203, distinct.size());
            }
            assertNotEquals(first, second, "a different order every epoch");
            assertEquals(first, order(again, 0, all), "same seed, same order, whatever the number of readers");
            // shuffle buffer 48 cells + 3 chunks of 16 read ahead (one per reader) + two batches of 10
            assertEquals((48 + 3 * 16 + 2 * 10) * 25L * 4, stream.bufferMemory());
            assertEquals(203, stream.samples());
            assertEquals(21, stream.batchesPerEpoch());
            assertEquals(new ai.djl.ndarray.types.Shape(25), stream.sampleShape());
            assertTrue(stream.describe().contains("stream.h5ad") && stream.describe().contains("203 cells"), stream.describe());
        }
        assertThrows(MemfitException.class, () -> Datasets.h5ad(file).optChunkSize(16).optBufferCells(8).optBatchSize(10).optThreads(1).optShuffle(7).build(), "buffer smaller than a chunk");
        MemfitException tooBig = assertThrows(MemfitException.class, () -> Datasets.h5ad(file).optChunkSize(16).optBufferCells(32).optBatchSize(40).build());
        assertTrue(tooBig.getMessage().contains("stream.h5ad") && tooBig.getMessage().contains("batch 40"), tooBig.getMessage());
    }

    @Test
    void blockShuffleSetsChunksAndABufferOfWholeChunksHoldingFetchFactorBatches() {
        assertEquals(4096, H5adStreamBuilder.fetchCells(64, 16, 256));
        assertEquals(800, H5adStreamBuilder.fetchCells(100, 3, 256), "768 cells rounded up to whole chunks");
        assertEquals(100, H5adStreamBuilder.fetchCells(100, 1, 10), "at least one chunk");
        assertThrows(MemfitException.class, () -> H5adStreamBuilder.fetchCells(16, 0, 10));
        try (H5ad h5ad = H5ad.open(file); Arena arena = Arena.ofConfined();
             // the batch size may come after: the buffer is worked out at build()
             Loader stream = Datasets.h5ad(file).optBlockShuffle(16, 3).optBatchSize(10).optShuffle(7).build()) {
            assertTrue(stream.describe().contains("chunks of 16") && stream.describe().contains("shuffle buffer 32"),
                    stream.describe());
            MemorySegment all = arena.allocate(203L * 25 * 4);
            h5ad.readRows(0, 203, all);
            assertEquals(203, new HashSet<>(order(stream, 0, all)).size(), "every cell once");
        }
        try (Loader overridden = Datasets.h5ad(file).optBlockShuffle(16, 3).optBufferCells(48).optBatchSize(10).build()) {
            assertTrue(overridden.describe().contains("shuffle buffer 48"), overridden.describe());
        }
        assertThrows(MemfitException.class, () -> Datasets.h5ad(file).optBlockShuffle(16, 0).build());
    }

    @Test
    void aBufferOfOneChunkStillGivesFullBatchesAndDropLastDropsTheShortOne() {
        try (Arena arena = Arena.ofConfined(); H5ad h5ad = H5ad.open(file);
             Loader stream = Datasets.h5ad(file).optChunkSize(16).optBufferCells(16).optBatchSize(12).optShuffle(3).build();
             Loader dropping = Datasets.h5ad(file).optChunkSize(16).optBufferCells(16).optBatchSize(12).optShuffle(3).optDropLast(true).build()) {
            MemorySegment all = arena.allocate(203L * 25 * 4);
            h5ad.readRows(0, 203, all);
            List<Long> cells = order(stream, 0, all);
            assertEquals(203, new HashSet<>(cells).size());
            assertEquals(17, stream.batchesPerEpoch());
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
        try (Arena arena = Arena.ofConfined(); H5ad h5ad = H5ad.open(file);
             Loader stream = Datasets.h5ad(file).optChunkSize(16).optBufferCells(48).optBatchSize(10).optThreads(2).optShuffle(7).build()) {
            MemorySegment all = arena.allocate(203L * 25 * 4);
            h5ad.readRows(0, 203, all);
            var early = stream.epoch(0).iterator();
            early.next();
            early.next(); // reads still in flight hold chunk buffers
            List<Long> next = order(stream, 1, all);
            assertEquals(203, new HashSet<>(next).size(), "the next epoch still yields every cell once");
            assertEquals(order(stream, 1, all), next, "and in its own order, unaffected by the abandoned epoch");
        }
    }
}
