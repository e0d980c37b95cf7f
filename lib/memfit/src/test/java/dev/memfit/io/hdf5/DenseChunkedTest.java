package dev.memfit.io.hdf5;

import dev.memfit.InvalidFileException;
import dev.memfit.PythonPeer;
import dev.memfit.io.npy.Npy;
import dev.memfit.io.npy.NpyArray;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.List;
import java.util.Random;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Dense X as anndata and h5py write it (contiguous, gzip-chunked, chunks dividing neither dimension, unwritten
 * chunks with a fill value, integer counts) and float64 CSR with empty rows: every value compared with numpy, and
 * sums, non-zero counts and per-gene totals with numpy's float64 ones.
 *
 * <p>Sums are compared with a relative tolerance of 1e-12: numpy sums pairwise and memfit sequentially (compensated),
 * so the two differ by a few roundings of the total (~1e-16 relative each), far below 1e-12; a sum of the values
 * rounded to float32 differs from numpy's by ~1e-8 relative on these files, which the tolerance catches (checked).
 */
class DenseChunkedTest {

    private static final int ROWS = 500;
    private static final int COLUMNS = 90;

    /** Files whose X numpy saved as {@code <file>.x.npy} (float32) and whose totals as {@code <file>.totals.txt}. */
    private static final List<String> FILES = List.of("dense64.h5ad", "dense64-gzip.h5ad", "dense32-gzip.h5ad",
            "odd-chunks.h5ad", "holes.h5ad", "holes-fill.h5ad", "counts-int64.h5ad", "csr64-empty-rows.h5ad");

    @TempDir
    static Path dir;

