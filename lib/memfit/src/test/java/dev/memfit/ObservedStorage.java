package dev.memfit;

import dev.memfit.io.storage.Storage;

import java.lang.foreign.MemorySegment;
import java.nio.file.Path;

/**
 * Storage for tests that watches every read (counts it, records its thread, delays it) before the inner storage
 * serves the bytes.
 *
 * @param inner where the bytes come from
 * @param name what {@link #describe()} says
 * @param observer called before each read
 */
public record ObservedStorage(Storage inner, String name, Observer observer) implements Storage {

    /** Sees one read before it is served. */
    @FunctionalInterface
    public interface Observer {
        /**
         * Called with the read's arguments.
         *
         * @param file the file
         * @param position the byte position
         * @param into where the bytes go
         */
        void beforeRead(Path file, long position, MemorySegment into);
    }

    @Override
    public void read(Path file, long position, MemorySegment into) {
        observer.beforeRead(file, position, into);
        inner.read(file, position, into);
    }

    @Override
    public long size(Path file) {
        return inner.size(file);
    }

    @Override
    public String describe() {
        return name;
    }

    @Override
    public void close() {
        inner.close();
    }
}
