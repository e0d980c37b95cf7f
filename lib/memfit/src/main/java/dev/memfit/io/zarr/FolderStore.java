package dev.memfit.io.zarr;

import dev.memfit.InvalidFileException;
import dev.memfit.io.storage.Storage;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Stream;

/**
 * A zarr store that is a folder: each key a file under the root ({@code X/data/0.1}, or {@code X/data/0/1} with the
 * {@code /} dimension separator), read through a storage, so that the same code reads a local folder and, through an
 * object cache, a bucket prefix. A key is absent when {@link Storage#exists} says so.
 */
final class FolderStore implements ZarrStore {

    private final Storage storage;
    private final Path root;
    private final boolean ownsStorage;
    /** Whether each metadata key asked about exists. */
    private final java.util.Map<String, Boolean> known = new java.util.concurrent.ConcurrentHashMap<>();

    FolderStore(Storage storage, Path root, boolean ownsStorage) {
        this.storage = storage;
        this.root = root;
        this.ownsStorage = ownsStorage;
    }

    @Override
    public byte[] get(String key) {
        Path file = file(key);
        if (!storage.exists(file)) {
            return null;
        }
        long size = storage.size(file);
        if (size > Integer.MAX_VALUE - 8) {
            throw new InvalidFileException(file, -1, "a zarr key of at most 2 GiB", size + " bytes");
        }
        byte[] bytes = new byte[(int) size];
        storage.read(file, 0, MemorySegment.ofArray(bytes));
        return bytes;
    }

    @Override
    public boolean contains(String key) {
        if (!isMetadata(key)) {
            return storage.exists(file(key));
        }
        // metadata keys are asked for again and again while a store is read (and each question is a request in a
        // bucket): the answer is kept, absent keys included, as the store is read, never written
        return known.computeIfAbsent(key, k -> storage.exists(file(k)));
    }

    /** The file of a key, refusing one that is not a key inside the store (see {@link ZarrStore#isValidKey}). */
    private Path file(String key) {
        if (!ZarrStore.isValidKey(key)) {
            throw new InvalidFileException(location(key), -1, "a zarr key naming a file inside the store (relative, no NUL,"
                    + " no empty, '.' or '..' parts)", "'" + ZarrStore.printable(key) + "'");
        }
        return root.resolve(key);
    }

    private static boolean isMetadata(String key) {
        return key.endsWith(".zarray") || key.endsWith(".zgroup") || key.endsWith(".zattrs") || key.endsWith(".zmetadata");
    }

    @Override
    public long size(String key) {
        Path file = file(key);
        return storage.exists(file) ? storage.size(file) : -1;
    }

    @Override
    public long bytes() {
        if (root.getFileSystem() != java.nio.file.FileSystems.getDefault() || !Files.isDirectory(root)) {
            return -1;
        }
        try (Stream<Path> files = Files.walk(root)) {
            long total = 0;
            for (Path file : files.filter(Files::isRegularFile).toList()) {
                total += Files.size(file);
            }
            return total;
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read the sizes of the files under " + root, e);
        }
    }

    @Override
    public List<String> list(String prefix) {
        Path folder = prefix.isEmpty() ? root : root.resolve(prefix);
        if (root.getFileSystem() != java.nio.file.FileSystems.getDefault() || !Files.isDirectory(folder)) {
            return null;
        }
        try (Stream<Path> children = Files.list(folder)) {
            return children.map(p -> p.getFileName().toString()).sorted().toList();
        } catch (IOException e) {
            throw new UncheckedIOException("cannot list " + folder, e);
        }
    }

    @Override
    public Path location(String key) {
        return key.isEmpty() ? root : Path.of(root + "/" + ZarrStore.printable(key));
    }

    @Override
    public void close() {
        if (ownsStorage) {
            storage.close();
        }
    }

    @Override
    public String toString() {
        return root + " (" + storage.describe() + ")";
    }
}