    @BeforeAll
    static void writeWithAnndataAndH5py() {
        assertEquals("ok", PythonPeer.run("""
                import sys, struct, numpy as np, scipy.sparse as sp, anndata as ad, h5py
                d = sys.argv[1]
                rows, cols = %d, %d
                rng = np.random.default_rng(3)
                # float64 values that float32 cannot hold: a float32 path would be visibly off
                x64 = (rng.random((rows, cols)) < 0.3) * rng.random((rows, cols)) * 1000
                # anndata 0.8 makes X float32 unless told otherwise
                ad.AnnData(x64, dtype=np.float64).write_h5ad(d + '/dense64.h5ad')
                ad.AnnData(x64, dtype=np.float64).write_h5ad(d + '/dense64-gzip.h5ad', compression='gzip')
                ad.AnnData(x64.astype(np.float32)).write_h5ad(d + '/dense32-gzip.h5ad', compression='gzip')

                def rewrite(name, make):
                    # X rewritten with h5py, everything else as anndata wrote it
                    with h5py.File(d + '/dense64.h5ad', 'r') as s, h5py.File(d + '/' + name, 'w') as f:
                        for k, v in s.attrs.items():
                            f.attrs[k] = v
                        for k in s:
                            if k != 'X':
                                s.copy(k, f)
                        x = make(f)
                        for k, v in s['X'].attrs.items():
                            x.attrs[k] = v

                rewrite('odd-chunks.h5ad', lambda f: f.create_dataset('X', data=x64, chunks=(37, 13), compression='gzip', shuffle=True))
                def holes(f, fill):
                    x = f.create_dataset('X', shape=(rows, cols), dtype=np.float64, chunks=(37, 13), compression='gzip', fillvalue=fill)
                    x[40:120, 20:50] = x64[40:120, 20:50]
                    x[470:, 80:] = x64[470:, 80:]
                    return x
                rewrite('holes.h5ad', lambda f: holes(f, 0))
                rewrite('holes-fill.h5ad', lambda f: holes(f, 2.5))
                counts = (x64 * 1000).astype(np.int64)
                rewrite('counts-int64.h5ad', lambda f: f.create_dataset('X', data=counts, chunks=(64, 16), compression='gzip'))
                rewrite('unknown-filter.h5ad', lambda f: f.create_dataset('X', data=x64, chunks=(37, 13), compression=32001, allow_unknown_filter=True))

                # float64 CSR, most cells empty, chunks that divide nothing
                sparse = x64 * (rng.random(rows) < 0.3)[:, None]
                assert (sparse.sum(axis=1) == 0).sum() > rows // 2
                ad.AnnData(sp.csr_matrix(sparse), dtype=np.float64).write_h5ad(d + '/tmp.h5ad')
                with h5py.File(d + '/tmp.h5ad', 'r') as s, h5py.File(d + '/csr64-empty-rows.h5ad', 'w') as f:
                    for k, v in s.attrs.items():
                        f.attrs[k] = v
                    for k in s:
                        if k != 'X':
                            s.copy(k, f)
                    g = f.create_group('X')
                    for k, v in s['X'].attrs.items():
                        g.attrs[k] = v
                    for k, c in (('data', 333), ('indices', 250), ('indptr', 77)):
                        g.create_dataset(k, data=s['X/' + k][:], chunks=(c,), compression='gzip', maxshape=(None,))

                for name in %s:
                    a = ad.read_h5ad(d + '/' + name)
                    x = a.X.toarray() if sp.issparse(a.X) else np.asarray(a.X)
                    np.save(d + '/' + name + '.x.npy', x.astype(np.float32))
                    total = float(np.sum(a.X.data if sp.issparse(a.X) else x, dtype=np.float64))
                    rounded = float(np.sum(x.astype(np.float32), dtype=np.float64))
                    open(d + '/' + name + '.totals.txt', 'w').write('%%r %%d %%r' %% (total, np.count_nonzero(x), rounded))
                    np.save(d + '/' + name + '.columns.npy', np.asarray(a.X.sum(axis=0, dtype=np.float64)).ravel())
                for name, t in (('dense64.h5ad', 'X'), ('dense64-gzip.h5ad', 'X'), ('odd-chunks.h5ad', 'X'),
                                ('csr64-empty-rows.h5ad', 'X/data'), ('dense32-gzip.h5ad', None), ('counts-int64.h5ad', None)):
                    with h5py.File(d + '/' + name, 'r') as f:
                        want = {'dense32-gzip.h5ad': np.float32, 'counts-int64.h5ad': np.int64}.get(name, np.float64)
                        assert f[t or 'X'].dtype == want, (name, f[t or 'X'].dtype)
                with h5py.File(d + '/odd-chunks.h5ad', 'r') as f:
                    assert f['X'].chunks == (37, 13) and rows %% 37 and cols %% 13
                    open(d + '/odd-chunks.txt', 'w').write('%%d' %% f['X'].id.get_num_chunks())
                with h5py.File(d + '/holes.h5ad', 'r') as f:
                    assert f['X'].id.get_num_chunks() < 20
                with h5py.File(d + '/dense64-gzip.h5ad', 'r') as f:
                    assert f['X'].chunks is not None and f['X'].compression == 'gzip'
                    info = f['X'].id.get_chunk_info(1)
                    open(d + '/corrupt-at.txt', 'w').write('%%d %%d %%d %%d' %% (info.byte_offset, info.size,
                            info.chunk_offset[0], f['X'].chunks[0]))
                    last = f['X'].id.get_chunk_info(f['X'].id.get_num_chunks() - 1)
                with h5py.File(d + '/dense64.h5ad', 'r') as f:
                    assert f['X'].chunks is None, 'anndata writes dense X contiguous by default'
                # a chunk index entry pointing past the end of the file: the B-tree's address of the last chunk
                data = bytearray(open(d + '/dense64-gzip.h5ad', 'rb').read())
                key = struct.pack('<Q', last.byte_offset)
                assert data.count(key) == 1, data.count(key)
                data[data.index(key):data.index(key) + 8] = struct.pack('<Q', len(data) + (1 << 20))
                open(d + '/past-end.h5ad', 'wb').write(bytes(data))
                print('ok')
                """.formatted(ROWS, COLUMNS, FILES.stream().map(f -> "'" + f + "'").toList().toString()), dir));
    }

    private static float[] expected(String name) {
        try (NpyArray truth = Npy.map(dir.resolve(name + ".x.npy"))) {
            float[] values = new float[ROWS * COLUMNS];
            MemorySegment.copy(truth.data(), ValueLayout.JAVA_FLOAT, 0, values, 0, values.length);
            return values;
        }
    }

    private static String[] totals(String name) throws IOException {
        return Files.readString(dir.resolve(name + ".totals.txt")).trim().split(" ");
    }

