package dev.memfit.io.hdf5;

import dev.memfit.InvalidFileException;
import dev.memfit.PythonPeer;
import dev.memfit.io.npy.Npy;
import dev.memfit.io.npy.NpyArray;
import io.jhdf.HdfFile;
import io.jhdf.api.Dataset;
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
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Chunked sparse X as anndata and h5py write it (B-tree v1 and layout-v4 indexes, gzip, shuffle, fletcher32, lzf,
 * partial last chunks, int64 indices), every value compared with what h5py reads.
 */
class ChunkedTest {

    private static final int ROWS = 2000;
    private static final int COLUMNS = 300;

    /** The files, and for each the datasets whose h5py values are saved as {@code <file>.<name>.npy}. */
    private static final List<String> FILES = List.of("default.h5ad", "gzip.h5ad", "gzip64.h5ad", "shuffle.h5ad",
            "fletcher.h5ad", "latest.h5ad", "lzf.h5ad");

    @TempDir
    static Path dir;

    @BeforeAll
    static void writeWithAnndataAndH5py() {
        assertEquals("ok", PythonPeer.run("""
                import sys, numpy as np, scipy.sparse as sp, anndata as ad, h5py
                d = sys.argv[1]
                rng = np.random.default_rng(1)
                dense = ((rng.random((%d, %d)) < 0.08) * rng.random((%d, %d)) * 100).astype(np.float32)
                np.save(d + '/dense.npy', dense)
                x = sp.csr_matrix(dense)
                ad.AnnData(x).write_h5ad(d + '/default.h5ad')
                ad.AnnData(x).write_h5ad(d + '/gzip.h5ad', compression='gzip')
                x64 = x.copy()
                x64.indptr = x64.indptr.astype(np.int64)
                x64.indices = x64.indices.astype(np.int64)
                ad.AnnData(x64).write_h5ad(d + '/gzip64.h5ad', compression='gzip')
                ad.AnnData(x).write_h5ad(d + '/lzf.h5ad', compression='lzf')

                def rewrite(name, latest=False, **per):
                    # X rewritten with h5py: explicit chunks that do not divide the data, other filters, other indexes
                    ad.AnnData(x).write_h5ad(d + '/tmp.h5ad')
                    with h5py.File(d + '/tmp.h5ad', 'r') as s, h5py.File(d + '/' + name, 'w', libver='latest' if latest else 'earliest') as f:
                        for k, v in s.attrs.items():
                            f.attrs[k] = v
                        for k in s:
                            if k != 'X':
                                s.copy(k, f)
                        g = f.create_group('X')
                        for k, v in s['X'].attrs.items():
                            g.attrs[k] = v
                        for k in ('data', 'indices', 'indptr'):
                            g.create_dataset(k, data=s['X/' + k][:], **per[k])

                rewrite('shuffle.h5ad', data=dict(chunks=(777,), compression='gzip', shuffle=True, maxshape=(None,)),
                        indices=dict(chunks=(1000,), compression='gzip', shuffle=True, compression_opts=9),
                        indptr=dict(chunks=(333,), shuffle=True, maxshape=(None,)))
                rewrite('fletcher.h5ad', data=dict(chunks=(777,), compression='gzip', shuffle=True, fletcher32=True),
                        indices=dict(chunks=(1000,), fletcher32=True), indptr=dict(chunks=(333,)))
                # extensible array (maxshape None), fixed array (fixed shape), one filtered chunk
                rewrite('latest.h5ad', latest=True, data=dict(chunks=(777,), maxshape=(None,), compression='gzip'),
                        indices=dict(chunks=(1000,)), indptr=dict(chunks=(%d,), compression='gzip'))
                rewrite('scaleoffset.h5ad', data=dict(chunks=(777,)), indices=dict(chunks=(1000,), scaleoffset=0),
                        indptr=dict(chunks=(333,)))

                for name in %s:
                    with h5py.File(d + '/' + name, 'r') as f:
                        for k in ('data', 'indices', 'indptr'):
                            assert f['X/' + k].chunks is not None, (name, k)
                            np.save(d + '/' + name + '.' + k + '.npy', f['X/' + k][:])
                with h5py.File(d + '/gzip.h5ad', 'r') as f:
                    assert f['X/data'].compression == 'gzip'
                    assert f['X/data'].shape[0] %% f['X/data'].chunks[0] != 0, 'a partial last chunk'
                    assert f['X/data'].id.get_num_chunks() > 3
                    info = f['X/data'].id.get_chunk_info(2)
                    open(d + '/corrupt-at.txt', 'w').write('%%d %%d %%d' %% (info.byte_offset, info.size, info.chunk_offset[0] // f['X/data'].chunks[0]))
                with h5py.File(d + '/other.h5', 'w') as f:
                    noise = np.frombuffer(rng.bytes(4 * 10500), dtype=np.float32)
                    f.create_dataset('lzf', data=noise, chunks=(1000,), compression='lzf')
                    f.create_dataset('lzfshuffle', data=noise, chunks=(1000,), compression='lzf', shuffle=True)
                    f.create_dataset('gzip', data=noise, chunks=(1000,), compression='gzip', shuffle=True)
                    holes = f.create_dataset('holes', shape=(10500,), dtype=np.int64, chunks=(1000,), compression='gzip')
                    holes[3000:3500] = np.arange(500)
                    holes[10400:] = np.arange(100)
                    raw = f.create_dataset('rawholes', shape=(10500,), dtype=np.int32, chunks=(1000,))
                    raw[1500:2500] = np.arange(1000)
                    f.create_dataset('filled', shape=(10500,), dtype=np.int32, chunks=(1000,), fillvalue=7)[0:10] = 1
                    masks = []
                    for k in ('lzf', 'lzfshuffle', 'gzip', 'holes', 'rawholes'):
                        np.save(d + '/other.h5.' + k + '.npy', f[k][:])
                        masks += [f[k].id.get_chunk_info(i).filter_mask for i in range(f[k].id.get_num_chunks())]
                    assert f['holes'].id.get_num_chunks() == 2, f['holes'].id.get_num_chunks()
                    assert any(m != 0 for m in masks), 'some chunk skips a filter'
                with h5py.File(d + '/ub.h5', 'w', userblock_size=512) as f:
                    f.create_dataset('raw', data=np.arange(5000, dtype=np.int32), chunks=(700,), maxshape=(None,))
                    f.create_dataset('gzip', data=np.arange(5000, dtype=np.float64), chunks=(700,), compression='gzip')
                    for k in ('raw', 'gzip'):
                        np.save(d + '/ub.h5.' + k + '.npy', f[k][:])
                with h5py.File(d + '/gzip64.h5ad', 'r') as f:
                    assert f['X/indices'].dtype == np.int64
                print('ok')
                """.formatted(ROWS, COLUMNS, ROWS, COLUMNS, ROWS + 1,
                FILES.stream().map(f -> "'" + f + "'").toList().toString()), dir));
    }

