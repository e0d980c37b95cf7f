package dev.memfit.synthetic;

import dev.memfit.ProgressListener;
import dev.memfit.PythonPeer;
import dev.memfit.io.hdf5.H5ad;
import dev.memfit.io.hdf5.H5adWriter;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

/** {@link SyntheticAtlas} in anndata's layout (its default), gzip and contiguous: the same atlas, read by anndata. */
class SyntheticAtlasLayoutTest {

    @TempDir
    Path dir;

    private SyntheticAtlas.Atlas atlas(String name, H5adWriter.Layout layout, long cells) {
        SyntheticAtlas.Builder builder = SyntheticAtlas.builder().setCells(cells).setGenes(300).optSeed(5)
                .optProgress(ProgressListener.silent());
        if (layout != null) {
            builder.optLayout(layout);
        }
        return builder.write(dir.resolve(name));
    }

    @Test
    void theDefaultIsAnndatasLayoutAndEveryLayoutHoldsTheSameAtlas() {
        // 20,000 cells: more than the 16,384 the chunk length is estimated from
        SyntheticAtlas.Atlas byDefault = atlas("default.h5ad", null, 20_000);
        SyntheticAtlas.Atlas gzip = atlas("gzip.h5ad", H5adWriter.Layout.anndata().gzip(), 20_000);
        SyntheticAtlas.Atlas contiguous = atlas("contiguous.h5ad", H5adWriter.Layout.contiguous(), 20_000);
        SyntheticAtlas.Atlas small = atlas("small.h5ad", null, 3_000);
        assertEquals(byDefault.storedValues(), gzip.storedValues());
        assertEquals(byDefault.storedValues(), contiguous.storedValues());
        assertArrayEquals(byDefault.labels(), contiguous.labels());
        assertEquals("ok", PythonPeer.run("""
                import sys, numpy as np, anndata as ad, h5py
                from h5py._hl.filters import guess_chunk
                d, stored, small_stored = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
                ref = ad.read_h5ad(d + '/contiguous.h5ad')
                assert ref.X.nnz == stored
                for name, compression in (('default', None), ('gzip', 'gzip')):
                    a = ad.read_h5ad(d + '/' + name + '.h5ad')
                    assert a.shape == (20000, 300), a.shape
                    assert (a.X != ref.X).nnz == 0, name
                    assert a.obs['cell_type'].equals(ref.obs['cell_type']) and list(a.var_names) == list(ref.var_names)
                    with h5py.File(d + '/' + name + '.h5ad', 'r') as f:
                        x = f['X/data']
                        # h5py's chunk for the size estimated from the first 16,384 cells: within 2% of its choice
                        exact = guess_chunk((stored,), None, 4)[0]
                        assert abs(x.chunks[0] - exact) <= 0.02 * exact, (x.chunks, exact)
                        assert x.compression == compression and x.maxshape == (None,), (x.compression, x.maxshape)
                        assert f['X/indptr'].chunks == guess_chunk((20001,), None, 8)
                    # backed mode, as notebooks and benchmarks read it
                    b = ad.read_h5ad(d + '/' + name + '.h5ad', backed='r')
                    assert (b.X[5000:5100] != ref.X[5000:5100]).nnz == 0
                with h5py.File(d + '/contiguous.h5ad', 'r') as f:
                    assert f['X/data'].chunks is None
                with h5py.File(d + '/small.h5ad', 'r') as f:
                    # every cell in the estimate: exactly h5py's chunk length
                    assert f['X/data'].chunks == guess_chunk((small_stored,), None, 4), f['X/data'].chunks
                print('ok')
                """, dir, byDefault.storedValues(), small.storedValues()));
        try (H5ad h5ad = H5ad.open(dir.resolve("default.h5ad")); H5ad reference = H5ad.open(dir.resolve("contiguous.h5ad"));
             Arena arena = Arena.ofConfined()) {
            MemorySegment rows = arena.allocate(20_000L * 300 * Float.BYTES);
            MemorySegment expected = arena.allocate(20_000L * 300 * Float.BYTES);
            h5ad.readRows(0, 20_000, rows);
            reference.readRows(0, 20_000, expected);
            assertEquals(-1, rows.mismatch(expected));
            assertEquals(byDefault.storedValues(), h5ad.storedValues());
        }
    }

    @Test
    void theSameSettingsWriteTheSameBytes() throws Exception {
        atlas("a.h5ad", H5adWriter.Layout.anndata().gzip(), 17_000);
        atlas("b.h5ad", H5adWriter.Layout.anndata().gzip(), 17_000);
        assertEquals(-1, Files.mismatch(dir.resolve("a.h5ad"), dir.resolve("b.h5ad")));
    }
}
