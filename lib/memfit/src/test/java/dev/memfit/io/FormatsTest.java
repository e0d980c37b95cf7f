package dev.memfit.io;

import dev.memfit.DType;
import dev.memfit.MemfitException;
import dev.memfit.PythonPeer;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Files written by the reference tools (numpy, mrcfile, anndata, h5py with their defaults), recognised and described. */
class FormatsTest {

    @TempDir
    static Path dir;

    @BeforeAll
    static void writeWithTheReferenceTools() {
        assertEquals("ok", PythonPeer.run("""
                import sys, os, numpy as np, mrcfile, h5py, anndata as ad, scipy.sparse as sp
                d = sys.argv[1]
                np.save(d + '/rows.npy', np.arange(24, dtype='>f8').reshape(6, 4))
                np.save(d + '/scalar.npy', np.float32(3))
                os.rename(d + '/rows.npy', d + '/rows.data')          # content decides when the name says nothing
                np.save(d + '/rows.npy', np.arange(24, dtype='<i2').reshape(3, 2, 4))
                with mrcfile.new(d + '/stack.mrcs') as m:
                    m.set_data(np.zeros((5, 8, 6), dtype=np.int16))
                    m.set_image_stack()
                x = sp.random(7, 11, density=0.3, format='csr', dtype=np.float32, random_state=0)
                ad.AnnData(x).write_h5ad(d + '/cells.h5ad')
                with h5py.File(d + '/other.h5', 'w') as f:
                    f['x'] = np.zeros(3)
                os.makedirs(d + '/samples')
                for i in range(3):
                    np.save(d + '/samples/s%d.npy' % i, np.ones((2, 2), dtype=np.float32))
                os.makedirs(d + '/shards')
                open(d + '/shards/shard_metadata.json', 'w').write('{}')
                open(d + '/table.csv', 'w').write('a,b\\n')
                print('ok')
                """, dir));
    }

    @Test
    void npyByNameAndByContent() {
        Formats.DataFile rows = Formats.open(dir.resolve("rows.npy"));
        assertEquals(Formats.Format.NPY, rows.format());
        assertEquals(3, rows.samples());
        assertArrayEquals(new long[]{2, 4}, rows.sampleShape());
        assertEquals(DType.INT16, rows.dtype());
        assertEquals(16, rows.sampleBytes());
        assertEquals("C (row-major)", rows.facts().get("memory_order"));

        Formats.DataFile renamed = Formats.open(dir.resolve("rows.data"));
        assertEquals(Formats.Format.NPY, renamed.format());
        assertEquals(6, renamed.samples());
        assertEquals(DType.FLOAT64, renamed.dtype());
        assertEquals("big-endian", renamed.facts().get("byte_order"));

        Formats.DataFile scalar = Formats.open(dir.resolve("scalar.npy"));
        assertEquals(1, scalar.samples());
        assertEquals(4, scalar.sampleBytes());
    }

    @Test
    void mrcStackH5adAndFolders() throws IOException {
        Formats.DataFile stack = Formats.open(dir.resolve("stack.mrcs"));
        assertEquals(Formats.Format.MRC, stack.format());
        assertEquals(5, stack.samples());
        assertArrayEquals(new long[]{8, 6}, stack.sampleShape());
        assertEquals(DType.INT16, stack.dtype());
        assertEquals(Files.size(dir.resolve("stack.mrcs")), stack.bytesOnDisk());

        Formats.DataFile cells = Formats.open(dir.resolve("cells.h5ad"));
        assertEquals(Formats.Format.H5AD, cells.format());
        assertEquals(7, cells.samples());
        assertArrayEquals(new long[]{11}, cells.sampleShape());
        assertEquals(PythonPeer.run("""
                import sys, anndata as ad
                print(ad.read_h5ad(sys.argv[1]).X.nnz)
                """, dir.resolve("cells.h5ad")), cells.facts().get("nnz").toString());

        Formats.DataFile samples = Formats.open(dir.resolve("samples"));
        assertEquals(Formats.Format.NPY_FOLDER, samples.format());
        assertEquals(3, samples.samples());
        assertEquals(16, samples.sampleBytes());

        assertEquals(Formats.Format.SHARDS, Formats.detect(dir.resolve("shards")));
        assertEquals(Formats.Format.PACKED_HDF5, Formats.detect(dir.resolve("other.h5")));
    }

    @Test
    void unknownOrMissingPathsSayWhatIsRead() {
        MemfitException csv = assertThrows(MemfitException.class, () -> Formats.detect(dir.resolve("table.csv")));
        assertTrue(csv.getMessage().startsWith(dir.resolve("table.csv") + ": expected a format memfit reads (.npy"),
                csv.getMessage());
        MemfitException missing = assertThrows(MemfitException.class, () -> Formats.open(dir.resolve("nothing.npy")));
        assertTrue(missing.getMessage().endsWith("nothing.npy: no such file or folder"), missing.getMessage());
        // An HDF5 file that pack did not write: the packed reader says what it expected.
        MemfitException other = assertThrows(MemfitException.class, () -> Formats.open(dir.resolve("other.h5")));
        assertTrue(other.getMessage().contains("other.h5"), other.getMessage());
    }
}