    private static float[] expectedDense() {
        try (NpyArray truth = Npy.map(dir.resolve("dense.npy"))) {
            float[] expected = new float[ROWS * COLUMNS];
            MemorySegment.copy(truth.data(), ValueLayout.JAVA_FLOAT, 0, expected, 0, expected.length);
            return expected;
        }
    }

    @Test
    void rowsEqualTheDenseMatrixInEveryLayout() {
        float[] expected = expectedDense();
        Random random = new Random(7);
        for (String name : FILES) {
            try (H5ad h5ad = H5ad.open(dir.resolve(name)); Arena arena = Arena.ofConfined()) {
                assertTrue(h5ad.sparse(), name);
                MemorySegment rows = arena.allocate((long) ROWS * COLUMNS * Float.BYTES);
                h5ad.readRows(0, ROWS, rows);
                for (int i = 0; i < ROWS * COLUMNS; i++) {
                    assertEquals(expected[i], rows.getAtIndex(ValueLayout.JAVA_FLOAT, i), name + " value " + i);
                }
                // short ranges: inside one chunk, across chunk boundaries, through the cache
                for (int t = 0; t < 200; t++) {
                    int first = random.nextInt(ROWS);
                    int count = 1 + random.nextInt(Math.min(40, ROWS - first));
                    h5ad.readRows(first, count, rows);
                    for (int i = 0; i < count * COLUMNS; i++) {
                        assertEquals(expected[first * COLUMNS + i], rows.getAtIndex(ValueLayout.JAVA_FLOAT, i),
                                name + " rows from " + first + ", value " + i);
                    }
                }
            }
        }
    }

