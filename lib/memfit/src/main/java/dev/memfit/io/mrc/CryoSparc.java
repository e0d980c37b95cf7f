package dev.memfit.io.mrc;

import dev.memfit.InvalidFileException;
import dev.memfit.MemfitException;
import dev.memfit.io.npy.Npy;
import dev.memfit.io.npy.NpyRecords;
import dev.memfit.io.storage.Storage;

import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Reads where the particles of a cryoSPARC {@code .cs} file are: the stack each row names ({@code blob/path}) and the
 * image in it ({@code blob/idx}, from 0).
 *
 * <p>A {@code .cs} is a numpy structured array saved by {@code np.save} (cryosparc-tools' {@code Dataset.save}, its
 * default {@code NUMPY_FORMAT}), one row per particle; {@code blob/path} is fixed-length bytes ({@code |S..}), written
 * from the project folder ({@code J3/extract/..._particles.mrc}) or, in an exported {@code .cs}, from the file's own
 * folder with a leading {@code >} that marks it so ({@code >J3/extract/...}; the {@code >} is dropped, as cryoSPARC
 * does on import and cryoDRGN and pyem do). Only the two fields (and {@code uid}, to join a passthrough file) are
 * decoded, in reads of about 1 MiB of rows, so the heap holds one int and one long per particle.
 *
 * <p>A job keeps the fields it passed through unchanged in a second file, {@code J5_passthrough_particles.cs} beside
 * {@code J5_particles.cs} (or {@code J5_005_particles.cs}), with the same uids in the same order. When the file opened
 * lacks {@code blob/path} or {@code blob/idx}, they are read from that file, row by row, each row's {@code uid}
 * checked against the opened file's.
 */
final class CryoSparc {

    static final String PATH = "blob/path";
    static final String INDEX = "blob/idx";
    static final String UID = "uid";
    /** The magic of cryosparc-tools' compressed {@code CSDAT_FORMAT}, which is not a {@code .npy}. */
    private static final byte[] CSDAT = {(byte) 0x95, 'C', 'S', 'D', 'A', 'T'};
    /** Rows are read about this many bytes at a time. */
    private static final int CHUNK_BYTES = 1 << 20;
    /** Larger rows are not read whole: only the bytes of the fields needed, a row per request. */
    private static final int WHOLE_ROW_BYTES = 64 << 10;
    /** How many field names a message lists. */
    private static final int NAMED_FIELDS = 12;
    /** {@code J5_particles.cs}, {@code J5_005_particles.cs}, {@code J46_particles_selected.cs}: job, iteration, rest. */
    private static final Pattern MAIN_FILE = Pattern.compile("(.*?)(?:_\\d+)?_(particles.*\\.cs)");

    private CryoSparc() {
    }

    /**
     * The particles of a {@code .cs}: the distinct stack names and, per row, which name and which image.
     *
     * @param file the {@code .cs} whose rows name the stacks (the passthrough file when the one opened has none)
     * @param header that file's header
     * @param names the distinct stack names, {@code >} removed, in first-use order
     * @param firstRow the first row naming each, for messages
     * @param nameOf per row, an index into {@code names}
     * @param image per row, the image index in the stack, from 0
     */
    record Listing(Path file, NpyRecords header, List<String> names, long[] firstRow, int[] nameOf, long[] image) {

        /**
         * Where a row's {@code blob/idx} is in the file, for messages.
         *
         * @param row the row
         * @return the byte offset
         */
        long indexOffset(long row) {
            return header.rowOffset(row) + header.field(INDEX).offset();
        }
    }

    /**
     * Reads a {@code .cs} (or, for its {@code blob} fields, its passthrough file).
     *
     * @param cs the file or object
     * @param storage where the bytes come from
     * @return the particles
     * @throws InvalidFileException naming the file, the byte offset and the row of the first problem
     */
    static Listing read(Path cs, Storage storage) {
        NpyRecords header = header(cs, storage);
        if (has(header, PATH, INDEX)) {
            return rows(cs, header, storage, null, null);
        }
        Path passthrough = passthroughOf(cs);
        NpyRecords other = passthrough != null && exists(passthrough, storage) ? header(passthrough, storage) : null;
        if (other == null || !has(other, PATH, INDEX)) {
            String missing = header.field(PATH) == null ? header.field(INDEX) == null ? PATH + " and " + INDEX : PATH : INDEX;
            throw new InvalidFileException(cs, dictionaryOffset(header), "a cryoSPARC particle file with the fields "
                    + PATH + " and " + INDEX + " (each particle's stack and image)", "no " + missing + " among "
                    + describe(header.names()) + (passthrough == null ? ""
                    : other == null ? "; nor a passthrough file " + passthrough.getFileName() + " beside it"
                    : "; nor in " + passthrough.getFileName() + " beside it (" + describe(other.names()) + ")"));
        }
        requireUid(cs, header, cs, passthrough);
        requireUid(passthrough, other, cs, passthrough);
        if (other.rows() != header.rows()) {
            throw new InvalidFileException(passthrough, -1, String.format(Locale.ROOT, "the %,d particles of %s (its "
                    + "passthrough file, holding its %s)", header.rows(), cs.getFileName(), PATH),
                    String.format(Locale.ROOT, "%,d rows", other.rows()));
        }
        return rows(passthrough, other, storage, cs, header);
    }

