package dev.memfit.io.storage;

import dev.memfit.MemfitException;
import dev.memfit.ProgressListener;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.zip.CRC32C;

/**
 * Copies a data file to fast local scratch once, with a progress bar, and verifies the copy before giving it its
 * final name: the lab-guide advice for data on network storage.
 *
 * <p>The checksum is CRC32C (hardware-accelerated, several GB/s): it guards against truncated or corrupted copies,
 * not against tampering.
 */
public final class Scratch {

    private static final int BUFFER = 8 << 20;

    private Scratch() {
    }

    /**
     * A verified copy.
     *
     * @param copy where the file now is
     * @param bytes its size
     * @param checksum CRC32C of its contents, equal for source and copy
     * @param reused true when a verified copy was already there and was kept
     */
    public record Copy(Path copy, long bytes, long checksum, boolean reused) {
    }

    /**
     * Copies a file into a folder, unless an identical copy is already there.
     *
     * @param source the file on slow storage
     * @param scratchFolder the local folder
     * @return the copy
     */
    public static Copy copy(Path source, Path scratchFolder) {
        return copy(source, scratchFolder, ProgressListener.console());
    }

    /**
     * Copies a file into a folder, unless an identical copy is already there, reporting the copy's progress in MiB.
     *
     * @param source the file on slow storage
     * @param scratchFolder the local folder
     * @param listener where progress goes
     * @return the copy
     */
    public static Copy copy(Path source, Path scratchFolder, ProgressListener listener) {
        try (Storage local = Storage.local()) {
            return copyThrough(local, source, scratchFolder, listener);
        }
    }

    /**
     * A copy read through a given storage, such as a simulated network storage: the copy then pays that storage's
     * latency and bandwidth (one request per {@value #BUFFER}-byte block), as a copy off a network file system does,
     * and so does the check of an existing copy, which reads the source again.
     *
     * <pre>{@code
     * Scratch.Copy copy = Scratch.builder().setSource(file).optStorage(network).copyTo(Path.of("/scratch"));
     * }</pre>
     *
     * @return a builder
     */
    public static Builder builder() {
        return new Builder();
    }

    /** Settings of a copy to scratch: {@code setSource} is required. */
    public static final class Builder {

        private Path source;
        private Storage storage;
        private ProgressListener progress = ProgressListener.console();

        private Builder() {
        }

        /**
         * The file to copy (required).
         *
         * @param file the file, as the storage names it
         * @return this builder
         */
        public Builder setSource(Path file) {
            this.source = file;
            return this;
        }

        /**
         * The storage the source is read through; by default the local file system.
         *
         * @param value the storage; the caller closes it
         * @return this builder
         */
        public Builder optStorage(Storage value) {
            this.storage = value;
            return this;
        }

        /**
         * Where progress goes, in MiB; the console by default.
         *
         * @param listener the listener
         * @return this builder
         */
        public Builder optProgress(ProgressListener listener) {
            this.progress = listener;
            return this;
        }

        /**
         * Copies the source into a folder, unless an identical copy is already there.
         *
         * @param scratchFolder the local folder
         * @return the copy
         * @throws MemfitException when no source was set
         */
        public Copy copyTo(Path scratchFolder) {
            if (source == null) {
                throw new MemfitException("setSource(file) is required: the file to copy to " + scratchFolder);
            }
            ProgressListener listener = progress == null ? ProgressListener.silent() : progress;
            if (storage != null) {
                return copyThrough(storage, source, scratchFolder, listener);
            }
            return copy(source, scratchFolder, listener);
        }
    }

    /** The copy, its source read through {@code from} in blocks of {@value #BUFFER} bytes (the local files by default). */
    private static Copy copyThrough(Storage from, Path source, Path scratchFolder, ProgressListener listener) {
        Path target = scratchFolder.resolve(source.getFileName());
        // one copier per target: two runs copying the same file to one scratch folder would race on the rename
        try (OutputLock lock = OutputLock.acquire(target)) {
            long size = from.size(source);
            if (Files.exists(target) && Files.size(target) == size) {
                long sourceChecksum = checksum(from, source, size);
                if (checksum(target, null) == sourceChecksum) {
                    return new Copy(target, size, sourceChecksum, true);
                }
            }
            Path temporary = TempFiles.beside(target);
            CRC32C crc = new CRC32C();
            try (FileChannel out = FileChannel.open(temporary, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE);
                 ProgressListener.Task progress = listener.start("Copying " + source.getFileName(), size >> 20, "MiB")) {
                ByteBuffer buffer = ByteBuffer.allocateDirect(BUFFER);
                long done = 0;
                int read;
                while ((read = readThrough(from, source, done, size, buffer)) > 0) {
                    buffer.flip();
                    crc.update(buffer.duplicate());
                    while (buffer.hasRemaining()) {
                        out.write(buffer);
                    }
                    progress.step(((done + read) >> 20) - (done >> 20));
                    done += read;
                    buffer.clear();
                }
                out.force(true);
            }
            long copied = checksum(temporary, null);
            if (copied != crc.getValue() || Files.size(temporary) != size) {
                Files.deleteIfExists(temporary);
                throw new MemfitException(target + ": the copy of " + source + " does not match it (CRC32C "
                        + Long.toHexString(copied) + " vs " + Long.toHexString(crc.getValue()) + "); nothing was kept");
            }
            AtomicMove.replace(temporary, target);
            return new Copy(target, size, copied, false);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot copy " + source + " to " + scratchFolder, e);
        }
    }

    /** Fills the buffer with the next block of the source read through the storage; 0 at the end. */
    private static int readThrough(Storage from, Path source, long position, long size, ByteBuffer buffer) {
        int length = (int) Math.min(buffer.remaining(), size - position);
        if (length <= 0) {
            return 0;
        }
        from.read(source, position, MemorySegment.ofBuffer(buffer).asSlice(0, length));
        buffer.position(length);
        return length;
    }

    private static long checksum(Storage from, Path source, long size) {
        CRC32C crc = new CRC32C();
        ByteBuffer buffer = ByteBuffer.allocateDirect(BUFFER);
        long position = 0;
        int read;
        while ((read = readThrough(from, source, position, size, buffer)) > 0) {
            buffer.flip();
            crc.update(buffer);
            buffer.clear();
            position += read;
        }
        return crc.getValue();
    }

    /**
     * The CRC32C of a file's contents.
     *
     * @param file the file
     * @param progress a task to advance in MiB, or null
     * @return the checksum
     */
    public static long checksum(Path file, ProgressListener.Task progress) {
        CRC32C crc = new CRC32C();
        try (FileChannel in = FileChannel.open(file, StandardOpenOption.READ)) {
            ByteBuffer buffer = ByteBuffer.allocateDirect(BUFFER);
            while (in.read(buffer) > 0) {
                buffer.flip();
                crc.update(buffer);
                if (progress != null) {
                    progress.step(buffer.limit() >> 20);
                }
                buffer.clear();
            }
            return crc.getValue();
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read " + file, e);
        }
    }
}
