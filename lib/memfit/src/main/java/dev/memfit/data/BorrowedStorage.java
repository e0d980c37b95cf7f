package dev.memfit.data;

import dev.memfit.io.storage.Storage;

import java.lang.foreign.MemorySegment;
import java.nio.file.Path;

/** A storage a loader uses without owning it: closing it leaves the storage (a shared object cache) open. */
record BorrowedStorage(Storage storage) implements Storage {

    @Override
    public void read(Path path, long position, MemorySegment into) {
        storage.read(path, position, into);
    }

    @Override
    public void willRead(Path path, long position, long length) {
        storage.willRead(path, position, length); // a cache fetches a batch's blocks in parallel only if told
    }

    @Override
    public boolean exists(Path path) {
        return storage.exists(path);
    }

    @Override
    public long size(Path path) {
        return storage.size(path);
    }

    @Override
    public String describe() {
        return storage.describe();
    }

    @Override
    public void close() {
        // the owner closes the storage
    }
}
