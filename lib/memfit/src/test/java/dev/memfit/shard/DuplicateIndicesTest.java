package dev.memfit.shard;

import dev.memfit.PythonPeer;
import dev.memfit.ProgressListener;
import dev.memfit.data.Batch;
import dev.memfit.data.Datasets;
import dev.memfit.data.Loader;
import dev.memfit.io.hdf5.H5ad;
import dev.memfit.io.npy.Npy;
import dev.memfit.io.npy.NpyArray;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.HashSet;
import java.util.Set;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A CSR (and a CSC) X storing some entries twice, as h5py writes scipy's arrays when they are not in canonical
 * format: every path memfit reads it by sums the duplicates, as scipy's {@code toarray()} does.
 */
class DuplicateIndicesTest {

    private static final int CELLS = 70;
    private static final int GENES = 200;   // wide enough that the stream keeps its buffer sparse

    @TempDir
    static Path dir;
    static Path csr;
    static Path csc;
    /** scipy's {@code toarray()} of each X, float32, and its float64 totals. */
    static Path csrDense;
    static Path cscDense;
    static String[] totals;

    @BeforeAll
    static void files() {
        csr = dir.resolve("dupes-csr.h5ad");
        csc = dir.resolve("dupes-csc.h5ad");
        csrDense = dir.resolve("dupes-csr.npy");
        cscDense = dir.resolve("dupes-csc.npy");
        // anndata writes a canonical stand-in (obs, var, attributes); h5py then puts the raw arrays in place of X's
        // (anndata itself would keep them too, but a file should not depend on that)
        String out = PythonPeer.run("""
                import sys, numpy as np, pandas as pd, scipy.sparse as sp, anndata as ad, h5py
                csr_path, csc_path, csr_dense, csc_dense = sys.argv[1:5]
                cells, genes = %d, %d
                rng = np.random.default_rng(11)
                data, indices, indptr = [], [], [0]
                for r in range(cells):
                    cols = [3, 3, 1, 3] if r %% 5 == 0 else list(rng.integers(0, genes, rng.integers(0, 9)))
                    data += list(rng.integers(1, 40, len(cols)) + rng.random(len(cols)))
                    indices += cols
                    indptr.append(len(indices))
                data = np.array(data, np.float32); indices = np.array(indices, np.int32); indptr = np.array(indptr, np.int64)
                x = sp.csr_matrix((data, indices, indptr), shape=(cells, genes))
                assert not x.has_canonical_format
                obs = pd.DataFrame(index=['c%%d' %% i for i in range(cells)])
                var = pd.DataFrame(index=['g%%d' %% j for j in range(genes)])
                def replace(path, arrays, kind):
                    with h5py.File(path, 'r+') as f:
                        assert f['X'].attrs['encoding-type'] == kind
                        for name, values in arrays:
                            del f['X'][name]
                            f['X'].create_dataset(name, data=values, chunks=True, compression='gzip')
                ad.AnnData(sp.csr_matrix((cells, genes), dtype=np.float32), obs=obs, var=var).write_h5ad(csr_path)
                replace(csr_path, [('data', data), ('indices', indices), ('indptr', indptr)], 'csr_matrix')
                back = ad.read_h5ad(csr_path).X
                assert not back.has_canonical_format and back.nnz == len(data)
                np.save(csr_dense, back.toarray())
                # a CSC X with a row stored twice in some columns: the transpose of another such CSR
                t = sp.csr_matrix((data, indices, indptr), shape=(cells, genes))
                cdata, crow, cptr = [], [], [0]
                for c in range(genes):
                    rows = [5, 5, 2] if c %% 4 == 0 else list(rng.integers(0, cells, rng.integers(0, 12)))
                    cdata += list(rng.integers(1, 40, len(rows)) + rng.random(len(rows)))
                    crow += rows
                    cptr.append(len(crow))
                y = sp.csc_matrix((np.array(cdata, np.float32), np.array(crow, np.int32), np.array(cptr, np.int64)),
                                  shape=(cells, genes))
                ad.AnnData(sp.csc_matrix((cells, genes), dtype=np.float32), obs=obs, var=var).write_h5ad(csc_path)
                replace(csc_path, [('data', y.data), ('indices', y.indices), ('indptr', y.indptr)], 'csc_matrix')
                back = ad.read_h5ad(csc_path).X
                assert not back.has_canonical_format
                np.save(csc_dense, back.toarray())
                canonical = x.copy(); canonical.sum_duplicates()
                # per gene in float64 from the stored float32 values (x.astype(float64) would merge duplicates in float32 first)
                print(repr(float(x.data.astype(np.float64).sum())), canonical.nnz,
                      ','.join(repr(float(v)) for v in np.bincount(indices, weights=data.astype(np.float64), minlength=genes)))
                """.formatted(CELLS, GENES), csr, csc, csrDense, cscDense);
        totals = out.split(" ");
    }

