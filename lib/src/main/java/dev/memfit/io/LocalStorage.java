package dev.memfit.io;

import dev.memfit.MemfitException;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.concurrent.ConcurrentHashMap;

/** Positional reads through one open {@link FileChannel} per file; safe for concurrent readers. */
final class LocalStorage implements Storage {

    private final ConcurrentHashMap<Path, FileChannel> channels = new ConcurrentHashMap<>();

    private FileChannel channel(Path file) {
        return channels.computeIfAbsent(file, path -> {
            try {
                return FileChannel.open(path, StandardOpenOption.READ);
            } catch (NoSuchFileException e) {
                throw new MemfitException(path + ": no such file", e);
            } catch (IOException e) {
                throw new UncheckedIOException("cannot open " + path, e);
            }
        });
    }

    @Override
    public void read(Path file, long position, MemorySegment into) {
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
        for (FileChannel channel : channels.values()) {
            try {
                channel.close();
            } catch (IOException ignored) {
                // Read-only channels: nothing to lose on close.
            }
        }
        channels.clear();
    }
}
