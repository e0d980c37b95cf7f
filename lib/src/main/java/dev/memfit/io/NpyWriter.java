package dev.memfit.io;

import dev.memfit.memory.NativeMemory;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;

/**
 * Fills a new {@code .npy} file in place through a read-write memory mapping, then moves it into place atomically.
 *
 * <p>Rows are given in C order and the platform's byte order; the writer translates to the header's byte order and
 * memory order. Writing disjoint row ranges from several threads is safe.
 */
public final class NpyWriter implements AutoCloseable {

    private final Path target;
    private final Path temporary;
    private final NpyHeader header;
    private final Arena arena;
    private final FileChannel channel;
    private final MemorySegment data;
    private final NpyArray view;
    private final NativeMemory.Reservation reservation;
    private boolean committed;
    private boolean closed;

    private NpyWriter(Path target, Path temporary, NpyHeader header, Arena arena, FileChannel channel, MemorySegment data,
                      NativeMemory.Reservation reservation) {
        this.reservation = reservation;
        this.target = target;
        this.temporary = temporary;
        this.header = header;
        this.arena = arena;
        this.channel = channel;
        this.data = data;
        this.view = new NpyArray(target, header, null, data, true, null);
    }

    static NpyWriter open(Path target, NpyHeader requested) {
        byte[] encoded = requested.encode();
        int version = encoded[6];
        NpyHeader header = new NpyHeader(requested.dtype(), requested.byteOrder(), requested.fortranOrder(),
                requested.shape(), version, encoded.length);
        Path absolute = target.toAbsolutePath();
        Path directory = absolute.getParent();
        Arena arena = Arena.ofShared();
        Path temporary = null;
        FileChannel channel = null;
        try {
            Files.createDirectories(directory);
            temporary = Files.createTempFile(directory, "." + absolute.getFileName() + ".", ".partial");
            channel = FileChannel.open(temporary, StandardOpenOption.READ, StandardOpenOption.WRITE);
            channel.write(ByteBuffer.wrap(encoded), 0);
            long size = encoded.length + header.dataBytes();
            // Extends the file sparsely: a file of many times the RAM costs nothing until it is written.
            if (header.dataBytes() > 0) {
                channel.write(ByteBuffer.allocate(1), size - 1);
            }
            MemorySegment data = header.dataBytes() == 0 ? MemorySegment.NULL
                    : channel.map(FileChannel.MapMode.READ_WRITE, encoded.length, header.dataBytes(), arena);
            return new NpyWriter(target, temporary, header, arena, channel, data,
                    NativeMemory.MAPPED.reserve(header.dataBytes()));
        } catch (IOException e) {
            arena.close();
            closeQuietly(channel);
            deleteQuietly(temporary);
            throw new UncheckedIOException("cannot create " + target, e);
        }
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
        return target;
    }

    /**
     * The raw data region, in the header's byte and memory order, for callers that lay out bytes themselves.
     *
     * @return the writable mapping
     */
    public MemorySegment data() {
        return data;
    }

    /**
     * Writes rows starting at a row index.
     *
     * @param firstRow the index of the first row written
     * @param rows whole rows in C order and the platform's byte order
     */
    public void writeRows(long firstRow, MemorySegment rows) {
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
     * Flushes the data and atomically moves the file to its final name.
     *
     * @return the final path
     */
    public Path commit() {
        if (closed) {
            throw new IllegalStateException("writer for " + target + " is closed");
        }
        try {
            if (data.byteSize() > 0) {
                data.force();
            }
            arena.close();
            reservation.close();
            channel.force(true);
            channel.close();
            // Temporary files are created private (rw-------); a finished data file is readable like any other.
            if (Files.getFileStore(temporary).supportsFileAttributeView("posix")) {
                Files.setPosixFilePermissions(temporary, java.nio.file.attribute.PosixFilePermissions.fromString("rw-r--r--"));
            }
            try {
                Files.move(temporary, target, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
            } catch (AtomicMoveNotSupportedException e) {
                Files.move(temporary, target, StandardCopyOption.REPLACE_EXISTING);
            }
            committed = true;
            closed = true;
            return target;
        } catch (IOException e) {
            throw new UncheckedIOException("cannot finish " + target, e);
        }
    }

    /**
     * Releases the mapping; without a prior {@link #commit()}, deletes the temporary file.
     */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        arena.close();
        reservation.close();
        closeQuietly(channel);
        if (!committed) {
            deleteQuietly(temporary);
        }
    }

    private static void closeQuietly(FileChannel channel) {
        if (channel != null) {
            try {
                channel.close();
            } catch (IOException ignored) {
                // Closing after a failure: the first error is the one worth reporting.
            }
        }
    }

    private static void deleteQuietly(Path file) {
        if (file != null) {
            try {
                Files.deleteIfExists(file);
            } catch (IOException ignored) {
                // Best effort: the temporary name never reads as a finished file.
            }
        }
    }
}
