package dev.memfit.io.npy;

import dev.memfit.DType;
import dev.memfit.InvalidFileException;
import dev.memfit.MemfitException;
import dev.memfit.ProgressListener;
import dev.memfit.NativeMemory;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;

/**
 * Reads, maps and writes numpy {@code .npy} files (format versions 1.0, 2.0 and 3.0).
 *
 * <pre>{@code
 * try (NpyArray counts = Npy.map(Path.of("counts.npy"))) {
 *     double total = counts.sum();
 * }
 * try (NpyWriter out = Npy.create(Path.of("big.npy"), NpyHeader.of(DType.FLOAT32, rows, cols))) {
 *     out.writeRows(0, chunk);      // fill in chunks, like numpy's open_memmap(mode="w+")
 *     out.commit();                 // atomically renamed into place; without commit nothing is left behind
 * }
 * }</pre>
 */
public final class Npy {

    /** Large enough for any header numpy writes for arrays of up to a few thousand dimensions. */
    private static final int HEADER_PROBE_BYTES = 64 * 1024;

    private Npy() {
    }

    /**
     * Reads and validates a file's header, including that the file size matches the shape.
     *
     * @param file the {@code .npy} file
     * @return the header
     * @throws InvalidFileException when the file is not a valid, supported {@code .npy} file
     */
    public static NpyHeader readHeader(Path file) {
        try (FileChannel channel = FileChannel.open(file, StandardOpenOption.READ)) {
            return readHeader(file, channel);
        } catch (NoSuchFileException e) {
            throw new MemfitException(file + ": no such file", e);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read " + file, e);
        }
    }

    /**
     * Reads and validates a file's header through a storage, such as an object cache (the path form of an object,
     * {@code s3:/bucket/key}): only the header's bytes are read.
     *
     * @param storage where the bytes come from
     * @param file the {@code .npy} file or object
     * @return the header
     * @throws InvalidFileException when the file is not a valid, supported {@code .npy} file
     */
    public static NpyHeader readHeader(dev.memfit.io.storage.Storage storage, Path file) {
        long size = storage.size(file);
        return NpyHeader.decode(file, headerBytes(storage, file, size), size);
    }

    /**
     * Reads and validates the header of a file holding a structured array (numpy records with named fields, such as
     * a cryoSPARC {@code .cs}), including that the file holds every row.
     *
     * @param file the file
     * @return the header: fields with their offsets in a row, the rows
     * @throws InvalidFileException when the file is not a valid {@code .npy} of records
     */
    public static NpyRecords readRecords(Path file) {
        if (Files.isDirectory(file)) {
            throw new MemfitException(file + ": expected a .npy file of records, found a folder");
        }
        try (dev.memfit.io.storage.Storage storage = dev.memfit.io.storage.Storage.local()) {
            return readRecords(storage, file);
        }
    }

    /**
     * Reads and validates the header of a file of records through a storage (an object's path form,
     * {@code s3:/bucket/key}, through an object cache): only the header's bytes are read.
     *
     * @param storage where the bytes come from
     * @param file the file or object
     * @return the header
     * @throws InvalidFileException when the file is not a valid {@code .npy} of records
     */
    public static NpyRecords readRecords(dev.memfit.io.storage.Storage storage, Path file) {
        long size = storage.size(file);
        return NpyRecords.decode(file, headerBytes(storage, file, size), size);
    }

    /** The first bytes of a file: a probe, then the whole header when a version 2.0 or 3.0 one is longer. */
    private static ByteBuffer headerBytes(dev.memfit.io.storage.Storage storage, Path file, long size) {
        ByteBuffer prefix = readPrefix(storage, file, Math.min(size, HEADER_PROBE_BYTES));
        if (prefix.remaining() >= 12 && prefix.get(6) > 1) {
            long declared = 12L + Integer.toUnsignedLong(prefix.order(java.nio.ByteOrder.LITTLE_ENDIAN).getInt(8));
            if (declared > prefix.capacity() && declared <= size && declared <= 12L + NpyHeader.MAX_HEADER_BYTES) {
                prefix = readPrefix(storage, file, declared);
            }
        }
        return prefix;
    }

    private static ByteBuffer readPrefix(dev.memfit.io.storage.Storage storage, Path file, long bytes) {
        ByteBuffer prefix = ByteBuffer.allocate(Math.toIntExact(bytes));
        storage.read(file, 0, java.lang.foreign.MemorySegment.ofBuffer(prefix));
        return prefix;
    }

    private static NpyHeader readHeader(Path file, FileChannel channel) throws IOException {
        long size = channel.size();
        ByteBuffer prefix = ByteBuffer.allocate((int) Math.min(size, HEADER_PROBE_BYTES));
        readFully(channel, prefix, 0);
        prefix.flip();
        if (prefix.remaining() >= 12 && prefix.get(6) > 1) {
            long declared = 12L + Integer.toUnsignedLong(prefix.order(java.nio.ByteOrder.LITTLE_ENDIAN).getInt(8));
            if (declared > prefix.capacity() && declared <= size && declared <= 12L + NpyHeader.MAX_HEADER_BYTES) {
                prefix = ByteBuffer.allocate(Math.toIntExact(declared));
                readFully(channel, prefix, 0);
                prefix.flip();
            }
        }
        return NpyHeader.decode(file, prefix, size);
    }

    private static void readFully(FileChannel channel, ByteBuffer buffer, long position) throws IOException {
        long at = position;
        while (buffer.hasRemaining()) {
            int n = channel.read(buffer, at);
            if (n < 0) {
                break;
            }
            at += n;
        }
    }

