package dev.memfit.io.npy;

import dev.memfit.DType;
import dev.memfit.NativeMemory;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.ByteOrder;
import java.nio.file.Path;
import java.util.Arrays;

/**
 * A {@code .npy} array whose data is memory-mapped or held in native memory.
 *
 * <p>The raw data keeps the file's byte and memory order; the row methods translate to C order in the platform's
 * byte order, so Fortran-order and big-endian files read correctly instead of silently scrambled. Obtain one from
 * {@link Npy#map(Path)} or {@link Npy#load(Path)}; it owns its memory and must be closed. Reads are thread-safe.
 */
public final class NpyArray implements AutoCloseable {

    private final Path path;
    private final NpyHeader header;
    private final Arena arena;
    private final MemorySegment data;
    private final boolean mapped;
    private final long[] shape;
    private final long rowElements;
    private final long[] elementStrides;
    private final NativeMemory.Reservation reservation;

    NpyArray(Path path, NpyHeader header, Arena arena, MemorySegment data, boolean mapped,
             NativeMemory.Reservation reservation) {
        this.reservation = reservation;
        this.path = path;
        this.header = header;
        this.arena = arena;
        this.data = data;
        this.mapped = mapped;
        this.shape = header.shape();
        long perRow = 1;
        for (int i = 1; i < shape.length; i++) {
            perRow = Math.multiplyExact(perRow, shape[i]);
        }
        this.rowElements = shape.length == 0 ? 1 : perRow;
        this.elementStrides = header.elementStrides();
    }

    /**
     * The file this array came from.
     *
     * @return the path
     */
    public Path path() {
        return path;
    }

    /**
     * The file's header.
     *
     * @return the header
     */
    public NpyHeader header() {
        return header;
    }

    /**
     * The shape (a copy).
     *
     * @return the dimensions
     */
    public long[] shape() {
        return shape.clone();
    }

    /**
     * The element type.
     *
     * @return the dtype
     */
    public DType dtype() {
        return header.dtype();
    }

    /**
     * Whether the data is a memory mapping of the file (rather than a copy in native memory).
     *
     * @return true when mapped
     */
    public boolean isMapped() {
        return mapped;
    }

    /**
     * A CRC32C of up to 16 blocks of 4 KiB spread evenly over the data (the first and the last among them; all of the
     * data when it is smaller): enough to tell another file of the same name, shape and type apart at the cost of 16
     * page reads, not a check of every byte.
     *
     * @return the checksum
     */
    public long sampledChecksum() {
        return sampledChecksum(data);
    }

    /**
     * A CRC32C of up to 16 blocks of 4 KiB spread evenly over some bytes, as {@link #sampledChecksum()}.
     *
     * @param data the bytes
     * @return the checksum
     */
    public static long sampledChecksum(MemorySegment data) {
        java.util.zip.CRC32C crc = new java.util.zip.CRC32C();
        long size = data.byteSize();
        long block = 4096;
        int blocks = 16;
        if (size <= block * blocks) {
            crc.update(data.asByteBuffer());
        } else {
            for (int i = 0; i < blocks; i++) {
                long at = (size - block) * i / (blocks - 1);
                crc.update(data.asSlice(at, block).asByteBuffer());
            }
        }
        return crc.getValue();
    }

    /**
     * The raw data, in the file's byte order and memory order.
     *
     * @return a read-only view for mapped files
     */
    public MemorySegment data() {
        return data;
    }

    /**
     * The number of rows: the first dimension, or 1 for a scalar.
     *
     * @return the row count
     */
    public long rows() {
        return shape.length == 0 ? 1 : shape[0];
    }

    /**
     * Elements per row: the product of all dimensions but the first.
     *
     * @return the row length in elements
     */
    public long rowElements() {
        return rowElements;
    }

    /**
     * Bytes per row.
     *
     * @return the row length in bytes
     */
    public long rowBytes() {
        return rowElements * header.dtype().byteSize();
    }

    /**
     * Whether rows are contiguous in the platform's byte order, so they can be copied without translation.
     *
     * @return true for C-order files in native byte order (or of one-byte elements)
     */
    public boolean isRowContiguousNative() {
        boolean contiguous = !header.fortranOrder() || shape.length <= 1 || rows() == 1;
        return contiguous && (header.dtype().byteSize() == 1 || header.byteOrder().equals(ByteOrder.nativeOrder()));
    }

