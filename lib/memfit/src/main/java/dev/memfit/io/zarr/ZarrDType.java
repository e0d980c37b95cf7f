package dev.memfit.io.zarr;

import dev.memfit.DType;

import java.nio.ByteOrder;

/**
 * The element type of a zarr array, from the numpy type string of its {@code .zarray} ({@code "<f4"}, {@code "|b1"},
 * {@code "<U12"}, {@code "|O"}).
 *
 * @param descr the type string as written
 * @param kind what the elements are
 * @param itemSize bytes per element in a chunk (4 per character for {@code U}, 0 for object strings, whose chunks
 *        hold variable-length items)
 * @param order the byte order of multi-byte elements in the chunks
 */
public record ZarrDType(String descr, Kind kind, int itemSize, ByteOrder order) {

    /** What the elements of an array are. */
    public enum Kind {
        /** numpy {@code b1}: one byte, 0 or 1. */
        BOOL,
        /** Signed integers of 1, 2, 4 or 8 bytes. */
        INT,
        /** Unsigned integers of 1, 2, 4 or 8 bytes. */
        UINT,
        /** IEEE floats of 2, 4 or 8 bytes. */
        FLOAT,
        /** numpy {@code S}: fixed-length byte strings, NUL-padded (read as ISO-8859-1 text). */
        BYTES,
        /** numpy {@code U}: fixed-length UTF-32 strings, NUL-padded. */
        UNICODE,
        /** numpy {@code O} with the {@code vlen-utf8} codec: variable-length UTF-8 strings, as anndata writes text. */
        STRING
    }

    /** The type strings memfit reads, for messages. */
    static final String SUPPORTED = "b1, i1-i8, u1-u8, f2-f8, S<n>, U<n> or O (strings)";

    /**
     * Parses a numpy type string.
     *
     * @param descr the string, such as {@code "<f4"}
     * @return the type, or null when memfit does not read it (the caller names the store and key)
     */
    static ZarrDType parse(String descr) {
        if (descr == null || descr.length() < 2) {
            return null;
        }
        int at = 0;
        ByteOrder order = ByteOrder.LITTLE_ENDIAN;
        char first = descr.charAt(0);
        if (first == '<' || first == '|' || first == '=') {
            at = 1;
        } else if (first == '>') {
            order = ByteOrder.BIG_ENDIAN;
            at = 1;
        }
        char code = descr.charAt(at);
        String digits = descr.substring(at + 1);
        if (code == 'O') {
            return digits.isEmpty() ? new ZarrDType(descr, Kind.STRING, 0, order) : null;
        }
        int size;
        try {
            size = Integer.parseInt(digits);
        } catch (NumberFormatException e) {
            return null;
        }
        return switch (code) {
            case 'b' -> size == 1 ? new ZarrDType(descr, Kind.BOOL, 1, order) : null;
            case 'i' -> isPowerOfTwo(size, 8) ? new ZarrDType(descr, Kind.INT, size, order) : null;
            case 'u' -> isPowerOfTwo(size, 8) ? new ZarrDType(descr, Kind.UINT, size, order) : null;
            case 'f' -> size == 2 || size == 4 || size == 8 ? new ZarrDType(descr, Kind.FLOAT, size, order) : null;
            case 'S' -> size > 0 ? new ZarrDType(descr, Kind.BYTES, size, order) : null;
            case 'U' -> size > 0 && size <= Integer.MAX_VALUE / 4 ? new ZarrDType(descr, Kind.UNICODE, 4 * size, order) : null;
            default -> null;
        };
    }

    private static boolean isPowerOfTwo(int size, int most) {
        return size > 0 && size <= most && Integer.bitCount(size) == 1;
    }

    /**
     * Whether the elements are numbers (booleans count as numbers 0 and 1).
     *
     * @return true for bool, int, uint and float
     */
    public boolean isNumeric() {
        return kind == Kind.BOOL || kind == Kind.INT || kind == Kind.UINT || kind == Kind.FLOAT;
    }

    /**
     * Whether the elements are text.
     *
     * @return true for {@code S}, {@code U} and {@code O} strings
     */
    public boolean isText() {
        return !isNumeric();
    }

    /**
     * The memfit type of numeric elements, as {@link ZarrArray#readRows} writes them (native byte order).
     *
     * @return the type
     * @throws UnsupportedOperationException for text
     */
    public DType toDType() {
        return switch (kind) {
            case BOOL -> DType.BOOL;
            case INT -> itemSize == 1 ? DType.INT8 : itemSize == 2 ? DType.INT16 : itemSize == 4 ? DType.INT32 : DType.INT64;
            case UINT -> itemSize == 1 ? DType.UINT8 : itemSize == 2 ? DType.UINT16 : itemSize == 4 ? DType.UINT32 : DType.UINT64;
            case FLOAT -> itemSize == 2 ? DType.FLOAT16 : itemSize == 4 ? DType.FLOAT32 : DType.FLOAT64;
            default -> throw new UnsupportedOperationException(descr + " holds text, not numbers");
        };
    }

    @Override
    public String toString() {
        return descr;
    }
}
