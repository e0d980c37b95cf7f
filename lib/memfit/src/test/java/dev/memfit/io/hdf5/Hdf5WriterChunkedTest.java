package dev.memfit.io.hdf5;

import dev.memfit.DType;
import dev.memfit.PythonPeer;
import io.jhdf.HdfFile;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Random;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Chunked datasets written by {@link Hdf5Writer}: read back value for value by h5py (over libhdf5) and jhdf, with the
 * chunk shape, filters and maximum shape h5py reports, and chunk indexes of one, two and three B-tree levels.
 *
 * <p>Values follow formulas of the index (also computed in the Python scripts), so nothing is passed but the file.
 */
class Hdf5WriterChunkedTest {

    @TempDir
    Path dir;

    private static float f32(long i) {
        return (i % 1000) * 0.25f - 17f;
    }

    private static int i32(long i) {
        return (int) (i * 7 - 5);
    }

    private static long i64(long i) {
        return i * 3_000_000_007L;
    }

    /** Python for the same formulas. */
    private static final String FORMULAS = """
            import sys, numpy as np, h5py
            def f32(n): i = np.arange(n); return ((i % 1000) * 0.25 - 17).astype(np.float32)
            def i32(n): return (np.arange(n, dtype=np.int64) * 7 - 5).astype(np.int32)
            def i64(n): return np.arange(n, dtype=np.int64) * 3000000007
            """;

    /** Streams {@code n} values of the formula for the type in pieces of uneven sizes. */
    private static void fill(Hdf5Writer.Stream stream, DType type, long n) {
        Random random = new Random(n);
        for (long at = 0; at < n; ) {
            int piece = (int) Math.min(n - at, 1 + random.nextInt(3000));
            ByteBuffer b = ByteBuffer.allocate(piece * type.byteSize()).order(ByteOrder.LITTLE_ENDIAN);
            for (int k = 0; k < piece; k++) {
                switch (type) {
                    case FLOAT32 -> b.putFloat(f32(at + k));
                    case INT32 -> b.putInt(i32(at + k));
                    case INT64 -> b.putLong(i64(at + k));
                    default -> throw new AssertionError(type);
                }
            }
            stream.append(b.flip());
            at += piece;
        }
    }