    private static void requireUid(Path file, NpyRecords header, Path cs, Path passthrough) {
        NpyRecords.Field uid = header.field(UID);
        if (uid == null || !uid.isInteger() || uid.itemBytes() != 8) {
            throw new InvalidFileException(file, dictionaryOffset(header), "a uid field (<u8) to match the rows of "
                    + cs.getFileName() + " and " + passthrough.getFileName(), uid == null ? "none" : uid.toString());
        }
    }

    /** Reads the rows of the file that holds the blob fields; {@code main}, when given, has the uids they must match. */
    private static Listing rows(Path file, NpyRecords header, Storage storage, Path main, NpyRecords mainHeader) {
        if (header.rows() == 0) {
            throw new InvalidFileException(file, -1, "at least one particle", "no rows");
        }
        if (header.rows() > Integer.MAX_VALUE) {
            throw new InvalidFileException(file, -1, "at most 2^31 - 1 particles",
                    String.format(Locale.ROOT, "%,d rows", header.rows()));
        }
        NpyRecords.Field path = header.field(PATH);
        NpyRecords.Field index = header.field(INDEX);
        if (!path.isString()) {
            throw new InvalidFileException(file, dictionaryOffset(header), PATH + " as fixed-length bytes such as "
                    + "'|S61' (as cryoSPARC writes it) or unicode '<U61'", path.toString());
        }
        if (!index.isInteger()) {
            throw new InvalidFileException(file, dictionaryOffset(header), INDEX + " as an integer such as '<u4'",
                    index.toString());
        }
        NpyRecords.Field uid = main == null ? null : header.field(UID);
        NpyRecords.Field mainUid = main == null ? null : mainHeader.field(UID);
        int n = (int) header.rows();
        int[] nameOf = new int[n];
        long[] image = new long[n];
        List<String> names = new ArrayList<>();
        long[] firstRow = new long[4];
        Map<String, Integer> known = new HashMap<>();
        // rows of one stack come together: the previous row's raw bytes spare a string per row
        byte[] lastBytes = null;
        int lastName = -1;
        Rows rows = new Rows(file, header, storage, uid == null ? new NpyRecords.Field[]{path, index}
                : new NpyRecords.Field[]{path, index, uid});
        Rows mainRows = main == null ? null : new Rows(main, mainHeader, storage, mainUid);
        for (int r = 0; r < n; r++) {
            int at = rows.row(r);
            ByteBuffer bytes = rows.bytes();
            int pathAt = Math.toIntExact(at + path.offset());
            if (lastBytes != null && Arrays.equals(bytes.array(), pathAt, pathAt + lastBytes.length, lastBytes, 0,
                    lastBytes.length)) {
                nameOf[r] = lastName;
            } else {
                String name = path.string(bytes, at);
                // an exported .cs marks names relative to its own folder with '>' (cryoSPARC drops it on import)
                String stack = name.startsWith(">") ? name.substring(1) : name;
                if (stack.isEmpty()) {
                    throw new InvalidFileException(file, header.rowOffset(r) + path.offset(), "on row " + r + " a "
                            + PATH + " naming a stack", "'" + name + "'");
                }
                Integer id = known.get(stack);
                if (id == null) {
                    id = names.size();
                    known.put(stack, id);
                    names.add(stack);
                    if (id == firstRow.length) {
                        firstRow = Arrays.copyOf(firstRow, id * 2);
                    }
                    firstRow[id] = r;
                }
                lastName = id;
                lastBytes = new byte[path.itemBytes()];
                bytes.get(pathAt, lastBytes);
                nameOf[r] = lastName;
            }
            long value = index.integer(bytes, at);
            if (value < 0) {
                throw new InvalidFileException(file, header.rowOffset(r) + index.offset(), "on row " + r + " a "
                        + INDEX + " from 0", index.kind() == 'u' ? Long.toUnsignedString(value) : Long.toString(value));
            }
            image[r] = value;
            if (main != null) {
                long theirs = uid.integer(bytes, at);
                long ours = mainUid.integer(mainRows.bytes(), mainRows.row(r));
                if (theirs != ours) {
                    throw new InvalidFileException(file, header.rowOffset(r) + uid.offset(), "on row " + r
                            + " the uid of " + main.getFileName() + "'s row " + r + ", " + Long.toUnsignedString(ours)
                            + " (a job's two files list the same particles in the same order)",
                            Long.toUnsignedString(theirs));
                }
            }
        }
        return new Listing(file, header, names, Arrays.copyOf(firstRow, names.size()), nameOf, image);
    }