    @Test
    void rowsEqualNumpyInEveryLayout() {
        Random random = new Random(17);
        for (String name : FILES) {
            float[] expected = expected(name);
            try (H5ad h5ad = H5ad.open(dir.resolve(name)); Arena arena = Arena.ofConfined()) {
                assertEquals(name.startsWith("csr"), h5ad.sparse(), name);
                assertEquals(ROWS, h5ad.observations(), name);
                assertEquals(COLUMNS, h5ad.variables(), name);
                MemorySegment rows = arena.allocate((long) ROWS * COLUMNS * Float.BYTES);
                h5ad.readRows(0, ROWS, rows);
                for (int i = 0; i < ROWS * COLUMNS; i++) {
                    assertEquals(expected[i], rows.getAtIndex(ValueLayout.JAVA_FLOAT, i), name + " value " + i);
                }
                // short ranges: inside one band, across bands, through the cache; rows placed at scattered offsets
                for (int t = 0; t < 150; t++) {
                    int first = random.nextInt(ROWS);
                    int count = 1 + random.nextInt(Math.min(80, ROWS - first));
                    long[] offsets = new long[count];
                    for (int r = 0; r < count; r++) {
                        offsets[r] = (long) (count - 1 - r) * COLUMNS * Float.BYTES;
                    }
                    h5ad.readRows(first, count, rows, offsets);
                    for (int r = 0; r < count; r++) {
                        for (int c = 0; c < COLUMNS; c++) {
                            assertEquals(expected[(first + r) * COLUMNS + c],
                                    rows.get(ValueLayout.JAVA_FLOAT, offsets[r] + (long) c * Float.BYTES),
                                    name + " row " + (first + r) + " column " + c);
                        }
                    }
                }
            }
        }
    }

    @Test
    void sumsCountsAndColumnTotalsEqualNumpysFloat64Ones() throws IOException {
        for (String name : FILES) {
            String[] want = totals(name);
            double sum = Double.parseDouble(want[0]);
            long nonZero = Long.parseLong(want[1]);
            double roundedSum = Double.parseDouble(want[2]);
            try (H5ad h5ad = H5ad.open(dir.resolve(name))) {
                H5ad.Totals totals = h5ad.totals();
                assertEquals(sum, totals.sum(), Math.abs(sum) * 1e-12, name);
                assertEquals(sum, h5ad.sum(), Math.abs(sum) * 1e-12, name);
                assertEquals(nonZero, totals.nonZeroValues(), name);
                if (name.contains("64") && !name.startsWith("counts")) {
                    assertTrue(Math.abs(roundedSum - sum) > Math.abs(sum) * 1e-12,
                            name + ": the float32-rounded sum " + roundedSum + " is outside the tolerance of " + sum + ", so the test sees the difference");
                }
                double[] columns = h5ad.columnSums();
                try (NpyArray truth = Npy.map(dir.resolve(name + ".columns.npy"))) {
                    for (int g = 0; g < COLUMNS; g++) {
                        double expected = truth.data().getAtIndex(ValueLayout.JAVA_DOUBLE, g);
                        assertEquals(expected, columns[g], Math.abs(expected) * 1e-12, name + " column " + g);
                    }
                }
                assertEquals(name.startsWith("csr") ? nonZero : (long) ROWS * COLUMNS, h5ad.storedValues(), name);
            }
        }
    }

    @Test
    void aPassDecodesEveryChunkOnce() throws IOException {
        long written = Long.parseLong(Files.readString(dir.resolve("odd-chunks.txt")).trim());
        assertEquals((ROWS + 36) / 37 * ((COLUMNS + 12) / 13), written);
        try (H5ad h5ad = H5ad.open(dir.resolve("odd-chunks.h5ad"))) {
            h5ad.forEachChunk((first, count, rows) -> { });
            H5ad.ChunkCacheStatistics pass = h5ad.chunkCacheStatistics();
            assertEquals(written, pass.decodes(), "forEachChunk reads whole bands: each chunk decoded once");
            assertEquals(written * 37 * 13 * Double.BYTES, pass.decodedBytes());
            assertTrue(pass.budgetBytes() >= 2L * 7 * 37 * 13 * Double.BYTES, "the cache holds two bands");
        }
        try (H5ad h5ad = H5ad.open(dir.resolve("odd-chunks.h5ad")); Arena arena = Arena.ofConfined()) {
            // consecutive reads of 10 rows, none aligned with the 37-row bands: the cache keeps the shared band
            MemorySegment rows = arena.allocate(10L * COLUMNS * Float.BYTES);
            long chunkReads = 0;
            for (int first = 0; first < ROWS; first += 10) {
                int count = Math.min(10, ROWS - first);
                h5ad.readRows(first, count, rows);
                chunkReads += ((first + count - 1) / 37 - first / 37 + 1) * 7L;
            }
            H5ad.ChunkCacheStatistics reads = h5ad.chunkCacheStatistics();
            assertEquals(written, reads.decodes(), "each chunk decoded once");
            assertEquals(chunkReads - written, reads.hits(), "every other chunk read is a hit");
        }
    }

