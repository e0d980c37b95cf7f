package dev.memfit.io.npy;

import dev.memfit.DType;
import dev.memfit.PythonPeer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Both directions against numpy: files numpy writes read here, files written here load in numpy. */
class NpyFormatTest {

    private static final long[] SHAPE = {3, 4, 5};
    private static final String[] CODES = {"f2", "f4", "f8", "i1", "i2", "i4", "i8", "u1", "u2", "u4", "u8", "b1"};

    /** Value == C-order index, wrapped to what the type holds (numpy does the same with astype). */
    private static double expected(DType dtype, long flatIndex) {
        return switch (dtype) {
            case BOOL -> flatIndex % 2;
            case INT8 -> (byte) flatIndex;
            default -> flatIndex;
        };
    }

    @Test
    void readsEveryDtypeOrderAndVersionNumpyWrites(@TempDir Path dir) {
        String out = PythonPeer.run("""
                import sys, numpy as np
                from numpy.lib import format as fmt
                d = sys.argv[1]
                for code in sys.argv[2].split(','):
                    for bo in '<>':
                        for order in 'CF':
                            for v in (1, 2, 3):
                                base = np.arange(60).reshape(3, 4, 5)
                                if code == 'b1':
                                    a = (base % 2).astype(bool)
                                else:
                                    a = base.astype(np.dtype(bo + code if code[1] != '1' else code))
                                a = np.asarray(a, order=order)
                                with open(f'{d}/{code}_{"le" if bo == "<" else "be"}_{order}_{v}.npy', 'wb') as f:
                                    fmt.write_array(f, a, version=(v, 0))
                print('ok')
                """, dir, String.join(",", CODES));
        assertEquals("ok", out);
        int files = 0;
        for (String code : CODES) {
            DType dtype = DType.fromNumpyCode(code);
            for (String bo : new String[]{"le", "be"}) {
                for (String order : new String[]{"C", "F"}) {
                    for (int version = 1; version <= 3; version++) {
                        Path file = dir.resolve(code + "_" + bo + "_" + order + "_" + version + ".npy");
                        try (NpyArray array = Npy.map(file)) {
                            NpyHeader header = array.header();
                            assertEquals(dtype, header.dtype(), file.toString());
                            assertEquals(order.equals("F"), header.fortranOrder(), file.toString());
                            assertEquals(version, header.majorVersion(), file.toString());
                            assertArrayEquals(SHAPE, header.shape());
                            if (dtype.byteSize() > 1) {
                                assertEquals(bo.equals("le") ? ByteOrder.LITTLE_ENDIAN : ByteOrder.BIG_ENDIAN, header.byteOrder());
                            }
                            for (long i = 0; i < 3; i++) {
                                for (long j = 0; j < 4; j++) {
                                    for (long k = 0; k < 5; k++) {
                                        long flat = i * 20 + j * 5 + k;
                                        assertEquals(expected(dtype, flat), array.getDouble(i, j, k), 0.0, file + " at " + flat);
                                    }
                                }
                            }
                            assertRowsInCOrderNative(array, dtype, file);
                        }
                        files++;
                    }
                }
            }
        }
        assertEquals(CODES.length * 12, files);
    }

