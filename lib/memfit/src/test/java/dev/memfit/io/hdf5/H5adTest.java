package dev.memfit.io.hdf5;

import dev.memfit.InvalidFileException;
import dev.memfit.io.npy.Npy;
import dev.memfit.io.npy.NpyArray;
import dev.memfit.MemfitException;
import dev.memfit.PythonPeer;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Files written by Debian's anndata 0.8, read here row range by row range. */
class H5adTest {

    @TempDir
    static Path dir;

    @BeforeAll
    static void writeWithAnndata() {
        assertEquals("ok", PythonPeer.run("""
                import sys, numpy as np, pandas as pd, scipy.sparse as sp, anndata as ad
                d = sys.argv[1]
                rng = np.random.default_rng(0)
                dense = (rng.random((120, 30)) < 0.1) * rng.integers(1, 20, (120, 30))
                dense = dense.astype(np.float32)
                obs = pd.DataFrame({'cell_type': pd.Categorical(rng.choice(['B', 'T', 'NK'], 120)),
                                    'n_counts': dense.sum(axis=1).astype(np.float64),
                                    'batch': ['b%d' % (i % 3) for i in range(120)]},
                                   index=['cell%d' % i for i in range(120)])
                var = pd.DataFrame(index=['gene%d' % j for j in range(30)])
                ad.AnnData(sp.csr_matrix(dense), obs=obs, var=var).write_h5ad(d + '/csr32.h5ad')
                x = sp.csr_matrix(dense)
                x.indptr = x.indptr.astype(np.int64)
                x.indices = x.indices.astype(np.int64)
                ad.AnnData(x, obs=obs, var=var).write_h5ad(d + '/csr64.h5ad')
                ad.AnnData(dense, obs=obs, var=var).write_h5ad(d + '/dense.h5ad')
                # chunked + gzip: read from decoded chunks rather than straight from the mapping
                ad.AnnData(sp.csr_matrix(dense), obs=obs, var=var).write_h5ad(d + '/csr-gzip.h5ad', compression='gzip')
                ad.AnnData(dense.astype(np.float64), obs=obs, var=var).write_h5ad(d + '/dense-gzip.h5ad', compression='gzip')
                np.save(d + '/dense.npy', dense)
                import h5py
                with h5py.File(d + '/csr64.h5ad', 'r') as f:
                    assert f['X/indptr'].dtype == np.int64, f['X/indptr'].dtype
                print('ok')
                """, dir));
    }

    @Test
    void readsRowsOfEveryLayoutLikeAnndata() {
        float[] expected;
        try (NpyArray truth = Npy.map(dir.resolve("dense.npy"))) {
            expected = new float[120 * 30];
            MemorySegment.copy(truth.data(), ValueLayout.JAVA_FLOAT, 0, expected, 0, expected.length);
        }
        double expectedSum = 0;
        for (float v : expected) {
            expectedSum += v;
        }
        for (String name : List.of("csr32.h5ad", "csr64.h5ad", "dense.h5ad", "csr-gzip.h5ad", "dense-gzip.h5ad")) {
            try (H5ad h5ad = H5ad.open(dir.resolve(name)); Arena arena = Arena.ofConfined()) {
                assertEquals(120, h5ad.observations(), name);
                assertEquals(30, h5ad.variables(), name);
                assertEquals(!name.startsWith("dense"), h5ad.sparse(), name);
                MemorySegment rows = arena.allocate(17 * 30 * 4L);
                h5ad.readRows(50, 17, rows);
                for (int i = 0; i < 17 * 30; i++) {
                    assertEquals(expected[50 * 30 + i], rows.getAtIndex(ValueLayout.JAVA_FLOAT, i), 0f, name + " value " + i);
                }
                assertEquals(expectedSum, h5ad.sum(), 1e-6, name);
                Map<String, Object> obs = h5ad.columns("obs");
                assertEquals(List.of("cell_type", "n_counts", "batch"), List.copyOf(obs.keySet()), name);
                String[] types = (String[]) obs.get("cell_type");
                assertTrue(List.of("B", "T", "NK").contains(types[7]), name);
                double[] counts = (double[]) obs.get("n_counts");
                float rowSum = 0;
                for (int j = 0; j < 30; j++) {
                    rowSum += expected[7 * 30 + j];
                }
                assertEquals(rowSum, counts[7], 1e-6, name);
                assertEquals("b1", ((String[]) obs.get("batch"))[4], name);
                assertEquals(0, h5ad.columns("var").size(), "an empty var column order");
                assertEquals("gene29", h5ad.index("var")[29]);
                assertEquals("cell119", h5ad.index("obs")[119]);
            }
        }
    }