    @Test
    void aCorruptDenseChunkNamesTheFileAndDataset(@TempDir Path other) throws IOException {
        Path file = other.resolve("corrupt.h5ad");
        Files.copy(dir.resolve("dense64-gzip.h5ad"), file);
        String[] at = Files.readString(dir.resolve("corrupt-at.txt")).trim().split(" ");
        long offset = Long.parseLong(at[0]);
        int size = Integer.parseInt(at[1]);
        int firstRow = Integer.parseInt(at[2]);
        int chunkRows = Integer.parseInt(at[3]);
        try (FileChannel channel = FileChannel.open(file, StandardOpenOption.WRITE)) {
            byte[] garbage = new byte[size / 2];
            new Random(3).nextBytes(garbage);
            channel.write(java.nio.ByteBuffer.wrap(garbage), offset + size / 4);
        }
        try (H5ad h5ad = H5ad.open(file); Arena arena = Arena.ofConfined()) {
            MemorySegment rows = arena.allocate((long) ROWS * COLUMNS * Float.BYTES);
            InvalidFileException e = assertThrows(InvalidFileException.class, () -> h5ad.readRows(firstRow, 1, rows));
            assertTrue(e.getMessage().startsWith(file + " at byte " + offset + ": expected chunk 1 of /X"), e.getMessage());
            assertTrue(e.getMessage().contains("filter 1 (deflate)") && e.getMessage().contains("a corrupt chunk"), e.getMessage());
            InvalidFileException sum = assertThrows(InvalidFileException.class, h5ad::sum);
            assertEquals(e.getMessage(), sum.getMessage(), "the failed chunk is not cached");
            // rows of other chunks still read
            if (firstRow >= chunkRows || firstRow + chunkRows < ROWS) {
                h5ad.readRows(firstRow >= chunkRows ? 0 : firstRow + chunkRows, 1, rows);
            }
        }
    }

    @Test
    void aChunkPastTheEndOfTheFileIsNamed() {
        Path file = dir.resolve("past-end.h5ad");
        InvalidFileException e = assertThrows(InvalidFileException.class, () -> H5ad.open(file));
        assertTrue(e.getMessage().startsWith(file.toString()), e.getMessage());
        assertTrue(e.getMessage().contains(" of /X (") && e.getMessage().contains("a chunk past its end"), e.getMessage());
    }

    @Test
    void anUnknownFilterOnDenseXIsNamed() {
        Path file = dir.resolve("unknown-filter.h5ad");
        InvalidFileException e = assertThrows(InvalidFileException.class, () -> H5ad.open(file));
        assertTrue(e.getMessage().startsWith(file.toString()), e.getMessage());
        assertTrue(e.getMessage().contains("/X compressed with a filter memfit reads"), e.getMessage());
        assertTrue(e.getMessage().contains("found filter 32001"), e.getMessage());
    }

    @Test
    void theCacheBoundIsABuilderSetting() {
        Path file = dir.resolve("csr64-empty-rows.h5ad");
        try (H5ad h5ad = H5ad.builder().setFile(file).optChunkCacheBytes(1L << 20).open()) {
            assertEquals(1L << 20, h5ad.chunkCacheStatistics().budgetBytes());
        }
        try (H5ad h5ad = H5ad.open(file)) {
            assertEquals(H5ad.DEFAULT_CHUNK_CACHE_BYTES, h5ad.chunkCacheStatistics().budgetBytes());
        }
        try (var cells = dev.memfit.io.AnnDataFiles.builder().setFile(file).optChunkCacheBytes(2L << 20).open()) {
            assertEquals(2L << 20, ((H5ad) cells).chunkCacheStatistics().budgetBytes());
        }
        dev.memfit.MemfitException e = assertThrows(dev.memfit.MemfitException.class,
                () -> H5ad.builder().setFile(file).optChunkCacheBytes(-1).open());
        assertTrue(e.getMessage().contains("optChunkCacheBytes(-1)"), e.getMessage());
    }
}
