package dev.memfit.io.storage;

import dev.memfit.InvalidFileException;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;

/**
 * Where bytes of files come from: the local file system, through positional reads or memory mappings.
 *
 * <p>Lazy sources read through a {@code Storage} so that the same code can be measured on local disk and on
 * simulated network storage ({@code dev.memfit.bench.SlowStorage}, outside the library). Implementations are thread-safe.
 */
public interface Storage extends AutoCloseable {

    /**
     * Reads exactly {@code into.byteSize()} bytes of a file.
     *
     * @param file the file
     * @param position the offset of the first byte
     * @param into where to put the bytes
     * @throws InvalidFileException when the file ends before
     */
    void read(Path file, long position, MemorySegment into);

    /**
     * Says that a range of a file will be read soon, so that a storage whose requests are slow can start fetching it
     * in the background (an object cache fetches the missing blocks in parallel). A hint: it may do nothing, as it
     * does by default, and reads must not depend on it.
     *
     * @param file the file
     * @param position the offset of the first byte
     * @param length the bytes
     */
    default void willRead(Path file, long position, long length) {
        // local storages read fast enough on demand
    }

    /**
     * Whether a file exists, for formats whose absent files mean something: a zarr store leaves out chunks that hold
     * only the fill value. By default it asks for the size and counts a failure caused by a
     * {@link java.nio.file.NoSuchFileException} as absent; storages that can tell more cheaply override it.
     *
     * @param file the file
     * @return false when there is no such file
     * @throws dev.memfit.MemfitException when the storage cannot tell (any other failure)
     */
    default boolean exists(Path file) {
        try {
            size(file);
            return true;
        } catch (dev.memfit.MemfitException e) {
            for (Throwable cause = e; cause != null; cause = cause.getCause()) {
                if (cause instanceof java.nio.file.NoSuchFileException) {
                    return false;
                }
            }
            throw e;
        }
    }

    /**
     * The size of a file.
     *
     * @param file the file
     * @return bytes
     */
    long size(Path file);

    /**
     * A short description for tables, such as "local" or "slow (5 ms, 100 MB/s)".
     *
     * @return the description
     */
    String describe();

    /** Closes open files. */
    @Override
    void close();

    /**
     * Positional reads from the local file system, keeping files open between reads.
     *
     * @return the storage
     */
    static Storage local() {
        return new LocalStorage();
    }

    /**
     * Reads by copying from memory mappings of whole files: no system call per read, the fastest way to read
     * page-cached data at random. For a few large files.
     *
     * @return the storage
     */
    static Storage mapped() {
        return new MappedStorage();
    }
}