    private static void assertRowsInCOrderNative(NpyArray array, DType dtype, Path file) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment rows = arena.allocate(array.rowBytes() * 2);
            array.copyRows(1, 2, rows);
            for (long e = 0; e < 40; e++) {
                double value = dtype.getDouble(rows, e * dtype.byteSize(), ByteOrder.nativeOrder());
                assertEquals(expected(dtype, 20 + e), value, 0.0, file + " row element " + e);
            }
        }
    }

    @Test
    void filesWrittenHereLoadInNumpy(@TempDir Path dir) {
        List<String> names = new ArrayList<>();
        for (String code : CODES) {
            DType dtype = DType.fromNumpyCode(code);
            for (ByteOrder order : new ByteOrder[]{ByteOrder.LITTLE_ENDIAN, ByteOrder.BIG_ENDIAN}) {
                for (boolean fortran : new boolean[]{false, true}) {
                    for (int version = 1; version <= 3; version++) {
                        NpyHeader header = NpyHeader.of(dtype, SHAPE).withByteOrder(order).withFortranOrder(fortran)
                                .withVersion(version);
                        String name = code + "_" + (order == ByteOrder.LITTLE_ENDIAN ? "le" : "be") + "_"
                                + (fortran ? "F" : "C") + "_" + version + ".npy";
                        try (Arena arena = Arena.ofConfined(); NpyWriter writer = Npy.create(dir.resolve(name), header)) {
                            MemorySegment data = arena.allocate(60L * dtype.byteSize());
                            for (long e = 0; e < 60; e++) {
                                dtype.setDouble(data, e * dtype.byteSize(), ByteOrder.nativeOrder(), expected(dtype, e));
                            }
                            writer.writeRows(0, data.asSlice(0, 20L * dtype.byteSize()));
                            writer.writeRows(1, data.asSlice(20L * dtype.byteSize()));
                            writer.commit();
                        }
                        names.add(name);
                    }
                }
            }
        }
        String out = PythonPeer.run("""
                import sys, numpy as np
                from numpy.lib import format as fmt
                d = sys.argv[1]
                bad = []
                for name in sys.argv[2].split(','):
                    code, bo, order, v = name[:-4].split('_')
                    with open(f'{d}/{name}', 'rb') as f:
                        major, minor = fmt.read_magic(f)
                    a = np.load(f'{d}/{name}')
                    base = np.arange(60).reshape(3, 4, 5)
                    want = (base % 2).astype(bool) if code == 'b1' else base.astype(code)
                    ok = (a.shape == (3, 4, 5) and a.dtype.kind + str(a.dtype.itemsize) == code.replace('b1', 'b1')
                          and np.array_equal(a, want) and bool(a.flags.f_contiguous and not a.flags.c_contiguous) == (order == 'F')
                          and major == int(v))
                    if a.dtype.itemsize > 1:
                        ok = ok and a.dtype.byteorder in ('<' if bo == 'le' else '>', '=' if bo == 'le' else '>')
                    if not ok:
                        bad.append(name)
                print('bad:' + ','.join(bad) if bad else 'all %d ok' % len(sys.argv[2].split(',')))
                """, dir, String.join(",", names));
        assertEquals("all " + names.size() + " ok", out);
    }

    @Test
    void sumMatchesNumpy(@TempDir Path dir) {
        Path file = dir.resolve("rand.npy");
        String numpySum = PythonPeer.run("""
                import sys, numpy as np
                rng = np.random.default_rng(3)
                a = rng.standard_normal((1000, 37)).astype('>f4')
                np.save(sys.argv[1], a)
                print(repr(float(a.sum(dtype=np.float64))))
                """, file);
        try (NpyArray array = Npy.map(file)) {
            double expected = Double.parseDouble(numpySum);
            assertEquals(expected, array.sum(), Math.abs(expected) * 1e-12 + 1e-9);
        }
    }

    @Test
    void mapsAFileLargerThan4GiBSparse(@TempDir Path dir) {
        Path file = dir.resolve("huge.npy");
        long elements = (4L << 30) / Float.BYTES + 1_000_000; // just over 4 GiB of data
        try (NpyWriter writer = Npy.create(file, NpyHeader.of(DType.FLOAT32, elements))) {
            MemorySegment data = writer.data();
            data.set(java.lang.foreign.ValueLayout.JAVA_FLOAT_UNALIGNED, (elements - 1) * 4, 42.5f);
            data.set(java.lang.foreign.ValueLayout.JAVA_FLOAT_UNALIGNED, (3L << 30), -7.25f);
            writer.commit();
        }
        try (NpyArray array = Npy.map(file)) {
            assertTrue(array.data().byteSize() > (4L << 30));
            assertEquals(42.5, array.getDouble(elements - 1), 0.0);
            assertEquals(-7.25, array.getDouble((3L << 30) / 4), 0.0);
            assertEquals(0.0, array.getDouble(elements / 2), 0.0);
        }
        String out = PythonPeer.run("""
                import sys, numpy as np
                a = np.load(sys.argv[1], mmap_mode='r')
                print(a.shape[0], float(a[-1]), float(a[(3 << 30) // 4]))
                """, file);
        assertEquals(elements + " 42.5 -7.25", out);
    }

    @Test
    void writerWithoutCommitLeavesNothing(@TempDir Path dir) throws Exception {
        Path file = dir.resolve("partial.npy");
        try (NpyWriter writer = Npy.create(file, NpyHeader.of(DType.FLOAT32, 10, 10))) {
            writer.writeRows(0, MemorySegment.ofArray(new float[10]));
            // an exception here in real code: no commit
        }
        assertFalse(Files.exists(file));
        try (var listing = Files.list(dir)) {
            assertEquals(0, listing.count(), "temporary file left behind");
        }
    }

    @Test
    void writerReplacesAnExistingFileOnlyOnCommit(@TempDir Path dir) {
        Path file = dir.resolve("keep.npy");
        Npy.write(file, new float[][]{{1, 2}, {3, 4}});
        try (NpyWriter writer = Npy.create(file, NpyHeader.of(DType.FLOAT32, 5, 2))) {
            writer.writeRows(0, MemorySegment.ofArray(new float[]{9, 9}));
        }
        try (NpyArray array = Npy.map(file)) {
            assertArrayEquals(new long[]{2, 2}, array.shape(), "the old file must survive an abandoned rewrite");
            assertEquals(4.0, array.getDouble(1, 1), 0.0);
        }
    }

    /** numpy itself only needs 2.0 for huge structured dtypes (and caps ndim at 32), so this one is checked here. */
    @Test
    void headerOver64KiBIsWrittenAsVersion2(@TempDir Path dir) {
        long[] shape = new long[30_000];
        java.util.Arrays.fill(shape, 1);
        Path file = dir.resolve("wide.npy");
        try (NpyWriter writer = Npy.create(file, NpyHeader.of(DType.UINT8, shape))) {
            writer.data().set(java.lang.foreign.ValueLayout.JAVA_BYTE, 0, (byte) 7);
            writer.commit();
        }
        NpyHeader header = Npy.readHeader(file);
        assertEquals(2, header.majorVersion());
        assertEquals(0, header.dataOffset() % 64);
        assertTrue(header.dataOffset() > 65_536);
        try (NpyArray array = Npy.map(file)) {
            assertEquals(30_000, array.shape().length);
            assertEquals(7.0, array.getDouble(new long[30_000]), 0.0);
        }
    }
}
