package dev.memfit.io.hdf5;

import dev.memfit.InvalidFileException;
import dev.memfit.ProgressListener;
import dev.memfit.PythonPeer;
import dev.memfit.RecordingProgress;
import dev.memfit.io.Formats;
import dev.memfit.io.npy.Npy;
import dev.memfit.io.npy.NpyArray;
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
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** CSC X (anndata's csc_matrix) written by Debian's anndata 0.8, transposed to CSR and read row by row. */
class CscTest {

    @TempDir
    static Path dir;

    /** 300 x 70, with empty rows (every 7th cell) and empty columns (every 5th gene). */
    @BeforeAll
    static void writeWithAnndata() {
        assertEquals("ok", PythonPeer.run("""
                import sys, numpy as np, pandas as pd, scipy.sparse as sp, anndata as ad, h5py
                d = sys.argv[1]
                rng = np.random.default_rng(3)
                x = ((rng.random((300, 70)) < 0.15) * rng.integers(1, 30, (300, 70))).astype(np.float32)
                x[::7, :] = 0
                x[:, ::5] = 0
                x[11, 3] = 0.1
                obs = pd.DataFrame({'cell_type': pd.Categorical(rng.choice(['B', 'T'], 300))},
                                   index=['cell%d' % i for i in range(300)])
                var = pd.DataFrame(index=['gene%d' % j for j in range(70)])
                np.save(d + '/x.npy', x)
                ad.AnnData(sp.csc_matrix(x), obs=obs, var=var).write_h5ad(d + '/csc.h5ad')
                ad.AnnData(sp.csr_matrix(x), obs=obs, var=var).write_h5ad(d + '/csr.h5ad')
                ad.AnnData(sp.csc_matrix(x), obs=obs, var=var).write_h5ad(d + '/csc-gzip.h5ad', compression='gzip')
                w = sp.csc_matrix(x.astype(np.float64))
                w.indptr = w.indptr.astype(np.int64)
                w.indices = w.indices.astype(np.int64)
                ad.AnnData(w, obs=obs, var=var, dtype=np.float64).write_h5ad(d + '/csc64.h5ad')
                with h5py.File(d + '/csc64.h5ad', 'r') as f:
                    assert f['X'].attrs['encoding-type'] == 'csc_matrix'
                    assert f['X/indices'].dtype == np.int64 and f['X/data'].dtype == np.float64
                with h5py.File(d + '/csc-gzip.h5ad', 'r') as f:
                    assert f['X/data'].compression == 'gzip'
                # what anndata reads back is what the Java side is compared with
                for name in ['csc', 'csc-gzip', 'csc64']:
                    back = ad.read_h5ad(d + '/' + name + '.h5ad')
                    assert sp.isspmatrix_csc(back.X), type(back.X)
                    assert np.array_equal(back.X.toarray().astype(np.float32), x), name
                print('ok')
                """, dir));
    }

    private static float[] expected() {
        try (NpyArray truth = Npy.map(dir.resolve("x.npy"))) {
            float[] values = new float[300 * 70];
            MemorySegment.copy(truth.data(), ValueLayout.JAVA_FLOAT, 0, values, 0, values.length);
            return values;
        }
    }

    private static void assertAllRows(H5ad h5ad, String name) {
        float[] expected = expected();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment rows = arena.allocate(300 * 70 * 4L);
            h5ad.readRows(0, 300, rows);
            assertArrayEquals(expected, rows.toArray(ValueLayout.JAVA_FLOAT), name);
            // and ranges that start and end inside, including empty rows
            MemorySegment some = arena.allocate(13 * 70 * 4L);
            h5ad.readRows(140, 13, some);
            for (int i = 0; i < 13 * 70; i++) {
                assertEquals(expected[140 * 70 + i], some.getAtIndex(ValueLayout.JAVA_FLOAT, i), name + " value " + i);
            }
        }
    }

    @Test
    void readsEveryRowLikeAnndataFromEachVariant() {
        float[] expected = expected();
        double sum = 0;
        long stored = 0;
        double[] geneTotals = new double[70];
        for (int i = 0; i < expected.length; i++) {
            sum += expected[i];
            stored += expected[i] != 0 ? 1 : 0;
            geneTotals[i % 70] += expected[i];
        }
        for (String name : List.of("csc.h5ad", "csc-gzip.h5ad", "csc64.h5ad")) {
            try (H5ad h5ad = H5ad.builder().setFile(dir.resolve(name)).optProgress(ProgressListener.silent()).open()) {
                assertEquals(H5ad.Layout.CSC, h5ad.layout(), name);
                assertTrue(h5ad.sparse(), name);
                assertEquals(300, h5ad.observations(), name);
                assertEquals(70, h5ad.variables(), name);
                assertEquals(stored, h5ad.storedValues(), name);
                assertEquals(sum, h5ad.sum(), 1e-6, name);
                // per gene from the stored columns, without a transpose (the empty genes, every 5th, total 0)
                assertArrayEquals(geneTotals, h5ad.columnSums(), 1e-9, name);
                assertEquals(0, h5ad.columnSums()[5], name);
                assertEquals("cell299", h5ad.index("obs")[299], name);
                assertEquals("gene69", h5ad.index("var")[69], name);
                assertAllRows(h5ad, name);
            }
        }
        try (H5ad csr = H5ad.open(dir.resolve("csr.h5ad"))) {
            assertEquals(H5ad.Layout.CSR, csr.layout());
        }
    }

    @Test
    void aTinyBudgetTransposesInManyBandsWithTheSameRows(@TempDir Path scratch) throws IOException {
        RecordingProgress progress = new RecordingProgress();
        // 3,000-odd stored values, 8 bytes each, in bands of 400 bytes / 16 = 25 values: about 100 bands
        try (H5ad h5ad = H5ad.builder().setFile(dir.resolve("csc-gzip.h5ad")).optProgress(progress).optScratch(scratch)
                .optTransposeBudget(400).open()) {
            assertTrue(progress.tasks().isEmpty(), "nothing is transposed before rows are read");
            assertAllRows(h5ad, "banded");
            RecordingProgress.Seen task = progress.only();
            assertEquals("Transposing X (CSC to CSR)", task.name());
            assertEquals("values", task.unit());
            assertEquals(3 * h5ad.storedValues(), task.total(), "three passes: count, bands, rows");
            assertEquals(task.total(), task.steps().get());
            assertTrue(task.closed().get());
        }
        try (Stream<Path> left = Files.list(scratch)) {
            assertEquals(List.of(), left.toList(), "nothing is left in the scratch folder");
        }
    }

    @Test
    void readersOfOneFileShareOneTransposeAndTheLastCloseDeletesIt(@TempDir Path scratch) throws IOException {
        RecordingProgress progress = new RecordingProgress();
        Path file = dir.resolve("csc.h5ad");
        H5ad first = H5ad.builder().setFile(file).optProgress(progress).optScratch(scratch).open();
        try (H5ad second = H5ad.builder().setFile(file).optProgress(progress).optScratch(scratch).open()) {
            first.prepareRows();
            assertEquals(2 * first.storedValues(), progress.only().total(), "fits the budget: count, then scatter");
            assertAllRows(second, "second reader");
            assertEquals(1, progress.tasks().size(), "the second reader used the first one's transpose");
            first.close();
            assertAllRows(second, "after the first reader closed");
        }
        try (Stream<Path> left = Files.list(scratch)) {
            assertEquals(List.of(), left.toList());
        }
        try (H5ad again = H5ad.builder().setFile(file).optProgress(progress).optScratch(scratch).open()) {
            again.prepareRows();
            assertEquals(2, progress.tasks().size(), "transposed again once every reader had closed");
        }
    }

    @Test
    void describeAndInspectNameTheLayout() {
        Formats.DataFile csc = Formats.open(dir.resolve("csc.h5ad"));
        assertEquals("CSC", csc.facts().get("x_layout"));
        assertTrue(csc.facts().get("format").toString().startsWith("AnnData .h5ad, X CSC (transposed to CSR"),
                csc.facts().get("format").toString());
        assertEquals("CSR", Formats.open(dir.resolve("csr.h5ad")).facts().get("x_layout"));
    }

    @Test
    void aRowIndexPastNObsIsAnErrorNamingItsPlace(@TempDir Path other) {
        Path bad = other.resolve("bad-row.h5ad");
        Path pointers = other.resolve("bad-pointers.h5ad");
        assertEquals("ok", PythonPeer.run("""
                import sys, numpy as np, scipy.sparse as sp, anndata as ad, h5py
                x = sp.csc_matrix(np.eye(6, 4, dtype=np.float32))
                for f in sys.argv[1:]:
                    ad.AnnData(x).write_h5ad(f)
                with h5py.File(sys.argv[1], 'r+') as f:
                    rows = f['X/indices'][:]
                    rows[2] = 6                      # n_obs is 6: stored value 2 is in column 2
                    f['X/indices'][:] = rows
                with h5py.File(sys.argv[2], 'r+') as f:
                    p = f['X/indptr'][:]
                    p[2], p[3] = p[3], p[2]          # column pointers going down
                    f['X/indptr'][:] = p
                print('ok')
                """, bad, pointers));
        try (H5ad h5ad = H5ad.builder().setFile(bad).optProgress(ProgressListener.silent()).optScratch(other.resolve("s")).open();
             Arena arena = Arena.ofConfined()) {
            InvalidFileException e = assertThrows(InvalidFileException.class, () -> h5ad.readRows(0, 1, arena.allocate(16)));
            assertTrue(e.getMessage().contains(bad.toString()), e.getMessage());
            assertTrue(e.getMessage().contains("X/indices (row indices of a CSC X) in [0, 6) (n_obs)"), e.getMessage());
            assertTrue(e.getMessage().contains("row 6 at stored value 2 (column 2)"), e.getMessage());
        }
        InvalidFileException e = assertThrows(InvalidFileException.class, () -> H5ad.open(pointers));
        assertTrue(e.getMessage().contains("X/indptr (column pointers) not decreasing"), e.getMessage());
        assertTrue(e.getMessage().contains(pointers.toString()), e.getMessage());
    }

    @Test
    void csrFilesAreNotTransposed() {
        RecordingProgress progress = new RecordingProgress();
        try (H5ad h5ad = H5ad.builder().setFile(dir.resolve("csr.h5ad")).optProgress(progress).open()) {
            h5ad.prepareRows();
            assertAllRows(h5ad, "csr");
        }
        assertTrue(progress.tasks().isEmpty(), "a CSR X is read as stored");
    }
}
