package dev.memfit.io.npy;

import dev.memfit.io.storage.MappedFileWriter;
import java.lang.foreign.MemorySegment;
import java.nio.ByteOrder;
import java.nio.file.Path;

/**
 * Fills a new {@code .npy} file in place through a read-write memory mapping, then moves it into place atomically.
 *
 * <p>Rows are given in C order and the platform's byte order; the writer translates to the header's byte order and
 * memory order. Writing disjoint row ranges from several threads is safe.
 */
public final class NpyWriter implements AutoCloseable {

    private NpyHeader header;
    private final MappedFileWriter file;
    private final NpyArray view;

    private NpyWriter(NpyHeader header, MappedFileWriter file) {
        this.header = header;
        this.file = file;
        this.view = new NpyArray(file.target(), header, null, file.data(), true, null);
    }

    static NpyWriter open(Path target, NpyHeader requested) {
        byte[] encoded = requested.encode();
        int version = encoded[6];
        NpyHeader header = new NpyHeader(requested.dtype(), requested.byteOrder(), requested.fortranOrder(),
                requested.shape(), version, encoded.length);
        return new NpyWriter(header, MappedFileWriter.open(target, encoded, header.dataBytes()));
    }

    /**
     * The header being written (with its final version and data offset).
     *
     * @return the header
     */
    public NpyHeader header() {
        return header;
    }

    /**
     * The final path the file will have after {@link #commit()}.
     *
     * @return the target path
     */
    public Path target() {
        return file.target();
    }

    /**
     * The raw data region, in the header's byte and memory order, for callers that lay out bytes themselves.
     *
     * @return the writable mapping
     */
    public MemorySegment data() {
        return file.data();
    }

    /**
     * Writes rows starting at a row index.
     *
     * @param firstRow the index of the first row written
     * @param rows whole rows in C order and the platform's byte order
     */
    public void writeRows(long firstRow, MemorySegment rows) {
        MemorySegment data = file.data();
        long rowBytes = view.rowBytes();
        if (rowBytes == 0) {
            return;
        }
        if (rows.byteSize() % rowBytes != 0) {
            throw new IllegalArgumentException("got " + rows.byteSize() + " bytes, not a whole number of rows of " + rowBytes + " bytes");
        }
        long count = rows.byteSize() / rowBytes;
        if (firstRow < 0 || firstRow + count > view.rows()) {
            throw new IndexOutOfBoundsException("rows [" + firstRow + ", " + (firstRow + count) + ") outside [0, " + view.rows() + ")");
        }
        if (view.isRowContiguousNative()) {
            MemorySegment.copy(rows, 0, data, firstRow * rowBytes, rows.byteSize());
            return;
        }
        long[] shape = header.shape();
        int size = header.dtype().byteSize();
        long[] index = new long[shape.length];
        for (long r = 0; r < count; r++) {
            java.util.Arrays.fill(index, 0);
            index[0] = firstRow + r;
            for (long e = 0; e < view.rowElements(); e++) {
                NpyArray.copyElement(rows, (r * view.rowElements() + e) * size, ByteOrder.nativeOrder(), data,
                        view.byteOffset(index), header.byteOrder(), header.dtype());
                for (int d = shape.length - 1; d >= 1; d--) {
                    if (++index[d] < shape[d]) {
                        break;
                    }
                    index[d] = 0;
                }
            }
        }
    }

    /**
     * Shrinks a one-dimensional array to its first {@code length} elements, for output whose length is known only
     * at the end (the non-zero values of a sparse matrix): the header is rewritten with the new shape, and the file
     * cut at {@link #commit()}. Create the writer with the largest length the output can have.
     *
     * @param length at most the length the writer was created with
     */
    public void truncate(long length) {
        long[] shape = header.shape();
        if (shape.length != 1 || length < 0 || length > shape[0]) {
            throw new IllegalArgumentException(target() + ": only a one-dimensional array can be shrunk, to at most "
                    + "its length; shape " + java.util.Arrays.toString(shape) + ", asked for " + length);
        }
        NpyHeader shorter = new NpyHeader(header.dtype(), header.byteOrder(), header.fortranOrder(), new long[]{length},
                header.majorVersion(), header.dataOffset());
        byte[] encoded = shorter.encode();
        // fewer digits in the shape never cross the 64-byte padding of a one-dimensional header
        if (encoded.length != header.dataOffset()) {
            throw new IllegalStateException(target() + ": the header for length " + length + " has " + encoded.length
                    + " bytes, not " + header.dataOffset());
        }
        file.rewriteHeader(encoded);
        file.truncateData(length * header.dtype().byteSize());
        header = shorter;
    }

    /**
     * Flushes the data and atomically moves the file to its final name.
     *
     * @return the final path
     */
    public Path commit() {
        return file.commit();
    }

    /**
     * Releases the mapping; without a prior {@link #commit()}, deletes the temporary file.
     */
    @Override
    public void close() {
        file.close();
    }
}
