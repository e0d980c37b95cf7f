package dev.memfit.io.zarr;

import com.fasterxml.jackson.databind.JsonNode;
import dev.memfit.InvalidFileException;
import dev.memfit.MemfitException;
import dev.memfit.PythonPeer;
import dev.memfit.io.storage.Storage;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Random;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Arrays zarr-python 2.13 writes, read in Java and compared with what it reads back: every dtype (both byte orders),
 * edge chunks, absent chunks (fill values), Fortran order, nested keys, 2-D and 3-D row ranges, 0-d arrays, a zip
 * store, consolidated metadata; the chunk cache and concurrent readers; and errors naming the store and the key.
 */
class ZarrArrayTest {

    @TempDir
    static Path dir;
    static JsonNode expected;

    @BeforeAll
    static void write() throws Exception {
        String manifest = PythonPeer.run("""
                import sys, json, hashlib, shutil, numpy as np, zarr, numcodecs
                from numcodecs import VLenUTF8, Blosc
                d = sys.argv[1]
                out = {}
                def record(name, back):
                    if back.dtype == object or back.dtype.kind in 'US':
                        flat = [x.decode('latin-1') if isinstance(x, bytes) else str(x) for x in back.reshape(-1)]
                        out[name] = {'sha': hashlib.sha256('\\x1f'.join(flat).encode('utf-8')).hexdigest(), 'n': len(flat),
                                     'first': flat[0], 'last': flat[-1]}
                    else:
                        le = np.ascontiguousarray(back).astype(back.dtype.newbyteorder('<') if back.dtype.itemsize > 1 else back.dtype)
                        out[name] = {'sha': hashlib.sha256(le.tobytes()).hexdigest(), 'shape': list(back.shape),
                                     'sum': float(np.nansum(back.astype('f8')))}
                root = zarr.open_group(d + '/arrays.zarr', mode='w')
                n = 1001
                i = np.arange(n)
                values = {
                    '|b1': i % 3 == 0, '|u1': (i % 256).astype('|u1'), '|i1': ((i % 256) - 128).astype('|i1'),
                    '<i2': (i * 37 - 20000).astype('<i2'), '<u2': (i * 61).astype('<u2'), '<i4': (i * 100003 - 7).astype('<i4'),
                    '<u4': (i * 4000007).astype('<u4'), '<i8': (i * 10**12 - 5).astype('<i8'),
                    '<u8': (np.uint64(2**63) + i.astype('u8') * np.uint64(3)).astype('<u8'),
                    '<f2': (i / 8).astype('<f2'), '<f4': (i * 0.25 - 3).astype('<f4'), '<f8': (i * 1e-3 + 0.5).astype('<f8'),
                    '>f8': (i * 2.5).astype('>f8'), '>i4': (i * -3).astype('>i4'), '>u2': (i * 7).astype('>u2'),
                    '|S5': np.array([('s%d' % k).encode() for k in i], dtype='|S5'),
                    '<U7': np.array(['ü%d' % k for k in i], dtype='<U7'),
                }
                for dt, v in values.items():
                    name = 'dtype_' + dt.replace('<', 'le_').replace('>', 'be_').replace('|', '')
                    z = root.create_dataset(name, data=v, chunks=(97,))
                    record(name, z[:])
                strings = np.array(['cell-%d-ä€😀' % k if k % 5 else '' for k in i], dtype=object)
                z = root.create_dataset('dtype_O', data=strings, chunks=(97,), dtype=object, object_codec=VLenUTF8())
                record('dtype_O', z[:])
                # absent chunks: fill values
                z = root.create_dataset('missing_f4', shape=(1000,), chunks=(100,), dtype='<f4', fill_value=np.nan)
                z[0:100] = np.arange(100, dtype='f4'); z[350:420] = 1.5
                record('missing_f4', z[:])
                z = root.create_dataset('missing_i4', shape=(1000,), chunks=(100,), dtype='<i4', fill_value=7)
                z[990:] = -1
                record('missing_i4', z[:])
                z = root.create_dataset('missing_O', shape=(300,), chunks=(100,), dtype=object, object_codec=VLenUTF8(), fill_value='')
                z[100:200] = np.array(['x%d' % k for k in range(100)], dtype=object)
                record('missing_O', z[:])
                sparse = np.zeros((200, 50), dtype='<f4'); sparse[35:40, 22:25] = 9; sparse[199, 49] = 1
                z = root.create_dataset('sparse_2d', data=sparse, chunks=(30, 20), write_empty_chunks=False)
                record('sparse_2d', z[:])
                # 2-D and 3-D, C and F order, nested keys, whole-row chunks
                r, c = np.meshgrid(np.arange(1003), np.arange(77), indexing='ij')
                z = root.create_dataset('dense_2d', data=(r * 1000 + c).astype('<f4'), chunks=(100, 30))
                record('dense_2d', z[:])
                r, c = np.meshgrid(np.arange(257), np.arange(33), indexing='ij')
                z = root.create_dataset('fortran_2d', data=(r * 100 + c).astype('<f8'), chunks=(50, 10), order='F')
                record('fortran_2d', z[:])
                a, b, c = np.meshgrid(np.arange(20), np.arange(7), np.arange(5), indexing='ij')
                z = root.create_dataset('fortran_3d', data=(a * 100 + b * 10 + c).astype('>i4'), chunks=(6, 4, 3), order='F')
                record('fortran_3d', z[:])
                r, c = np.meshgrid(np.arange(120), np.arange(40), indexing='ij')
                z = root.create_dataset('nested_2d', data=(r * 1000 + c).astype('<i8'), chunks=(50, 16), dimension_separator='/')
                record('nested_2d', z[:])
                r, c = np.meshgrid(np.arange(200), np.arange(64), indexing='ij')
                z = root.create_dataset('rows_2d', data=(r * 64 + c).astype('<u2'), chunks=(30, 64))
                record('rows_2d', z[:])
                z = root.create_dataset('scalar_f8', data=np.float64(3.25))
                record('scalar_f8', z[...].reshape(1))
                z = root.create_dataset('scalar_U', data=np.array('hello'))
                record('scalar_U', z[...].reshape(1))
                root.attrs['title'] = 'arrays'
                root.attrs['sizes'] = [1, 2, 3]
                root.attrs['nan'] = float('nan')
                root['dense_2d'].attrs['encoding-type'] = 'array'
                g = root.create_group('sub/deeper')
                g.create_dataset('v', data=np.arange(5, dtype='<i4'))
                # unsupported: datetimes, bz2, a delta filter
                root.create_dataset('bad_dtype', data=np.array(['2020-01-01'], dtype='<M8[ns]'))
                root.create_dataset('bad_compressor', data=np.arange(10), compressor=numcodecs.BZ2())
                root.create_dataset('bad_filter', data=np.arange(10, dtype='<i4'), filters=[numcodecs.Delta(dtype='<i4')])
                # the same arrays in a zip archive, and consolidated with their .zarray files removed
                with zarr.ZipStore(d + '/arrays.zarr.zip', mode='w') as zs:
                    zarr.copy_store(root.store, zs)
                shutil.copytree(d + '/arrays.zarr', d + '/consolidated.zarr')
                zarr.consolidate_metadata(zarr.DirectoryStore(d + '/consolidated.zarr'))
                import os
                for folder, _, files in os.walk(d + '/consolidated.zarr'):
                    for f in files:
                        if f in ('.zarray', '.zattrs') or (f == '.zgroup' and folder != d + '/consolidated.zarr'):
                            os.remove(os.path.join(folder, f))
                print(json.dumps(out))
                """, dir);
        expected = Zarr.JSON.readTree(manifest);
    }

