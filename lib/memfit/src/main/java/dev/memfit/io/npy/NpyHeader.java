package dev.memfit.io.npy;

import dev.memfit.DType;
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
import java.util.stream.Collectors;

/**
 * The header of a numpy {@code .npy} file: element type, byte order, memory order, shape and format version.
 *
 * <p>Versions 1.0, 2.0 and 3.0 are read and written. The data starts at {@link #dataOffset()}, which numpy aligns to
 * 64 bytes (older writers used 16; both are read).
 *
 * @param dtype the element type
 * @param byteOrder the byte order of multi-byte elements
 * @param fortranOrder true when the array is stored in column-major (Fortran) order
 * @param shape the array's shape; empty for a scalar
 * @param majorVersion 1, 2 or 3
 * @param dataOffset the byte offset of the first element (0 for a header not yet written)
 */
public record NpyHeader(DType dtype, ByteOrder byteOrder, boolean fortranOrder, long[] shape, int majorVersion,
                        long dataOffset) {

    /** The six magic bytes that start every {@code .npy} file. */
    static final byte[] MAGIC = {(byte) 0x93, 'N', 'U', 'M', 'P', 'Y'};
    private static final int ALIGNMENT = 64;
    /** The longest header read: numpy's own reader stops at 10,000 bytes unless told otherwise. */
    static final int MAX_HEADER_BYTES = 1 << 20;
    /** Python literals nest this deep at most (a shape inside a dict), so deeper nesting is refused, not recursed. */
    private static final int MAX_NESTING = 16;

    /**
     * Validates the fields.
     *
     * @param dtype the element type
     * @param byteOrder the byte order
     * @param fortranOrder column-major when true
     * @param shape the shape
     * @param majorVersion 1, 2 or 3
     * @param dataOffset the data offset
     */
    public NpyHeader {
        if (majorVersion < 1 || majorVersion > 3) {
            throw new IllegalArgumentException("npy format version must be 1, 2 or 3, not " + majorVersion);
        }
        shape = shape.clone();
        for (long dim : shape) {
            if (dim < 0) {
                throw new IllegalArgumentException("negative dimension in shape " + Arrays.toString(shape));
            }
        }
    }

    /**
     * A little-endian, C-order header for a new file; the version is chosen when it is written.
     *
     * @param dtype the element type
     * @param shape the shape
     * @return the header
     */
    public static NpyHeader of(DType dtype, long... shape) {
        return new NpyHeader(dtype, ByteOrder.LITTLE_ENDIAN, false, shape, 1, 0);
    }

    /**
     * This header with another byte order.
     *
     * @param order the byte order
     * @return a copy
     */
    public NpyHeader withByteOrder(ByteOrder order) {
        return new NpyHeader(dtype, order, fortranOrder, shape, majorVersion, dataOffset);
    }

    /**
     * This header with another memory order.
     *
     * @param fortran true for column-major
     * @return a copy
     */
    public NpyHeader withFortranOrder(boolean fortran) {
        return new NpyHeader(dtype, byteOrder, fortran, shape, majorVersion, dataOffset);
    }

    /**
     * This header with another format version (the smallest version that can hold it is used otherwise).
     *
     * @param major 1, 2 or 3
     * @return a copy
     */
    public NpyHeader withVersion(int major) {
        return new NpyHeader(dtype, byteOrder, fortranOrder, shape, major, dataOffset);
    }

    /**
     * The shape (a copy).
     *
     * @return the dimensions
     */
    @Override
    public long[] shape() {
        return shape.clone();
    }

    /**
     * The distance, in elements, between neighbours along each dimension of this header's memory order.
     *
     * @return one stride per dimension
     */
    public long[] elementStrides() {
        return elementStrides(shape, fortranOrder);
    }

    /**
     * Element strides of a dense array in C (row-major) or Fortran (column-major) order.
     *
     * @param shape the dimensions
     * @param fortranOrder true for column-major
     * @return one stride per dimension, in elements
     */
    public static long[] elementStrides(long[] shape, boolean fortranOrder) {
        long[] strides = new long[shape.length];
        long stride = 1;
        for (int k = 0; k < shape.length; k++) {
            int i = fortranOrder ? k : shape.length - 1 - k;
            strides[i] = stride;
            stride *= shape[i];
        }
        return strides;
    }

    /**
     * The number of elements, the product of the shape.
     *
     * @return the element count
     */
    public long elementCount() {
        long count = 1;
        for (long dim : shape) {
            if (dim == 0) {
                return 0;
            }
        }
        try {
            for (long dim : shape) {
                count = Math.multiplyExact(count, dim);
            }
        } catch (ArithmeticException e) {
            throw new dev.memfit.MemfitException("shape " + Arrays.toString(shape) + " has more than 2^63 elements");
        }
        return count;
    }

    /**
     * The size of the data in bytes.
     *
     * @return element count times element size
     */
    public long dataBytes() {
        try {
            return Math.multiplyExact(elementCount(), dtype.byteSize());
        } catch (ArithmeticException e) {
            throw new dev.memfit.MemfitException("shape " + Arrays.toString(shape) + " of " + dtype.numpyCode()
                    + " is more than 2^63 bytes");
        }
    }

    /**
     * The header as numpy writes it: magic, version, length and the padded dictionary.
     *
     * <p>The version of this header is raised when needed: 2.0 when the dictionary is longer than 65,535 bytes.
     *
     * @return the bytes, whose length is the data offset of the file
     */
    public byte[] encode() {
        String shapeText = shape.length == 1 ? "(" + shape[0] + ",)"
                : Arrays.stream(shape).mapToObj(Long::toString).collect(Collectors.joining(", ", "(", ")"));
        String dict = "{'descr': '" + dtype.descr(byteOrder) + "', 'fortran_order': " + (fortranOrder ? "True" : "False")
                + ", 'shape': " + shapeText + ", }";
        byte[] dictBytes = dict.getBytes(majorVersion == 3 ? StandardCharsets.UTF_8 : StandardCharsets.ISO_8859_1);
        int version = majorVersion;
        if (version == 1 && paddedLength(dictBytes.length, 2) - 10 > 0xFFFF) {
            version = 2;
        }
        int lengthBytes = version == 1 ? 2 : 4;
        int total = paddedLength(dictBytes.length, lengthBytes);
        int headerLength = total - MAGIC.length - 2 - lengthBytes;
        ByteBuffer out = ByteBuffer.allocate(total).order(ByteOrder.LITTLE_ENDIAN);
        out.put(MAGIC).put((byte) version).put((byte) 0);
        if (lengthBytes == 2) {
            out.putShort((short) headerLength);
        } else {
            out.putInt(headerLength);
        }
        out.put(dictBytes);
        while (out.position() < total - 1) {
            out.put((byte) ' ');
        }
        out.put((byte) '\n');
        return out.array();
    }

    private static int paddedLength(int dictLength, int lengthBytes) {
        int unpadded = MAGIC.length + 2 + lengthBytes + dictLength + 1;
        return (unpadded + ALIGNMENT - 1) / ALIGNMENT * ALIGNMENT;
    }

    /**
     * Parses a header from the first bytes of a file.
     *
     * @param file the file, for messages
     * @param prefix the file's first bytes: at least 10, and the whole header when it is complete
     * @param fileSize the file's size, to check that the data is all there
     * @return the header
     * @throws InvalidFileException when the bytes are not a supported {@code .npy} header or disagree with the size
     */
    public static NpyHeader decode(Path file, ByteBuffer prefix, long fileSize) {
        Preamble preamble = preamble(file, prefix, fileSize);
        int dictStart = preamble.dictStart();
        long dataOffset = preamble.dataOffset();
        int major = preamble.major();
        Object descr = preamble.fields().get("descr");
        Object shapeValue = preamble.fields().get("shape");
        if (!(descr instanceof String descrText)) {
            boolean cryoSparc = descr instanceof List<?> fields && fields.stream()
                    .anyMatch(f -> f instanceof List<?> field && !field.isEmpty() && "blob/path".equals(field.getFirst()));
            throw new InvalidFileException(file, dictStart, "a simple 'descr' such as '<f4'", descr == null
                    ? "no 'descr' key" : "a structured dtype (records with named fields" + (cryoSparc
                    ? ", 'blob/path' among them: a cryoSPARC particle file? name it .cs"
                    : "; read them with Npy.readRecords") + ")");
        }
        boolean fortranOrder = preamble.fortranOrder(file);
        long[] shape = preamble.shape(file);
        ByteOrder order = ByteOrder.nativeOrder();
        String code = descrText;
        if (!code.isEmpty() && "<>|=".indexOf(code.charAt(0)) >= 0) {
            char mark = code.charAt(0);
            order = mark == '<' ? ByteOrder.LITTLE_ENDIAN : mark == '>' ? ByteOrder.BIG_ENDIAN : ByteOrder.nativeOrder();
            code = code.substring(1);
        }
        DType dtype = dtypeOf(code);
        if (dtype == null) {
            throw new InvalidFileException(file, dictStart,
                    "a numeric dtype (f2 f4 f8 i1 i2 i4 i8 u1 u2 u4 u8 b1)", refusal(descrText, code));
        }
        // The data size with checked arithmetic, compared with the file before anyone allocates or maps by it. Like
        // numpy, the product of the non-zero dimensions must fit, so that a per-sample size never overflows either.
        long nonZero = dtype.byteSize();
        boolean empty = false;
        try {
            for (long dim : shape) {
                if (dim == 0) {
                    empty = true;
                } else {
                    nonZero = Math.multiplyExact(nonZero, dim);
                }
            }
            Math.addExact(dataOffset, nonZero);
        } catch (ArithmeticException e) {
            throw new InvalidFileException(file, dictStart, "a shape whose size fits in 64 bits",
                    "shape " + shapeValue + " of '" + descrText + "': more than 2^63 bytes of data, the file has "
                            + String.format("%,d", Math.max(0, fileSize - dataOffset)) + " bytes after the header");
        }
        long dataBytes = empty ? 0 : nonZero;
        NpyHeader header = new NpyHeader(dtype, order, fortranOrder, shape, major, dataOffset);
        long expected = dataOffset + dataBytes;
        if (fileSize != expected) {
            throw new InvalidFileException(file, dataOffset,
                    dataBytes + " data bytes for shape " + Arrays.toString(shape) + " of " + dtype.numpyCode()
                            + " (a file of " + expected + " bytes)",
                    (fileSize - dataOffset) + " data bytes (a file of " + fileSize + " bytes"
                            + (fileSize < expected ? ", truncated)" : ", longer than the shape says)"));
        }
        return header;
    }

    /**
     * What every {@code .npy} header holds before its dtype is interpreted: the version, where the dictionary and the
     * data start, and the dictionary itself.
     */
    record Preamble(int major, int dictStart, long dataOffset, Map<String, Object> fields) {

        /** The {@code fortran_order} flag. */
        boolean fortranOrder(Path file) {
            if (!(fields.get("fortran_order") instanceof Boolean fortran)) {
                throw new InvalidFileException(file, dictStart, "'fortran_order': True or False",
                        String.valueOf(fields.get("fortran_order")));
            }
            return fortran;
        }

        /** The {@code shape} tuple. */
        long[] shape(Path file) {
            Object shapeValue = fields.get("shape");
            if (!(shapeValue instanceof List<?> dims)) {
                throw new InvalidFileException(file, dictStart, "'shape' as a tuple of integers", String.valueOf(shapeValue));
            }
            long[] shape = new long[dims.size()];
            for (int i = 0; i < shape.length; i++) {
                if (!(dims.get(i) instanceof Long dim) || dim < 0) {
                    throw new InvalidFileException(file, dictStart, "non-negative integer dimensions", "shape " + shapeValue);
                }
                shape[i] = dim;
            }
            return shape;
        }
    }

    /**
     * Reads the magic, version, header length and dictionary of a {@code .npy} header.
     *
     * @param file the file, for messages
     * @param prefix the file's first bytes
     * @param fileSize the file's size
     * @return the preamble
     */
    static Preamble preamble(Path file, ByteBuffer prefix, long fileSize) {
        ByteBuffer in = prefix.duplicate().order(ByteOrder.LITTLE_ENDIAN);
        if (in.remaining() < 10) {
            throw new InvalidFileException(file, 0, "a .npy file (at least 10 header bytes)", fileSize + " bytes in all");
        }
        byte[] magic = new byte[MAGIC.length];
        in.get(magic);
        if (!Arrays.equals(magic, MAGIC)) {
            throw new InvalidFileException(file, 0, "the .npy magic \\x93NUMPY", "bytes " + printable(magic));
        }
        int major = Byte.toUnsignedInt(in.get());
        int minor = Byte.toUnsignedInt(in.get());
        if (major < 1 || major > 3 || minor != 0) {
            throw new InvalidFileException(file, 6, "format version 1.0, 2.0 or 3.0", "version " + major + "." + minor);
        }
        long headerLength;
        if (major == 1) {
            headerLength = Short.toUnsignedInt(in.getShort());
        } else {
            if (in.remaining() < 4) {
                throw new InvalidFileException(file, 8, "a 4-byte header length", "the end of the file");
            }
            headerLength = Integer.toUnsignedLong(in.getInt());
        }
        int dictStart = in.position();
        if (headerLength > MAX_HEADER_BYTES) {
            throw new InvalidFileException(file, 8, "a header of at most " + MAX_HEADER_BYTES + " bytes",
                    "a declared header length of " + headerLength + " bytes");
        }
        long dataOffset = dictStart + headerLength;
        if (in.remaining() < headerLength) {
            throw new InvalidFileException(file, dictStart, "a header of " + headerLength + " bytes",
                    fileSize < dataOffset ? "a file of only " + fileSize + " bytes (truncated?)" : "a shorter header buffer");
        }
        byte[] dictBytes = new byte[(int) headerLength];
        in.get(dictBytes);
        String dict = new String(dictBytes, major == 3 ? StandardCharsets.UTF_8 : StandardCharsets.ISO_8859_1).strip();
        try {
            return new Preamble(major, dictStart, dataOffset, new PyLiteralParser(dict).parseDict());
        } catch (IllegalArgumentException e) {
            throw new InvalidFileException(file, dictStart, "a Python dict literal in the header", "'" + dict + "' (" + e.getMessage() + ")");
        }
    }

    /** The numeric types, matched exactly (case matters: {@code U1} is unicode, {@code u1} is uint8). */
    private static DType dtypeOf(String code) {
        return switch (code) {
            case "b1", "?" -> DType.BOOL;
            case "i1" -> DType.INT8;
            case "u1" -> DType.UINT8;
            case "i2" -> DType.INT16;
            case "u2" -> DType.UINT16;
            case "i4" -> DType.INT32;
            case "u4" -> DType.UINT32;
            case "i8" -> DType.INT64;
            case "u8" -> DType.UINT64;
            case "f2", "e" -> DType.FLOAT16;
            case "f4" -> DType.FLOAT32;
            case "f8" -> DType.FLOAT64;
            default -> null;
        };
    }

    /** Names what a non-numeric dtype holds, so that nobody mistakes it for a damaged file. */
    private static String refusal(String descr, String code) {
        String quoted = "'" + descr + "'";
        if (code.isEmpty()) {
            return "an empty descr " + quoted;
        }
        return switch (code.charAt(0)) {
            case 'U' -> "unicode strings (" + quoted + "), which are not numeric samples";
            case 'S', 'a' -> "byte strings (" + quoted + "), which are not numeric samples";
            case 'O' -> "Python objects (" + quoted + "), which are not numeric samples (and would need pickle)";
            case 'c' -> "complex numbers (" + quoted + "); store the real and imaginary parts as two float arrays";
            case 'M' -> "datetimes (" + quoted + "), which are not numeric samples; convert them to int64 or float64";
            case 'm' -> "timedeltas (" + quoted + "), which are not numeric samples; convert them to int64 or float64";
            case 'V' -> "raw void records (" + quoted + "), which are not numeric samples";
            case 'f' -> "extended-precision floats (" + quoted + "); convert them to float64";
            case 'b', 'i', 'u' -> "an integer type of an unsupported size (" + quoted + ")";
            default -> "an unknown dtype " + quoted;
        };
    }

    private static String printable(byte[] bytes) {
        StringBuilder text = new StringBuilder();
        for (byte b : bytes) {
            int c = Byte.toUnsignedInt(b);
            text.append(c >= 32 && c < 127 ? String.valueOf((char) c) : String.format("\\x%02x", c));
        }
        return "'" + text + "'";
    }

    @Override
    public boolean equals(Object other) {
        return other instanceof NpyHeader h && dtype == h.dtype && byteOrder.equals(h.byteOrder)
                && fortranOrder == h.fortranOrder && Arrays.equals(shape, h.shape) && majorVersion == h.majorVersion
                && dataOffset == h.dataOffset;
    }

    @Override
    public int hashCode() {
        return Arrays.hashCode(shape) * 31 + dtype.hashCode();
    }

    @Override
    public String toString() {
        return "NpyHeader[" + dtype.descr(byteOrder) + ", " + (fortranOrder ? "Fortran" : "C") + " order, shape "
                + Arrays.toString(shape) + ", version " + majorVersion + ".0, data at byte " + dataOffset + "]";
    }

    /** Parses the small subset of Python literals that .npy headers use: dicts, strings, booleans, ints, tuples. */
    private static final class PyLiteralParser {
        private final String text;
        private int pos;
        private int depth;

        PyLiteralParser(String text) {
            this.text = text;
        }

        Map<String, Object> parseDict() {
            Object value = parseValue();
            skipSpace();
            if (pos != text.length()) {
                throw new IllegalArgumentException("unexpected text at character " + pos);
            }
            if (!(value instanceof Map<?, ?> map)) {
                throw new IllegalArgumentException("not a dict");
            }
            Map<String, Object> result = new LinkedHashMap<>();
            map.forEach((k, v) -> result.put(String.valueOf(k), v));
            return result;
        }

        private Object parseValue() {
            skipSpace();
            if (pos >= text.length()) {
                throw new IllegalArgumentException("unexpected end");
            }
            char c = text.charAt(pos);
            if ((c == '{' || c == '(' || c == '[') && depth >= MAX_NESTING) {
                throw new IllegalArgumentException("values nested more than " + MAX_NESTING + " deep");
            }
            if (c == '{') {
                pos++;
                depth++;
                Map<Object, Object> map = new LinkedHashMap<>();
                while (true) {
                    skipSpace();
                    if (peek('}')) {
                        pos++;
                        depth--;
                        return map;
                    }
                    Object key = parseValue();
                    skipSpace();
                    expect(':');
                    map.put(key, parseValue());
                    skipSpace();
                    if (peek(',')) {
                        pos++;
                    } else if (!peek('}')) {
                        throw new IllegalArgumentException("expected ',' or '}' at character " + pos);
                    }
                }
            }
            if (c == '(' || c == '[') {
                char close = c == '(' ? ')' : ']';
                pos++;
                depth++;
                List<Object> items = new ArrayList<>();
                while (true) {
                    skipSpace();
                    if (peek(close)) {
                        pos++;
                        depth--;
                        return items;
                    }
                    items.add(parseValue());
                    skipSpace();
                    if (peek(',')) {
                        pos++;
                    } else if (!peek(close)) {
                        throw new IllegalArgumentException("expected ',' or '" + close + "' at character " + pos);
                    }
                }
            }
            if (c == '\'' || c == '"') {
                int end = text.indexOf(c, pos + 1);
                if (end < 0) {
                    throw new IllegalArgumentException("unterminated string at character " + pos);
                }
                String value = text.substring(pos + 1, end);
                pos = end + 1;
                return value;
            }
            int start = pos;
            while (pos < text.length() && (Character.isLetterOrDigit(text.charAt(pos)) || text.charAt(pos) == '-')) {
                pos++;
            }
            String token = text.substring(start, pos);
            return switch (token) {
                case "True" -> Boolean.TRUE;
                case "False" -> Boolean.FALSE;
                case "" -> throw new IllegalArgumentException("unexpected '" + c + "' at character " + pos);
                default -> {
                    String digits = token.endsWith("L") ? token.substring(0, token.length() - 1) : token;
                    try {
                        yield Long.parseLong(digits);
                    } catch (NumberFormatException e) {
                        throw new IllegalArgumentException("unexpected '" + token + "' at character " + start);
                    }
                }
            };
        }

        private boolean peek(char c) {
            return pos < text.length() && text.charAt(pos) == c;
        }

        private void expect(char c) {
            if (!peek(c)) {
                throw new IllegalArgumentException("expected '" + c + "' at character " + pos);
            }
            pos++;
        }

        private void skipSpace() {
            while (pos < text.length() && Character.isWhitespace(text.charAt(pos))) {
                pos++;
            }
        }
    }
}
