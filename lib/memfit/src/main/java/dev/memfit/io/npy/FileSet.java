package dev.memfit.io.npy;

import dev.memfit.DType;
import dev.memfit.InvalidFileException;
import dev.memfit.io.hdf5.Pack;
import dev.memfit.io.storage.RecordIndex;
import dev.memfit.MemfitException;

import java.io.IOException;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.stream.Stream;

/**
 * A folder of many small files, one sample each ({@code .npy}, all of one shape and type): the layout that makes
 * training slow on network storage, kept here to measure it and to pack it
 * ({@code dev.memfit.io.hdf5.Pack}); {@code dev.memfit.source.SampleFiles} writes one from any source.
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