    /** The SHA-256 of an array read whole, as the manifest hashes it. */
    static String hash(ZarrArray array) throws Exception {
        MessageDigest digest = MessageDigest.getInstance("SHA-256");
        if (array.dtype().isText()) {
            digest.update(String.join("\u001f", array.toStringArray()).getBytes(StandardCharsets.UTF_8));
        } else {
            try (Arena arena = Arena.ofConfined()) {
                MemorySegment all = arena.allocate(array.rowBytes() * array.length());
                array.readRows(0, array.length(), all);
                assertEquals(ByteOrder.LITTLE_ENDIAN, ByteOrder.nativeOrder(), "the manifest hashes little-endian bytes");
                digest.update(all.asByteBuffer());
            }
        }
        return HexFormat.of().formatHex(digest.digest());
    }

    @Test
    void everyArrayReadsAsZarrPythonReadsIt() throws Exception {
        for (Path store : List.of(dir.resolve("arrays.zarr"), dir.resolve("arrays.zarr.zip"), dir.resolve("consolidated.zarr"))) {
            try (Zarr zarr = Zarr.open(store)) {
                List<String> names = new ArrayList<>();
                expected.fieldNames().forEachRemaining(names::add);
                assertEquals(29, names.size(), "arrays in the manifest");
                for (String name : names) {
                    ZarrArray array = zarr.array(name);
                    JsonNode want = expected.get(name);
                    assertEquals(want.get("sha").asText(), hash(array), store.getFileName() + " " + array);
                    if (array.dtype().isNumeric()) {
                        double sum = 0;
                        for (double v : array.toDoubleArray()) {
                            sum += Double.isNaN(v) ? 0 : v;
                        }
                        assertEquals(want.get("sum").asDouble(), sum, 1e-12 * Math.max(1, Math.abs(sum)), name);
                    } else {
                        String[] strings = array.toStringArray();
                        assertEquals(want.get("first").asText(), strings[0], name);
                        assertEquals(want.get("last").asText(), strings[strings.length - 1], name);
                    }
                }
            }
        }
    }

