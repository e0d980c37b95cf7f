package dev.memfit.io.hdf5;

import dev.memfit.io.npy.Npy;
import dev.memfit.PythonPeer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.Random;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Files written by {@link H5adWriter}, read back by Debian's anndata 0.8 / h5py and by {@link H5ad}. */
class H5adWriterTest {

    @TempDir
    Path dir;

    private static final int CELLS = 203;
    private static final int GENES = 37;

    /** A deterministic sparse matrix with empty rows and an empty chunk. */
    private static float[] matrix() {
        Random random = new Random(7);
        float[] dense = new float[CELLS * GENES];
        for (int r = 0; r < CELLS; r++) {
            if (r % 17 == 3 || (r >= 100 && r < 110)) {
                continue;
            }
            for (int c = 0; c < GENES; c++) {
                if (random.nextDouble() < 0.15) {
                    dense[r * GENES + c] = 1 + random.nextInt(40) + (c % 3) * 0.25f;
                }
            }
        }
        return dense;
    }

    private Path write(float[] dense) {
        Path file = dir.resolve("ours.h5ad");
        String[] genes = new String[GENES];
        for (int c = 0; c < GENES; c++) {
            genes[c] = "gène_" + c; // non-ASCII on purpose
        }
        String[] types = new String[CELLS];
        double[] counts = new double[CELLS];
        int[] batch = new int[CELLS];
        boolean[] highlyVariable = new boolean[GENES];
        for (int r = 0; r < CELLS; r++) {
            types[r] = r % 10 == 0 ? "rare" : r % 3 == 0 ? "B cell" : "T cell";
            batch[r] = r % 4;
            for (int c = 0; c < GENES; c++) {
                counts[r] += dense[r * GENES + c];
            }
        }
        types[5] = null;
        for (int c = 0; c < GENES; c++) {
            highlyVariable[c] = c % 2 == 0;
        }
        try (H5adWriter writer = H5adWriter.create(file, genes); Arena arena = Arena.ofConfined()) {
            // chunks of uneven sizes, one of them all zeros, through both append methods
            int[] chunks = {50, 50, 10, 93};
            int first = 0;
            for (int i = 0; i < chunks.length; i++) {
                int count = chunks[i];
                if (i % 2 == 0) {
                    MemorySegment rows = arena.allocate((long) count * GENES * Float.BYTES);
                    MemorySegment.copy(dense, first * GENES, rows, ValueLayout.JAVA_FLOAT, 0, count * GENES);
                    writer.appendDense(count, rows);
                } else {
                    int[] starts = new int[count + 1];
                    int[] columns = new int[count * GENES];
                    float[] values = new float[count * GENES];
                    int k = 0;
                    for (int r = 0; r < count; r++) {
                        for (int c = 0; c < GENES; c++) {
                            float v = dense[(first + r) * GENES + c];
                            if (v != 0) {
                                columns[k] = c;
                                values[k++] = v;
                            }
                        }
                        starts[r + 1] = k;
                    }
                    writer.appendSparse(count, starts, columns, values);
                }
                first += count;
            }
            writer.obs("cell_type", types).obs("n_counts", counts).obs("batch", batch);
            writer.var("highly_variable", highlyVariable).var("means", new float[GENES]);
            writer.commit();
        }
        return file;
    }

