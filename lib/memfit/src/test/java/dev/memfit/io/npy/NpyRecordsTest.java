package dev.memfit.io.npy;

import dev.memfit.InvalidFileException;
import dev.memfit.PythonPeer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;

/**
 * Headers of structured {@code .npy} files ({@link NpyRecords}): field offsets, sizes and row sizes equal numpy's for
 * the layouts numpy writes (sub-arrays, alignment padding, titles, nested records, unicode, big-endian), values read
 * from the rows equal numpy's, and a malformed {@code descr} is refused naming the file, the byte offset, what was
 * expected and what was found.
 */
class NpyRecordsTest {

    @TempDir
    Path dir;

    @Test
    void offsetsSizesAndValuesEqualNumpys() throws IOException {
        Path file = dir.resolve("records.npy");
        String numpy = PythonPeer.run("""
                import sys, numpy as np
                dt = np.dtype([('uid', '<u8'), ('flag', 'u1'), ('blob/idx', '>i4'), ('blob/shape', '<u4', (2,)),
                               (('a title', 'blob/path'), 'S11'), ('name', '<U3'), ('pose', '<f4', (2, 3)),
                               ('nested', [('x', '<f8'), ('y', 'i1')]), ('when', '<M8[ns]'), ('big', '>u2')], align=True)
                a = np.zeros(3, dtype=dt)
                a['uid'] = [1, 2**64 - 1, 7]
                a['blob/idx'] = [-5, 0, 2**31 - 1]
                a['blob/path'] = [b'J3/a.mrc', b'', b'exactly 11!']
                a['name'] = ['ab', 'xyz', '\\u00e9']
                a['big'] = [1, 2, 65535]
                np.save(sys.argv[1], a)
                for name in dt.names:
                    print(name, dt.fields[name][1], dt[name].itemsize)
                print('row', dt.itemsize)
                """, file);
        NpyRecords records = Npy.readRecords(file);
        List<String> described = new ArrayList<>();
        for (NpyRecords.Field field : records.fields()) {
            described.add(field.name() + " " + field.offset() + " " + field.byteSize());
        }
        described.add("row " + records.rowBytes());
        assertEquals(numpy, String.join("\n", described));
        assertEquals(3, records.rows());
        ByteBuffer rows = ByteBuffer.wrap(Files.readAllBytes(file));
        int row = Math.toIntExact(records.rowOffset(1));
        assertEquals(-1L, records.field("uid").integer(rows, row), "2^64 - 1 as a signed long");
        assertEquals(-5L, records.field("blob/idx").integer(rows, Math.toIntExact(records.rowOffset(0))));
        assertEquals(Integer.MAX_VALUE, records.field("blob/idx").integer(rows, Math.toIntExact(records.rowOffset(2))));
        assertEquals(65535, records.field("big").integer(rows, Math.toIntExact(records.rowOffset(2))));
        assertEquals("J3/a.mrc", records.field("blob/path").string(rows, Math.toIntExact(records.rowOffset(0))));
        assertEquals("", records.field("blob/path").string(rows, row));
        assertEquals("exactly 11!", records.field("blob/path").string(rows, Math.toIntExact(records.rowOffset(2))));
        assertEquals("xyz", records.field("name").string(rows, row));
        assertEquals("\u00e9", records.field("name").string(rows, Math.toIntExact(records.rowOffset(2))));
        assertEquals(ByteOrder.BIG_ENDIAN, records.field("blob/idx").order());
        assertNull(records.field("a title"));
    }

    @Test
    void malformedDescrsAreRefusedWithFileOffsetExpectedAndFound() {
        assertRefused("'<f4'", "(2,)", "at byte 10: expected a structured 'descr': a list of (name, type[, shape]) "
                + "fields, found '<f4', an array of one type without named fields");
        assertRefused("[('a', '<q4')]", "(1,)", "at byte 10: expected a field type of kind b i u f c S U V M m, found "
                + "'<q4' for field 'a'");
        assertRefused("[('a', '<f')]", "(1,)", "at byte 10: expected a field type such as '<u8', '|S61' or '<f4', "
                + "found '<f' for field 'a'");
        assertRefused("[('a', '<f4'), ('a', '<u4')]", "(1,)", "at byte 10: expected distinct field names, found "
                + "'a' twice");
        assertRefused("[(3, '<f4')]", "(1,)", "at byte 10: expected a field name as a string or a (title, name) "
                + "pair, found '3'");
        assertRefused("[('a', '<f4', (-1,))]", "(1,)", "at byte 10: expected non-negative sub-array dimensions, "
                + "found '[-1]' for field 'a'");
        assertRefused("[('a', '<f4', (2,), 1)]", "(1,)", "at byte 10: expected fields of the form (name, type) or "
                + "(name, type, shape), found '[a, <f4, [2], 1]'");
        assertRefused("[]", "(1,)", "at byte 10: expected at least one named field, found 'descr': []");
        assertRefused("[('a', '|S9223372036854775807')]", "(1,)", "at byte 10: expected a field type such as "
                + "'<u8', '|S61' or '<f4', found '|S9223372036854775807' for field 'a'");
        assertRefused("[('a', '<f8', (1099511627776, 1099511627776))]", "(1,)", "at byte 10: expected a field size "
                + "that fits in 64 bits, found field 'a'");
        assertRefused("[('a', '<f8')]", "(4611686018427387904, 4)", "at byte 10: expected rows whose size fits in "
                + "64 bits, found shape [4611686018427387904, 4] of rows of 8 bytes");
        assertRefused("[('a', '<f8')]", "(3,)", "at byte 128: expected 3 rows of 8 bytes (a file of 152 bytes), found "
                + "a file of 128 bytes (truncated: 0 whole rows)");
    }

    /** Checks the message for a version 1.0 header holding {@code descr} and {@code shape}, with no rows after it. */
    private void assertRefused(String descr, String shape, String expected) {
        String dict = "{'descr': " + descr + ", 'fortran_order': False, 'shape': " + shape + ", }";
        int total = (10 + dict.length() + 1 + 63) / 64 * 64;
        ByteBuffer bytes = ByteBuffer.allocate(total).order(ByteOrder.LITTLE_ENDIAN);
        bytes.put(new byte[]{(byte) 0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0}).putShort((short) (total - 10))
                .put(dict.getBytes(StandardCharsets.ISO_8859_1));
        while (bytes.position() < total - 1) {
            bytes.put((byte) ' ');
        }
        bytes.put((byte) '\n');
        Path file = dir.resolve("bad.npy");
        String message = assertThrows(InvalidFileException.class,
                () -> NpyRecords.decode(file, bytes.flip(), total)).getMessage();
        assertEquals(file + " " + expected, message);
    }
}