    @Test
    void typesAndValuesComeBackExactly() {
        try (Zarr zarr = Zarr.open(dir.resolve("arrays.zarr"))) {
            assertEquals(ZarrDType.Kind.BOOL, zarr.array("dtype_b1").dtype().kind());
            assertArrayEquals(new long[] {1, 0, 0, 1}, zarr.array("dtype_b1").readLongs(0, 4));
            assertArrayEquals(new long[] {96 * 37 - 20000, 97 * 37 - 20000}, zarr.array("dtype_le_i2").readLongs(96, 2));
            assertArrayEquals(new long[] {-128, -127}, zarr.array("dtype_i1").readLongs(0, 2));
            assertArrayEquals(new long[] {1000L * 4000007}, zarr.array("dtype_le_u4").readLongs(1000, 1)); // above 2^31
            assertEquals(Long.MIN_VALUE + 3 * 500, zarr.array("dtype_le_u8").readLongs(500, 1)[0]); // 2^63 + 1500, bits kept
            assertEquals(Math.pow(2, 63) + 1500, zarr.array("dtype_le_u8").readDoubles(500, 1)[0]);
            assertEquals(123.375, zarr.array("dtype_le_f2").readDoubles(987, 1)[0]);
            assertEquals(999 * 2.5, zarr.array("dtype_be_f8").readDoubles(999, 1)[0]);
            assertArrayEquals(new long[] {-2997, -3000}, zarr.array("dtype_be_i4").readLongs(999, 2));
            assertEquals(dev.memfit.DType.UINT16, zarr.array("dtype_be_u2").dtype().toDType());
            assertArrayEquals(new String[] {"s0", "s1000"}, new String[] {zarr.array("dtype_S5").readStrings(0, 1)[0],
                    zarr.array("dtype_S5").readStrings(1000, 1)[0]});
            assertArrayEquals(new String[] {"ü96", "ü97"}, zarr.array("dtype_le_U7").readStrings(96, 2));
            assertArrayEquals(new String[] {"", "cell-1-ä€😀"}, zarr.array("dtype_O").readStrings(0, 2));
            assertEquals("cell-999-ä€😀", zarr.array("dtype_O").readStrings(999, 1)[0]);
            // absent chunks
            double[] missing = zarr.array("missing_f4").toDoubleArray();
            assertEquals(99.0, missing[99]);
            assertTrue(Double.isNaN(missing[100]) && Double.isNaN(missing[349]) && Double.isNaN(missing[999]));
            assertEquals(1.5, missing[350]);
            long[] sevens = zarr.array("missing_i4").toLongArray();
            assertEquals(7, sevens[0]);
            assertEquals(-1, sevens[995]);
            ZarrArray missingStrings = zarr.array("missing_O");
            assertArrayEquals(new String[] {"", "x0"}, missingStrings.readStrings(99, 2));
            assertArrayEquals(new String[] {"x99", ""}, missingStrings.readStrings(199, 2));
            // 0-d arrays read as one element
            ZarrArray scalar = zarr.array("scalar_f8");
            assertEquals(0, scalar.shape().length);
            assertEquals(1, scalar.size());
            assertEquals(3.25, scalar.toDoubleArray()[0]);
            assertArrayEquals(new String[] {"hello"}, zarr.array("scalar_U").toStringArray());
        }
    }