    @Test
    void everyDatasetEqualsWhatH5pyReads() throws IOException {
        Random random = new Random(11);
        for (String name : FILES) {
            Path file = dir.resolve(name);
            try (HdfFile hdf = new HdfFile(file); Arena arena = Arena.ofConfined();
                 FileChannel channel = FileChannel.open(file, StandardOpenOption.READ)) {
                MemorySegment mapping = channel.map(FileChannel.MapMode.READ_ONLY, 0, channel.size(), arena);
                ChunkedVector.Cache cache = new ChunkedVector.Cache(3 * 4096);
                for (String dataset : List.of("data", "indices", "indptr")) {
                    ChunkedVector vector = new ChunkedVector(file, hdf, mapping, (Dataset) hdf.getByPath("X/" + dataset), cache);
                    try (NpyArray truth = Npy.map(dir.resolve(name + "." + dataset + ".npy"))) {
                        MemorySegment want = truth.data();
                        int size = truth.dtype().byteSize();
                        assertEquals(want.byteSize() / size, vector.length(), name + " " + dataset);
                        assertEquals(-1, want.mismatch(vector.bytes(0, vector.length())), name + " " + dataset + " whole");
                        for (int t = 0; t < 300; t++) {
                            long start = random.nextLong(vector.length());
                            long n = random.nextLong(Math.min(3000, vector.length() - start) + 1);
                            MemorySegment got = vector.bytes(start, n);
                            assertEquals(-1, want.asSlice(start * size, n * size).mismatch(got),
                                    name + " " + dataset + " [" + start + ", " + (start + n) + ")");
                        }
                    }
                }
                assertTrue(cache.usedBytes() <= 3 * 4096 + 32 * 1024, name + " cache bounded: " + cache.usedBytes());
            }
        }
    }

    @Test
    void indexesAreTheOnesAnndataAndH5pyWrite() throws IOException {
        for (String name : List.of("default.h5ad", "gzip.h5ad", "latest.h5ad")) {
            Path file = dir.resolve(name);
            try (HdfFile hdf = new HdfFile(file); Arena arena = Arena.ofConfined();
                 FileChannel channel = FileChannel.open(file, StandardOpenOption.READ)) {
                MemorySegment mapping = channel.map(FileChannel.MapMode.READ_ONLY, 0, channel.size(), arena);
                ChunkedVector.Cache cache = new ChunkedVector.Cache(H5ad.DEFAULT_CHUNK_CACHE_BYTES);
                List<String> kinds = new ArrayList<>();
                for (String dataset : List.of("data", "indices", "indptr")) {
                    ChunkedVector vector = new ChunkedVector(file, hdf, mapping, (Dataset) hdf.getByPath("X/" + dataset), cache);
                    kinds.add(vector.index());
                    if (name.equals("default.h5ad") || name.equals("latest.h5ad") && dataset.equals("indices")) {
                        // unfiltered: a range inside one chunk is the mapping itself, not a copy
                        assertTrue(vector.bytes(1, 10).isNative(), name + " " + dataset + " zero copy");
                        assertTrue(vector.offsetOf(1) > 0, name + " " + dataset);
                    } else {
                        assertEquals(-1, vector.offsetOf(1), name + " " + dataset + " compressed");
                    }
                }
                assertEquals(name.equals("latest.h5ad") ? List.of("extensible array", "fixed array", "single chunk")
                        : List.of("B-tree v1", "B-tree v1", "B-tree v1"), kinds, name);
                assertEquals(0, name.equals("default.h5ad") ? cache.usedBytes() : 0, "nothing decoded for raw chunks");
            }
        }
    }

