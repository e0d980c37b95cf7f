package dev.memfit;


import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;

/**
 * The element types memfit reads and writes, with their numpy type codes and sizes.
 */
public enum DType {
    /** numpy {@code bool} ({@code b1}), one byte, 0 or 1. */
    BOOL("b", 1),
    /** numpy {@code int8}. */
    INT8("i", 1),
    /** numpy {@code uint8}. */
    UINT8("u", 1),
    /** numpy {@code int16}. */
    INT16("i", 2),
    /** numpy {@code uint16}. */
    UINT16("u", 2),
    /** numpy {@code int32}. */
    INT32("i", 4),
    /** numpy {@code uint32}. */
    UINT32("u", 4),
    /** numpy {@code int64}. */
    INT64("i", 8),
    /** numpy {@code uint64}. */
    UINT64("u", 8),
    /** numpy {@code float16} (IEEE half precision). */
    FLOAT16("f", 2),
    /** numpy {@code float32}. */
    FLOAT32("f", 4),
    /** numpy {@code float64}. */
    FLOAT64("f", 8);

    private final String kind;
    private final int byteSize;

    DType(String kind, int byteSize) {
        this.kind = kind;
        this.byteSize = byteSize;
    }

    /**
     * The size of one element.
     *
     * @return bytes per element
     */
    public int byteSize() {
        return byteSize;
    }

    /**
     * The numpy type code without byte order, such as {@code f4} or {@code b1}.
     *
     * @return the code
     */
    public String numpyCode() {
        return kind + byteSize;
    }

    /**
     * The numpy {@code descr} string for this type in a byte order, such as {@code <f4}; one-byte types use {@code |}.
     *
     * @param order the byte order of the data
     * @return the descr string
     */
    public String descr(ByteOrder order) {
        if (byteSize == 1) {
            return "|" + numpyCode();
        }
        return (order == ByteOrder.LITTLE_ENDIAN ? "<" : ">") + numpyCode();
    }

    /**
     * Looks a type up by its numpy code without byte order.
     *
     * <p>Matched exactly: numpy codes are case-sensitive ({@code U1} is a unicode string, {@code u1} uint8).
     *
     * @param code such as {@code f4}, {@code u1} or {@code b1}
     * @return the type, or null when memfit does not support it
     */
    public static DType fromNumpyCode(String code) {
        for (DType type : values()) {
            if (type.numpyCode().equals(code)) {
                return type;
            }
        }
        return null;
    }

    /**
     * Whether DJL can hold this type in an {@code NDArray} as it is.
     *
     * @return false for unsigned types wider than a byte, which DJL's PyTorch engine lacks
     */
    public boolean hasDataType() {
        return switch (this) {
            case UINT16, UINT32, UINT64 -> false;
            default -> true;
        };
    }

    /**
     * Reads one element as a double (unsigned 64-bit values above 2^63 lose precision, as in numpy).
     *
     * @param segment the memory holding the element
     * @param byteOffset the element's offset in bytes
     * @param order the byte order of the data
     * @return the value
     */
    public double getDouble(MemorySegment segment, long byteOffset, ByteOrder order) {
        return switch (this) {
            case BOOL, UINT8 -> Byte.toUnsignedInt(segment.get(ValueLayout.JAVA_BYTE, byteOffset));
            case INT8 -> segment.get(ValueLayout.JAVA_BYTE, byteOffset);
            case INT16 -> segment.get(ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(order), byteOffset);
            case UINT16 -> Short.toUnsignedInt(segment.get(ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(order), byteOffset));
            case INT32 -> segment.get(ValueLayout.JAVA_INT_UNALIGNED.withOrder(order), byteOffset);
            case UINT32 -> Integer.toUnsignedLong(segment.get(ValueLayout.JAVA_INT_UNALIGNED.withOrder(order), byteOffset));
            case INT64 -> segment.get(ValueLayout.JAVA_LONG_UNALIGNED.withOrder(order), byteOffset);
            case UINT64 -> unsignedToDouble(segment.get(ValueLayout.JAVA_LONG_UNALIGNED.withOrder(order), byteOffset));
            case FLOAT16 -> Float.float16ToFloat(segment.get(ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(order), byteOffset));
            case FLOAT32 -> segment.get(ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(order), byteOffset);
            case FLOAT64 -> segment.get(ValueLayout.JAVA_DOUBLE_UNALIGNED.withOrder(order), byteOffset);
        };
    }

    /**
     * Writes one element from a double, rounding and narrowing as a C cast would.
     *
     * @param segment the memory to write to
     * @param byteOffset the element's offset in bytes
     * @param order the byte order of the data
     * @param value the value
     */
    public void setDouble(MemorySegment segment, long byteOffset, ByteOrder order, double value) {
        switch (this) {
            case BOOL -> segment.set(ValueLayout.JAVA_BYTE, byteOffset, (byte) (value != 0 ? 1 : 0));
            case INT8, UINT8 -> segment.set(ValueLayout.JAVA_BYTE, byteOffset, (byte) (long) value);
            case INT16, UINT16 -> segment.set(ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(order), byteOffset, (short) (long) value);
            case INT32, UINT32 -> segment.set(ValueLayout.JAVA_INT_UNALIGNED.withOrder(order), byteOffset, (int) (long) value);
            case INT64, UINT64 -> segment.set(ValueLayout.JAVA_LONG_UNALIGNED.withOrder(order), byteOffset, (long) value);
            case FLOAT16 -> segment.set(ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(order), byteOffset, Float.floatToFloat16((float) value));
            case FLOAT32 -> segment.set(ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(order), byteOffset, (float) value);
            case FLOAT64 -> segment.set(ValueLayout.JAVA_DOUBLE_UNALIGNED.withOrder(order), byteOffset, value);
        }
    }

