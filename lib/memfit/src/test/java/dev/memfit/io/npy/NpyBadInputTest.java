package dev.memfit.io.npy;

import dev.memfit.InvalidFileException;
import dev.memfit.MemfitException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Each kind of bad file gets a message naming the file, the position, what was expected and what was found. */
class NpyBadInputTest {

    private static Path validFile(Path dir) {
        return Npy.write(dir.resolve("good.npy"), new float[][]{{1, 2, 3}, {4, 5, 6}});
    }

    @Test
    void truncatedData(@TempDir Path dir) throws IOException {
        Path file = validFile(dir);
        byte[] bytes = Files.readAllBytes(file);
        Path truncated = dir.resolve("truncated.npy");
        Files.write(truncated, Arrays.copyOf(bytes, bytes.length - 5));
        InvalidFileException e = assertThrows(InvalidFileException.class, () -> Npy.map(truncated));
        assertTrue(e.getMessage().startsWith(truncated.toString()), e.getMessage());
        assertTrue(e.getMessage().contains("expected 24 data bytes for shape [2, 3] of f4"), e.getMessage());
        assertTrue(e.getMessage().contains("found 19 data bytes") && e.getMessage().contains("truncated"), e.getMessage());
        assertEquals(Npy.readHeader(file).dataOffset(), e.offset());
    }

    @Test
    void truncatedHeader(@TempDir Path dir) throws IOException {
        Path file = validFile(dir);
        Path truncated = dir.resolve("cut-header.npy");
        Files.write(truncated, Arrays.copyOf(Files.readAllBytes(file), 30));
        InvalidFileException e = assertThrows(InvalidFileException.class, () -> Npy.readHeader(truncated));
        long dictBytes = Npy.readHeader(file).dataOffset() - 10;
        assertTrue(e.getMessage().contains("cut-header.npy at byte 10: expected a header of " + dictBytes + " bytes"), e.getMessage());
        assertTrue(e.getMessage().contains("found a file of only 30 bytes (truncated?)"), e.getMessage());
    }

    @Test
    void shapeDisagreesWithFileSize(@TempDir Path dir) throws IOException {
        Path file = validFile(dir);
        String text = new String(Files.readAllBytes(file), java.nio.charset.StandardCharsets.ISO_8859_1)
                .replace("(2, 3)", "(3, 3)");
        Path wrong = dir.resolve("wrong-shape.npy");
        Files.write(wrong, text.getBytes(java.nio.charset.StandardCharsets.ISO_8859_1));
        InvalidFileException e = assertThrows(InvalidFileException.class, () -> Npy.map(wrong));
        long offset = Npy.readHeader(file).dataOffset();
        assertTrue(e.getMessage().contains("wrong-shape.npy at byte " + offset + ": expected 36 data bytes for shape [3, 3]"), e.getMessage());
        assertTrue(e.getMessage().contains("found 24 data bytes"), e.getMessage());

        Path longer = dir.resolve("longer.npy");
        byte[] bytes = Files.readAllBytes(file);
        Files.write(longer, Arrays.copyOf(bytes, bytes.length + 8));
        InvalidFileException e2 = assertThrows(InvalidFileException.class, () -> Npy.load(longer));
        assertTrue(e2.getMessage().contains("longer than the shape says"), e2.getMessage());
    }

