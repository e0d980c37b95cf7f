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
 * <p>Opened from one stack ({@code .mrcs}/{@code .mrc}), a list of stacks ({@code .txt}, one path per line) or a
 * RELION {@code .star} file ({@code _rlnImageName} entries {@code index@file.mrcs}, index from 1). Relative paths are
 * resolved against the listing's folder, or against {@code datadir} when given. Every file is checked up front
 * (header, size, image indices), so a bad entry fails at open time with its file and line, not mid-training.
 */
public final class ParticleStack implements RecordIndex {

    private final Path source;
    private final List<Path> files;
    private final List<MrcHeader> headers;
    private final int[] fileOf;
    private final long[] imageOf;

    private ParticleStack(Path source, List<Path> files, List<MrcHeader> headers, int[] fileOf, long[] imageOf) {
        this.source = source;
        this.files = List.copyOf(files);
        this.headers = List.copyOf(headers);
        this.fileOf = fileOf;
        this.imageOf = imageOf;
    }

    /**
     * Opens a stack, a {@code .txt} list of stacks or a {@code .star} file, resolving relative paths against the
     * listing's folder.
     *
     * @param path the file
     * @return the stack
     */
    public static ParticleStack open(Path path) {
        return open(path, null);
    }

    /**
     * Opens a stack, a {@code .txt} list of stacks or a {@code .star} file.
     *
     * @param path the file
     * @param datadir where relative paths point, or null for the listing's folder
     * @return the stack
     */
    public static ParticleStack open(Path path, Path datadir) {
        String name = path.getFileName().toString().toLowerCase(Locale.ROOT);
        Path base = datadir != null ? datadir : path.toAbsolutePath().getParent();
        if (name.endsWith(".star")) {
            return fromStar(path, base);
        }
        if (name.endsWith(".txt")) {
            return fromList(path, base);
        }
        if (Mrc.hasMrcExtension(path)) {
            MrcHeader header = Mrc.readHeader(path);
            int[] fileOf = new int[Math.toIntExact(header.nz())];
            long[] imageOf = new long[fileOf.length];
            for (int i = 0; i < imageOf.length; i++) {
                imageOf[i] = i;
            }
            return new ParticleStack(path, List.of(path), List.of(header), fileOf, imageOf);
        }
        throw new MemfitException(path + ": expected a particle stack (.mrcs or .mrc), a list of stacks (.txt) or a "
                + "RELION .star file, found another extension");
    }

    private static ParticleStack fromList(Path list, Path base) {
        List<String> lines = readLines(list);
        List<Path> files = new ArrayList<>();
        List<MrcHeader> headers = new ArrayList<>();
        long total = 0;
        for (int line = 0; line < lines.size(); line++) {
            String entry = lines.get(line).strip();
            if (entry.isEmpty() || entry.startsWith("#")) {
                continue;
            }
            Path file = base.resolve(entry);
            headers.add(headerOf(file, list, line + 1));
            files.add(file);
            total += headers.getLast().nz();
        }
        int[] fileOf = new int[Math.toIntExact(total)];
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

    private static ParticleStack fromStar(Path star, Path base) {
        List<String> lines = readLines(star);
        List<String> columns = new ArrayList<>();
        int column = -1;
        boolean inLoop = false;
        Map<Path, Integer> fileIndex = new LinkedHashMap<>();
        List<MrcHeader> headers = new ArrayList<>();
        List<Integer> fileOf = new ArrayList<>();
        List<Long> imageOf = new ArrayList<>();
        for (int i = 0; i < lines.size(); i++) {
            String line = lines.get(i).strip();
            if (line.startsWith("data_")) {
                inLoop = false;
                columns.clear();
                column = -1;
                continue;
            }
            if (line.equals("loop_")) {
                inLoop = true;
                columns.clear();
                column = -1;
                continue;
            }
            if (line.isEmpty() || line.startsWith("#")) {
                continue;
            }
            if (inLoop && line.startsWith("_")) {
                String label = line.split("\\s+")[0];
                if (label.equals("_rlnImageName")) {
                    column = columns.size();
                }
                columns.add(label);
                continue;
            }
            if (!inLoop || column < 0 || line.startsWith("_")) {
                continue;
            }
            String[] fields = line.split("\\s+");
            if (fields.length <= column) {
                throw new InvalidFileException(star, -1, "line " + (i + 1) + " to have " + columns.size() + " columns",
                        fields.length + " columns: '" + line + "'");
            }
            String entry = fields[column];
            int at = entry.indexOf('@');
            if (at < 1) {
                throw new InvalidFileException(star, -1, "_rlnImageName as index@file.mrcs on line " + (i + 1), "'" + entry + "'");
            }
            long index;
            try {
                index = Long.parseLong(entry.substring(0, at)) - 1;
            } catch (NumberFormatException e) {
                throw new InvalidFileException(star, -1, "a numeric image index on line " + (i + 1), "'" + entry + "'");
            }
            Path file = base.resolve(entry.substring(at + 1));
            final int lineNumber = i + 1;
            int f = fileIndex.computeIfAbsent(file, path -> {
                headers.add(headerOf(path, star, lineNumber));
                return headers.size() - 1;
            });
            if (index < 0 || index >= headers.get(f).nz()) {
                throw new InvalidFileException(star, -1, "on line " + lineNumber + " an image index in [1, "
                        + headers.get(f).nz() + "] of " + file, "index " + (index + 1));
            }
            fileOf.add(f);
            imageOf.add(index);
        }
        if (fileOf.isEmpty()) {
            throw new InvalidFileException(star, -1, "a loop with an _rlnImageName column and at least one row",
                    column < 0 ? "no _rlnImageName column" : "no rows");
        }
        return check(new ParticleStack(star, new ArrayList<>(fileIndex.keySet()), headers,
                fileOf.stream().mapToInt(Integer::intValue).toArray(), imageOf.stream().mapToLong(Long::longValue).toArray()));
    }

    private static MrcHeader headerOf(Path file, Path listing, int line) {
        if (!Files.exists(file)) {
            throw new MemfitException(listing + " line " + line + ": expected an existing stack, found no file " + file);
        }
        return Mrc.readHeader(file);
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

    private static List<String> readLines(Path file) {
        try {
            return Files.readAllLines(file);
        } catch (java.nio.file.NoSuchFileException e) {
            throw new MemfitException(file + ": no such file", e);
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
