package dev.memfit.io.storage;

import dev.memfit.NativeMemory;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFilePermissions;

/**
 * A new file written in place through a read-write mapping under a temporary name, then moved to its final name.
 *
 * <p>The shared mechanism of memfit's writers: the header is written first, the file is extended sparsely to its
 * final size, the data region is mapped, and {@link #commit()} flushes and renames atomically. Closing without
 * committing deletes the temporary file, so an interrupted run never leaves a file that reads as complete.
 *
 * <p>The target is locked ({@link OutputLock}) from {@link #open} until the writer is closed: a second writer of the
 * same file, in this process or another, fails at once. The temporary name is unique to this writer
 * ({@link TempFiles#beside}), and the stale temporary files of dead writers of the same target are removed.
 */
public final class MappedFileWriter implements AutoCloseable {

    private final Path target;
    private final Path temporary;
    private final Arena arena;
    private final FileChannel channel;
    private final MemorySegment data;
    private final NativeMemory.Reservation reservation;
    private final OutputLock lock;
    private final long headerBytes;
    private long keptDataBytes = -1;
    private boolean committed;
    private boolean closed;

    private MappedFileWriter(Path target, Path temporary, Arena arena, FileChannel channel, MemorySegment data,
                             NativeMemory.Reservation reservation, OutputLock lock, long headerBytes) {
        this.headerBytes = headerBytes;
        this.lock = lock;
        this.target = target;
        this.temporary = temporary;
        this.arena = arena;
        this.channel = channel;
        this.data = data;
        this.reservation = reservation;
    }

    /**
     * Creates the temporary file with its header and maps its data region.
     *
     * @param target the final path
     * @param header the bytes before the data
     * @param dataBytes the size of the data region
     * @return the writer
     * @throws dev.memfit.MemfitException when another writer holds the target's lock
     */
    public static MappedFileWriter open(Path target, byte[] header, long dataBytes) {
        if (dataBytes < 0) {
            throw new IllegalArgumentException(target + ": the data region cannot have " + dataBytes + " bytes");
        }
        OutputLock lock = OutputLock.acquire(target);
        Arena arena = Arena.ofShared();
        Path temporary = null;
        FileChannel channel = null;
        try {
            temporary = TempFiles.beside(target);
            channel = FileChannel.open(temporary, StandardOpenOption.CREATE_NEW, StandardOpenOption.READ,
                    StandardOpenOption.WRITE);
            channel.write(ByteBuffer.wrap(header), 0);
            if (dataBytes > 0) {
                // Extends the file sparsely: a file of many times the RAM costs nothing until it is written.
                channel.write(ByteBuffer.allocate(1), header.length + dataBytes - 1);
            }
            MemorySegment data = dataBytes == 0 ? MemorySegment.NULL
                    : channel.map(FileChannel.MapMode.READ_WRITE, header.length, dataBytes, arena);
            return new MappedFileWriter(target, temporary, arena, channel, data, NativeMemory.MAPPED.reserve(dataBytes),
                    lock, header.length);
        } catch (IOException | RuntimeException e) {
            arena.close();
            closeQuietly(channel);
            deleteQuietly(temporary);
            lock.close();
            if (e instanceof IOException io) {
                throw new UncheckedIOException("cannot create " + target, io);
            }
            throw (RuntimeException) e;
        }
    }

    /**
     * The writable data region (after the header).
     *
     * @return the mapping
     */
    public MemorySegment data() {
        return data;
    }

    /**
     * The final path.
     *
     * @return the target
     */
    public Path target() {
        return target;
    }

    /**
     * Rewrites bytes at the start of the file, such as a header whose statistics are known only at the end.
     *
     * @param header the new bytes, no longer than the original header
     */
    public void rewriteHeader(byte[] header) {
        try {
            channel.write(ByteBuffer.wrap(header), 0);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot write the header of " + target, e);
        }
    }

    /**
     * Keeps only the first bytes of the data region: the file is cut to the header plus {@code bytes} at
     * {@link #commit()}, for output whose final size is known only at the end (the rest of the region, never
     * written, costs no disk: the file was extended sparsely).
     *
     * @param bytes at most the data region's size
     */
    public void truncateData(long bytes) {
        if (bytes < 0 || bytes > data.byteSize()) {
            throw new IllegalArgumentException(target + ": cannot keep " + bytes + " bytes of a " + data.byteSize()
                    + "-byte data region");
        }
        keptDataBytes = bytes;
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
            if (keptDataBytes >= 0) {
                // after unmapping: a mapped page past the new end would fault if touched
                channel.truncate(headerBytes + keptDataBytes);
            }
            channel.force(true);
            channel.close();
            // Temporary files are created private (rw-------); a finished data file is readable like any other.
            if (Files.getFileStore(temporary).supportsFileAttributeView("posix")) {
                Files.setPosixFilePermissions(temporary, PosixFilePermissions.fromString("rw-r--r--"));
            }
            AtomicMove.replace(temporary, target);
            committed = true;
            closed = true;
            lock.close();
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
        lock.close();
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
