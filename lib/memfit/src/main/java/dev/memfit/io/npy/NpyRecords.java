package dev.memfit.io.npy;

import dev.memfit.InvalidFileException;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The header of a {@code .npy} file that holds a structured array (numpy records: {@code np.save} of an array with
 * named fields, as cryoSPARC's {@code .cs} files are): each field's name, type, sub-array shape and byte offset in a
 * row, and where the rows are.
 *
 * <p>The {@code descr} is the list numpy writes, {@code [('uid', '<u8'), ('blob/path', '|S61'), ('blob/shape', '<u4',
 * (2,)), ...]}: fields follow each other with no gaps, numpy naming alignment gaps {@code ('', '|V4')}; a title is
 * written as {@code (('title', 'name'), type)}; a nested record type is a list in place of the type. Values are not
 * read here: a caller reads the rows it needs ({@link #rowOffset}) and decodes the fields it needs
 * ({@link Field#integer}, {@link Field#string}), so that a file of millions of rows costs no heap per row.
 *
 * @param fields the named fields, in row order (padding left out)
 * @param rowBytes the bytes of one row, padding included
 * @param rows the number of rows (the product of the shape)
 * @param shape the array's shape, usually one dimension
 * @param majorVersion 1, 2 or 3
 * @param dataOffset the byte offset of the first row
 */
public record NpyRecords(List<Field> fields, long rowBytes, long rows, long[] shape, int majorVersion, long dataOffset) {

    /** {@code <u4}, {@code |S61}, {@code <U8}, {@code <M8[ns]}: byte order, kind, size, datetime unit. */
    private static final Pattern TYPE = Pattern.compile("([<>|=]?)([a-zA-Z])(\\d{1,9})(\\[\\w{1,8}])?");
    /** Nested record types go this deep at most; the literal parser already caps nesting. */
    private static final int MAX_DEPTH = 8;

    /**
     * Copies the lists.
     *
     * @param fields the fields
     * @param rowBytes bytes per row
     * @param rows rows
     * @param shape shape
     * @param majorVersion version
     * @param dataOffset offset of the first row
     */
    public NpyRecords {
        fields = List.copyOf(fields);
        shape = shape.clone();
    }

    /**
     * One field of a row.
     *
     * @param name the field's name
     * @param type its numpy type string, such as {@code <u4} or {@code |S61} ({@code [...]} for a nested record)
     * @param kind the type's kind: {@code b} bool, {@code i} signed, {@code u} unsigned, {@code f} float, {@code c}
     *             complex, {@code S} bytes, {@code U} unicode, {@code V} raw or nested, {@code M}/{@code m} datetime
     * @param itemBytes the bytes of one element ({@code <U8}: 32)
     * @param order the byte order of multi-byte elements
     * @param shape the sub-array shape, empty for a scalar field
     * @param offset the field's offset from the start of its row
     * @param byteSize the bytes the field takes in a row
     */
    public record Field(String name, String type, char kind, int itemBytes, ByteOrder order, long[] shape, long offset,
                        long byteSize) {

        /**
         * Copies the shape.
         *
         * @param name name
         * @param type type
         * @param kind kind
         * @param itemBytes element bytes
         * @param order byte order
         * @param shape sub-array shape
         * @param offset offset in the row
         * @param byteSize bytes in the row
         */
        public Field {
            shape = shape.clone();
        }

        /**
         * The sub-array shape (a copy).
         *
         * @return the dimensions, empty for a scalar field
         */
        @Override
        public long[] shape() {
            return shape.clone();
        }

        /**
         * Whether the field holds one integer per row ({@code i} or {@code u} of 1, 2, 4 or 8 bytes, no sub-array).
         *
         * @return true when {@link #integer} reads it
         */
        public boolean isInteger() {
            return (kind == 'i' || kind == 'u') && shape.length == 0 && Long.bitCount(itemBytes) == 1 && itemBytes <= 8;
        }

        /**
         * Whether the field holds one fixed-length string per row ({@code |S..} bytes or {@code <U..} unicode).
         *
         * @return true when {@link #string} reads it
         */
        public boolean isString() {
            return (kind == 'S' || kind == 'U') && shape.length == 0;
        }

        /**
         * Reads this integer field of a row.
         *
         * @param rows bytes holding the row
         * @param rowStart where the row starts in them
         * @return the value; a {@code <u8} above 2^63 - 1 comes back negative, as a signed value would
         */
        public long integer(ByteBuffer rows, int rowStart) {
            if (!isInteger()) {
                throw new IllegalStateException(this + " is not an integer field");
            }
            long value = bits(rows, Math.toIntExact(rowStart + offset), itemBytes);
            int unused = 64 - 8 * itemBytes;
            // sign-extend a signed value; an unsigned one is already zero-extended
            return kind == 'i' ? value << unused >> unused : value;
        }

        /** The bytes at {@code at} as an unsigned number in this field's byte order, allocating nothing per call. */
        private long bits(ByteBuffer rows, int at, int bytes) {
            long value = 0;
            for (int i = 0; i < bytes; i++) {
                int b = order == ByteOrder.BIG_ENDIAN ? i : bytes - 1 - i;
                value = value << 8 | Byte.toUnsignedLong(rows.get(at + b));
            }
            return value;
        }

        /**
         * Reads this string field of a row as numpy does: without its trailing NULs, bytes decoded as UTF-8 (as
         * cryoSPARC encodes them), unicode as UTF-32 in the field's byte order.
         *
         * @param rows bytes holding the row
         * @param rowStart where the row starts in them
         * @return the text
         */
        public String string(ByteBuffer rows, int rowStart) {
            int at = Math.toIntExact(rowStart + offset);
            int end = at + itemBytes;
            if (kind == 'S') {
                while (end > at && rows.get(end - 1) == 0) {
                    end--;
                }
                byte[] bytes = new byte[end - at];
                rows.get(at, bytes);
                return new String(bytes, StandardCharsets.UTF_8);
            }
            while (end > at && bits(rows, end - 4, 4) == 0) {
                end -= 4;
            }
            StringBuilder text = new StringBuilder((end - at) / 4);
            for (int i = at; i < end; i += 4) {
                int codePoint = (int) bits(rows, i, 4);
                text.appendCodePoint(Character.isValidCodePoint(codePoint) ? codePoint : 0xFFFD);
            }
            return text.toString();
        }

        @Override
        public boolean equals(Object other) {
            return other instanceof Field f && name.equals(f.name) && type.equals(f.type) && Arrays.equals(shape, f.shape)
                    && offset == f.offset;
        }

        @Override
        public int hashCode() {
            return name.hashCode() * 31 + Long.hashCode(offset);
        }

        @Override
        public String toString() {
            return "'" + name + "' " + type + (shape.length == 0 ? "" : " " + Arrays.toString(shape)) + " at +" + offset;
        }
    }

    /**
     * The array's shape (a copy).
     *
     * @return the dimensions
     */
    @Override
    public long[] shape() {
        return shape.clone();
    }

    /**
     * The field of a name.
     *
     * @param name such as {@code blob/path}
     * @return the field, or null when the rows have none of that name
     */
    public Field field(String name) {
        for (Field field : fields) {
            if (field.name().equals(name)) {
                return field;
            }
        }
        return null;
    }

    /**
     * The field names, in row order.
     *
     * @return the names
     */
    public List<String> names() {
        return fields.stream().map(Field::name).toList();
    }

    /**
     * Where a row starts in the file.
     *
     * @param row the row, from 0
     * @return its byte offset
     */
    public long rowOffset(long row) {
        return dataOffset + row * rowBytes;
    }

    /**
     * Parses the header of a structured {@code .npy} from the first bytes of a file.
     *
     * @param file the file, for messages
     * @param prefix the file's first bytes: at least the whole header
     * @param fileSize the file's size, to check that every row is there
     * @return the header
     * @throws InvalidFileException naming the file, the byte offset, what was expected and what was found, when the
     *         header is not a structured {@code .npy} header or the file's size disagrees with it
     */
    public static NpyRecords decode(Path file, ByteBuffer prefix, long fileSize) {
        NpyHeader.Preamble preamble = NpyHeader.preamble(file, prefix, fileSize);
        int at = preamble.dictStart();
        Object descr = preamble.fields().get("descr");
        if (!(descr instanceof List<?> list)) {
            throw new InvalidFileException(file, at, "a structured 'descr': a list of (name, type[, shape]) fields",
                    descr == null ? "no 'descr' key" : "'" + descr + "', an array of one type without named fields");
        }
        preamble.fortranOrder(file);
        long[] shape = preamble.shape(file);
        List<Field> fields = new ArrayList<>();
        long rowBytes = layout(file, at, list, 0, 0, fields);
        if (fields.isEmpty()) {
            throw new InvalidFileException(file, at, "at least one named field", "'descr': " + descr);
        }
        long rows = 1;
        long dataBytes;
        try {
            for (long dim : shape) {
                rows = Math.multiplyExact(rows, dim);
            }
            dataBytes = Math.multiplyExact(rows, rowBytes);
            Math.addExact(preamble.dataOffset(), dataBytes);
        } catch (ArithmeticException e) {
            throw new InvalidFileException(file, at, "rows whose size fits in 64 bits", "shape " + Arrays.toString(shape)
                    + " of rows of " + rowBytes + " bytes");
        }
        long expected = preamble.dataOffset() + dataBytes;
        if (fileSize != expected) {
            throw new InvalidFileException(file, preamble.dataOffset(), String.format(java.util.Locale.ROOT, "%,d rows of %,d bytes (a file of "
                    + "%,d bytes)", rows, rowBytes, expected), String.format(java.util.Locale.ROOT, "a file of %,d bytes (%s)", fileSize,
                    fileSize < expected ? "truncated: " + (fileSize - preamble.dataOffset()) / Math.max(1, rowBytes)
                            + " whole rows" : "longer than its rows"));
        }
        return new NpyRecords(fields, rowBytes, rows, shape, preamble.major(), preamble.dataOffset());
    }

    /**
     * Lays out the fields of a descr list from {@code start}, adding the top-level ones to {@code into}.
     *
     * @return the bytes the list takes
     */
    private static long layout(Path file, int at, List<?> descr, int depth, long start, List<Field> into) {
        if (depth > MAX_DEPTH) {
            throw new InvalidFileException(file, at, "record types nested at most " + MAX_DEPTH + " deep", "deeper nesting");
        }
        Map<String, Boolean> seen = new LinkedHashMap<>();
        long offset = start;
        for (Object item : descr) {
            if (!(item instanceof List<?> tuple) || tuple.size() < 2 || tuple.size() > 3) {
                throw new InvalidFileException(file, at, "fields of the form (name, type) or (name, type, shape)",
                        "'" + item + "'");
            }
            String name = nameOf(file, at, tuple.get(0));
            long[] shape = subShape(file, at, name, tuple.size() == 3 ? tuple.get(2) : List.of());
            long count = 1;
            for (long dim : shape) {
                count = multiply(file, at, name, count, dim);
            }
            Object type = tuple.get(1);
            String typeText;
            char kind;
            long itemBytes;
            ByteOrder order = ByteOrder.nativeOrder();
            if (type instanceof List<?> nested) {
                typeText = "[...]";
                kind = 'V';
                itemBytes = layout(file, at, nested, depth + 1, 0, new ArrayList<>());
            } else if (type instanceof String text) {
                Matcher m = TYPE.matcher(text);
                if (text.matches("[<>|=]?O\\d*")) {
                    throw new InvalidFileException(file, at, "fields of fixed size", "Python objects ('" + text + "') in "
                            + "field '" + name + "': numpy saved the rows as a pickle, which memfit does not read");
                }
                if (!m.matches()) {
                    throw new InvalidFileException(file, at, "a field type such as '<u8', '|S61' or '<f4'",
                            "'" + text + "' for field '" + name + "'");
                }
                typeText = text;
                kind = m.group(2).charAt(0);
                if ("biufcSaUVMm".indexOf(kind) < 0) {
                    throw new InvalidFileException(file, at, "a field type of kind b i u f c S U V M m",
                            "'" + text + "' for field '" + name + "'");
                }
                itemBytes = multiply(file, at, name, Long.parseLong(m.group(3)), kind == 'U' ? 4 : 1);
                if (m.group(1).equals("<")) {
                    order = ByteOrder.LITTLE_ENDIAN;
                } else if (m.group(1).equals(">")) {
                    order = ByteOrder.BIG_ENDIAN;
                }
            } else {
                throw new InvalidFileException(file, at, "a field type as a string or a list of fields",
                        "'" + type + "' for field '" + name + "'");
            }
            long bytes = multiply(file, at, name, itemBytes, count);
            if (!name.isEmpty()) {
                if (seen.put(name, Boolean.TRUE) != null) {
                    throw new InvalidFileException(file, at, "distinct field names", "'" + name + "' twice");
                }
                if (itemBytes > Integer.MAX_VALUE) {
                    throw new InvalidFileException(file, at, "elements of at most 2^31 - 1 bytes", "'" + typeText + "'");
                }
                into.add(new Field(name, typeText, kind, (int) itemBytes, order, shape, offset - start, bytes));
            }
            if (bytes > Long.MAX_VALUE / 2 - (offset - start)) {
                throw new InvalidFileException(file, at, "rows whose size fits in 63 bits", "fields up to '" + name + "'");
            }
            // an unnamed field is numpy's padding: it only moves the next offset
            offset += bytes;
        }
        return offset - start;
    }

    private static String nameOf(Path file, int at, Object name) {
        if (name instanceof String text) {
            return text;
        }
        // (title, name), as numpy writes a titled field
        if (name instanceof List<?> pair && pair.size() == 2 && pair.get(1) instanceof String text) {
            return text;
        }
        throw new InvalidFileException(file, at, "a field name as a string or a (title, name) pair", "'" + name + "'");
    }

    private static long[] subShape(Path file, int at, String name, Object value) {
        List<?> dims = value instanceof Long one ? List.of(one) : value instanceof List<?> list ? list : null;
        if (dims == null) {
            throw new InvalidFileException(file, at, "a sub-array shape as a tuple of integers", "'" + value
                    + "' for field '" + name + "'");
        }
        long[] shape = new long[dims.size()];
        for (int i = 0; i < shape.length; i++) {
            if (!(dims.get(i) instanceof Long dim) || dim < 0) {
                throw new InvalidFileException(file, at, "non-negative sub-array dimensions", "'" + value
                        + "' for field '" + name + "'");
            }
            shape[i] = dim;
        }
        return shape;
    }

    private static long multiply(Path file, int at, String name, long a, long b) {
        try {
            return Math.multiplyExact(a, b);
        } catch (ArithmeticException e) {
            throw new InvalidFileException(file, at, "a field size that fits in 64 bits", "field '" + name + "'");
        }
    }

    @Override
    public boolean equals(Object other) {
        return other instanceof NpyRecords r && fields.equals(r.fields) && rowBytes == r.rowBytes && rows == r.rows
                && Arrays.equals(shape, r.shape) && majorVersion == r.majorVersion && dataOffset == r.dataOffset;
    }

    @Override
    public int hashCode() {
        return fields.hashCode() * 31 + Long.hashCode(rows);
    }

    @Override
    public String toString() {
        return "NpyRecords[" + rows + " rows of " + rowBytes + " bytes, " + fields.size() + " fields, data at byte "
                + dataOffset + "]";
    }
}