    @Test
    void skippedFiltersAndUnwrittenChunks() throws IOException {
        Path file = dir.resolve("other.h5");
        Random random = new Random(5);
        try (HdfFile hdf = new HdfFile(file); Arena arena = Arena.ofConfined();
             FileChannel channel = FileChannel.open(file, StandardOpenOption.READ)) {
            MemorySegment mapping = channel.map(FileChannel.MapMode.READ_ONLY, 0, channel.size(), arena);
            ChunkedVector.Cache cache = new ChunkedVector.Cache(H5ad.DEFAULT_CHUNK_CACHE_BYTES);
            for (String dataset : List.of("lzf", "lzfshuffle", "gzip", "holes", "rawholes")) {
                check(file, hdf, mapping, cache, dataset, random);
            }
            InvalidFileException e = assertThrows(InvalidFileException.class,
                    () -> new ChunkedVector(file, hdf, mapping, (Dataset) hdf.getByPath("filled"), cache));
            assertTrue(e.getMessage().contains("/filled") && e.getMessage().contains("fill value 7"), e.getMessage());
        }
    }

    @Test
    void aUserBlockShiftsEveryChunk() throws IOException {
        Path file = dir.resolve("ub.h5");
        try (HdfFile hdf = new HdfFile(file); Arena arena = Arena.ofConfined();
             FileChannel channel = FileChannel.open(file, StandardOpenOption.READ)) {
            assertEquals(512, hdf.getUserBlockSize());
            MemorySegment mapping = channel.map(FileChannel.MapMode.READ_ONLY, 0, channel.size(), arena);
            ChunkedVector.Cache cache = new ChunkedVector.Cache(H5ad.DEFAULT_CHUNK_CACHE_BYTES);
            for (String dataset : List.of("raw", "gzip")) {
                check(file, hdf, mapping, cache, dataset, new Random(9));
            }
        }
    }

    /** Every value of a dataset, whole and in random ranges, against what h5py read (saved next to the file). */
    private static void check(Path file, HdfFile hdf, MemorySegment mapping, ChunkedVector.Cache cache, String dataset, Random random) {
        ChunkedVector vector = new ChunkedVector(file, hdf, mapping, (Dataset) hdf.getByPath(dataset), cache);
        try (NpyArray truth = Npy.map(dir.resolve(file.getFileName() + "." + dataset + ".npy"))) {
            int size = truth.dtype().byteSize();
            assertEquals(truth.data().byteSize() / size, vector.length(), dataset);
            assertEquals(-1, truth.data().mismatch(vector.bytes(0, vector.length())), dataset + " whole");
            for (int t = 0; t < 200; t++) {
                long start = random.nextLong(vector.length());
                long n = random.nextLong(Math.min(2500, vector.length() - start) + 1);
                assertEquals(-1, truth.data().asSlice(start * size, n * size).mismatch(vector.bytes(start, n)),
                        dataset + " [" + start + ", " + (start + n) + ")");
            }
        }
    }

    @Test
    void concurrentReadersSeeTheSameValues() throws Exception {
        float[] expected = expectedDense();
        try (H5ad h5ad = H5ad.open(dir.resolve("shuffle.h5ad"))) {
            ExecutorService pool = Executors.newFixedThreadPool(4);
            try {
                List<Future<?>> done = new ArrayList<>();
                for (int thread = 0; thread < 4; thread++) {
                    int seed = thread;
                    done.add(pool.submit(() -> {
                        Random random = new Random(seed);
                        try (Arena arena = Arena.ofConfined()) {
                            MemorySegment rows = arena.allocate(50L * COLUMNS * Float.BYTES);
                            for (int t = 0; t < 100; t++) {
                                int first = random.nextInt(ROWS - 50);
                                h5ad.readRows(first, 50, rows);
                                for (int i = 0; i < 50 * COLUMNS; i++) {
                                    assertEquals(expected[first * COLUMNS + i], rows.getAtIndex(ValueLayout.JAVA_FLOAT, i));
                                }
                            }
                        }
                        return null;
                    }));
                }
                for (Future<?> future : done) {
                    future.get();
                }
            } finally {
                pool.shutdown();
            }
        }
    }

