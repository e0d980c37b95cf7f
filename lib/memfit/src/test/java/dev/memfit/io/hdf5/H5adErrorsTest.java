package dev.memfit.io.hdf5;

import dev.memfit.InvalidFileException;
import dev.memfit.PythonPeer;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.Arrays;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * What a damaged or unusual {@code .h5ad} gives at the library's boundary: an {@link InvalidFileException} naming the
 * file and the node, never a jhdf exception, an index error or a null pointer; and the values anndata reads where the
 * file is fine (a frame of zero rows, numeric categories, a missing label).
 */
class H5adErrorsTest {

    @TempDir
    static Path dir;

    @BeforeAll
    static void write() {
        assertEquals("ok", PythonPeer.run("""
                import sys, shutil, numpy as np, pandas as pd, scipy.sparse as sp, anndata as ad, h5py
                d = sys.argv[1]
                rng = np.random.default_rng(0)
                x = sp.csr_matrix(((rng.random((40, 8)) < 0.3) * 3).astype(np.float32))
                obs = pd.DataFrame({'kind': pd.Categorical(['a', 'b', None, 'a'] * 10),
                                    'level': pd.Categorical([10, 20, 10, 30] * 10),
                                    'n': np.arange(40, dtype=np.float64)}, index=['c%d' % i for i in range(40)])
                var = pd.DataFrame(index=['g%d' % j for j in range(8)])
                ad.AnnData(x, obs=obs, var=var).write_h5ad(d + '/good.h5ad')
                whole = open(d + '/good.h5ad', 'rb').read()
                open(d + '/truncated.h5ad', 'wb').write(whole[:len(whole) // 2])
                shutil.copy(d + '/good.h5ad', d + '/badcode.h5ad')
                with h5py.File(d + '/badcode.h5ad', 'r+') as f:
                    codes = f['obs/kind/codes'][...]
                    codes[7] = -5
                    f['obs/kind/codes'][...] = codes
                shutil.copy(d + '/good.h5ad', d + '/shortindex.h5ad')
                with h5py.File(d + '/shortindex.h5ad', 'r+') as f:
                    names = f['var/_index'][...]
                    del f['var/_index']
                    f['var/_index'] = names[:5]
                ad.AnnData(x.toarray().astype(np.float16), dtype=np.float16, obs=obs, var=var).write_h5ad(d + '/f16.h5ad')
                ad.AnnData(sp.csr_matrix((0, 8), dtype=np.float32), var=var).write_h5ad(d + '/zero.h5ad')

                def rewrite(source, name, edit):
                    shutil.copy(d + '/' + source, d + '/' + name)
                    with h5py.File(d + '/' + name, 'r+') as f:
                        edit(f)

                def compact(f, name, values):
                    attrs = dict(f[name].attrs)
                    del f[name]
                    plist = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
                    plist.set_layout(h5py.h5d.COMPACT)
                    space = h5py.h5s.create_simple(values.shape)
                    h5py.h5d.create(f.id, name.encode(), h5py.h5t.py_create(values.dtype), space, plist).write(
                        h5py.h5s.ALL, h5py.h5s.ALL, values)
                    for k, v in attrs.items():
                        f[name].attrs[k] = v

                # a dense X and an obs column stored compact (in their object headers), as h5py can write them
                dense = x.toarray() * np.arange(1, 9, dtype=np.float32)
                ad.AnnData(dense, obs=obs, var=var).write_h5ad(d + '/dense.h5ad')
                rewrite('dense.h5ad', 'compact.h5ad', lambda f: (compact(f, 'X', dense), compact(f, 'obs/n', np.arange(40.0))))
                with h5py.File(d + '/compact.h5ad', 'r') as f:
                    assert f['X'].id.get_create_plist().get_layout() == h5py.h5d.COMPACT
                    assert f['obs/n'].id.get_create_plist().get_layout() == h5py.h5d.COMPACT

                def holey(f):
                    del f['obs/n']
                    n = f['obs'].create_dataset('n', shape=(40,), dtype=np.float64, chunks=(8,), compression='gzip')
                    n[0:8] = np.arange(8.0)
                rewrite('good.h5ad', 'holes.h5ad', holey)

                def short_indices(f):
                    indices = f['X/indices'][...]
                    del f['X/indices']
                    f['X'].create_dataset('indices', data=indices[:-3], chunks=True, maxshape=(None,))
                rewrite('good.h5ad', 'shortindices.h5ad', short_indices)
                print('ok')
                """, dir));
    }