    @Test
    void h5pyAndJhdfReadEveryChunkingExactly() {
        Path file = dir.resolve("chunked.h5");
        try (Hdf5Writer writer = Hdf5Writer.create(file)) {
            Hdf5Writer.Group root = writer.root();
            // several streams open at once, their chunks interleaved in the file, arrays added in between
            Hdf5Writer.Stream plain = root.stream("plain", DType.FLOAT32, Hdf5Writer.Chunking.of(7813).unlimited());
            Hdf5Writer.Stream gzip = root.stream("gzip", DType.INT32, Hdf5Writer.Chunking.of(1000).deflate(4).unlimited());
            Hdf5Writer.Group g = root.group("g");
            Hdf5Writer.Stream both = g.stream("shuffle_gzip", DType.INT64, Hdf5Writer.Chunking.of(333).shuffle().deflate(9));
            Hdf5Writer.Stream shuffled = g.stream("shuffle", DType.FLOAT32, Hdf5Writer.Chunking.of(64).shuffle());
            root.dataset("array", new double[]{1.5, -2, 3});
            fill(plain, DType.FLOAT32, 20_000);
            fill(gzip, DType.INT32, 12_345);
            root.dataset("array_chunked", new long[]{4, 5, 6, 7, 8}, Hdf5Writer.Chunking.of(2).deflate(1));
            fill(both, DType.INT64, 1_000);
            fill(shuffled, DType.FLOAT32, 64 * 3);
            plain.finish(20_000).attribute("note", "plain");
            gzip.finish(12_345);
            both.finish(1_000);
            shuffled.finish(64 * 3);
            root.stream("empty", DType.FLOAT32, Hdf5Writer.Chunking.of(100).deflate(4)).finish(0);
        }
        assertEquals("ok", PythonPeer.run(FORMULAS + """
                f = h5py.File(sys.argv[1], 'r')
                def check(name, values, chunks, compression, opts, shuffle, maxshape):
                    d = f[name]
                    assert d.dtype == values.dtype, (name, d.dtype)
                    assert np.array_equal(d[()], values), name
                    assert d.chunks == chunks, (name, d.chunks)
                    assert d.compression == compression and d.compression_opts == opts, (name, d.compression, d.compression_opts)
                    assert d.shuffle == shuffle, (name, d.shuffle)
                    assert d.maxshape == maxshape, (name, d.maxshape)
                    # slices across chunk borders, as a backed reader asks
                    assert np.array_equal(d[5:len(values) - 3], values[5:len(values) - 3]), name
                check('plain', f32(20000), (7813,), None, None, False, (None,))
                check('gzip', i32(12345), (1000,), 'gzip', 4, False, (None,))
                check('g/shuffle_gzip', i64(1000), (333,), 'gzip', 9, True, (1000,))
                check('g/shuffle', f32(192), (64,), None, None, True, (192,))
                check('array_chunked', np.array([4, 5, 6, 7, 8]), (2,), 'gzip', 1, False, (5,))
                check('empty', np.zeros(0, np.float32), (100,), 'gzip', 4, False, (0,))
                assert list(f['array'][()]) == [1.5, -2, 3]
                assert f['plain'].attrs['note'] == b'plain'
                assert f['plain'].id.get_num_chunks() == 3 and f['empty'].id.get_num_chunks() == 0
                # compressed chunks really are smaller: 12 chunks of 4000 bytes
                assert f['gzip'].id.get_storage_size() < 12 * 4000 / 2, f['gzip'].id.get_storage_size()
                print('ok')
                """, file));
        try (HdfFile hdf = new HdfFile(file)) {
            assertArrayEquals(expectedFloats(20_000), (float[]) hdf.getDatasetByPath("plain").getDataFlat());
            int[] ints = (int[]) hdf.getDatasetByPath("gzip").getDataFlat();
            for (int i = 0; i < ints.length; i++) {
                assertEquals(i32(i), ints[i]);
            }
            long[] longs = (long[]) hdf.getDatasetByPath("g/shuffle_gzip").getDataFlat();
            assertEquals(1_000, longs.length);
            for (int i = 0; i < longs.length; i++) {
                assertEquals(i64(i), longs[i]);
            }
            assertArrayEquals(expectedFloats(192), (float[]) hdf.getDatasetByPath("g/shuffle").getDataFlat());
        }
    }

    private static float[] expectedFloats(int n) {
        float[] values = new float[n];
        for (int i = 0; i < n; i++) {
            values[i] = f32(i);
        }
        return values;
    }

    /** h5py's chunk rule, ported: the same chunk shapes as h5py's own function for sizes from 0 to 2^50 bytes. */
    @Test
    void chunkShapesAreH5pysGuess() {
        StringBuilder cases = new StringBuilder();
        StringBuilder ours = new StringBuilder();
        Random random = new Random(5);
        java.util.List<long[]> shapes = new java.util.ArrayList<>();
        for (int p = 0; p < 48; p++) {
            shapes.add(new long[]{1L << p});
            shapes.add(new long[]{(1L << p) + 1 + random.nextInt(1 << Math.min(p, 20))});
        }
        shapes.add(new long[]{0});
        shapes.add(new long[]{40_000_000});
        shapes.add(new long[]{200_001});
        shapes.add(new long[]{200_000, 2_000});
        shapes.add(new long[]{1000, 0, 7});
        for (int i = 0; i < 200; i++) {
            shapes.add(new long[]{1 + random.nextInt(5000), 1 + random.nextInt(5000)});
        }
        for (long[] shape : shapes) {
            for (int typeSize : new int[]{1, 4, 8}) {
                cases.append(Arrays.toString(shape)).append(';').append(typeSize).append('\n');
                ours.append(Arrays.toString(Hdf5Writer.guessChunk(shape, typeSize))).append('\n');
            }
        }
        String theirs = PythonPeer.run("""
                import sys
                from h5py._hl.filters import guess_chunk
                for line in sys.argv[1].splitlines():
                    shape, size = line.split(';')
                    print(list(guess_chunk(tuple(eval(shape)), None, int(size))))
                """, cases);
        assertEquals(theirs.replace(" ", ""), ours.toString().trim().replace(" ", ""));
    }