    /** Each non-numeric dtype numpy writes is refused by its name; none is mistaken for a numeric type. */
    @Test
    void refusesNonNumericDtypesByName(@TempDir Path dir) {
        String written = dev.memfit.PythonPeer.run("""
                import sys, numpy as np
                d = sys.argv[1]
                arrays = {'U1': np.array(['a', 'b'], dtype='<U1'), 'U7': np.array(['abc'], dtype='<U7'),
                          'S3': np.array([b'ab'], dtype='S3'), 'O': np.array([1, 'a'], dtype=object),
                          'c8': np.zeros(2, np.complex64), 'c16': np.zeros(2, np.complex128),
                          'M8': np.array(['2024-01-01'], dtype='datetime64[ns]'),
                          'm8': np.array([5], dtype='timedelta64[s]'), 'V4': np.zeros(2, dtype='V4'),
                          'f16': np.zeros(2, np.longdouble)}
                for name, a in arrays.items():
                    np.save(f'{d}/{name}.npy', a, allow_pickle=True)
                    print(name, np.lib.format.read_magic(open(f'{d}/{name}.npy', 'rb')) and a.dtype.str)
                """, dir);
        java.util.Map<String, String> names = java.util.Map.of("U1", "unicode strings ('<U1')",
                "U7", "unicode strings ('<U7')", "S3", "byte strings ('|S3')", "O", "Python objects ('|O')",
                "c8", "complex numbers ('<c8')", "c16", "complex numbers ('<c16')",
                "M8", "datetimes ('<M8[ns]')", "m8", "timedeltas ('<m8[s]')", "V4", "raw void records ('|V4')",
                "f16", "extended-precision floats ('<f16')");
        assertEquals(names.size(), written.lines().count(), written);
        for (var entry : names.entrySet()) {
            Path file = dir.resolve(entry.getKey() + ".npy");
            InvalidFileException e = assertThrows(InvalidFileException.class, () -> Npy.readHeader(file));
            assertEquals(file + " at byte 10: expected a numeric dtype (f2 f4 f8 i1 i2 i4 i8 u1 u2 u4 u8 b1), found "
                    + entry.getValue(), e.getMessage().substring(0, e.getMessage().indexOf(entry.getValue())
                    + entry.getValue().length()));
            assertTrue(e.getMessage().lines().count() == 1, e.getMessage());
        }
    }

    /** Numeric types keep their exact meaning: bool, uint8 and float16 are read as numpy wrote them. */
    @Test
    void numericCodesAreMatchedExactly(@TempDir Path dir) {
        dev.memfit.PythonPeer.run("""
                import sys, numpy as np
                d = sys.argv[1]
                np.save(f'{d}/b.npy', np.array([True, False, True]))
                np.save(f'{d}/u1.npy', np.array([1, 2, 255], np.uint8))
                np.save(f'{d}/f2.npy', np.array([0.5, -2, 1e4], np.float16))
                print('ok')
                """, dir);
        assertEquals(dev.memfit.DType.BOOL, Npy.readHeader(dir.resolve("b.npy")).dtype());
        assertEquals(dev.memfit.DType.UINT8, Npy.readHeader(dir.resolve("u1.npy")).dtype());
        assertEquals(dev.memfit.DType.FLOAT16, Npy.readHeader(dir.resolve("f2.npy")).dtype());
        try (NpyArray bools = Npy.map(dir.resolve("b.npy")); NpyArray half = Npy.load(dir.resolve("f2.npy"))) {
            assertEquals(2.0, bools.sum(), 0.0);
            assertEquals(0.5 - 2 + 10000, half.sum(), 0.0);
        }
    }

    /** A shape whose byte count overflows 64 bits is one clear line, before anything is allocated or mapped. */
    @Test
    void shapeProductOverflow(@TempDir Path dir) throws IOException {
        Path file = dir.resolve("huge.npy");
        Files.write(file, header("{'descr': '<f4', 'fortran_order': False, 'shape': (1099511627776, 1099511627776), }"));
        for (var open : List.<java.util.function.Function<Path, ?>>of(Npy::readHeader, Npy::map, Npy::load)) {
            InvalidFileException e = assertThrows(InvalidFileException.class, () -> open.apply(file));
            assertEquals(file + " at byte 10: expected a shape whose size fits in 64 bits, found shape "
                    + "[1099511627776, 1099511627776] of '<f4': more than 2^63 bytes of data, the file has 0 bytes "
                    + "after the header", e.getMessage());
        }
        // numpy refuses a zero-size array whose other dimensions overflow too (its size check skips zeros)
        Path zero = dir.resolve("zero.npy");
        Files.write(zero, header("{'descr': '<f8', 'fortran_order': False, 'shape': (0, 4294967296, 4294967296), }"));
        assertTrue(assertThrows(InvalidFileException.class, () -> Npy.readHeader(zero)).getMessage()
                .contains("expected a shape whose size fits in 64 bits"));
        // the largest shape that fits is checked against the file instead
        Path fits = dir.resolve("fits.npy");
        Files.write(fits, header("{'descr': '|u1', 'fortran_order': False, 'shape': (4294967296, 2147483647), }"));
        assertTrue(assertThrows(InvalidFileException.class, () -> Npy.map(fits)).getMessage()
                .contains("expected 9223372032559808512 data bytes for shape [4294967296, 2147483647] of u1"));
    }

