package dev.memfit.io.hdf5;

import dev.memfit.DType;
import dev.memfit.InvalidFileException;
import dev.memfit.io.storage.RecordIndex;
import dev.memfit.io.storage.Storage;
import io.jhdf.HdfFile;
import io.jhdf.api.Dataset;
import io.jhdf.api.Node;
import io.jhdf.api.dataset.ContiguousDataset;

import java.nio.ByteOrder;
import java.nio.file.Path;
import java.util.List;

/**
 * A packed HDF5 file written by {@link Pack}: a contiguous float32 dataset {@code /samples} of shape
 * {@code (n, ...)} and a {@code /names} dataset with the original file names.
 *
 * <p>The layout is contiguous on purpose: each sample is at a plain byte offset, so lazy reads go straight to the
 * bytes (one read per run of neighbours, through any {@link Storage}, evictable from the page cache) with no chunk
 * index or decompression in the way. jhdf reads the metadata once at open.
 */
public final class PackedFile implements RecordIndex {

    /** The dataset holding the samples. */
    public static final String SAMPLES = "samples";
    /** The dataset holding the original file names, one per sample. */
    public static final String NAMES = "names";

    private final Path file;
    private final long[] shape;
    private final long address;
    private final long sampleBytes;
    private final long count;
    private final List<String> names;

    private PackedFile(Path file, long[] shape, long address, long count, List<String> names) {
        this.file = file;
        this.shape = shape;
        this.address = address;
        this.count = count;
        this.names = names;
        long elements = 1;
        for (long dim : shape) {
            elements *= dim;
        }
        this.sampleBytes = elements * Float.BYTES;
    }

    /**
     * Opens a packed file and checks its layout.
     *
     * @param file the {@code .h5}
     * @return the index of its samples
     */
    public static PackedFile open(Path file) {
        try (HdfFile hdf = new HdfFile(file)) {
            Node node = hdf.getChildren().get(SAMPLES);
            if (!(node instanceof Dataset samples)) {
                throw new InvalidFileException(file, -1, "a dataset /" + SAMPLES + " (a file written by memfit pack)",
                        node == null ? "no such dataset" : "a " + node.getType());
            }
            if (!(samples instanceof ContiguousDataset contiguous)) {
                throw new InvalidFileException(file, -1, "/" + SAMPLES + " stored contiguously", "another layout (chunked or compact)");
            }
            if (samples.getJavaType() != float.class || samples.getDataType().getSize() != Float.BYTES) {
                throw new InvalidFileException(file, -1, "/" + SAMPLES + " of float32", Hdf5.typeName(samples.getDataType()));
            }
            int[] dims = samples.getDimensions();
            long[] shape = new long[dims.length - 1];
            for (int i = 1; i < dims.length; i++) {
                shape[i - 1] = dims[i];
            }
            List<String> names = List.of();
            if (hdf.getChildren().get(NAMES) instanceof Dataset nameSet && nameSet.getData() instanceof String[] values) {
                names = List.of(values);
            }
            return new PackedFile(file, shape, contiguous.getDataAddress(), dims[0], names);
        } catch (InvalidFileException e) {
            throw e;
        } catch (RuntimeException e) {
            throw new InvalidFileException(file, -1, "an HDF5 file", "a file jhdf cannot read: " + Hdf5.reason(e)
                    + "; the file is probably truncated or damaged: write it again with memfit pack", e);
        }
    }

    /**
     * The original file name of each sample.
     *
     * @return the names, in sample order
     */
    public List<String> names() {
        return names;
    }

    @Override
    public long size() {
        return count;
    }

    @Override
    public long[] sampleShape() {
        return shape.clone();
    }

    @Override
    public List<Path> files() {
        return List.of(file);
    }

    @Override
    public DType dtype(int file) {
        return DType.FLOAT32;
    }

    @Override
    public ByteOrder byteOrder(int file) {
        return ByteOrder.LITTLE_ENDIAN;
    }

    @Override
    public int fileOf(long sample) {
        return 0;
    }

    @Override
    public long offsetOf(long sample) {
        return address + sample * sampleBytes;
    }

    @Override
    public Path source() {
        return file;
    }
}
