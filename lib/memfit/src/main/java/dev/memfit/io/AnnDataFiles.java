package dev.memfit.io;

import dev.memfit.MemfitException;
import dev.memfit.io.anndata.AnnData;
import dev.memfit.io.anndata.ReaderSettings;
import dev.memfit.io.hdf5.H5ad;
import dev.memfit.io.storage.Storage;
import dev.memfit.io.zarr.ZarrAnnData;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.util.Locale;
import java.util.stream.Stream;

/**
 * Opens an AnnData object whatever holds it, picking the reader from what the path is: an {@code .h5ad} file
 * ({@link H5ad}), or a zarr store ({@link ZarrAnnData}): a folder with a {@code .zgroup} as anndata's
 * {@code write_zarr} writes it, or a {@code .zarr.zip} archive; a store in a bucket through an object cache
 * ({@link Builder#optStorage}: {@code s3:/bucket/atlas.zarr}, the path form of {@code s3://bucket/atlas.zarr}), read
 * chunk by chunk. Every command and loader that reads AnnData opens it here, so both formats read the same way.
 *
 * <pre>{@code
 * try (AnnData cells = AnnDataFiles.builder().setFile(Path.of("atlas.zarr")).optLayer("counts").open()) {
 *     long n = cells.observations();
 *     Map<String, FrameColumn> obs = cells.frameColumns("obs");
 * }
 * }</pre>
 */
public final class AnnDataFiles {

    private AnnDataFiles() {
    }

    /**
     * Opens a local {@code .h5ad}, {@code .zarr} folder or {@code .zarr.zip} with the default settings (X, a console
     * progress bar for a CSC transpose).
     *
     * @param file the file or store
     * @return the reader, to be closed
     */
    public static AnnData open(Path file) {
        return builder().setFile(file).open();
    }

    /**
     * A reader with settings: {@code AnnDataFiles.builder().setFile(f).optLayer("raw/X").optProgress(p).open()}.
     *
     * @return the builder
     */
    public static Builder builder() {
        return new Builder();
    }

    /**
     * Whether a local path is a zarr store: a folder holding {@code .zgroup} (or named {@code .zarr}), or a file named
     * {@code .zip} ({@code .zarr.zip}).
     *
     * @param path a file or folder
     * @return true for a zarr store
     */
    public static boolean isZarr(Path path) {
        if (Files.isDirectory(path)) {
            return Files.exists(path.resolve(".zgroup")) || isZarrName(path.toString());
        }
        return path.getFileName() != null && path.getFileName().toString().toLowerCase(Locale.ROOT).endsWith(".zip");
    }

    /**
     * Whether a name (a path, or an object's key) names a zarr store: it ends with {@code .zarr}, {@code .zarr/} or
     * {@code .zip}.
     *
     * @param name the name
     * @return true for a zarr store's name
     */
    public static boolean isZarrName(String name) {
        String lower = name.toLowerCase(Locale.ROOT);
        while (lower.endsWith("/")) {
            lower = lower.substring(0, lower.length() - 1);
        }
        return lower.endsWith(".zarr") || lower.endsWith(".zip");
    }

    /**
     * What identifies the contents of a local file or store for resuming work on it: its bytes and its newest
     * modification time (every file of a folder).
     *
     * @param path the file or store
     * @return bytes and time
     */
    public static Version version(Path path) {
        try {
            if (!Files.isDirectory(path)) {
                return new Version(Files.size(path), Files.getLastModifiedTime(path).toString());
            }
            long bytes = 0;
            FileTime newest = Files.getLastModifiedTime(path);
            try (Stream<Path> files = Files.walk(path)) {
                for (Path file : files.toList()) {
                    FileTime modified = Files.getLastModifiedTime(file);
                    newest = modified.compareTo(newest) > 0 ? modified : newest;
                    if (Files.isRegularFile(file)) {
                        bytes += Files.size(file);
                    }
                }
            }
            return new Version(bytes, newest.toString());
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read " + path, e);
        }
    }

