package dev.memfit.cloud;

import dev.memfit.MemfitException;
import dev.memfit.io.storage.TempFiles;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.stream.Stream;
import java.util.zip.CRC32C;

/**
 * The contents of a {@link BlockCache}'s folder, for tools ({@code ./memfit cache ls|verify|clear}): what objects it
 * holds, whether every cached byte still matches its checksum, and emptying it. Needs no store and no credentials.
 */
public final class CacheFolder {

    private final Path folder;

    private CacheFolder(Path folder) {
        this.folder = folder.toAbsolutePath().normalize();
    }

    /**
     * A cache folder (it may not exist: then it is empty).
     *
     * @param folder the folder, such as {@link BlockCache#defaultFolder}
     * @return the folder
     */
    public static CacheFolder of(Path folder) {
        return new CacheFolder(folder);
    }

    /**
     * The folder.
     *
     * @return its absolute path
     */
    public Path folder() {
        return folder;
    }

    /**
     * One cached version of one object.
     *
     * @param uri the object ({@code s3://bucket/key}), or {@code ?} when its description is missing
     * @param etag the ETag of the version held
     * @param size the object's size in bytes
     * @param cachedBytes bytes of its blocks and staged copy on disk (checksums included)
     * @param blocks cached blocks
     * @param staged whether a whole staged copy is kept
     * @param lastUsed the latest use of any of its files
     * @param entry the entry's folder
     */
    public record Entry(String uri, String etag, long size, long cachedBytes, long blocks, boolean staged,
                        Instant lastUsed, Path entry) {
    }

    /**
     * The objects in the cache, most recently used first.
     *
     * @return the entries
     */
    public List<Entry> entries() {
        List<Entry> entries = new ArrayList<>();
        for (Path entry : entryFolders()) {
            String uri = "?";
            String etag = "?";
            long size = -1;
            Path note = entry.resolve("object.txt");
            try {
                if (Files.exists(note)) {
                    for (String line : Files.readAllLines(note, StandardCharsets.UTF_8)) {
                        if (line.startsWith("uri=")) {
                            uri = line.substring(4);
                        } else if (line.startsWith("etag=")) {
                            etag = line.substring(5);
                        } else if (line.startsWith("size=")) {
                            size = Long.parseLong(line.substring(5).strip());
                        }
                    }
                }
                long bytes = 0;
                long blocks = 0;
                boolean staged = false;
                Instant lastUsed = Instant.EPOCH;
                for (Path file : cachedFiles(entry)) {
                    try {
                        bytes += Files.size(file);
                        Instant used = Files.getLastModifiedTime(file).toInstant();
                        lastUsed = used.isAfter(lastUsed) ? used : lastUsed;
                    } catch (NoSuchFileException evicted) {
                        continue;
                    }
                    if (file.getFileName().toString().equals(BlockCache.STAGED)) {
                        staged = true;
                    } else {
                        blocks++;
                    }
                }
                if (bytes > 0 || !uri.equals("?")) {
                    entries.add(new Entry(uri, etag, size, bytes, blocks, staged, lastUsed, entry));
                }
            } catch (IOException e) {
                throw new UncheckedIOException("cannot read the cache entry " + entry, e);
            }
        }
        entries.sort(Comparator.comparing(Entry::lastUsed).reversed());
        return entries;
    }

    /**
     * What {@link #verify} found.
     *
     * @param blocksChecked block files read and checked
     * @param bytesChecked bytes read
     * @param stagedChecked staged copies checked against the MD5 they were verified with
     * @param bad the files that failed (removed when asked), each with what was wrong
     */
    public record Verification(long blocksChecked, long bytesChecked, long stagedChecked, List<String> bad) {
    }

    /**
     * Reads every cached block and checks each piece against its CRC32C (and the checksum table against its own),
     * and every staged copy against the CRC32C of each MiB recorded when it was staged (a copy staged by an older
     * memfit: against its MD5, when its ETag was one).
     *
     * @param remove whether to delete the files that fail, so that the next read fetches them again
     * @return what was checked and what failed
     */
    public Verification verify(boolean remove) {
        long blocks = 0;
        long bytes = 0;
        long staged = 0;
        List<String> bad = new ArrayList<>();
        for (Path entry : entryFolders()) {
            for (Path file : cachedFiles(entry)) {
                String problem;
                try {
                    if (file.getFileName().toString().equals(BlockCache.STAGED)) {
                        problem = checkStaged(file, entry.resolve(BlockCache.STAGED_NOTE));
                        staged += problem == null || !problem.isEmpty() ? 1 : 0;
                        if (problem != null && problem.isEmpty()) {
                            continue; // a multipart ETag: checked block by block when it was staged
                        }
                    } else {
                        problem = checkBlock(file);
                        blocks++;
                    }
                    bytes += Files.size(file);
                } catch (NoSuchFileException evicted) {
                    continue;
                } catch (IOException e) {
                    problem = "cannot be read: " + e.getMessage();
                }
                if (problem != null) {
                    bad.add(file + ": " + problem);
                    if (remove) {
                        try {
                            Files.deleteIfExists(file);
                        } catch (IOException e) {
                            throw new UncheckedIOException("cannot remove the bad cached file " + file, e);
                        }
                    }
                }
            }
        }
        return new Verification(blocks, bytes, staged, bad);
    }