    /**
     * The byte offset of an element in {@link #data()}.
     *
     * @param index one index per dimension
     * @return the byte offset
     */
    public long byteOffset(long... index) {
        if (index.length != shape.length) {
            throw new IllegalArgumentException("expected " + shape.length + " indices, got " + index.length);
        }
        long element = 0;
        for (int i = 0; i < index.length; i++) {
            if (index[i] < 0 || index[i] >= shape[i]) {
                throw new IndexOutOfBoundsException("index " + Arrays.toString(index) + " outside shape " + Arrays.toString(shape));
            }
            element += index[i] * elementStrides[i];
        }
        return element * header.dtype().byteSize();
    }

    /**
     * One element as a double.
     *
     * @param index one index per dimension
     * @return the value
     */
    public double getDouble(long... index) {
        return header.dtype().getDouble(data, byteOffset(index), header.byteOrder());
    }

    /**
     * Copies rows, in C order and the platform's byte order, into memory.
     *
     * @param firstRow the first row to copy
     * @param count how many rows
     * @param into where to write, at offset 0; at least {@code count * rowBytes()} bytes
     */
    public void copyRows(long firstRow, long count, MemorySegment into) {
        copyRows(firstRow, count, into, 0);
    }

    /**
     * Copies rows, in C order and the platform's byte order, into memory at an offset.
     *
     * @param firstRow the first row to copy
     * @param count how many rows
     * @param into where to write
     * @param intoOffset the byte offset in {@code into}
     */
    public void copyRows(long firstRow, long count, MemorySegment into, long intoOffset) {
        if (firstRow < 0 || count < 0 || firstRow + count > rows()) {
            throw new IndexOutOfBoundsException("rows [" + firstRow + ", " + (firstRow + count) + ") outside [0, " + rows() + ") of " + path);
        }
        long rowBytes = rowBytes();
        if (isRowContiguousNative()) {
            MemorySegment.copy(data, firstRow * rowBytes, into, intoOffset, count * rowBytes);
            return;
        }
        for (long r = 0; r < count; r++) {
            gatherRow(firstRow + r, into, intoOffset + r * rowBytes);
        }
    }

    /** Reads one logical row element by element, honouring byte order and memory order. */
    private void gatherRow(long row, MemorySegment into, long intoOffset) {
        DType dtype = header.dtype();
        int size = dtype.byteSize();
        ByteOrder order = header.byteOrder();
        ByteOrder nativeOrder = ByteOrder.nativeOrder();
        int dims = shape.length;
        long[] counter = new long[Math.max(dims, 1)];
        long base = dims == 0 ? 0 : row * elementStrides[0];
        for (long e = 0; e < rowElements; e++) {
            long element = base;
            for (int d = 1; d < dims; d++) {
                element += counter[d] * elementStrides[d];
            }
            copyElement(data, element * size, order, into, intoOffset + e * size, nativeOrder, dtype);
            for (int d = dims - 1; d >= 1; d--) {
                if (++counter[d] < shape[d]) {
                    break;
                }
                counter[d] = 0;
            }
        }
    }

    static void copyElement(MemorySegment from, long fromOffset, ByteOrder fromOrder, MemorySegment to, long toOffset,
                            ByteOrder toOrder, DType dtype) {
        int size = dtype.byteSize();
        if (size == 1 || fromOrder.equals(toOrder)) {
            MemorySegment.copy(from, fromOffset, to, toOffset, size);
        } else {
            for (int b = 0; b < size; b++) {
                to.set(java.lang.foreign.ValueLayout.JAVA_BYTE, toOffset + b,
                        from.get(java.lang.foreign.ValueLayout.JAVA_BYTE, fromOffset + size - 1 - b));
            }
        }
    }

    /**
     * The float64 sum of all elements in file order, compensated ({@link dev.memfit.CompensatedSum}): the same bits
     * as every other memfit sum of the same values, within numpy's rounding of {@code a.sum(dtype=np.float64)}.
     *
     * @return the sum
     */
    public double sum() {
        dev.memfit.CompensatedSum sum = new dev.memfit.CompensatedSum();
        sum.add(data, 0, header.elementCount(), header.dtype(), header.byteOrder());
        return sum.value();
    }

    /**
     * Releases the mapping or the native memory. Views of {@link #data()} become invalid.
     */
    @Override
    public void close() {
        if (arena != null) {
            arena.close();
        }
        if (reservation != null) {
            reservation.close();
        }
    }

    @Override
    public String toString() {
        return "NpyArray[" + path + ", " + header + (mapped ? ", mapped" : ", in memory") + "]";
    }
}