    @Test
    void readRowsSumsDuplicatesAsScipyToarray() {
        assertRowsEqual(csr, csrDense);
        assertRowsEqual(csc, cscDense);
        try (H5ad h5ad = H5ad.open(csr)) {
            assertEquals(Double.parseDouble(totals[0]), h5ad.sum(), 1e-12 * Double.parseDouble(totals[0]));
            double[] columns = h5ad.columnSums();
            double[] expected = Arrays.stream(totals[2].split(",")).mapToDouble(Double::parseDouble).toArray();
            for (int g = 0; g < GENES; g++) {
                assertEquals(expected[g], columns[g], 1e-9 * expected[g], "gene " + g);
            }
        }
    }

    /** Every row, read by ranges of 7 (one range ends mid-file), bit for bit scipy's float32 toarray(). */
    private static void assertRowsEqual(Path file, Path expectedRows) {
        try (H5ad h5ad = H5ad.builder().setFile(file).optProgress(ProgressListener.silent()).open();
             NpyArray expected = Npy.map(expectedRows); Arena arena = Arena.ofConfined()) {
            long rowBytes = GENES * Float.BYTES;
            MemorySegment rows = arena.allocate(7 * rowBytes);
            MemorySegment want = arena.allocate(7 * rowBytes);
            for (int first = 0; first < CELLS; first += 7) {
                int n = Math.min(7, CELLS - first);
                rows.fill((byte) 0x5a);
                h5ad.readRows(first, n, rows);
                expected.copyRows(first, n, want);
                assertEquals(-1, rows.asSlice(0, n * rowBytes).mismatch(want.asSlice(0, n * rowBytes)),
                        file.getFileName() + " rows " + first + "..");
            }
        }
    }

    @Test
    void shardsMergeDuplicatesIntoSortedUniqueGenes() {
        for (ShardLayout layout : ShardLayout.values()) {
            for (Path input : new Path[]{csr, csc}) {
                Path folder = dir.resolve(input.getFileName() + "-" + layout.key());
                ShardWriter.builder().setInput(input).optShardSize(25).optLayout(layout)
                        .optProgress(ProgressListener.silent()).write(folder);
                ShardStore.validate(folder);
                assertCellsEqual(folder, input == csr ? csrDense : cscDense);
                if (layout == ShardLayout.SPARSE) {
                    assertCanonical(folder);
                }
            }
        }
        try (ShardStore store = ShardStore.open(dir.resolve(csr.getFileName() + "-" + ShardLayout.SPARSE.key()))) {
            assertEquals(Long.parseLong(totals[1]), store.storedValues(), "scipy's nnz after sum_duplicates()");
        }
    }

    private static void assertCellsEqual(Path folder, Path expectedRows) {
        try (ShardStore store = ShardStore.open(folder); NpyArray expected = Npy.map(expectedRows);
             Arena arena = Arena.ofConfined()) {
            assertEquals(CELLS, store.size());
            MemorySegment cell = arena.allocate(store.sampleBytes());
            MemorySegment want = arena.allocate(store.sampleBytes());
            for (long i = 0; i < CELLS; i++) {
                cell.fill((byte) 0x5a);
                store.read(i, cell);
                expected.copyRows(i, 1, want);
                assertEquals(-1, cell.mismatch(want), "cell " + i + " of " + folder.getFileName());
            }
        }
    }

    /** Each shard's gene indices strictly increase within a cell: no gene twice, as scipy's canonical format. */
    private static void assertCanonical(Path folder) {
        assertEquals("True", PythonPeer.run("""
                import sys, glob, numpy as np, scipy.sparse as sp
                ok = True
                for p in sorted(glob.glob(sys.argv[1] + '/shard_*.indptr.npy')):
                    base = p[:-len('indptr.npy')]
                    ptr, ind, val = np.load(p), np.load(base + 'indices.npy'), np.load(base + 'data.npy')
                    m = sp.csr_matrix((val, ind, ptr), shape=(len(ptr) - 1, %d))
                    ok &= bool(m.has_sorted_indices) and all((np.diff(ind[ptr[r]:ptr[r + 1]]) > 0).all() for r in range(len(ptr) - 1))
                print(ok)
                """.formatted(GENES), folder));
    }

    @Test
    void theStreamServesSummedRows() {
        try (NpyArray expected = Npy.map(csrDense); Arena arena = Arena.ofConfined();
             Loader stream = Datasets.h5ad(csr).optBlockShuffle(8, 2).optBatchSize(10).optThreads(2)
                     .optShuffle(3).build()) {
            MemorySegment want = arena.allocate(GENES * Float.BYTES);
            Set<Long> seen = new HashSet<>();
            for (Batch batch : stream.epoch(0)) {
                try (batch) {
                    long[] indices = batch.indices();
                    for (int i = 0; i < indices.length; i++) {
                        expected.copyRows(indices[i], 1, want);
                        float[] row = batch.data().asSlice((long) i * GENES * Float.BYTES, GENES * Float.BYTES)
                                .toArray(ValueLayout.JAVA_FLOAT);
                        assertArrayEquals(want.toArray(ValueLayout.JAVA_FLOAT), row, 0f, "cell " + indices[i]);
                        seen.add(indices[i]);
                    }
                }
            }
            assertEquals(CELLS, seen.size());
            assertTrue(seen.contains(0L), "cell 0 stores gene 3 three times");
        }
    }
}