    @Test
    void rowRangesMatchTheWholeArrayAcrossChunkBoundaries() throws Exception {
        try (Zarr zarr = Zarr.open(dir.resolve("arrays.zarr")); Arena arena = Arena.ofConfined()) {
            Random random = new Random(11);
            for (String name : List.of("dense_2d", "fortran_2d", "fortran_3d", "nested_2d", "rows_2d", "sparse_2d",
                    "dtype_le_f8", "missing_f4")) {
                ZarrArray array = zarr.array(name);
                MemorySegment all = arena.allocate(array.rowBytes() * array.length());
                array.readRows(0, array.length(), all);
                for (int trial = 0; trial < 60; trial++) {
                    long first = random.nextLong(array.length());
                    long count = random.nextLong(array.length() - first + 1);
                    MemorySegment part = arena.allocate(Math.max(1, array.rowBytes() * count));
                    array.readRows(first, count, part);
                    MemorySegment want = all.asSlice(first * array.rowBytes(), count * array.rowBytes());
                    assertEquals(-1, want.mismatch(part.asSlice(0, count * array.rowBytes())), name + " rows " + first + "+" + count);
                }
            }
            // values by formula: [r, c] = r * 1000 + c
            ZarrArray dense = zarr.array("dense_2d");
            assertEquals(77, dense.rowElements());
            MemorySegment rows = arena.allocate(dense.rowBytes() * 3);
            dense.readRows(99, 3, rows);
            for (int r = 0; r < 3; r++) {
                for (int c = 0; c < 77; c++) {
                    assertEquals((99 + r) * 1000 + c, rows.getAtIndex(ValueLayout.JAVA_FLOAT, r * 77L + c), "dense " + r + "," + c);
                }
            }
            ZarrArray fortran = zarr.array("fortran_3d");
            MemorySegment block = arena.allocate(fortran.rowBytes() * 2);
            fortran.readRows(5, 2, block); // rows 5 and 6 straddle the chunk boundary at 6
            for (int a = 0; a < 2; a++) {
                for (int b = 0; b < 7; b++) {
                    for (int c = 0; c < 5; c++) {
                        assertEquals((5 + a) * 100 + b * 10 + c, block.getAtIndex(ValueLayout.JAVA_INT, (a * 7L + b) * 5 + c));
                    }
                }
            }
            assertTrue(Files.isDirectory(dir.resolve("arrays.zarr/nested_2d/0")), "nested keys are folders");
            assertEquals(1002 * 1000 + 76, zarr.array("dense_2d").toDoubleArray()[1003 * 77 - 1]);
        }
    }