    /** A declared header length beyond any real header is refused without reading or allocating it. */
    @Test
    void hugeHeaderLength(@TempDir Path dir) throws IOException {
        ByteBuffer bytes = ByteBuffer.allocate(16).order(ByteOrder.LITTLE_ENDIAN);
        bytes.put(new byte[]{(byte) 0x93, 'N', 'U', 'M', 'P', 'Y', 2, 0}).putInt(-1);
        Path file = dir.resolve("long-header.npy");
        Files.write(file, bytes.array());
        InvalidFileException e = assertThrows(InvalidFileException.class, () -> Npy.readHeader(file));
        assertEquals(file + " at byte 8: expected a header of at most 1048576 bytes, found a declared header length "
                + "of 4294967295 bytes", e.getMessage());
        Path nested = dir.resolve("nested.npy");
        Files.write(nested, header("{'descr': '<f4', 'fortran_order': False, 'shape': " + "(".repeat(5000) + "}"));
        assertTrue(assertThrows(InvalidFileException.class, () -> Npy.readHeader(nested)).getMessage()
                .contains("nested more than 16 deep"));
    }

    /** A version 1.0 header around a dict, padded as numpy pads it. */
    private static byte[] header(String dict) {
        int length = dict.length() + 1;
        length += (64 - (10 + length) % 64) % 64;
        String padded = dict + " ".repeat(length - dict.length() - 1) + "\n";
        ByteBuffer out = ByteBuffer.allocate(10 + length).order(ByteOrder.LITTLE_ENDIAN);
        out.put(new byte[]{(byte) 0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0}).putShort((short) length);
        out.put(padded.getBytes(java.nio.charset.StandardCharsets.ISO_8859_1));
        return out.array();
    }

    @Test
    void structuredDtype(@TempDir Path dir) throws IOException {
        byte[] dict = "{'descr': [('a', '<i4')], 'fortran_order': False, 'shape': (0,), }".getBytes();
        ByteBuffer header = ByteBuffer.allocate(10 + dict.length + 1).order(ByteOrder.LITTLE_ENDIAN);
        header.put(new byte[]{(byte) 0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0}).putShort((short) (dict.length + 1)).put(dict).put((byte) '\n');
        Path file = dir.resolve("structured.npy");
        Files.write(file, header.array());
        InvalidFileException e = assertThrows(InvalidFileException.class, () -> Npy.readHeader(file));
        assertTrue(e.getMessage().contains("structured dtype"), e.getMessage());
    }

    @Test
    void notAnNpyFile(@TempDir Path dir) throws IOException {
        Path csv = dir.resolve("table.csv");
        Files.writeString(csv, "a,b,c\n1,2,3\n");
        InvalidFileException e = assertThrows(InvalidFileException.class, () -> Npy.map(csv));
        assertEquals(csv + " at byte 0: expected the .npy magic \\x93NUMPY, found bytes 'a,b,c\\x0a'", e.getMessage());
        assertInstanceOf(MemfitException.class, e);
    }

    @Test
    void emptyFile(@TempDir Path dir) throws IOException {
        Path empty = Files.createFile(dir.resolve("empty.npy"));
        InvalidFileException e = assertThrows(InvalidFileException.class, () -> Npy.readHeader(empty));
        assertTrue(e.getMessage().contains("expected a .npy file (at least 10 header bytes), found 0 bytes in all"), e.getMessage());
    }

    @Test
    void missingFile(@TempDir Path dir) {
        MemfitException e = assertThrows(MemfitException.class, () -> Npy.map(dir.resolve("nope.npy")));
        assertTrue(e.getMessage().endsWith("nope.npy: no such file"), e.getMessage());
    }
}