    @Test
    void anndataReadsWhatWeWrite() {
        float[] dense = matrix();
        Path file = write(dense);
        Path expected = dir.resolve("expected.npy");
        float[][] rows = new float[CELLS][];
        for (int r = 0; r < CELLS; r++) {
            rows[r] = java.util.Arrays.copyOfRange(dense, r * GENES, (r + 1) * GENES);
        }
        Npy.write(expected, rows);
        assertEquals("ok", PythonPeer.run("""
                import sys, numpy as np, anndata as ad, h5py
                a = ad.read_h5ad(sys.argv[1])
                expected = np.load(sys.argv[2])
                assert a.shape == (203, 37), a.shape
                assert np.array_equal(a.X.toarray(), expected)
                assert a.X.dtype == np.float32 and a.X.indptr.dtype == np.int64
                assert list(a.var_names[:2]) == ['gène_0', 'gène_1'], list(a.var_names[:2])
                assert list(a.obs_names[:2]) == ['cell_0', 'cell_1']
                ct = a.obs['cell_type']
                assert str(ct.dtype) == 'category', ct.dtype
                assert list(ct.cat.categories) == ['B cell', 'T cell', 'rare'], list(ct.cat.categories)
                assert ct.isna().sum() == 1 and ct.isna()[5]
                assert ct.iloc[0] == 'rare' and ct.iloc[3] == 'B cell' and ct.iloc[1] == 'T cell'
                assert np.allclose(a.obs['n_counts'].values, expected.sum(axis=1))
                assert list(a.obs['batch'][:5]) == [0, 1, 2, 3, 0]
                assert a.var['highly_variable'].dtype == bool, a.var['highly_variable'].dtype
                assert a.var['highly_variable'].sum() == 19
                assert list(a.obs.columns) == ['cell_type', 'n_counts', 'batch']
                with h5py.File(sys.argv[1], 'r') as f:
                    # fixed-length string attributes read as bytes in raw h5py (anndata decodes them)
                    assert f.attrs['encoding-type'] == b'anndata', f.attrs['encoding-type']
                    assert f['X/data'].dtype == np.float32 and f['X/indices'].dtype == np.int32
                    assert list(f['X'].attrs['shape']) == [203, 37]
                # backed mode reads row ranges without loading X
                b = ad.read_h5ad(sys.argv[1], backed='r')
                assert np.array_equal(b.X[100:120].toarray(), expected[100:120])
                print('ok')
                """, file, expected));
    }

    @Test
    void ourReaderReadsWhatWeWrite() {
        float[] dense = matrix();
        Path file = write(dense);
        try (H5ad h5ad = H5ad.open(file); Arena arena = Arena.ofConfined()) {
            assertEquals(CELLS, h5ad.observations());
            assertEquals(GENES, h5ad.variables());
            assertTrue(h5ad.sparse());
            MemorySegment rows = arena.allocate((long) CELLS * GENES * Float.BYTES);
            h5ad.readRows(0, CELLS, rows);
            assertArrayEquals(dense, rows.toArray(ValueLayout.JAVA_FLOAT));
            Map<String, Object> obs = h5ad.columns("obs");
            assertEquals("rare", ((String[]) obs.get("cell_type"))[0]);
            assertEquals(null, ((String[]) obs.get("cell_type"))[5]);
            assertEquals("gène_36", h5ad.index("var")[36]);
        }
        assertFalse(Files.exists(dir.resolve("ours.h5ad.tmp-" + ProcessHandle.current().pid())));
    }

    @Test
    void anAbandonedWriterLeavesTheExistingFileAlone() throws Exception {
        Path file = dir.resolve("keep.h5ad");
        Files.writeString(file, "previous contents");
        try (H5adWriter writer = H5adWriter.create(file, new String[]{"a", "b"})) {
            writer.appendSparse(1, new int[]{0, 1}, new int[]{1}, new float[]{2f});
            assertThrows(IllegalArgumentException.class, () -> writer.appendSparse(1, new int[]{0, 1}, new int[]{2}, new float[]{1f}));
            // not committed
        }
        assertEquals("previous contents", Files.readString(file));
        try (var listing = Files.list(dir)) {
            assertEquals(1, listing.count(), "no temporary or spill file left behind");
        }
    }

    @Test
    void columnsOfTheWrongLengthAreRefusedAndNothingIsWritten() {
        Path file = dir.resolve("bad.h5ad");
        try (H5adWriter writer = H5adWriter.create(file, new String[]{"a", "b"})) {
            writer.appendSparse(2, new int[]{0, 1, 1}, new int[]{0}, new float[]{1f});
            writer.obs("label", new String[]{"x"});
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, writer::commit);
            assertTrue(e.getMessage().contains("'label' has 1 values for 2 rows"), e.getMessage());
        }
        assertFalse(Files.exists(file));
    }
}
