package dev.memfit.io.storage;

import dev.memfit.InvalidFileException;
import dev.memfit.MemfitException;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.channels.FileChannel;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Reads by copying from read-only memory mappings, one per file, kept until close: no system call per read, so
 * page-cached data comes at memory-copy speed. Meant for a few large files (stacks, a packed file); a folder of many
 * small files is better read with {@link Storage#local()}.
 */
final class MappedStorage implements Storage {

    private final Arena arena = Arena.ofShared();
    private final ConcurrentHashMap<Path, MemorySegment> mappings = new ConcurrentHashMap<>();
    private final java.util.List<dev.memfit.NativeMemory.Reservation> reservations =
            java.util.Collections.synchronizedList(new java.util.ArrayList<>());

    private MemorySegment mapping(Path file) {
        return mappings.computeIfAbsent(file, path -> {
            try (FileChannel channel = FileChannel.open(path, StandardOpenOption.READ)) {
                MemorySegment mapping = channel.map(FileChannel.MapMode.READ_ONLY, 0, channel.size(), arena);
                reservations.add(dev.memfit.NativeMemory.MAPPED.reserve(mapping.byteSize()));
                return mapping;
            } catch (NoSuchFileException e) {
                throw new MemfitException(path + ": no such file", e);
            } catch (IOException e) {
                throw new UncheckedIOException("cannot map " + path, e);
            }
        });
    }

    @Override
    public void read(Path file, long position, MemorySegment into) {
        MemorySegment mapping = mapping(file);
        if (position < 0 || position + into.byteSize() > mapping.byteSize()) {
            throw new InvalidFileException(file, position, into.byteSize() + " bytes from byte " + position,
                    "a file of " + mapping.byteSize() + " bytes");
        }
        MemorySegment.copy(mapping, position, into, 0, into.byteSize());
    }

    @Override
    public boolean exists(Path file) {
        return java.nio.file.Files.isRegularFile(file);
    }

    @Override
    public long size(Path file) {
        return mapping(file).byteSize();
    }

    @Override
    public String describe() {
        return "local, memory-mapped";
    }

    @Override
    public void close() {
        mappings.clear();
        arena.close();
        reservations.forEach(dev.memfit.NativeMemory.Reservation::close);
        reservations.clear();
    }
}