    /**
     * Where to stage {@code count} elements of type {@code from} in a buffer so that
     * {@link #convertInPlace(MemorySegment, long, DType, ByteOrder, DType)} can turn them into {@code to} at offset 0.
     *
     * @param count the number of elements
     * @param from the type read
     * @param to the type wanted
     * @return the byte offset at which to read the source elements
     */
    public static long stagingOffset(long count, DType from, DType to) {
        return Math.max(0, count * (to.byteSize() - from.byteSize()));
    }

    /**
     * Converts elements in place, front to back: the source elements sit at
     * {@link #stagingOffset(long, DType, DType)} and the converted ones end up at offset 0 in the platform's byte
     * order. A wider target never overtakes the source it has not read yet, a narrower one never catches up with it.
     *
     * @param buffer the buffer, at least {@code count * max(from, to)} bytes
     * @param count the number of elements
     * @param from the type of the source elements
     * @param fromOrder their byte order
     * @param to the type wanted
     */
    public static void convertInPlace(MemorySegment buffer, long count, DType from, ByteOrder fromOrder, DType to) {
        ByteOrder nativeOrder = ByteOrder.nativeOrder();
        if (from == to && (from.byteSize() == 1 || fromOrder.equals(nativeOrder))) {
            return;
        }
        long start = stagingOffset(count, from, to);
        if (from != to && (from == FLOAT32 || from == FLOAT64) && (to == FLOAT32 || to == FLOAT64)) {
            convertFloats(buffer, start, from, fromOrder, buffer, 0, count);
            return;
        }
        for (long e = 0; e < count; e++) {
            double value = from.getDouble(buffer, start + e * from.byteSize(), fromOrder);
            to.setDouble(buffer, e * to.byteSize(), nativeOrder, value);
        }
    }

    /** Elements converted per block by {@link #convertFloats}: the block's arrays stay in the L1/L2 cache. */
    private static final int FLOAT_BLOCK = 4096;
    private static final ThreadLocal<float[]> FLOATS = ThreadLocal.withInitial(() -> new float[FLOAT_BLOCK]);
    private static final ThreadLocal<double[]> DOUBLES = ThreadLocal.withInitial(() -> new double[FLOAT_BLOCK]);

    /**
     * float32 to float64 or float64 to float32 (into the platform's byte order), a block at a time: bulk copies in
     * and out of plain arrays and the cast between them. Element by element through segment accessors, the segments'
     * bounds and liveness were checked again at every value (a mapped file's shared arena): half of {@code inspect}'s
     * time. In place (the same segment), as {@link #convertInPlace} stages it, a block is read whole before it is
     * written, and front to back neither type overtakes the source still to read.
     *
     * @param from the source elements
     * @param fromOffset the first one's byte offset
     * @param fromType FLOAT32 or FLOAT64
     * @param fromOrder their byte order
     * @param into where the other float type goes
     * @param intoOffset the first converted element's byte offset
     * @param count how many
     */
    public static void convertFloats(MemorySegment from, long fromOffset, DType fromType, ByteOrder fromOrder,
                                     MemorySegment into, long intoOffset, long count) {
        if (fromType != FLOAT32 && fromType != FLOAT64) {
            throw new IllegalArgumentException("convertFloats converts float32 and float64, not " + fromType);
        }
        float[] floats = FLOATS.get();
        double[] doubles = DOUBLES.get();
        boolean widen = fromType == FLOAT32;
        for (long done = 0; done < count; done += FLOAT_BLOCK) {
            int m = (int) Math.min(FLOAT_BLOCK, count - done);
            if (widen) {
                MemorySegment.copy(from, ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(fromOrder), fromOffset + done * Float.BYTES,
                        floats, 0, m);
                for (int i = 0; i < m; i++) {
                    doubles[i] = floats[i];
                }
                MemorySegment.copy(doubles, 0, into, ValueLayout.JAVA_DOUBLE_UNALIGNED, intoOffset + done * Double.BYTES, m);
            } else {
                MemorySegment.copy(from, ValueLayout.JAVA_DOUBLE_UNALIGNED.withOrder(fromOrder), fromOffset + done * Double.BYTES,
                        doubles, 0, m);
                for (int i = 0; i < m; i++) {
                    floats[i] = (float) doubles[i];
                }
                MemorySegment.copy(floats, 0, into, ValueLayout.JAVA_FLOAT_UNALIGNED, intoOffset + done * Float.BYTES, m);
            }
        }
    }

    private static double unsignedToDouble(long bits) {
        double high = (double) (bits >>> 1) * 2.0;
        return high + (bits & 1L);
    }
}
