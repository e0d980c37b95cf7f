package dev.memfit.data;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.Shape;
import dev.memfit.DType;
import dev.memfit.MemfitException;
import dev.memfit.PythonPeer;
import dev.memfit.shard.ShardWriter;
import dev.memfit.source.ArraySource;
import dev.memfit.source.SampleSource;
import dev.memfit.source.SparseRows;
import dev.memfit.train.CellClassifier;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashSet;
import java.util.Set;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Sparse batches ({@link LoaderBuilder#optSparseBatches(boolean)}) against the files anndata writes: CSR, CSC, gzip,
 * float64 and a non-canonical CSR (unsorted, repeated columns), and sparse shards. Every cell of every epoch densifies
 * to what anndata's {@code X.toarray()} gives, rows come ascending with ascending unique columns, a batch larger than
 * its buffer gets a larger one, a batch takes its stored values' memory and not the dense form's, and a classifier
 * learns the same from sparse batches as from dense ones.
 */
class SparseBatchTest {

    private static final int CELLS = 211;
    private static final int GENES = 37;

    @TempDir
    static Path dir;
    /** X densified by scipy (repeats summed), float32, row by row. */
    static float[] expected;
    /** The stored values of each cell after repeats are summed (scipy's canonical form). */
    static long[] canonicalPerCell;

    @BeforeAll
    static void files() throws IOException {
        assertEquals("ok", PythonPeer.run("""
                import sys, numpy as np, scipy.sparse as sp, anndata as ad
                d = sys.argv[1]
                rng = np.random.default_rng(5)
                x = ((rng.random((%1$d, %2$d)) < 0.2) * rng.integers(1, 40, (%1$d, %2$d))).astype(np.float32)
                x[::9] = 0
                x[3] = rng.integers(1, 9, %2$d)   # one full cell
                ad.AnnData(sp.csr_matrix(x)).write_h5ad(d + '/csr.h5ad')
                ad.AnnData(sp.csc_matrix(x)).write_h5ad(d + '/csc.h5ad')
                ad.AnnData(sp.csr_matrix(x)).write_h5ad(d + '/gzip.h5ad', compression='gzip')
                ad.AnnData(sp.csr_matrix(x.astype(np.float64))).write_h5ad(d + '/f64.h5ad')
                # a CSR whose rows list columns out of order and some twice: scipy sums them when densifying
                m = sp.csr_matrix(x)
                data, ind, ptr = [], [], [0]
                for r in range(m.shape[0]):
                    cols, vals = m.indices[m.indptr[r]:m.indptr[r+1]], m.data[m.indptr[r]:m.indptr[r+1]]
                    order = rng.permutation(len(cols))
                    cols, vals = list(cols[order]), list(vals[order])
                    if len(cols) > 1 and r %% 2 == 0:
                        cols.append(cols[0]); vals.append(np.float32(0.5)); vals[0] -= np.float32(0.5)
                    data += vals; ind += cols; ptr.append(len(ind))
                odd = sp.csr_matrix((np.array(data, np.float32), np.array(ind, np.int32), np.array(ptr)), shape=m.shape)
                assert not odd.has_canonical_format
                ad.AnnData(odd).write_h5ad(d + '/odd.h5ad')
                back = ad.read_h5ad(d + '/odd.h5ad').X
                assert back.nnz == len(data) and np.array_equal(back.toarray(), x)
                x.astype('<f4').tofile(d + '/expected.f32')
                np.count_nonzero(x, axis=1).astype('<i8').tofile(d + '/nnz.i64')
                print('ok')
                """.formatted(CELLS, GENES), dir));
        MemorySegment bytes = MemorySegment.ofArray(Files.readAllBytes(dir.resolve("expected.f32")));
        expected = bytes.toArray(ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN));
        canonicalPerCell = MemorySegment.ofArray(Files.readAllBytes(dir.resolve("nnz.i64")))
                .toArray(ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN));
    }

    /** Checks every batch of two shuffled epochs against scipy's dense X: each cell once an epoch. */
    private static void checkEpochs(Loader loader) {
        for (long epoch = 0; epoch < 2; epoch++) {
            Set<Long> seen = new HashSet<>();
            for (Batch batch : loader.epoch(epoch)) {
                assertTrue(batch.isSparse());
                assertEquals(DType.FLOAT32, batch.dtype());
                assertEquals(new Shape(batch.size(), GENES), batch.shape());
                long[] indices = batch.indices();
                float[] dense = batch.toFloatArray();
                MemorySegment offsets = batch.rowOffsets();
                MemorySegment columns = batch.columnIndices();
                long stored = 0;
                for (int i = 0; i < indices.length; i++) {
                    assertTrue(i == 0 || indices[i] >= indices[i - 1], "rows ascending within a batch");
                    assertTrue(seen.add(indices[i]), "cell " + indices[i] + " once an epoch");
                    int cell = Math.toIntExact(indices[i]);
                    for (int g = 0; g < GENES; g++) {
                        assertEquals(expected[cell * GENES + g], dense[i * GENES + g], "cell " + cell + " gene " + g);
                    }
                    long from = offsets.getAtIndex(ValueLayout.JAVA_LONG, i);
                    long to = offsets.getAtIndex(ValueLayout.JAVA_LONG, i + 1);
                    for (long k = from + 1; k < to; k++) {
                        assertTrue(columns.getAtIndex(ValueLayout.JAVA_INT, k) > columns.getAtIndex(ValueLayout.JAVA_INT, k - 1),
                                "columns ascending and unique in cell " + cell);
                    }
                    assertEquals(canonicalPerCell[cell], to - from, "stored values of cell " + cell);
                    stored += to - from;
                }
                assertEquals(stored, batch.storedValues());
                assertEquals(stored * Float.BYTES, batch.values().byteSize());
                assertThrows(IllegalStateException.class, batch::data, "a sparse batch has no dense data()");
            }
            assertEquals(CELLS, seen.size());
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"csr.h5ad", "csc.h5ad", "gzip.h5ad", "odd.h5ad"})
    void anndataFilesAsSparseBatches(String name) {
        try (Loader loader = Datasets.h5ad(dir.resolve(name)).optSparseBatches(true).optBatchSize(16).optShuffle(4)
                .optThreads(2).build()) {
            checkEpochs(loader);
        }
    }

    @Test
    void float64ConvertedAndShards() {
        try (Loader loader = Datasets.h5ad(dir.resolve("f64.h5ad")).optSparseBatches(true).optConvertTo(DType.FLOAT32)
                .optBatchSize(20).optShuffle(1).build()) {
            checkEpochs(loader);
        }
        Path shards = dir.resolve("shards");
        ShardWriter.builder().setInput(dir.resolve("odd.h5ad")).optShardSize(50).write(shards);
        try (Loader loader = Datasets.shards(shards).optSparseBatches(true).optBatchSize(32).optShuffle(8)
                .optThreads(1).build()) {
            checkEpochs(loader);
        }
        // a subset view passes the rows through, renumbered
        try (Loader loader = Datasets.shards(shards).optSparseBatches(true).optSubset(new long[]{3, 0, 200})
                .optBatchSize(8).build()) {
            Batch batch = loader.epoch(0).iterator().next();
            assertArrayEquals(new long[]{0, 1, 2}, batch.indices());
            float[] dense = batch.toFloatArray();
            for (int g = 0; g < GENES; g++) {
                assertEquals(expected[3 * GENES + g], dense[g]);
                assertEquals(expected[200 * GENES + g], dense[2 * GENES + g]);
            }
        }
    }

    /**
     * A weighted order draws with replacement: a cell twice in a batch is two rows; float32 values widened to float64
     * (the staging path of the conversion) keep every value.
     */
    @Test
    void repeatedCellsAndWidenedValues() {
        int[] labels = new int[CELLS];
        labels[5] = 1;   // one cell of a class alone: weighted draws repeat it
        try (Loader loader = Datasets.h5ad(dir.resolve("odd.h5ad")).optSparseBatches(true).optBatchSize(50)
                .optOrder(Order.weighted(labels, 3, 0)).optConvertTo(DType.FLOAT64).build()) {
            int repeated = 0;
            for (Batch batch : loader.epoch(0)) {
                assertEquals(DType.FLOAT64, batch.dtype());
                long[] indices = batch.indices();
                MemorySegment offsets = batch.rowOffsets();
                for (int i = 0; i < indices.length; i++) {
                    repeated += i > 0 && indices[i] == indices[i - 1] ? 1 : 0;
                    int cell = Math.toIntExact(indices[i]);
                    long from = offsets.getAtIndex(ValueLayout.JAVA_LONG, i);
                    long to = offsets.getAtIndex(ValueLayout.JAVA_LONG, i + 1);
                    assertEquals(canonicalPerCell[cell], to - from, "cell " + cell + " at row " + i);
                    for (long k = from; k < to; k++) {
                        int gene = batch.columnIndices().getAtIndex(ValueLayout.JAVA_INT, k);
                        assertEquals(expected[cell * GENES + gene], batch.values().getAtIndex(ValueLayout.JAVA_DOUBLE, k), 0.0,
                                "cell " + cell + " gene " + gene);
                    }
                }
            }
            assertTrue(repeated > 0, "the weighted order repeated a cell within a batch");
        }
    }

    /** The densified array on the engine equals the CSR rows; the dense form is only made there. */
    @Test
    void toNDArrayDensifies() {
        try (Loader loader = Datasets.h5ad(dir.resolve("odd.h5ad")).optSparseBatches(true).optBatchSize(64)
                .optShuffle(2).build();
             NDManager manager = NDManager.newBaseManager()) {
            for (Batch batch : loader.epoch(0)) {
                NDArray array = batch.toNDArray(manager);
                assertEquals(batch.shape(), array.getShape());
                assertArrayEquals(batch.toFloatArray(), array.toFloatArray());
            }
        }
    }

    /** Cells far denser than the average overflow a buffer sized for the average: it is replaced by a larger one. */
    @Test
    void aBatchLargerThanItsBufferGrowsIt() {
        SampleSource skewed = new Generated(2_000, 5_000, cell -> cell < 64 ? 5_000 : 2);
        try (Loader loader = Datasets.of(skewed).optSparseBatches(true).optBatchSize(64).optThreads(1).optPrefetch(1).build()) {
            long before = loader.bufferMemory();
            int batches = 0;
            for (Batch batch : loader.epoch(0)) {
                long[] indices = batch.indices();
                assertEquals(indices[0] == 0 ? 64L * 5_000 : batch.size() * 2L, batch.storedValues(), "batch " + batches);
                float[] dense = batch.toFloatArray();
                for (int i = 0; i < indices.length; i++) {
                    assertEquals(Generated.value(indices[i], 1), dense[i * 5_000 + 1]);
                }
                batches++;
            }
            assertEquals(32, batches);
            assertTrue(loader.bufferMemory() > before + 64L * 5_000 * 8 / 2, "the first batch's buffer grew: "
                    + before + " -> " + loader.bufferMemory());
        }
    }

    /** The case: 4,096 cells of a 20,000-gene atlas, 1,000 values a cell: tens of MB a buffer, not 328 MB. */
    @Test
    void aWideBatchTakesItsStoredValuesNotItsDenseForm() {
        SampleSource atlas = new Generated(40_960, 20_000, cell -> 1_000);
        long dense = 4_096L * 20_000 * Float.BYTES;
        try (Loader loader = Datasets.of(atlas).optSparseBatches(true).optBatchSize(4_096).optThreads(1).optPrefetch(1)
                .build()) {
            long perBuffer = loader.bufferMemory() / 2;
            assertTrue(perBuffer < dense / 7, perBuffer + " bytes a buffer against " + dense + " dense");
            Batch batch = loader.epoch(0).iterator().next();
            assertEquals(4_096L * 1_000, batch.storedValues());
            assertEquals(perBuffer * 2, loader.bufferMemory(), "no buffer grew for batches of the average size");
        }
    }

    @Test
    void denseDataIsRefusedAndDenseBatchesHaveNoCsr() throws IOException {
        try (ArraySource dense = ArraySource.of("dense", new float[10][4])) {
            MemfitException e = assertThrows(MemfitException.class,
                    () -> Datasets.of(dense).optSparseBatches(true).build());
            assertTrue(e.getMessage().contains("hands its samples over dense only"), e.getMessage());
            try (Loader loader = Datasets.of(dense).optBatchSize(5).build()) {
                Batch batch = loader.epoch(0).iterator().next();
                assertFalse(batch.isSparse());
                assertEquals(20, batch.storedValues());
                assertThrows(IllegalStateException.class, batch::values);
            }
        }
    }

    /** Batches in file order are the same cells dense or sparse: a classifier learns the same losses from both. */
    @Test
    void aClassifierLearnsTheSameFromSparseBatches() {
        int[] labels = new int[CELLS];
        for (int i = 0; i < CELLS; i++) {
            labels[i] = expected[i * GENES] > expected[i * GENES + 1] ? 1 : 0;
        }
        double[][] losses = new double[2][];
        for (int sparse = 0; sparse < 2; sparse++) {
            try (CellClassifier classifier = CellClassifier.builder().setClasses(2).setLabels(labels).optEpochs(3)
                    .optSeed(11).optProgress(dev.memfit.ProgressListener.silent()).build();
                 Loader loader = Datasets.h5ad(dir.resolve("odd.h5ad")).optSparseBatches(sparse == 1).optBatchSize(32)
                         .build()) {
                losses[sparse] = classifier.fit(loader).losses();
            }
        }
        assertArrayEquals(losses[0], losses[1], 1e-5, "dense vs sparse batches");
        assertTrue(losses[1][2] < losses[1][0], "the loss falls");
    }

    /** Rows of a given number of values each, at the first columns, value {@code cell + column / 1000}. */
    private record Generated(long cells, int genes, java.util.function.LongToIntFunction perCell) implements SampleSource {
        static float value(long cell, int column) {
            return cell + column / 1000f;
        }

        @Override
        public long size() {
            return cells;
        }

        @Override
        public Shape sampleShape() {
            return new Shape(genes);
        }

        @Override
        public DType dtype() {
            return DType.FLOAT32;
        }

        @Override
        public void read(long index, MemorySegment into) {
            throw new UnsupportedOperationException("sparse only");
        }

        @Override
        public java.util.Optional<SparseRows> sparseRows() {
            return java.util.Optional.of(new SparseRows() {
                @Override
                public long storedValues() {
                    long total = 0;
                    for (long c = 0; c < cells; c++) {
                        total += perCell.applyAsInt(c);
                    }
                    return total;
                }

                @Override
                public long storedValues(long[] rows) {
                    long total = 0;
                    for (long row : rows) {
                        total += perCell.applyAsInt(row);
                    }
                    return total;
                }

                @Override
                public long read(long[] rows, MemorySegment values, MemorySegment columns, MemorySegment rowOffsets) {
                    long done = 0;
                    rowOffsets.setAtIndex(ValueLayout.JAVA_LONG_UNALIGNED, 0, 0);
                    for (int r = 0; r < rows.length; r++) {
                        int n = perCell.applyAsInt(rows[r]);
                        for (int k = 0; k < n; k++) {
                            columns.setAtIndex(ValueLayout.JAVA_INT_UNALIGNED, done + k, k);
                            values.setAtIndex(ValueLayout.JAVA_FLOAT_UNALIGNED, done + k, value(rows[r], k));
                        }
                        done += n;
                        rowOffsets.setAtIndex(ValueLayout.JAVA_LONG_UNALIGNED, r + 1, done);
                    }
                    return done;
                }
            });
        }

        @Override
        public void close() {
        }
    }
}
