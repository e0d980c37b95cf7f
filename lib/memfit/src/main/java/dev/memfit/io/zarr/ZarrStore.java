package dev.memfit.io.zarr;

import java.nio.file.Path;
import java.util.List;

/**
 * The keys of a zarr store and their bytes: a folder ({@link FolderStore}) or a zip archive ({@link ZipStore}), both
 * read through a {@link dev.memfit.io.storage.Storage}. Keys are relative, {@code /}-separated ({@code X/data/0},
 * {@code obs/.zattrs}). Thread-safe.
 */
sealed interface ZarrStore extends AutoCloseable permits FolderStore, ZipStore {

    /**
     * The bytes of a key.
     *
     * @param key the key
     * @return its bytes, or null when the store has no such key
     */
    byte[] get(String key);

    /**
     * Whether the store has a key, without reading it.
     *
     * @param key the key
     * @return true when present
     */
    boolean contains(String key);

    /**
     * The stored size of a key (compressed, as it lies in the store), without reading it.
     *
     * @param key the key
     * @return bytes, or -1 when the store has no such key
     */
    long size(String key);

    /**
     * The bytes the whole store takes: a local folder's files, an archive's size.
     *
     * @return bytes, or -1 when unknown without a listing (a folder in a bucket)
     */
    long bytes();

    /**
     * The names directly under a prefix (a group's arrays, groups and metadata files), sorted.
     *
     * @param prefix a group's key, "" for the root
     * @return the names, or null when this store cannot list (a folder on a storage without listings)
     */
    List<String> list(String prefix);

    /**
     * Where a key lives, for messages: the file, or the archive and the entry ({@code adata.zarr.zip!/X/data/0}).
     *
     * @param key the key
     * @return a path naming it
     */
    Path location(String key);

    /**
     * A key as it can appear in a path: NUL (which no file name holds, and {@link Path} refuses) written {@code \0}.
     *
     * @param key a key
     * @return the key, printable
     */
    static String printable(String key) {
        return key.replace("\0", "\\0");
    }

    /**
     * Whether a key names something inside a store: relative, without NUL, without empty, {@code .} or {@code ..}
     * segments (zarr-python refuses such keys too). Names read from a store's metadata (a dataframe's columns) become
     * keys, so a damaged store could otherwise name a file outside a folder store.
     *
     * @param key a key
     * @return true when it may be looked up
     */
    static boolean isValidKey(String key) {
        if (key.isEmpty() || key.indexOf('\0') >= 0 || key.startsWith("/") || key.endsWith("/")) {
            return false;
        }
        for (String segment : key.split("/", -1)) {
            if (segment.isEmpty() || segment.equals(".") || segment.equals("..")) {
                return false;
            }
        }
        return true;
    }

    /** Releases what the store opened itself. */
    @Override
    void close();
}