    /** Reads and checks the header of a {@code .cs}, refusing cryoSPARC's compressed format by name. */
    private static NpyRecords header(Path file, Storage storage) {
        if (storage.size(file) >= CSDAT.length) {
            byte[] magic = new byte[CSDAT.length];
            storage.read(file, 0, MemorySegment.ofArray(magic));
            if (Arrays.equals(magic, CSDAT)) {
                throw new InvalidFileException(file, 0, "a .cs in numpy's format (\\x93NUMPY), which cryoSPARC writes "
                        + "for job outputs", "cryosparc-tools' compressed CSDAT format, which memfit does not read; save "
                        + "it again with Dataset.save(path) (format NUMPY_FORMAT, the default)");
            }
        }
        NpyRecords header = Npy.readRecords(storage, file);
        if (header.shape().length != 1) {
            throw new InvalidFileException(file, dictionaryOffset(header), "a one-dimensional array of rows, as "
                    + "cryoSPARC saves them", "shape " + Arrays.toString(header.shape()));
        }
        return header;
    }

    private static boolean has(NpyRecords header, String... names) {
        for (String name : names) {
            if (header.field(name) == null) {
                return false;
            }
        }
        return true;
    }

    /** Where a header's dictionary starts (byte 10 in version 1.0, 12 in 2.0 and 3.0): where fields are declared. */
    private static long dictionaryOffset(NpyRecords header) {
        return header.majorVersion() == 1 ? 10 : 12;
    }

    private static String describe(List<String> names) {
        String listed = String.join(", ", names.subList(0, Math.min(names.size(), NAMED_FIELDS)));
        return "the fields " + listed + (names.size() > NAMED_FIELDS ? " and " + (names.size() - NAMED_FIELDS) + " more" : "");
    }

    /**
     * The passthrough file a job writes beside a particle file: {@code J5_passthrough_particles.cs} for
     * {@code J5_particles.cs} or {@code J5_005_particles.cs}.
     *
     * @param cs the particle file
     * @return the passthrough file, or null when the name is not of that form
     */
    static Path passthroughOf(Path cs) {
        String name = cs.getFileName().toString();
        Matcher m = MAIN_FILE.matcher(name);
        if (name.contains("passthrough") || !m.matches() || m.group(1).isEmpty()) {
            return null;
        }
        return cs.resolveSibling(m.group(1) + "_passthrough_" + m.group(2));
    }

    private static boolean exists(Path file, Storage storage) {
        try {
            storage.size(file);
            return true;
        } catch (MemfitException e) {
            return false;
        }
    }

    /** Rows of a file read in chunks through a storage, only the bytes of the fields needed when rows are large. */
    private static final class Rows {
        private final Path file;
        private final NpyRecords header;
        private final Storage storage;
        /** The bytes of each row read: [low, low + span). */
        private final long low;
        private final long span;
        private final int chunkRows;
        private final ByteBuffer buffer;
        private long first;
        private long count;

        Rows(Path file, NpyRecords header, Storage storage, NpyRecords.Field... fields) {
            this.file = file;
            this.header = header;
            this.storage = storage;
            if (header.rowBytes() <= WHOLE_ROW_BYTES) {
                low = 0;
                span = header.rowBytes();
            } else {
                long lo = Long.MAX_VALUE;
                long hi = 0;
                for (NpyRecords.Field field : fields) {
                    lo = Math.min(lo, field.offset());
                    hi = Math.max(hi, field.offset() + field.byteSize());
                }
                if (hi - lo > WHOLE_ROW_BYTES) {
                    throw new InvalidFileException(file, -1, "the fields " + Arrays.toString(fields) + " within "
                            + WHOLE_ROW_BYTES + " bytes of a row", (hi - lo) + " bytes apart");
                }
                low = lo;
                span = hi - lo;
            }
            chunkRows = span <= WHOLE_ROW_BYTES && header.rowBytes() <= WHOLE_ROW_BYTES
                    ? (int) Math.max(1, Math.min(header.rows(), CHUNK_BYTES / Math.max(1, span))) : 1;
            buffer = ByteBuffer.allocate((int) (chunkRows * span));
        }

        /** Makes a row's bytes available; returns where its byte 0 would be in {@link #bytes()}. */
        int row(long r) {
            if (r < first || r >= first + count) {
                first = r;
                count = Math.min(chunkRows, header.rows() - r);
                if (low == 0) {
                    storage.read(file, header.rowOffset(r), MemorySegment.ofBuffer(buffer).asSlice(0, count * span));
                } else {
                    storage.read(file, header.rowOffset(r) + low, MemorySegment.ofBuffer(buffer).asSlice(0, span));
                }
            }
            return (int) ((r - first) * span - low);
        }

        ByteBuffer bytes() {
            return buffer;
        }
    }
}