    /**
     * Memory-maps a file read-only. Works for files of any size; pages are read on demand by the OS.
     *
     * @param file the {@code .npy} file
     * @return the mapped array, to be closed
     */
    public static NpyArray map(Path file) {
        return open(file, "map", (channel, header, arena) -> {
            MemorySegment whole = channel.map(FileChannel.MapMode.READ_ONLY, 0, channel.size(), arena);
            MemorySegment data = whole.asSlice(header.dataOffset(), header.dataBytes()).asReadOnly();
            return new NpyArray(file, header, arena, data, true, NativeMemory.MAPPED.reserve(channel.size()));
        });
    }

    /**
     * Reads a whole file into native (off-heap) memory with plain reads, with a console progress bar for large files.
     *
     * @param file the {@code .npy} file
     * @return the array in memory, to be closed
     */
    public static NpyArray load(Path file) {
        return load(file, ProgressListener.console());
    }

    /**
     * Reads a whole file into native (off-heap) memory with plain reads, reporting progress for files over 256 MB.
     *
     * @param file the {@code .npy} file
     * @param listener where progress goes
     * @return the array in memory, to be closed
     */
    public static NpyArray load(Path file, ProgressListener listener) {
        return open(file, "read", (channel, header, arena) -> {
            MemorySegment data = arena.allocate(Math.max(1, header.dataBytes()), 64).asSlice(0, header.dataBytes());
            long position = header.dataOffset();
            long chunk = 64L << 20;
            boolean large = header.dataBytes() > (256L << 20);
            try (ProgressListener.Task progress = large ? listener.start("Loading " + file.getFileName(), header.dataBytes() >> 20, "MiB") : null) {
                for (long done = 0; done < header.dataBytes(); ) {
                    long n = Math.min(chunk, header.dataBytes() - done);
                    ByteBuffer target = data.asSlice(done, n).asByteBuffer();
                    readFully(channel, target, position + done);
                    if (target.hasRemaining()) {
                        throw new InvalidFileException(file, position + done + target.position(), "more data",
                                "the end of the file");
                    }
                    done += n;
                    if (progress != null) {
                        progress.step(n >> 20);
                    }
                }
            }
            return new NpyArray(file, header, arena, data, false, NativeMemory.ALLOCATED.reserve(header.dataBytes()));
        });
    }

    /** Turns a validated header and an open channel into an array backed by memory of the given arena. */
    private interface ArrayOpener {
        NpyArray open(FileChannel channel, NpyHeader header, Arena arena) throws IOException;
    }

    /** Opens, validates and hands over; on any failure the arena is closed and the error names the file. */
    private static NpyArray open(Path file, String action, ArrayOpener opener) {
        Arena arena = Arena.ofShared();
        try (FileChannel channel = FileChannel.open(file, StandardOpenOption.READ)) {
            return opener.open(channel, readHeader(file, channel), arena);
        } catch (NoSuchFileException e) {
            arena.close();
            throw new MemfitException(file + ": no such file", e);
        } catch (IOException e) {
            arena.close();
            throw new UncheckedIOException("cannot " + action + " " + file, e);
        } catch (RuntimeException e) {
            arena.close();
            throw e;
        }
    }

    /**
     * Creates a file of the header's shape to be filled in place, like numpy's {@code open_memmap(mode="w+")}.
     *
     * <p>The data is written to a temporary file beside the target and moved into place by
     * {@link NpyWriter#commit()}; closing without committing deletes it, so a failed run never leaves a file that
     * looks complete.
     *
     * @param file the final path
     * @param header the type, shape, byte order, memory order and (minimum) version
     * @return the writer, to be committed and closed
     */
    public static NpyWriter create(Path file, NpyHeader header) {
        return NpyWriter.open(file, header);
    }

    /**
     * Writes a whole array in one call.
     *
     * @param file the final path
     * @param header the type and shape
     * @param data the elements in C order and the platform's byte order
     * @return the path written
     */
    public static Path write(Path file, NpyHeader header, MemorySegment data) {
        try (NpyWriter writer = create(file, header)) {
            writer.writeRows(0, data);
            return writer.commit();
        }
    }

    /**
     * Writes a float32 matrix.
     *
     * @param file the final path
     * @param rows the rows, all of the same length
     * @return the path written
     */
    public static Path write(Path file, float[][] rows) {
        int cols = rows.length == 0 ? 0 : rows[0].length;
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment data = arena.allocate(Math.max(1L, (long) rows.length * cols * Float.BYTES));
            for (int r = 0; r < rows.length; r++) {
                if (rows[r].length != cols) {
                    throw new IllegalArgumentException("row " + r + " has " + rows[r].length + " columns, row 0 has " + cols);
                }
                MemorySegment.copy(rows[r], 0, data, java.lang.foreign.ValueLayout.JAVA_FLOAT, (long) r * cols * Float.BYTES, cols);
            }
            return write(file, NpyHeader.of(DType.FLOAT32, rows.length, cols), data);
        }
    }

    /**
     * Whether a file starts with the {@code .npy} magic.
     *
     * @param file any file
     * @return true when it looks like {@code .npy}
     */
    public static boolean looksLikeNpy(Path file) {
        try (var in = Files.newInputStream(file)) {
            byte[] magic = in.readNBytes(NpyHeader.MAGIC.length);
            return java.util.Arrays.equals(magic, NpyHeader.MAGIC);
        } catch (IOException e) {
            return false;
        }
    }
}