    @Test
    void readsWhatAnndataReads() {
        try (H5ad h5ad = H5ad.open(dir.resolve("good.h5ad"))) {
            Map<String, Object> columns = h5ad.columns("obs");
            String[] kind = (String[]) columns.get("kind");
            assertArrayEquals(new String[]{"a", "b", null, "a"}, Arrays.copyOf(kind, 4));
            assertArrayEquals(new String[]{"10", "20", "10", "30"}, Arrays.copyOf((String[]) columns.get("level"), 4));
        }
        try (H5ad h5ad = H5ad.open(dir.resolve("zero.h5ad"))) {
            assertEquals(0, h5ad.observations());
            assertArrayEquals(new String[0], h5ad.index("obs"));
            assertEquals(8, h5ad.index("var").length);
        }
    }

    @Test
    void truncatedMetadataNamesTheFileAndNode() {
        Path file = dir.resolve("truncated.h5ad");
        InvalidFileException e = assertThrows(InvalidFileException.class, () -> H5ad.open(file).close());
        assertEquals(file, e.file());
        assertTrue(e.getMessage().startsWith(file + ": expected a readable HDF5 node /"), e.getMessage());
        assertTrue(e.getMessage().endsWith("the file is probably truncated or damaged: copy or write it again"), e.getMessage());
    }

    @Test
    void badCategoricalCodeAndShortIndexAreRefused() {
        try (H5ad h5ad = H5ad.open(dir.resolve("badcode.h5ad"))) {
            InvalidFileException e = assertThrows(InvalidFileException.class, () -> h5ad.columns("obs"));
            assertTrue(e.getMessage().contains("expected codes of the categorical /obs/kind in [-1, 2) (2 categories, -1 for"
                    + " missing), found code -5 at row 7"), e.getMessage());
        }
        // a frame not matching X is refused as the file opens (its shapes are read, not its values)
        InvalidFileException shortIndex = assertThrows(InvalidFileException.class, () -> H5ad.open(dir.resolve("shortindex.h5ad")).close());
        assertTrue(shortIndex.getMessage().contains("expected /var/_index of n_vars = 8 entries (one per gene, column of X), found 5 entries"),
                shortIndex.getMessage());
    }

    @Test
    void compactDatasetsAreReadWhole() {
        try (H5ad compact = H5ad.open(dir.resolve("compact.h5ad")); H5ad contiguous = H5ad.open(dir.resolve("dense.h5ad"));
             java.lang.foreign.Arena arena = java.lang.foreign.Arena.ofConfined()) {
            assertEquals(H5ad.Layout.DENSE, compact.layout());
            var want = arena.allocate(40 * 8 * Float.BYTES);
            var got = arena.allocate(40 * 8 * Float.BYTES);
            contiguous.readRows(0, 40, want);
            compact.readRows(0, 40, got);
            assertEquals(-1, want.mismatch(got));
            got.fill((byte) 0);
            compact.readRows(5, 30, got);
            assertEquals(-1, want.asSlice(5 * 8 * Float.BYTES, 30 * 8 * Float.BYTES).mismatch(got.asSlice(0, 30 * 8 * Float.BYTES)));
            assertEquals(contiguous.sum(), compact.sum());
            assertArrayEquals((double[]) contiguous.columns("obs").get("n"), (double[]) compact.columns("obs").get("n"));
        }
    }

    @Test
    void sizesNothingInTheFileBacksAreRefused() {
        // an obs column with unwritten chunks would be read whole by a length the file does not hold
        Path holes = dir.resolve("holes.h5ad");
        try (H5ad h5ad = H5ad.open(holes)) {
            InvalidFileException e = assertThrows(InvalidFileException.class, () -> h5ad.columns("obs"));
            assertTrue(e.getMessage().startsWith(holes + ": expected /obs/n with every chunk stored, as anndata writes it"),
                    e.getMessage());
            assertTrue(e.getMessage().endsWith("found 4 of its 5 chunks unwritten (40 elements claimed, in chunks of 8)"), e.getMessage());
        }
        Path shortIndices = dir.resolve("shortindices.h5ad");
        InvalidFileException e = assertThrows(InvalidFileException.class, () -> H5ad.open(shortIndices).close());
        assertTrue(e.getMessage().contains("expected X/indices (column indices) as long as X/data: "), e.getMessage());
    }

    @Test
    void datatypesAreNamedAsNumpyNamesThem() {
        Path file = dir.resolve("f16.h5ad");
        InvalidFileException e = assertThrows(InvalidFileException.class, () -> H5ad.open(file).close());
        assertTrue(e.getMessage().startsWith(file + ": expected /X of float32, float64 or integers, found float16;"), e.getMessage());
    }
}