    @Test
    void groupsAttributesAndListings() {
        for (Path store : List.of(dir.resolve("arrays.zarr"), dir.resolve("arrays.zarr.zip"), dir.resolve("consolidated.zarr"))) {
            try (Zarr zarr = Zarr.open(store)) {
                ZarrAttributes root = zarr.attributes("");
                assertEquals("arrays", root.string("title").orElseThrow());
                assertArrayEquals(new long[] {1, 2, 3}, root.longs("sizes").orElseThrow());
                assertTrue(Double.isNaN(root.number("nan").orElseThrow()));
                assertEquals("array", zarr.attributes("dense_2d").encodingType().orElseThrow());
                assertEquals("array", zarr.array("/dense_2d/").attributes().encodingType().orElseThrow());
                assertTrue(zarr.attributes("dtype_O").names().isEmpty());
                assertTrue(zarr.isGroup("sub") && zarr.isGroup("sub/deeper") && zarr.isArray("sub/deeper/v"));
                assertFalse(zarr.isArray("sub") || zarr.isGroup("dense_2d") || zarr.isArray("nothing"));
                assertEquals(List.of("deeper"), zarr.children("sub"));
                assertEquals(List.of("v"), zarr.children("sub/deeper"));
                List<String> children = zarr.children("");
                assertTrue(children.containsAll(List.of("dense_2d", "dtype_O", "sub", "scalar_U")), children.toString());
                assertEquals(33, children.size(), children.toString());
                assertArrayEquals(new long[] {0, 1, 2, 3, 4}, zarr.array("sub/deeper/v").toLongArray());
                MemfitException group = assertThrows(MemfitException.class, () -> zarr.array("sub"));
                assertTrue(group.getMessage().contains("it is a group"), group.getMessage());
                assertThrows(MemfitException.class, () -> zarr.array("nothing"));
            }
        }
    }

    @Test
    void theCacheDecodesEachChunkOnceAndStaysWithinItsBound() throws Exception {
        try (Storage storage = Storage.local(); Arena arena = Arena.ofConfined()) {
            MemorySegment rows = arena.allocate(1003L * 77 * 4);
            try (Zarr zarr = Zarr.open(storage, dir.resolve("arrays.zarr"), 1L << 20)) {
                ZarrArray dense = zarr.array("dense_2d"); // 11 x 3 chunks of 100 x 30 floats (12,000 bytes)
                dense.readRows(50, 40, rows); // part of chunk row 0: its 3 chunks decoded into the cache
                assertEquals(3, zarr.decodedChunks());
                assertEquals(3 * 12_000, zarr.cachedBytes());
                dense.readRows(60, 20, rows);
                assertEquals(3, zarr.decodedChunks(), "the same chunks again come from the cache");
                assertEquals(3, zarr.cacheHits());
                dense.readRows(100, 100, rows); // chunk row 1 whole: decoded for this read, not cached
                assertEquals(6, zarr.decodedChunks());
                assertEquals(3 * 12_000, zarr.cachedBytes());
                dense.readRows(0, 100, rows); // chunk row 0 whole, and cached: from the cache
                assertEquals(6, zarr.decodedChunks());
                assertEquals(6, zarr.cacheHits());
            }
            // room for one band of chunks (3 x 12,000 bytes), not two
            try (Zarr zarr = Zarr.open(storage, dir.resolve("arrays.zarr"), 40_000)) {
                ZarrArray dense = zarr.array("dense_2d");
                for (long row = 0; row < 1003; row++) {
                    dense.readRows(row, 1, rows.asSlice(row * dense.rowBytes()));
                    assertTrue(zarr.cachedBytes() <= 40_000, "bounded: " + zarr.cachedBytes());
                }
                assertEquals(33, zarr.decodedChunks(), "each chunk decoded once, read row by row");
                assertEquals(1003 * 3 - 33, zarr.cacheHits());
                assertEquals(1002 * 1000 + 76, rows.getAtIndex(ValueLayout.JAVA_FLOAT, 1003L * 77 - 1));
            }
        }
    }

    @Test
    void absentChunksThroughAStorageThatOnlyKnowsSizes() {
        // Storage.exists by default: a size request failing with NoSuchFileException means absent
        try (Storage local = Storage.local()) {
            Storage sizesOnly = new Storage() {
                @Override
                public void read(Path file, long position, MemorySegment into) {
                    local.read(file, position, into);
                }

                @Override
                public long size(Path file) {
                    return local.size(file);
                }

                @Override
                public String describe() {
                    return "sizes only";
                }

                @Override
                public void close() {
                }
            };
            try (Zarr zarr = Zarr.open(sizesOnly, dir.resolve("arrays.zarr"))) {
                assertFalse(sizesOnly.exists(dir.resolve("arrays.zarr/missing_i4/0")));
                assertTrue(sizesOnly.exists(dir.resolve("arrays.zarr/missing_i4/9")));
                long[] values = zarr.array("missing_i4").readLongs(985, 10);
                assertArrayEquals(new long[] {7, 7, 7, 7, 7, -1, -1, -1, -1, -1}, values);
            }
        }
    }

