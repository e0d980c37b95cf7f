package dev.memfit.io.mrc;

import dev.memfit.DType;
import dev.memfit.InvalidFileException;
import dev.memfit.io.storage.RecordIndex;
import dev.memfit.MemfitException;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * The particle images of a data set and where each one lives: which {@code .mrcs} file and which image in it.
 *
 * <p>Opened from one stack ({@code .mrcs}/{@code .mrc}), a list of stacks ({@code .txt}, one path per line), a
 * RELION {@code .star} file ({@code _rlnImageName} entries {@code index@file.mrcs}, index from 1, quoted when the
 * path holds spaces; read by {@link Star}, so comments, quoted values, the RELION 3.1+ optics table and CRLF lines
 * are understood, and a row with a missing or extra value fails with its line number) or a cryoSPARC {@code .cs}
 * file (a numpy array of records whose {@code blob/path} names the stack and {@code blob/idx} the image, from 0; an
 * exported file's {@code >} before the path is dropped; the fields are read from the job's passthrough file when the
 * one opened lacks them; rows are numbered from 0 in messages, as numpy numbers them). When several blocks have an
 * {@code _rlnImageName} column, the one in {@code data_particles} is used. A relative stack name is looked for under
 * the listing's folder, then each folder above it, then the working folder, as a STAR file inside a RELION job folder
 * and a {@code .cs} inside a cryoSPARC job folder name their stacks from the project folder; or under {@code datadir}
 * when given (then by its file name alone there, as cryoDRGN does). {@link #stackRoot()} says which folder was used.
 * Every file is checked up front (header, size, image indices), so a bad entry fails at open time with its file and
 * line or row, not mid-training.
 */
public final class ParticleStack implements RecordIndex {

    private final Path source;
    private final List<Path> files;
    private final List<MrcHeader> headers;
    private final int[] fileOf;
    private final long[] imageOf;
    /** Which folders relative names were resolved against, or null. */
    private String stackRoot;

    private ParticleStack(Path source, List<Path> files, List<MrcHeader> headers, int[] fileOf, long[] imageOf) {
        this.source = source;
        this.files = List.copyOf(files);
        this.headers = List.copyOf(headers);
        this.fileOf = fileOf;
        this.imageOf = imageOf;
    }

    /**
     * Opens a stack, a {@code .txt} list of stacks, a {@code .star} file or a cryoSPARC {@code .cs} file, finding
     * relative stack names under the listing's folder or a folder above it (a RELION or cryoSPARC project's).
     *
     * @param path the file
     * @return the stack
     */
    public static ParticleStack open(Path path) {
        return open(path, null);
    }

    /**
     * Opens a stack, a {@code .txt} list of stacks, a {@code .star} file or a cryoSPARC {@code .cs} file.
     *
     * @param path the file
     * @param datadir where relative paths point, or null to search the listing's folder and those above it
     * @return the stack
     */
    public static ParticleStack open(Path path, Path datadir) {
        return open(path, datadir, null);
    }

    /**
     * Opens a stack, a {@code .txt} list of stacks, a {@code .star} or a {@code .cs} file whose bytes (the listing's
     * and the stacks' headers) come from a storage, such as an object cache over a bucket: paths are then in the form
     * {@code s3:/bucket/key}, and relative stack names resolve against the listing's prefix or a prefix above it in
     * the same bucket ({@code s3:/bucket/particles.star} and {@code Particles/a.mrcs} give
     * {@code s3:/bucket/Particles/a.mrcs}).
     *
     * @param path the file or object
     * @param datadir where relative paths point, or null to search the listing's folder and those above it
     * @param storage where the bytes come from, or null for local files
     * @return the stack
     */
    public static ParticleStack open(Path path, Path datadir, dev.memfit.io.storage.Storage storage) {
        String name = path.getFileName().toString().toLowerCase(Locale.ROOT);
        if (name.endsWith(".star") || name.endsWith(".txt")) {
            StackLocator locator = new StackLocator(path, datadir, storage);
            ParticleStack stack = name.endsWith(".star") ? fromStar(path, locator, storage) : fromList(path, locator, storage);
            stack.stackRoot = locator.description();
            return stack;
        }
        if (name.endsWith(".cs")) {
            return fromCs(path, datadir, storage);
        }
        if (Mrc.hasMrcExtension(path)) {
            MrcHeader header = storage == null ? Mrc.readHeader(path) : Mrc.readHeader(path, storage);
            int[] fileOf = new int[Math.toIntExact(header.nz())];
            long[] imageOf = new long[fileOf.length];
            for (int i = 0; i < imageOf.length; i++) {
                imageOf[i] = i;
            }
            return new ParticleStack(path, List.of(path), List.of(header), fileOf, imageOf);
        }
        if (storage == null && !name.endsWith(".npy") && dev.memfit.io.npy.Npy.looksLikeNpy(path)) {
            return fromCs(path, datadir, null);   // numpy records under another name, as Formats.detect finds them
        }
        throw new MemfitException(path + ": expected a particle stack (.mrcs or .mrc), a list of stacks (.txt), a "
                + "RELION .star file or a cryoSPARC .cs file, found another extension");
    }

    private static ParticleStack fromList(Path list, StackLocator locator, dev.memfit.io.storage.Storage storage) {
        List<String> lines = storage == null ? readLines(list) : readLines(list, storage);
        List<Path> files = new ArrayList<>();
        List<MrcHeader> headers = new ArrayList<>();
        long total = 0;
        for (int line = 0; line < lines.size(); line++) {
            String entry = lines.get(line).strip();
            if (entry.isEmpty() || entry.startsWith("#")) {
                continue;
            }
            Path file = locator.locate(entry, line + 1);
            headers.add(headerOf(file, storage));
            files.add(file);
            total += headers.getLast().nz();
            if (total > MAX_PARTICLES) {
                throw new InvalidFileException(list, -1, "at most " + MAX_PARTICLES + " images in all (2^31 - 1)",
                        String.format("%,d images up to line %d", total, line + 1));
            }
        }
        if (files.isEmpty()) {
            throw new InvalidFileException(list, -1, "a list of particle stacks, one .mrcs path per line",
                    lines.isEmpty() ? "an empty file" : "no entries (only blank lines and # comments)");
        }
        int[] fileOf = new int[(int) total];
        long[] imageOf = new long[fileOf.length];
        int next = 0;
        for (int f = 0; f < files.size(); f++) {
            for (long image = 0; image < headers.get(f).nz(); image++) {
                fileOf[next] = f;
                imageOf[next++] = image;
            }
        }
        return check(new ParticleStack(list, files, headers, fileOf, imageOf));
    }

    private static ParticleStack fromStar(Path star, StackLocator locator, dev.memfit.io.storage.Storage storage) {
        ImageTables tables = new ImageTables(star);
        if (storage == null) {
            Star.read(star, tables);
        } else {
            Star.read(star, storage, tables);
        }
        ImageNames names = tables.choose();
        Map<Path, Integer> fileIndex = new LinkedHashMap<>();
        List<MrcHeader> headers = new ArrayList<>();
        int[] fileOf = new int[names.count];
        long[] imageOf = new long[names.count];
        int[] fileOfName = new int[names.paths.size()];
        for (int p = 0; p < fileOfName.length; p++) {
            Path file = locator.locate(names.paths.get(p), names.firstLine[p]);
            fileOfName[p] = fileIndex.computeIfAbsent(file, path -> {
                headers.add(headerOf(path, storage));
                return headers.size() - 1;
            });
        }
        for (int i = 0; i < names.count; i++) {
            int f = fileOfName[names.path[i]];
            long image = names.image[i];
            MrcHeader header = headers.get(f);
            if (image == NO_INDEX) {
                if (header.nz() != 1) {
                    throw new InvalidFileException(star, -1, "on line " + names.line[i] + " an _rlnImageName of the "
                            + "form index@stack (the stack holds " + header.nz() + " images)",
                            "'" + names.paths.get(names.path[i]) + "' without an index");
                }
                image = 0;
            } else if (image >= header.nz()) {
                throw new InvalidFileException(star, -1, "on line " + names.line[i] + " an image index in [1, "
                        + header.nz() + "] of " + new ArrayList<>(fileIndex.keySet()).get(f), "index " + (image + 1));
            }
            fileOf[i] = f;
            imageOf[i] = image;
        }
        ParticleStack stack = check(new ParticleStack(star, new ArrayList<>(fileIndex.keySet()), headers, fileOf, imageOf));
        for (int k = 0; k < tables.opticsSizes.size(); k++) {
            String size = tables.opticsSizes.get(k);
            if (!sameNumber(size, stack.width()) || stack.width() != stack.height()) {
                throw new InvalidFileException(star, -1, "on line " + tables.opticsLines.get(k) + " an _rlnImageSize "
                        + "that matches the stacks (" + stack.width() + "x" + stack.height() + " in "
                        + stack.files.getFirst() + ")", "'" + size + "'");
            }
        }
        return stack;
    }

    /**
     * Reads a cryoSPARC {@code .cs}: its rows become the particles (the arrays it fills are the stack's, so a file of
     * millions of particles costs an int and a long each), each name found once by the locator.
     */
    private static ParticleStack fromCs(Path cs, Path datadir, dev.memfit.io.storage.Storage storage) {
        if (storage == null && Files.isDirectory(cs)) {
            throw new MemfitException(cs + ": expected a cryoSPARC .cs file, found a folder");
        }
        CryoSparc.Listing listing;
        try (dev.memfit.io.storage.Storage local = storage == null ? dev.memfit.io.storage.Storage.local() : null) {
            listing = CryoSparc.read(cs, storage == null ? local : storage);
        }
        // the rows' own file: the passthrough file when the one opened has no blob fields
        StackLocator locator = new StackLocator(listing.file(), datadir, storage);
        Map<Path, Integer> fileIndex = new LinkedHashMap<>();
        List<MrcHeader> headers = new ArrayList<>();
        int[] fileOfName = new int[listing.names().size()];
        for (int p = 0; p < fileOfName.length; p++) {
            Path file = locator.locate(listing.names().get(p), listing.firstRow()[p]);
            fileOfName[p] = fileIndex.computeIfAbsent(file, path -> {
                headers.add(headerOf(path, storage));
                return headers.size() - 1;
            });
        }
        int[] fileOf = listing.nameOf();
        long[] imageOf = listing.image();
        List<Path> files = new ArrayList<>(fileIndex.keySet());
        for (int i = 0; i < fileOf.length; i++) {
            int f = fileOfName[fileOf[i]];
            fileOf[i] = f;
            if (imageOf[i] >= headers.get(f).nz()) {
                throw new InvalidFileException(listing.file(), listing.indexOffset(i), "on row " + i + " a "
                        + CryoSparc.INDEX + " in [0, " + headers.get(f).nz() + ") of " + files.get(f),
                        "index " + imageOf[i]);
            }
        }
        ParticleStack stack = check(new ParticleStack(cs, files, headers, fileOf, imageOf));
        stack.stackRoot = locator.description();
        return stack;
    }

    /** Where an image index is absent ({@code stack.mrc} rather than {@code 3@stack.mrcs}). */
    private static final long NO_INDEX = -1;
    /** Particles are addressed by int arrays. */
    private static final long MAX_PARTICLES = Integer.MAX_VALUE;

    /** The {@code _rlnImageName} column of one loop, parsed as it streams by: distinct paths and per-row indices. */
    private static final class ImageNames {
        final String block;
        final long loopLine;
        final Map<String, Integer> pathIndex = new java.util.HashMap<>();
        final List<String> paths = new ArrayList<>();
        long[] firstLine = new long[4];
        int[] path = new int[1024];
        long[] image = new long[1024];
        long[] line = new long[1024];
        int count;

        ImageNames(String block, long loopLine) {
            this.block = block;
            this.loopLine = loopLine;
        }

        void add(Path star, String value, long lineNumber) {
            if (count == MAX_PARTICLES) {
                throw new InvalidFileException(star, -1, "at most " + MAX_PARTICLES + " particles (2^31 - 1)",
                        "more on line " + lineNumber);
            }
            int at = value.indexOf('@');
            long index = NO_INDEX;
            if (at >= 0) {
                String digits = value.substring(0, at);
                if (digits.isEmpty() || digits.length() > 18 || !digits.chars().allMatch(c -> c >= '0' && c <= '9')
                        || Long.parseLong(digits) < 1) {
                    throw new InvalidFileException(star, -1, "on line " + lineNumber + " an _rlnImageName of the form "
                            + "index@stack with an index from 1", "'" + value + "'");
                }
                index = Long.parseLong(digits) - 1;
            }
            String name = value.substring(at + 1);
            if (name.isEmpty()) {
                throw new InvalidFileException(star, -1, "on line " + lineNumber + " an _rlnImageName naming a stack "
                        + "(index@stack)", "'" + value + "'");
            }
            Integer p = pathIndex.get(name);
            if (p == null) {
                p = paths.size();
                pathIndex.put(name, p);
                paths.add(name);
                if (p == firstLine.length) {
                    firstLine = java.util.Arrays.copyOf(firstLine, p * 2);
                }
                firstLine[p] = lineNumber;
            }
            if (count == path.length) {
                int grown = (int) Math.min(MAX_PARTICLES, 2L * count);
                path = java.util.Arrays.copyOf(path, grown);
                image = java.util.Arrays.copyOf(image, grown);
                line = java.util.Arrays.copyOf(line, grown);
            }
            path[count] = p;
            image[count] = index;
            line[count++] = lineNumber;
        }
    }

    /** Collects every loop that has an {@code _rlnImageName} column, then picks the particle table. */
    private static final class ImageTables implements Star.Handler {
        private static final String IMAGE_NAME = "_rlnImageName";
        private static final String IMAGE_SIZE = "_rlnImageSize";
        private final List<ImageNames> tables = new ArrayList<>();
        /** The image sizes of the RELION 3.1+ optics table, with their lines, to check against the stacks. */
        final List<String> opticsSizes = new ArrayList<>();
        final List<Long> opticsLines = new ArrayList<>();
        private int sizeColumn = -1;
        private final List<String> blocks = new ArrayList<>();
        private final Path star;
        private ImageNames current;
        private int column = -1;

        ImageTables(Path star) {
            this.star = star;
        }

        @Override
        public void block(String name, long line) {
            blocks.add("data_" + name);
            current = null;
            sizeColumn = -1;
        }

        @Override
        public void loop(String block, List<String> columns, long line) {
            column = columns.indexOf(IMAGE_NAME);
            sizeColumn = block.equals("optics") ? columns.indexOf(IMAGE_SIZE) : -1;
            current = column < 0 ? null : new ImageNames(block, line);
            if (current != null) {
                tables.add(current);
            }
        }

        @Override
        public void row(List<String> values, long line) {
            if (current != null) {
                current.add(star, values.get(column), line);
            }
            if (sizeColumn >= 0) {
                opticsSizes.add(values.get(sizeColumn));
                opticsLines.add(line);
            }
        }

        ImageNames choose() {
            Path file = star;
            List<ImageNames> candidates = tables;
            if (candidates.size() > 1) {
                candidates = tables.stream().filter(t -> t.block.equals("particles")).toList();
            }
            if (candidates.size() != 1) {
                throw new InvalidFileException(file, -1, "one loop_ with an _rlnImageName column (the particles, in "
                        + "data_particles when there are several)", tables.isEmpty()
                        ? "none in " + (blocks.isEmpty() ? "a file without data_ blocks" : String.join(", ", blocks))
                        : tables.size() + " (" + String.join(", ", tables.stream().map(t -> "data_" + t.block
                        + " line " + t.loopLine).toList()) + ")");
            }
            ImageNames names = candidates.getFirst();
            if (names.count == 0) {
                throw new InvalidFileException(file, -1, "particles in the loop_ on line " + names.loopLine,
                        "no rows");
            }
            return names;
        }
    }

    private static boolean sameNumber(String text, int value) {
        try {
            return Double.parseDouble(text) == value;
        } catch (NumberFormatException e) {
            return false;
        }
    }

    /** The header of a stack the locator found. */
    private static MrcHeader headerOf(Path file, dev.memfit.io.storage.Storage storage) {
        return storage == null ? Mrc.readHeader(file) : Mrc.readHeader(file, storage);
    }

    private static ParticleStack check(ParticleStack stack) {
        for (int f = 1; f < stack.headers.size(); f++) {
            MrcHeader first = stack.headers.getFirst();
            MrcHeader other = stack.headers.get(f);
            if (other.nx() != first.nx() || other.ny() != first.ny()) {
                throw new InvalidFileException(stack.files.get(f), -1, "images of " + first.nx() + "x" + first.ny()
                        + " like " + stack.files.getFirst(), other.nx() + "x" + other.ny());
            }
        }
        return stack;
    }

    /** The lines of a small text file read through a storage (a list of stacks). */
    private static List<String> readLines(Path file, dev.memfit.io.storage.Storage storage) {
        long size = storage.size(file);
        if (size > (64L << 20)) {
            throw new InvalidFileException(file, -1, "a list of particle stacks of at most 64 MiB", size + " bytes");
        }
        byte[] bytes = new byte[(int) size];
        try (java.lang.foreign.Arena arena = java.lang.foreign.Arena.ofConfined()) {
            java.lang.foreign.MemorySegment into = arena.allocate(Math.max(1, size));
            storage.read(file, 0, into.asSlice(0, size));
            java.lang.foreign.MemorySegment.copy(into, java.lang.foreign.ValueLayout.JAVA_BYTE, 0, bytes, 0, bytes.length);
        }
        try {
            return java.nio.charset.StandardCharsets.UTF_8.newDecoder().decode(java.nio.ByteBuffer.wrap(bytes)).toString()
                    .lines().toList();
        } catch (java.nio.charset.CharacterCodingException e) {
            throw new InvalidFileException(file, -1, "a UTF-8 text file listing particle stacks",
                    "bytes that are not UTF-8 text", e);
        }
    }

    private static List<String> readLines(Path file) {
        if (Files.isDirectory(file)) {
            throw new MemfitException(file + ": expected a list of particle stacks (one .mrcs path per line), found a folder");
        }
        try {
            return Files.readAllLines(file);
        } catch (java.nio.file.NoSuchFileException e) {
            throw new MemfitException(file + ": no such file", e);
        } catch (java.nio.charset.CharacterCodingException e) {
            throw new InvalidFileException(file, -1, "a UTF-8 text file listing particle stacks",
                    "bytes that are not UTF-8 text (a binary file?)", e);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read " + file, e);
        }
    }

    @Override
    public long[] sampleShape() {
        return new long[]{height(), width()};
    }

    @Override
    public DType dtype(int file) {
        return headers.get(file).dtype();
    }

    @Override
    public java.nio.ByteOrder byteOrder(int file) {
        return headers.get(file).byteOrder();
    }

    @Override
    public long offsetOf(long sample) {
        return headers.get(fileOf(sample)).imageOffset(imageOf(sample));
    }

    /**
     * The listing this stack was opened from.
     *
     * @return the path
     */
    @Override
    public Path source() {
        return source;
    }

    /**
     * Which folders relative stack names were found under, and why: for a STAR file in a RELION job folder, the
     * project folder above it.
     *
     * @return such as {@code /data/project (2 folders above the listing; RELION names paths from its project folder)},
     *         or null for a single stack or a listing of absolute paths only
     */
    public String stackRoot() {
        return stackRoot;
    }

    /**
     * The number of particles.
     *
     * @return the count
     */
    @Override
    public long size() {
        return fileOf.length;
    }

    /**
     * Image width in pixels.
     *
     * @return nx
     */
    public int width() {
        return headers.getFirst().nx();
    }

    /**
     * Image height in pixels.
     *
     * @return ny
     */
    public int height() {
        return headers.getFirst().ny();
    }

    /**
     * The distinct stack files.
     *
     * @return the files, in first-use order
     */
    @Override
    public List<Path> files() {
        return files;
    }

    /**
     * The header of a stack file.
     *
     * @param file the index in {@link #files()}
     * @return its header
     */
    public MrcHeader header(int file) {
        return headers.get(file);
    }

    /**
     * The file a particle lives in.
     *
     * @param particle the particle index
     * @return an index into {@link #files()}
     */
    @Override
    public int fileOf(long particle) {
        return fileOf[Math.toIntExact(particle)];
    }

    /**
     * The image index of a particle within its file.
     *
     * @param particle the particle index
     * @return the image (section) index from 0
     */
    public long imageOf(long particle) {
        return imageOf[Math.toIntExact(particle)];
    }

    /**
     * The bytes all particles take in their files.
     *
     * @return the sum of image sizes
     */
    public long fileBytes() {
        long total = 0;
        for (int f : fileOf) {
            total += headers.get(f).imageBytes();
        }
        return total;
    }
}
