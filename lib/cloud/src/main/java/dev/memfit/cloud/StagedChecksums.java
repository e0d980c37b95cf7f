package dev.memfit.cloud;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.HexFormat;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.zip.CRC32C;

/**
 * The CRC32C of each {@value #PIECE_BYTES}-byte piece of a staged copy, recorded in its note when it is staged and
 * checked before the copy is handed to a reader again: a staged copy is read by readers of their own (jhdf, a memory
 * mapping) that no block check sees, and an uncompressed {@code .h5ad} or a {@code .npy} has no checksum of its own,
 * so a flipped byte would otherwise become a wrong value with no error.
 *
 * <p>A copy is checked once per process (and again when its file changes: another inode, size or time): the check
 * reads it all at about the disk's speed, which a reader opening it several times per command should not repeat.
 */
final class StagedChecksums {

    /** The bytes one CRC32C covers. */
    static final int PIECE_BYTES = 1 << 20;
    /** The note's line that holds the checksums: {@code crc32c PIECE_BYTES HEX...}, 8 hex digits per piece. */
    static final String LINE_START = "crc32c ";

    /** Copies this process checked and found intact, by file identity. */
    private static final Map<Identity, Boolean> CHECKED = new ConcurrentHashMap<>();

    private record Identity(Path file, Object fileKey, long size, long modified) {
        static Identity of(Path file) throws IOException {
            BasicFileAttributes attributes = Files.readAttributes(file, BasicFileAttributes.class);
            return new Identity(file.toAbsolutePath().normalize(), attributes.fileKey(), attributes.size(),
                    attributes.lastModifiedTime().to(java.util.concurrent.TimeUnit.NANOSECONDS));
        }
    }

    private final CRC32C crc = new CRC32C();
    private final StringBuilder hex = new StringBuilder();
    private long inPiece;

    /** Adds the next bytes of the copy, in file order. */
    void update(ByteBuffer bytes) {
        ByteBuffer rest = bytes.duplicate();
        while (rest.hasRemaining()) {
            int n = (int) Math.min(rest.remaining(), PIECE_BYTES - inPiece);
            ByteBuffer part = rest.slice(rest.position(), n);
            crc.update(part);
            rest.position(rest.position() + n);
            inPiece += n;
            if (inPiece == PIECE_BYTES) {
                finishPiece();
            }
        }
    }

    /** The note's line for everything added. */
    String line() {
        if (inPiece > 0) {
            finishPiece();
        }
        return LINE_START + PIECE_BYTES + " " + hex;
    }

    private void finishPiece() {
        hex.append(HexFormat.of().toHexDigits((int) crc.getValue()));
        crc.reset();
        inPiece = 0;
    }

    /**
     * Checks a staged copy against the checksums of its note.
     *
     * @param file the staged copy
     * @param note the note's text
     * @param again whether to read it even when this process found the same file intact before ({@code cache verify})
     * @return null when every piece matches (or this process checked the same file before), "" when the note has no
     *         checksums (a copy staged by an older memfit), else which bytes fail
     * @throws IOException when the copy cannot be read
     */
    static String check(Path file, String note, boolean again) throws IOException {
        String line = note.lines().filter(l -> l.startsWith(LINE_START)).findFirst().orElse(null);
        if (line == null) {
            return "";
        }
        Identity identity = Identity.of(file);
        if (!again && CHECKED.containsKey(identity)) {
            return null;
        }
        String[] parts = line.split(" ");
        long piece;
        try {
            piece = parts.length == 3 ? Long.parseLong(parts[1]) : -1;
        } catch (NumberFormatException e) {
            return "its note's piece size '" + parts[1] + "' is no number (the note is damaged)";
        }
        String expected = parts.length == 3 ? parts[2] : "";
        if (!expected.chars().allMatch(c -> Character.digit(c, 16) >= 0)) {
            return "its note's checksums are not hexadecimal (the note is damaged)";
        }
        long size = identity.size();
        if (piece <= 0 || expected.length() != 8 * Math.max(1, (size + piece - 1) / piece) && !(size == 0 && expected.isEmpty())) {
            return "its note's checksums do not fit a copy of " + size + " bytes";
        }
        CRC32C crc = new CRC32C();
        ByteBuffer buffer = ByteBuffer.allocateDirect((int) Math.min(piece, Math.max(1, size)));
        try (FileChannel channel = FileChannel.open(file, StandardOpenOption.READ)) {
            for (long start = 0, p = 0; start < size; start += piece, p++) {
                buffer.clear().limit((int) Math.min(piece, size - start));
                for (long at = start; buffer.hasRemaining(); ) {
                    int n = channel.read(buffer, at);
                    if (n < 0) {
                        return "it ends at byte " + at + " of " + size;
                    }
                    at += n;
                }
                buffer.flip();
                crc.reset();
                crc.update(buffer);
                int stored = HexFormat.fromHexDigits(expected, (int) (8 * p), (int) (8 * p + 8));
                if ((int) crc.getValue() != stored) {
                    return "bytes " + start + ".." + (start + buffer.limit()) + " fail their CRC32C";
                }
            }
        }
        CHECKED.put(identity, Boolean.TRUE);
        return null;
    }
}