    /**
     * What identifies the contents of a zarr store in a bucket: for a {@code .zarr.zip} its size and ETag, for a
     * folder the bytes of all its objects and a CRC-32C of their keys and ETags (one listing of the prefix), so that
     * any object replaced since changes it.
     *
     * @param cache the object cache the store is read through
     * @param store the store's address
     * @return bytes and a tag
     */
    public static Version version(dev.memfit.io.cloud.ObjectCache cache, dev.memfit.io.cloud.ObjectUri store) {
        if (store.key().toLowerCase(Locale.ROOT).endsWith(".zip")) {
            dev.memfit.io.cloud.ObjectInfo info = cache.open(store);
            return new Version(info.size(), info.etag());
        }
        String key = store.key().endsWith("/") ? store.key() : store.key() + "/";
        java.util.zip.CRC32C crc = new java.util.zip.CRC32C();
        long bytes = 0;
        for (dev.memfit.io.cloud.ObjectInfo object : cache.list(new dev.memfit.io.cloud.ObjectUri(store.scheme(),
                store.bucket(), key))) {
            bytes += object.size();
            crc.update((object.uri().key() + " " + object.etag() + "\n").getBytes(java.nio.charset.StandardCharsets.UTF_8));
        }
        if (bytes == 0) {
            throw new MemfitException(store + ": no objects under " + key + "; expected a zarr store");
        }
        return new Version(bytes, String.format("crc32c-%08x", crc.getValue()));
    }

    /**
     * What identifies a file's or store's contents.
     *
     * @param bytes its bytes (every file of a folder)
     * @param modified its newest modification time
     */
    public record Version(long bytes, String modified) {
    }

    /** Settings of a reader: the file or store, its storage, and the settings every AnnData reader has. */
    public static final class Builder extends ReaderSettings<Builder> {
        private Path file;
        private Storage storage;

        private Builder() {
        }

        @Override
        protected Builder self() {
            return this;
        }

        /**
         * Sets the file or store (required): an {@code .h5ad}, a {@code .zarr} folder or a {@code .zarr.zip}; with
         * {@link #optStorage}, the store's path in that storage.
         *
         * @param path the file or store
         * @return this builder
         */
        public Builder setFile(Path path) {
            this.file = path;
            return this;
        }

        /**
         * Reads a zarr store through a storage the caller keeps open (default: local files), such as an
         * {@code ObjectCache} for a store in a bucket ({@code s3:/bucket/atlas.zarr}, or {@code .zarr.zip}), read chunk
         * by chunk through the cache. An {@code .h5ad} in a bucket is staged whole first ({@code ObjectCache.stage}) and
         * opened as the local file it becomes.
         *
         * @param bytes the storage, or null for local files
         * @return this builder
         */
        public Builder optStorage(Storage bytes) {
            this.storage = bytes;
            return this;
        }

        /**
         * Opens the file or store with the reader its kind needs and checks its layout.
         *
         * @return the reader, to be closed
         * @throws MemfitException naming the setting to change
         */
        public AnnData open() {
            if (file == null) {
                throw new MemfitException("setFile(path) is required: the .h5ad, .zarr folder or .zarr.zip to read");
            }
            boolean zarr = storage == null ? isZarr(file)
                    : isZarrName(file.toString()) || !file.toString().toLowerCase(Locale.ROOT).endsWith(".h5ad");
            if (zarr) {
                return copyTo(ZarrAnnData.builder().setStore(file).optStorage(storage)).open();
            }
            if (storage != null && !Files.isRegularFile(file)) {
                throw new MemfitException(file + ": an .h5ad is read from a local file; stage an object in a bucket first "
                        + "(ObjectCache.stage(uri).file()), or give a .zarr store, which is read chunk by chunk");
            }
            return copyTo(H5ad.builder().setFile(file)).open();
        }
    }
}
