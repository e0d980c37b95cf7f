package dev.memfit.io.storage;

import dev.memfit.InvalidFileException;
import dev.memfit.MemfitException;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * Positional reads, keeping up to {@value #OPEN_FILES} files open (least recently used closed first), so that a
 * folder of many small files costs an open per file per epoch, as it does for any reader; safe for concurrent use.
 */
final class LocalStorage implements Storage {

    private static final int OPEN_FILES = 256;

    private final Map<Path, FileChannel> channels = new LinkedHashMap<>(64, 0.75f, true) {
        @Override
        protected boolean removeEldestEntry(Map.Entry<Path, FileChannel> eldest) {
            if (size() > OPEN_FILES) {
                closeQuietly(eldest.getValue());
                return true;
            }
            return false;
        }
    };

    private FileChannel channel(Path file) {
        synchronized (channels) {
            FileChannel open = channels.get(file);
            if (open != null && open.isOpen()) {
                return open;
            }
            try {
                FileChannel channel = FileChannel.open(file, StandardOpenOption.READ);
                channels.put(file, channel);
                return channel;
            } catch (NoSuchFileException e) {
                throw new MemfitException(file + ": no such file", e);
            } catch (IOException e) {
                throw new UncheckedIOException("cannot open " + file, e);
            }
        }
    }

    private static void closeQuietly(FileChannel channel) {
        try {
            channel.close();
        } catch (IOException ignored) {
            // Read-only channels: nothing to lose on close.
        }
    }

    @Override
    public void read(Path file, long position, MemorySegment into) {
        try {
            readOnce(file, position, into);
        } catch (UncheckedIOException e) {
            if (!(e.getCause() instanceof java.nio.channels.ClosedChannelException)) {
                throw e;
            }
            // Another thread evicted (closed) this file's channel mid-read: open it again once.
            readOnce(file, position, into);
        }
    }

    private void readOnce(Path file, long position, MemorySegment into) {
        FileChannel channel = channel(file);
        long done = 0;
        long total = into.byteSize();
        try {
            while (done < total) {
                long n = Math.min(total - done, 1L << 30);
                ByteBuffer buffer = into.asSlice(done, n).asByteBuffer();
                while (buffer.hasRemaining()) {
                    int read = channel.read(buffer, position + done + buffer.position());
                    if (read < 0) {
                        throw new InvalidFileException(file, position + done + buffer.position(),
                                total + " bytes from byte " + position, "the end of the file after "
                                        + (done + buffer.position()) + " bytes");
                    }
                }
                done += n;
            }
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read " + file + " at byte " + (position + done), e);
        }
    }

    @Override
    public boolean exists(Path file) {
        return java.nio.file.Files.isRegularFile(file);
    }

    @Override
    public long size(Path file) {
        try {
            return channel(file).size();
        } catch (IOException e) {
            throw new UncheckedIOException("cannot stat " + file, e);
        }
    }

    @Override
    public String describe() {
        return "local";
    }

    @Override
    public void close() {
        synchronized (channels) {
            channels.values().forEach(LocalStorage::closeQuietly);
            channels.clear();
        }
    }
}
