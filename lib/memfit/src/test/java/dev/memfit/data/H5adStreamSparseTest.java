package dev.memfit.data;

import dev.memfit.PythonPeer;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The sparse shuffle buffer of {@link H5adStream}: cells come out exactly as anndata reads them, in exactly the order
 * of the dense-row buffer, from CSR and CSC files with empty cells and a dense run of cells larger than an average
 * cell count would allow for; and {@link Loader#bufferMemory()} is the bound the pages are sized for.
 */
class H5adStreamSparseTest {

    private static final int CELLS = 407;
    private static final int GENES = 1000;
    private static final int CHUNK = 20;
    /** Barely more than a chunk. */
    private static final int BUFFER = 24;
    private static final int BATCH = 10;

    @TempDir
    static Path dir;
    /** What anndata reads back from the files, dense, row by row. */
    static MemorySegment expected;
    /** The stored values of each cell, from the file's X/indptr as h5py reads it. */
    static long[] stored;

    @BeforeAll
    static void atlas() throws IOException {
        // every 7th cell empty; cells 100-139 (two whole chunks of 20) half full, the rest about 2 %
        assertEquals("ok", PythonPeer.run("""
                import sys, numpy as np, scipy.sparse as sp, anndata as ad, h5py
                rng = np.random.default_rng(11)
                n, g = %d, %d
                density = np.full(n, 0.02)
                density[100:140] = 0.5
                x = ((rng.random((n, g)) < density[:, None]) * rng.integers(1, 200, (n, g))).astype(np.float32)
                x[::7] = 0
                ad.AnnData(sp.csr_matrix(x)).write_h5ad(sys.argv[1] + '/csr.h5ad')
                ad.AnnData(sp.csc_matrix(x)).write_h5ad(sys.argv[1] + '/csc.h5ad')
                for name in ('csr', 'csc'):
                    back = ad.read_h5ad(sys.argv[1] + '/' + name + '.h5ad').X.toarray()
                    assert back.dtype == np.float32 and np.array_equal(back, x)
                back.astype('<f4').tofile(sys.argv[1] + '/expected.f32')
                with h5py.File(sys.argv[1] + '/csr.h5ad', 'r') as f:
                    np.diff(f['X/indptr'][:]).astype('<i8').tofile(sys.argv[1] + '/stored.i64')
                print('ok')
                """.formatted(CELLS, GENES), dir));
        expected = MemorySegment.ofArray(Files.readAllBytes(dir.resolve("expected.f32")));
        ByteBuffer counts = ByteBuffer.wrap(Files.readAllBytes(dir.resolve("stored.i64"))).order(ByteOrder.LITTLE_ENDIAN);
        stored = new long[CELLS];
        counts.asLongBuffer().get(stored);
        assertEquals(0, stored[7], "an empty cell");
        assertTrue(stored[120] > 400 && stored[300] < 60, "a dense run among sparse cells: " + stored[120] + ", " + stored[300]);
    }

    /** Cells and rows of an epoch, checking each row against anndata's and the batch sizes. */
    private static List<Long> epoch(Loader stream, long epoch, List<MemorySegment> rows) {
        List<Long> order = new ArrayList<>();
        long rowBytes = GENES * Float.BYTES;
        long number = 0;
        for (Batch batch : stream.epoch(epoch)) {
            assertEquals(number++ < stream.batchesPerEpoch() - 1 ? BATCH : CELLS % BATCH, batch.size());
            long[] cells = batch.indices();
            for (int i = 0; i < cells.length; i++) {
                MemorySegment row = batch.data().asSlice(i * rowBytes, rowBytes);
                assertEquals(-1, row.mismatch(expected.asSlice(cells[i] * rowBytes, rowBytes)),
                        "cell " + cells[i] + " as anndata reads it");
                order.add(cells[i]);
                if (rows != null) {
                    rows.add(MemorySegment.ofArray(row.toArray(ValueLayout.JAVA_BYTE)));
                }
            }
        }
        assertEquals(stream.batchesPerEpoch(), number);
        assertEquals(CELLS, new HashSet<>(order).size(), "every cell once");
        return order;
    }

    @ParameterizedTest
    @ValueSource(strings = {"csr.h5ad", "csc.h5ad"})
    void cellsComeOutAsAnndataReadsThemInTheDenseBuffersOrder(String name) {
        Path file = dir.resolve(name);
        try (Loader one = Datasets.h5ad(file).optChunkSize(CHUNK).optBufferCells(BUFFER).optBatchSize(BATCH)
                .optThreads(1).optShuffle(5).build();
             Loader three = Datasets.h5ad(file).optChunkSize(CHUNK).optBufferCells(BUFFER).optBatchSize(BATCH)
                     .optThreads(3).optShuffle(5).build();
             Loader dense = Datasets.h5ad(file).optChunkSize(CHUNK).optBufferCells(BUFFER).optBatchSize(BATCH)
                     .optThreads(1).optShuffle(5).denseBufferOnly().build()) {
            for (long epoch = 0; epoch < 3; epoch++) {
                List<MemorySegment> denseRows = new ArrayList<>();
                List<MemorySegment> sparseRows = new ArrayList<>();
                List<Long> reference = epoch(dense, epoch, denseRows);
                assertEquals(reference, epoch(one, epoch, sparseRows), "epoch " + epoch + ": the dense buffer's order");
                assertEquals(reference, epoch(three, epoch, null), "epoch " + epoch + ": whatever the threads");
                for (int i = 0; i < CELLS; i++) {
                    assertEquals(-1, denseRows.get(i).mismatch(sparseRows.get(i)));
                }
            }
            assertTrue(one.bufferMemory() < dense.bufferMemory(), one.bufferMemory() + " vs " + dense.bufferMemory());
            long threeDense = (BUFFER + 3L * CHUNK + 2L * BATCH) * GENES * Float.BYTES;
            assertTrue(three.bufferMemory() < threeDense, "three readers keep cells sparse too: " + three.bufferMemory());
        }
    }

    @ParameterizedTest
    @ValueSource(ints = {1, 3})
    void bufferMemoryIsThePagesOfTheFullestCellsTheSlotsCanHold(int threads) {
        Path file = dir.resolve("csr.h5ad");
        int prefetch = Math.max(2, threads);
        H5adStream pipeline = new H5adStream(file, CHUNK, BUFFER, BATCH, threads, prefetch, 3, false);
        try (Loader stream = new Loader(pipeline)) {
            int page = pipeline.sparsePageValues();
            assertTrue(page >= 4, "a sparse buffer, pages of " + page + " values");
            int slots = BUFFER + prefetch * CHUNK;
            long[] sorted = stored.clone();
            Arrays.sort(sorted);
            long pages = 0;
            long exact = 0;
            for (int i = 0; i < slots; i++) {
                long values = sorted[CELLS - 1 - i];
                pages += (values + page - 1) / page;
                exact += values;
            }
            // the fullest cells are the dense run: far more than the slots' share of the file's values
            long total = Arrays.stream(stored).sum();
            assertTrue(exact > 3 * total * slots / CELLS, exact + " values in the fullest " + slots + " cells");
            long maxChunk = 0;
            long maxCell = Arrays.stream(stored).max().orElseThrow();
            for (int first = 0; first < CELLS; first += CHUNK) {
                long sum = 0;
                for (int c = first; c < Math.min(CELLS, first + CHUNK); c++) {
                    sum += stored[c];
                }
                maxChunk = Math.max(maxChunk, sum);
            }
            // each reader copies through a window of an eighth of the fullest chunk, at least 1024 values and the fullest cell
            long staging = Math.max(maxCell, Math.min(maxChunk, Math.max(1024, maxChunk / 8)));
            long batches = 2L * BATCH * GENES * Float.BYTES;
            assertEquals(pages * page * 8 + threads * staging * 8 + batches, stream.bufferMemory());
            assertTrue(pages * page <= exact + exact / 16, "pages waste at most 1/16 of the exact bound");
            assertTrue(stream.bufferMemory() < (long) slots * GENES * Float.BYTES + batches, "less than dense rows");
            // the bound holds: epochs (which would fail on running out of pages) yield every cell as anndata reads it
            epoch(stream, 0, null);
            epoch(stream, 1, null);
        }
    }
}
