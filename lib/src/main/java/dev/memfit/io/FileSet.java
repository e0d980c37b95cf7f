package dev.memfit.io;

import dev.memfit.MemfitException;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.stream.Stream;

/**
 * A folder of many small files, one sample each ({@code .npy}, all of one shape and type): the layout that makes
 * training slow on network storage, kept here to measure it and to {@link Pack pack} it.
 */
public final class FileSet implements RecordIndex {

    private final Path folder;
    private final List<Path> files;
    private final long[] dataOffsets;
    private final long[] shape;
    private final DType dtype;
    private final ByteOrder byteOrder;

    private FileSet(Path folder, List<Path> files, long[] dataOffsets, long[] shape, DType dtype, ByteOrder byteOrder) {
        this.folder = folder;
        this.files = files;
        this.dataOffsets = dataOffsets;
        this.shape = shape;
        this.dtype = dtype;
        this.byteOrder = byteOrder;
    }

    /**
     * Lists the {@code .npy} files of a folder in name order and checks that they agree in shape and type.
     *
     * @param folder the folder
     * @return the set
     * @throws MemfitException naming the entry that cannot be read or that disagrees with the first file
     */
    public static FileSet open(Path folder) {
        List<Path> files;
        try (Stream<Path> entries = Files.list(folder)) {
            files = entries.filter(path -> path.getFileName().toString().toLowerCase(Locale.ROOT).endsWith(".npy"))
                    .sorted().toList();
        } catch (IOException e) {
            throw new MemfitException(folder + ": cannot list the folder: " + e.getMessage(), e);
        }
        if (files.isEmpty()) {
            throw new MemfitException(folder + ": expected .npy sample files, found none");
        }
        long[] offsets = new long[files.size()];
        NpyHeader first = null;
        for (int i = 0; i < files.size(); i++) {
            Path file = files.get(i);
            if (!Files.isRegularFile(file) || !Files.isReadable(file)) {
                throw new MemfitException(file + ": expected a readable sample file in " + folder
                        + ", found " + (Files.isDirectory(file) ? "a folder" : "an unreadable entry"));
            }
            NpyHeader header = Npy.readHeader(file);
            if (header.fortranOrder() && header.shape().length > 1) {
                throw new InvalidFileException(file, -1, "C-order samples", "a Fortran-order array");
            }
            if (first == null) {
                first = header;
            } else if (!Arrays.equals(first.shape(), header.shape()) || first.dtype() != header.dtype()
                    || !first.byteOrder().equals(header.byteOrder())) {
                throw new InvalidFileException(file, -1, "a sample like " + files.getFirst().getFileName() + ": "
                        + first.dtype().descr(first.byteOrder()) + " " + Arrays.toString(first.shape()),
                        header.dtype().descr(header.byteOrder()) + " " + Arrays.toString(header.shape()));
            }
            offsets[i] = header.dataOffset();
        }
        return new FileSet(folder, files, offsets, first.shape(), first.dtype(), first.byteOrder());
    }

    /**
     * Writes each sample of a source as its own {@code .npy} file ({@code sample_000000.npy}, ...), the layout
     * {@link #open} reads: a way to make the many-small-files case to measure.
     *
     * @param source the samples
     * @param folder the folder to fill (created if needed)
     * @return the set written
     */
    public static FileSet write(dev.memfit.data.SampleSource source, Path folder) {
        long[] shape = source.sampleShape().getShape();
        int digits = Math.max(6, Long.toString(source.size()).length());
        try (java.lang.foreign.Arena arena = java.lang.foreign.Arena.ofConfined();
             dev.memfit.Progress progress = dev.memfit.Progress.bar("Writing " + folder.getFileName(), source.size(), "files")) {
            Files.createDirectories(folder);
            java.lang.foreign.MemorySegment sample = arena.allocate(source.sampleBytes(), 64);
            for (long i = 0; i < source.size(); i++) {
                source.read(i, sample);
                Npy.write(folder.resolve(String.format("sample_%0" + digits + "d.npy", i)),
                        NpyHeader.of(source.dtype(), shape), sample);
                progress.step(1);
            }
        } catch (IOException e) {
            throw new UncheckedIOException("cannot create " + folder, e);
        }
        return open(folder);
    }

    @Override
    public long size() {
        return files.size();
    }

    @Override
    public long[] sampleShape() {
        return shape.clone();
    }

    @Override
    public List<Path> files() {
        return files;
    }

    @Override
    public DType dtype(int file) {
        return dtype;
    }

    @Override
    public ByteOrder byteOrder(int file) {
        return byteOrder;
    }

    @Override
    public int fileOf(long sample) {
        return Math.toIntExact(sample);
    }

    @Override
    public long offsetOf(long sample) {
        return dataOffsets[Math.toIntExact(sample)];
    }

    @Override
    public Path source() {
        return folder;
    }

    /**
     * The element type of every sample.
     *
     * @return the dtype
     */
    public DType dtype() {
        return dtype;
    }
}