    /** 64 chunks fill one B-tree node; 4,096 fill two levels: these need one, two and three levels. */
    @Test
    void chunkIndexesOfSeveralLevelsAreReadBack() {
        Path file = dir.resolve("levels.h5");
        long[] counts = {64 * 10, 65 * 10, 4096 * 10, 5000 * 10 + 3};
        try (Hdf5Writer writer = Hdf5Writer.create(file)) {
            for (int i = 0; i < counts.length; i++) {
                Hdf5Writer.Stream raw = writer.root().stream("raw" + i, DType.INT32, Hdf5Writer.Chunking.of(10).unlimited());
                Hdf5Writer.Stream gzip = writer.root().stream("gzip" + i, DType.INT32, Hdf5Writer.Chunking.of(10).shuffle().deflate(4));
                fill(raw, DType.INT32, counts[i]);
                fill(gzip, DType.INT32, counts[i]);
                raw.finish(counts[i]);
                gzip.finish(counts[i]);
            }
        }
        assertEquals("ok", PythonPeer.run(FORMULAS + """
                f = h5py.File(sys.argv[1], 'r')
                counts = [int(c) for c in sys.argv[2:]]
                for i, n in enumerate(counts):
                    for name in ('raw%d' % i, 'gzip%d' % i):
                        d = f[name]
                        assert np.array_equal(d[()], i32(n)), name
                        assert d.id.get_num_chunks() == (n + 9) // 10, (name, d.id.get_num_chunks())
                        # a lookup of single chunks walks the tree from the root (reads above load whole ranges)
                        for at in (0, n // 3, n // 2 + 7, n - 1):
                            assert d[at] == i32(n)[at], (name, at)
                        info = d.id.get_chunk_info_by_coord(((n - 1) // 10 * 10,))
                        assert info.chunk_offset == ((n - 1) // 10 * 10,), info
                print('ok')
                """, file, counts[0], counts[1], counts[2], counts[3]));
        try (HdfFile hdf = new HdfFile(file)) {
            int[] values = (int[]) hdf.getDatasetByPath("gzip3").getDataFlat();
            assertEquals(counts[3], values.length);
            for (int i = 0; i < values.length; i++) {
                assertEquals(i32(i), values[i]);
            }
        }
    }