    @Test
    void denseReadsLongerThanOneBlockGoInBlocksOfWholeRows(@TempDir Path other) {
        // 4,500 rows of 1,000 genes (18 MB of float32) read at once, across many bands of gzip chunks
        Path file = other.resolve("wide-dense.h5ad");
        assertEquals("ok", PythonPeer.run("""
                import sys, numpy as np, anndata as ad
                x = np.arange(4500 * 1000, dtype=np.float64).reshape(4500, 1000).astype(np.float32)
                ad.AnnData(x).write_h5ad(sys.argv[1], compression='gzip')
                print('ok')
                """, file));
        try (H5ad h5ad = H5ad.open(file); Arena arena = Arena.ofConfined()) {
            MemorySegment rows = arena.allocate(4499L * 1000 * 4);
            h5ad.readRows(1, 4499, rows);
            for (long i = 0; i < 4499L * 1000; i += 997) {
                assertEquals((float) (1000 + i), rows.getAtIndex(ValueLayout.JAVA_FLOAT, i), "value " + i);
            }
            assertEquals((float) (4500L * 1000 - 1), rows.getAtIndex(ValueLayout.JAVA_FLOAT, 4499L * 1000 - 1));
        }
    }

    @Test
    void missingLabelColumnNamesTheOnesThatExist() {
        try (H5ad h5ad = H5ad.open(dir.resolve("csr32.h5ad"))) {
            MemfitException e = assertThrows(MemfitException.class, () -> h5ad.column("obs", "celltype"));
            assertTrue(e.getMessage().contains("obs has no column 'celltype'; it has [cell_type, n_counts, batch]"), e.getMessage());
        }
    }

    @Test
    void badFilesAreNamed(@TempDir Path other) throws IOException {
        Path text = other.resolve("notes.h5ad");
        Files.writeString(text, "not hdf5 at all");
        InvalidFileException e = assertThrows(InvalidFileException.class, () -> H5ad.open(text));
        assertTrue(e.getMessage().startsWith(text + ": expected an HDF5 file (.h5ad)"), e.getMessage());
        assertEquals("ok", PythonPeer.run("""
                import sys, h5py, numpy as np
                with h5py.File(sys.argv[1] + '/decreasing.h5ad', 'w') as f:
                    f.attrs['encoding-type'] = 'anndata'
                    g = f.create_group('X')
                    g.attrs['encoding-type'] = 'csr_matrix'
                    g.attrs['shape'] = np.array([3, 4])
                    g['data'] = np.ones(4, dtype=np.float32)
                    g['indices'] = np.array([0, 1, 2, 3], dtype=np.int32)
                    g['indptr'] = np.array([0, 3, 1, 4], dtype=np.int32)
                with h5py.File(sys.argv[1] + '/wide.h5ad', 'w') as f:
                    f.attrs['encoding-type'] = 'anndata'
                    g = f.create_group('X')
                    g.attrs['encoding-type'] = 'csr_matrix'
                    g.attrs['shape'] = np.array([2, 4])
                    g['data'] = np.ones(3, dtype=np.float32)
                    g['indices'] = np.array([0, 9, 2], dtype=np.int32)
                    g['indptr'] = np.array([0, 2, 3], dtype=np.int32)
                print('ok')
                """, other));
        InvalidFileException decreasing = assertThrows(InvalidFileException.class, () -> H5ad.open(other.resolve("decreasing.h5ad")));
        assertTrue(decreasing.getMessage().contains("expected X/indptr not decreasing, found indptr[2] = 1 < indptr[1] = 3"),
                decreasing.getMessage());
        try (H5ad wide = H5ad.open(other.resolve("wide.h5ad")); Arena arena = Arena.ofConfined()) {
            InvalidFileException e2 = assertThrows(InvalidFileException.class, () -> wide.readRows(0, 2, arena.allocate(2 * 4 * 4)));
            assertTrue(e2.getMessage().contains("expected X/indices in [0, 4) (n_vars), found index 9 at stored value 1 (row 0)"),
                    e2.getMessage());
        }
    }

    @Test
    void topGenesByTotalCountsAgreeWithAnndata() {
        try (H5ad h5ad = H5ad.open(dir.resolve("csr32.h5ad"))) {
            var vocabulary = dev.memfit.shard.GeneVocabulary.topByTotalCounts(h5ad, 5);
            String expected = PythonPeer.run("""
                    import sys, numpy as np, anndata as ad
                    a = ad.read_h5ad(sys.argv[1])
                    totals = np.asarray(a.X.sum(axis=0)).ravel()
                    order = sorted(range(a.n_vars), key=lambda g: (-totals[g], a.var_names[g]))[:5]
                    print(','.join(a.var_names[g] for g in order))
                    """, dir.resolve("csr32.h5ad"));
            assertEquals(expected, String.join(",", vocabulary.genes()));
            assertEquals(30, dev.memfit.shard.GeneVocabulary.fromVar(h5ad).genes().size());
        }
    }
}