    @Test
    void concurrentReadersSeeTheSameRows() throws Exception {
        try (Storage mapped = Storage.mapped(); Zarr zarr = Zarr.open(mapped, dir.resolve("arrays.zarr"), 100_000);
             Arena arena = Arena.ofShared()) {
            ZarrArray dense = zarr.array("dense_2d");
            MemorySegment all = arena.allocate(dense.rowBytes() * dense.length());
            dense.readRows(0, dense.length(), all);
            ExecutorService pool = Executors.newFixedThreadPool(8);
            try {
                List<Future<Integer>> results = new ArrayList<>();
                for (int t = 0; t < 8; t++) {
                    int seed = t;
                    results.add(pool.submit(() -> {
                        Random random = new Random(seed);
                        int checked = 0;
                        try (Arena mine = Arena.ofConfined()) {
                            MemorySegment part = mine.allocate(dense.rowBytes() * 300);
                            for (int i = 0; i < 200; i++) {
                                long first = random.nextLong(dense.length() - 300);
                                long count = 1 + random.nextLong(300);
                                dense.readRows(first, count, part);
                                assertEquals(-1, all.asSlice(first * dense.rowBytes(), count * dense.rowBytes())
                                        .mismatch(part.asSlice(0, count * dense.rowBytes())));
                                checked++;
                            }
                        }
                        return checked;
                    }));
                }
                for (Future<Integer> result : results) {
                    assertEquals(200, result.get());
                }
            } finally {
                pool.shutdown();
            }
        }
    }

    @Test
    void unsupportedArraysAndBadStoresFailNamingTheStoreAndKey() throws Exception {
        Path store = dir.resolve("arrays.zarr");
        try (Zarr zarr = Zarr.open(store)) {
            InvalidFileException dtype = assertThrows(InvalidFileException.class, () -> zarr.array("bad_dtype"));
            assertTrue(dtype.getMessage().contains(store.resolve("bad_dtype/.zarray").toString())
                    && dtype.getMessage().contains("<M8[ns]"), dtype.getMessage());
            InvalidFileException compressor = assertThrows(InvalidFileException.class, () -> zarr.array("bad_compressor"));
            assertTrue(compressor.getMessage().contains("bad_compressor/.zarray") && compressor.getMessage().contains("bz2")
                    && compressor.getMessage().contains("blosc"), compressor.getMessage());
            InvalidFileException filter = assertThrows(InvalidFileException.class, () -> zarr.array("bad_filter"));
            assertTrue(filter.getMessage().contains("delta"), filter.getMessage());
            UnsupportedOperationException text = assertThrows(UnsupportedOperationException.class,
                    () -> zarr.array("dtype_O").readRows(0, 1, MemorySegment.ofArray(new byte[8])));
            assertTrue(text.getMessage().contains("readStrings"), text.getMessage());
            assertThrows(IndexOutOfBoundsException.class, () -> zarr.array("dtype_le_f4").readDoubles(1000, 2));
            assertThrows(UnsupportedOperationException.class, () -> zarr.array("dense_2d").readDoubles(0, 1));
        }
        Path empty = Files.createDirectories(dir.resolve("empty.zarr"));
        InvalidFileException notZarr = assertThrows(InvalidFileException.class, () -> Zarr.open(empty));
        assertTrue(notZarr.getMessage().contains(empty.toString()) && notZarr.getMessage().contains(".zgroup"),
                notZarr.getMessage());
        Path v3 = Files.createDirectories(dir.resolve("v3.zarr"));
        Files.writeString(v3.resolve("zarr.json"), "{\"zarr_format\": 3, \"node_type\": \"group\"}");
        InvalidFileException three = assertThrows(InvalidFileException.class, () -> Zarr.open(v3));
        assertTrue(three.getMessage().contains("zarr v3"), three.getMessage());
        Path notZip = Files.writeString(dir.resolve("text.zip"), "not a zip archive at all");
        InvalidFileException zip = assertThrows(InvalidFileException.class, () -> Zarr.open(notZip));
        assertTrue(zip.getMessage().contains("zip archive"), zip.getMessage());
    }
}