    @Test
    void aCorruptCompressedChunkNamesTheFileAndDataset(@TempDir Path other) throws IOException {
        Path file = other.resolve("corrupt.h5ad");
        Files.copy(dir.resolve("gzip.h5ad"), file);
        String[] at = Files.readString(dir.resolve("corrupt-at.txt")).trim().split(" ");
        long offset = Long.parseLong(at[0]);
        int size = Integer.parseInt(at[1]);
        String chunk = at[2];
        try (FileChannel channel = FileChannel.open(file, StandardOpenOption.WRITE)) {
            byte[] garbage = new byte[size / 2];
            new Random(3).nextBytes(garbage);
            channel.write(java.nio.ByteBuffer.wrap(garbage), offset + size / 4);
        }
        try (H5ad h5ad = H5ad.open(file); Arena arena = Arena.ofConfined()) {
            MemorySegment rows = arena.allocate((long) ROWS * COLUMNS * Float.BYTES);
            InvalidFileException e = assertThrows(InvalidFileException.class, () -> h5ad.readRows(0, ROWS, rows));
            assertTrue(e.getMessage().startsWith(file + " at byte " + offset + ": expected chunk " + chunk + " of /X/data"), e.getMessage());
            assertTrue(e.getMessage().contains("filter 1 (deflate)"), e.getMessage());
            assertTrue(e.getMessage().contains("a corrupt chunk"), e.getMessage());
            // a second read fails the same way (the failed chunk is not cached)
            InvalidFileException again = assertThrows(InvalidFileException.class, () -> h5ad.readRows(0, ROWS, rows));
            assertEquals(e.getMessage(), again.getMessage());
            // rows before the chunk still read
            h5ad.readRows(0, 1, rows);
        }
    }

    @Test
    void anUnsupportedFilterIsNamed() {
        Path file = dir.resolve("scaleoffset.h5ad");
        InvalidFileException e = assertThrows(InvalidFileException.class, () -> H5ad.open(file));
        assertTrue(e.getMessage().startsWith(file.toString()), e.getMessage());
        assertTrue(e.getMessage().contains("/X/indices"), e.getMessage());
        assertTrue(e.getMessage().contains("filter 6 (scaleoffset)"), e.getMessage());
    }

    @Test
    void fletcher32ChecksumIsHdf5s() {
        // the checksum of "abcde" by HDF5's H5_checksum_fletcher32 (big-endian words, odd tail byte)
        byte[] bytes = "abcde".getBytes(java.nio.charset.StandardCharsets.US_ASCII);
        long sum1 = 0;
        long sum2 = 0;
        for (int i = 0; i < 4; i += 2) {
            sum1 += ((bytes[i] & 0xff) << 8) | (bytes[i + 1] & 0xff);
            sum2 += sum1;
        }
        sum1 += (bytes[4] & 0xff) << 8;
        sum2 += sum1;
        assertEquals((int) ((sum2 % 65535) << 16 | (sum1 % 65535)), ChunkedVector.fletcher32(bytes, 5));
        assertEquals(List.of((byte) 1, (byte) 3, (byte) 2, (byte) 4),
                toList(ChunkedVector.unshuffle(new byte[]{1, 2, 3, 4}, 2)));
    }

    private static List<Byte> toList(byte[] bytes) {
        List<Byte> list = new ArrayList<>();
        for (byte b : bytes) {
            list.add(b);
        }
        return list;
    }
}
