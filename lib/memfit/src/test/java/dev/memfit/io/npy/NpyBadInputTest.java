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

    @Test
    void unsupportedDtype(@TempDir Path dir) throws IOException {
        Path file = validFile(dir);
        String text = new String(Files.readAllBytes(file), java.nio.charset.StandardCharsets.ISO_8859_1)
                .replace("'<f4'", "'<c8'").replace("(2, 3)", "(1, 3)");
        Path complex = dir.resolve("complex.npy");
        Files.write(complex, text.getBytes(java.nio.charset.StandardCharsets.ISO_8859_1));
        InvalidFileException e = assertThrows(InvalidFileException.class, () -> Npy.readHeader(complex));
        assertTrue(e.getMessage().contains("complex.npy at byte 10: expected a supported dtype"), e.getMessage());
        assertTrue(e.getMessage().contains("found '<c8'"), e.getMessage());
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