    /**
     * Random bytes do not deflate: such chunks are kept deflated, a little larger than raw, with no filter-mask bit
     * (which jhdf would ignore), and every reader reads them.
     */
    @Test
    void incompressibleChunksStayDeflatedAndReadable() throws IOException {
        Path file = dir.resolve("random.h5");
        Path raw = dir.resolve("random.bin");
        byte[] bytes = new byte[4096 * 5 + 100];
        new Random(3).nextBytes(bytes);
        // the third chunk compresses well
        java.util.Arrays.fill(bytes, 4096 * 2, 4096 * 3, (byte) 9);
        Files.write(raw, bytes);
        try (Hdf5Writer writer = Hdf5Writer.create(file)) {
            Hdf5Writer.Stream deflate = writer.root().stream("deflate", DType.INT32, Hdf5Writer.Chunking.of(1024).deflate(9));
            Hdf5Writer.Stream both = writer.root().stream("shuffle_deflate", DType.INT32, Hdf5Writer.Chunking.of(1024).shuffle().deflate(9));
            deflate.append(ByteBuffer.wrap(bytes));
            both.append(ByteBuffer.wrap(bytes));
            deflate.finish(bytes.length / 4);
            both.finish(bytes.length / 4);
        }
        assertEquals("ok", PythonPeer.run("""
                import sys, numpy as np, h5py
                f = h5py.File(sys.argv[1], 'r')
                expected = np.fromfile(sys.argv[2], dtype='<i4')
                for name in ('deflate', 'shuffle_deflate'):
                    d = f[name]
                    assert np.array_equal(d[()], expected), name
                    masks = [d.id.get_chunk_info(i).filter_mask for i in range(d.id.get_num_chunks())]
                    sizes = [d.id.get_chunk_info(i).size for i in range(d.id.get_num_chunks())]
                    assert masks == [0] * 6, (name, masks)
                    assert 4096 < sizes[0] < 4200 and sizes[2] < 100, (name, sizes)
                print('ok')
                """, file, raw));
        try (HdfFile hdf = new HdfFile(file)) {
            for (String name : new String[]{"deflate", "shuffle_deflate"}) {
                int[] values = (int[]) hdf.getDatasetByPath(name).getDataFlat();
                ByteBuffer expected = ByteBuffer.wrap(bytes).order(ByteOrder.LITTLE_ENDIAN);
                for (int value : values) {
                    assertEquals(expected.getInt(), value);
                }
            }
        }
    }

    @Test
    void closingWithAChunkedStreamOpenFailsAndLeavesNoValidFile() {
        Path file = dir.resolve("open.h5");
        Hdf5Writer writer = Hdf5Writer.create(file);
        writer.root().stream("s", DType.INT32, Hdf5Writer.Chunking.of(4).deflate(4)).append(ByteBuffer.allocate(40));
        IllegalStateException e = assertThrows(IllegalStateException.class, writer::close);
        assertTrue(e.getMessage().contains("still being streamed"), e.getMessage());
        assertEquals("False", PythonPeer.run("import sys, h5py; print(h5py.is_hdf5(sys.argv[1]))", file));
    }

    @Test
    void contiguousAndChunkedStreamsDoNotOverlap() {
        Path file = dir.resolve("mixed.h5");
        try (Hdf5Writer writer = Hdf5Writer.create(file)) {
            Hdf5Writer.Group root = writer.root();
            Hdf5Writer.Stream chunked = root.stream("chunked", DType.INT32, Hdf5Writer.Chunking.of(4));
            IllegalStateException e = assertThrows(IllegalStateException.class, () -> root.stream("contiguous", DType.INT32));
            assertTrue(e.getMessage().contains("chunked dataset /chunked is still being streamed"), e.getMessage());
            fill(chunked, DType.INT32, 10);
            chunked.finish(10);
            Hdf5Writer.Stream contiguous = root.stream("contiguous", DType.INT32);
            e = assertThrows(IllegalStateException.class, () -> root.stream("late", DType.INT32, Hdf5Writer.Chunking.of(4)));
            assertTrue(e.getMessage().contains("/contiguous is still being streamed"), e.getMessage());
            fill(contiguous, DType.INT32, 10);
            contiguous.finish(10);
            assertThrows(IllegalStateException.class, () -> chunked.append(ByteBuffer.allocate(4)));
            assertThrows(IllegalArgumentException.class, () -> Hdf5Writer.Chunking.of(0));
            assertThrows(IllegalArgumentException.class, () -> Hdf5Writer.Chunking.of(4).deflate(10));
            assertThrows(IllegalArgumentException.class, () -> root.dataset("strings", new String[]{"a"}, Hdf5Writer.Chunking.of(4)));
        }
        assertEquals("ok", PythonPeer.run(FORMULAS + """
                f = h5py.File(sys.argv[1], 'r')
                assert np.array_equal(f['chunked'][()], i32(10)) and f['chunked'].chunks == (4,)
                assert np.array_equal(f['contiguous'][()], i32(10)) and f['contiguous'].chunks is None
                assert sorted(f.keys()) == ['chunked', 'contiguous']
                print('ok')
                """, file));
    }
}
