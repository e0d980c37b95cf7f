package dev.memfit.io.hdf5;

import dev.memfit.io.npy.Npy;
import dev.memfit.PythonPeer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
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

    /** The layouts the tests write, by name. */
    private static H5adWriter.Layout layout(String name) {
        return switch (name) {
            case "contiguous" -> H5adWriter.Layout.contiguous();
            case "anndata" -> H5adWriter.Layout.anndata();
            case "gzip" -> H5adWriter.Layout.anndata().gzip();
            // the exact number of stored values gives h5py's own chunk length
            case "shuffle-gzip-exact" -> H5adWriter.Layout.anndata().shuffle().gzip(6).expectedValues(storedValues(matrix()));
            // chunks of 10 values: thousands of chunks, a B-tree of three levels
            case "tiny-chunks" -> H5adWriter.Layout.anndata().gzip().expectedValues(10);
            default -> throw new AssertionError(name);
        };
    }

    private static long storedValues(float[] dense) {
        long n = 0;
        for (float v : dense) {
            n += v != 0 ? 1 : 0;
        }
        return n;
    }

    private Path write(float[] dense) {
        return write(dense, H5adWriter.Layout.contiguous());
    }

    private Path write(float[] dense, H5adWriter.Layout layout) {
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
        try (H5adWriter writer = H5adWriter.create(file, genes, layout); Arena arena = Arena.ofConfined()) {
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

    @ParameterizedTest
    @ValueSource(strings = {"contiguous", "anndata", "gzip", "shuffle-gzip-exact"})
    void anndataReadsWhatWeWrite(String layout) {
        float[] dense = matrix();
        Path file = write(dense, layout(layout));
        Path expected = dir.resolve("expected.npy");
        float[][] rows = new float[CELLS][];
        for (int r = 0; r < CELLS; r++) {
            rows[r] = java.util.Arrays.copyOfRange(dense, r * GENES, (r + 1) * GENES);
        }
        Npy.write(expected, rows);
        assertEquals("ok", PythonPeer.run("""
                import sys, numpy as np, anndata as ad, h5py
                from h5py._hl.filters import guess_chunk
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
                    layout = sys.argv[3]
                    nnz = f['X/data'].shape[0]
                    for name in ('data', 'indices', 'indptr'):
                        d = f['X/' + name]
                        if layout == 'contiguous':
                            assert d.chunks is None and d.compression is None, (name, d.chunks)
                            continue
                        # what anndata's write_h5ad() gives: maxshape=(None,) and h5py's chunks
                        assert d.maxshape == (None,), (name, d.maxshape)
                        expected_chunks = {'anndata': 16384, 'gzip': 16384,
                                           'shuffle-gzip-exact': guess_chunk((nnz,), None, 4)[0]}[layout]
                        if name == 'indptr':
                            expected_chunks = guess_chunk((204,), None, 8)[0]
                        assert d.chunks == (expected_chunks,), (name, d.chunks, expected_chunks)
                        assert d.compression == {'anndata': None, 'gzip': 'gzip', 'shuffle-gzip-exact': 'gzip'}[layout], (name, d.compression)
                        assert d.compression_opts == {'anndata': None, 'gzip': 4, 'shuffle-gzip-exact': 6}[layout], name
                        assert d.shuffle == (layout == 'shuffle-gzip-exact'), name
                # backed mode reads row ranges without loading X
                b = ad.read_h5ad(sys.argv[1], backed='r')
                assert np.array_equal(b.X[100:120].toarray(), expected[100:120])
                print('ok')
                """, file, expected, layout));
    }

    @ParameterizedTest
    @ValueSource(strings = {"contiguous", "anndata", "gzip", "shuffle-gzip-exact", "tiny-chunks"})
    void ourReaderReadsWhatWeWrite(String layout) throws java.io.IOException {
        float[] dense = matrix();
        Path file = write(dense, layout(layout));
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
        try (var names = Files.list(dir)) {
            assertEquals(List.of(), names.map(p -> p.getFileName().toString()).filter(n -> n.startsWith("."))
                    .toList(), "no temporary or lock file left");
        }
    }

    /** Chunks of 10 values over 60,000 values: 6,000 chunks per dataset, a chunk B-tree of three levels. */
    @Test
    void thousandsOfChunksAreReadByAnndataAndOurReader() {
        int cells = 3000;
        int genes = 200;
        Random random = new Random(11);
        float[][] rows = new float[cells][genes];
        String[] names = new String[genes];
        for (int c = 0; c < genes; c++) {
            names[c] = "g" + c;
        }
        Path file = dir.resolve("many-chunks.h5ad");
        long stored = 0;
        try (H5adWriter writer = H5adWriter.create(file, names, H5adWriter.Layout.anndata().gzip().expectedValues(10))) {
            for (int r = 0; r < cells; r++) {
                int[] starts = new int[2];
                int[] columns = new int[genes];
                float[] values = new float[genes];
                for (int c = 0; c < genes; c++) {
                    if (random.nextInt(10) == 0) {
                        rows[r][c] = 1 + random.nextInt(1000);
                        columns[starts[1]] = c;
                        values[starts[1]++] = rows[r][c];
                    }
                }
                stored += starts[1];
                writer.appendSparse(1, starts, columns, values);
            }
            writer.commit();
        }
        Path expected = Npy.write(dir.resolve("many-chunks.npy"), rows);
        assertEquals("ok", PythonPeer.run("""
                import sys, numpy as np, anndata as ad, h5py
                a = ad.read_h5ad(sys.argv[1])
                assert np.array_equal(a.X.toarray(), np.load(sys.argv[2]))
                with h5py.File(sys.argv[1], 'r') as f:
                    d = f['X/data']
                    assert d.chunks == (10,) and d.compression == 'gzip', (d.chunks, d.compression)
                    assert d.id.get_num_chunks() == (d.shape[0] + 9) // 10 > 4096, d.id.get_num_chunks()
                print('ok')
                """, file, expected));
        try (H5ad h5ad = H5ad.open(file); Arena arena = Arena.ofConfined()) {
            assertEquals(stored, h5ad.storedValues());
            MemorySegment read = arena.allocate((long) cells * genes * Float.BYTES);
            h5ad.readRows(0, cells, read);
            for (int r = 0; r < cells; r++) {
                assertArrayEquals(rows[r], read.asSlice((long) r * genes * Float.BYTES, (long) genes * Float.BYTES)
                        .toArray(ValueLayout.JAVA_FLOAT), "row " + r);
            }
        }
    }

    /** No stored value at all: X/data and X/indices have no chunk (an undefined chunk index), indptr is all zeros. */
    @Test
    void anAllZeroMatrixInAnndatasLayoutIsReadBack() throws Exception {
        Path file = dir.resolve("zeros.h5ad");
        try (H5adWriter writer = H5adWriter.create(file, new String[]{"a", "b", "c"}, H5adWriter.Layout.anndata().gzip())) {
            writer.appendSparse(4, new int[]{0, 0, 0, 0, 0}, new int[0], new float[0]);
            try (var listing = Files.list(dir)) {
                assertEquals(1, listing.filter(f -> !f.getFileName().toString().endsWith(".lock")).count(),
                        "values and indices both go to the file itself: no spill file");
            }
            writer.commit();
        }
        assertEquals("ok", PythonPeer.run("""
                import sys, numpy as np, anndata as ad, h5py
                a = ad.read_h5ad(sys.argv[1])
                assert a.shape == (4, 3) and a.X.nnz == 0 and not a.X.toarray().any()
                with h5py.File(sys.argv[1], 'r') as f:
                    assert f['X/data'].shape == (0,) and f['X/data'].id.get_num_chunks() == 0
                    assert list(f['X/indptr'][()]) == [0] * 5
                print('ok')
                """, file));
        try (H5ad h5ad = H5ad.open(file); Arena arena = Arena.ofConfined()) {
            MemorySegment read = arena.allocate(4 * 3 * Float.BYTES);
            read.fill((byte) 1);
            h5ad.readRows(0, 4, read);
            assertEquals(0, h5ad.storedValues());
            assertArrayEquals(new float[12], read.toArray(ValueLayout.JAVA_FLOAT), "every row zeroed");
            assertEquals(0.0, h5ad.sum());
        }
    }

    @Test
    void layoutSettingsThatCannotApplyAreRefused() {
        IllegalStateException e = assertThrows(IllegalStateException.class, () -> H5adWriter.Layout.contiguous().gzip());
        assertTrue(e.getMessage().contains("use Layout.anndata()"), e.getMessage());
        assertThrows(IllegalArgumentException.class, () -> H5adWriter.Layout.anndata().gzip(10));
        assertThrows(IllegalArgumentException.class, () -> H5adWriter.Layout.anndata().expectedValues(-1));
        assertEquals("anndata (chunked, shuffle, gzip 4)", H5adWriter.Layout.anndata().shuffle().gzip().toString());
    }

    @ParameterizedTest
    @ValueSource(strings = {"contiguous", "gzip"})
    void anAbandonedWriterLeavesTheExistingFileAlone(String layout) throws Exception {
        Path file = dir.resolve("keep.h5ad");
        Files.writeString(file, "previous contents");
        try (H5adWriter writer = H5adWriter.create(file, new String[]{"a", "b"}, layout(layout))) {
            writer.appendSparse(1, new int[]{0, 1}, new int[]{1}, new float[]{2f});
            assertThrows(IllegalArgumentException.class, () -> writer.appendSparse(1, new int[]{0, 1}, new int[]{2}, new float[]{1f}));
            // not committed
        }
        assertEquals("previous contents", Files.readString(file));
        try (var listing = Files.list(dir)) {
            assertEquals(1, listing.count(), "no temporary or spill file left behind");
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"contiguous", "anndata"})
    void columnsOfTheWrongLengthAreRefusedAndNothingIsWritten(String layout) throws Exception {
        Path file = dir.resolve("bad.h5ad");
        try (H5adWriter writer = H5adWriter.create(file, new String[]{"a", "b"}, layout(layout))) {
            writer.appendSparse(2, new int[]{0, 1, 1}, new int[]{0}, new float[]{1f});
            writer.obs("label", new String[]{"x"});
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, writer::commit);
            assertTrue(e.getMessage().contains("'label' has 1 values for 2 rows"), e.getMessage());
        }
        assertFalse(Files.exists(file));
        try (var listing = Files.list(dir)) {
            assertEquals(0, listing.count(), "no temporary or spill file left behind");
        }
    }
}