    /** Null when the block file is intact, else what is wrong. */
    static String checkBlock(Path file) throws IOException {
        try (FileChannel channel = FileChannel.open(file, StandardOpenOption.READ)) {
            long total = channel.size();
            // total = data + 4 bytes per piece + 12: find the data length
            long pieces = Math.max(0, (total - 12 + BlockCache.PIECE + 3) / (BlockCache.PIECE + 4));
            long dataLength = total - 12 - 4 * pieces;
            if (total < 12 || dataLength < 0 || BlockCache.pieces(dataLength) != pieces) {
                return "a block file of " + total + " bytes cannot hold data and its checksum table (truncated?)";
            }
            ByteBuffer table = ByteBuffer.allocate((int) (4 * pieces + 12)).order(ByteOrder.LITTLE_ENDIAN);
            readFully(channel, table, dataLength);
            table.flip();
            CRC32C crc = new CRC32C();
            crc.update(table.slice(0, (int) (4 * pieces)));
            BlockCache.bind(crc, file);
            if (table.getLong((int) (4 * pieces) + 4) != BlockCache.MAGIC
                    || table.getInt((int) (4 * pieces)) != (int) crc.getValue()) {
                return "the checksum table is damaged, of another block or of an earlier version";
            }
            ByteBuffer piece = ByteBuffer.allocateDirect(BlockCache.PIECE);
            for (int p = 0; p < pieces; p++) {
                long start = (long) p * BlockCache.PIECE;
                piece.clear().limit((int) Math.min(BlockCache.PIECE, dataLength - start));
                readFully(channel, piece, start);
                piece.flip();
                crc.reset();
                crc.update(piece);
                if ((int) crc.getValue() != table.getInt(4 * p)) {
                    return "bytes " + start + ".." + (start + piece.limit()) + " fail their CRC32C";
                }
            }
            return null;
        }
    }

    /** Null when intact, "" when it cannot be checked (no checksums, multipart ETag), else what is wrong. */
    private static String checkStaged(Path file, Path note) throws IOException {
        String verified = Files.exists(note) ? Files.readString(note, StandardCharsets.UTF_8) : "";
        String problem = StagedChecksums.check(file, verified, true);
        if (problem == null || !problem.isEmpty()) {
            return problem;
        }
        if (!verified.startsWith("md5 ")) {
            return "";
        }
        String expected = verified.substring(4).split("\\s+")[0];
        String found = BlockCache.md5Hex(file);
        return found.equalsIgnoreCase(expected) ? null : "MD5 " + found + ", verified as " + expected + " when staged";
    }

    private static void readFully(FileChannel channel, ByteBuffer buffer, long position) throws IOException {
        long at = position;
        while (buffer.hasRemaining()) {
            int n = channel.read(buffer, at);
            if (n < 0) {
                throw new IOException("the file ends early");
            }
            at += n;
        }
    }

    /**
     * Empties the cache under its folder lock, so that no process adds a block meanwhile; downloads in progress in
     * other processes keep their temporary files and finish.
     *
     * @return the bytes of cached files removed
     */
    public long clear() {
        if (!Files.isDirectory(folder)) {
            return 0;
        }
        long[] removed = {0};
        try {
            BlockCache.withFolderLock(folder, () -> {
                for (Path entry : entryFolders()) {
                    try (Stream<Path> files = Files.list(entry)) {
                        for (Path file : (Iterable<Path>) files::iterator) {
                            String name = file.getFileName().toString();
                            if (TempFiles.isTemporary(name) && !TempFiles.isStale(name)) {
                                continue; // another process is writing it
                            }
                            long bytes = Files.size(file);
                            if (Files.deleteIfExists(file) && BlockCache.isCachedName(name)) {
                                removed[0] += bytes;
                            }
                        }
                    } catch (NoSuchFileException gone) {
                        continue;
                    }
                    deleteIfEmpty(entry);
                    deleteIfEmpty(entry.getParent());
                }
            });
        } catch (IOException e) {
            throw new UncheckedIOException("cannot clear the cache " + folder, e);
        }
        return removed[0];
    }

    private static void deleteIfEmpty(Path dir) throws IOException {
        try (Stream<Path> left = Files.list(dir)) {
            if (left.findAny().isEmpty()) {
                Files.deleteIfExists(dir);
            }
        } catch (NoSuchFileException gone) {
            // removed already
        }
    }

    /** The entry folders: FOLDER/xx/HASH. */
    private List<Path> entryFolders() {
        if (!Files.isDirectory(folder)) {
            return List.of();
        }
        try (Stream<Path> found = Files.find(folder, 2, (path, attributes) -> attributes.isDirectory()
                && folder.relativize(path).getNameCount() == 2)) {
            return found.sorted().toList();
        } catch (IOException e) {
            throw new MemfitException(folder + ": cannot list the cache folder: " + e.getMessage(), e);
        }
    }

    private static List<Path> cachedFiles(Path entry) {
        try (Stream<Path> files = Files.list(entry)) {
            return files.filter(file -> BlockCache.isCachedName(file.getFileName().toString())).sorted().toList();
        } catch (NoSuchFileException gone) {
            return List.of();
        } catch (IOException e) {
            throw new UncheckedIOException("cannot list the cache entry " + entry, e);
        }
    }
}
