package dev.memfit.io.npy;

import dev.memfit.DType;
import dev.memfit.InvalidFileException;
import dev.memfit.io.storage.RecordIndex;
import dev.memfit.io.storage.Storage;

import java.nio.ByteOrder;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;

/**
 * The rows of one {@code .npy} file as records, for reading them on demand through a {@link Storage} that cannot be
 * memory-mapped, such as an object cache over a bucket ({@code dev.memfit.io.cloud.ObjectCache}): row {@code i} is the
 * {@code rowBytes} bytes at {@code dataOffset + i * rowBytes}.
 */
public final class NpyRows implements RecordIndex {

    private final Path file;
    private final NpyHeader header;
    private final long[] rowShape;
    private final long rowBytes;

    private NpyRows(Path file, NpyHeader header) {
        this.file = file;
        this.header = header;
        long[] shape = header.shape();
        this.rowShape = Arrays.copyOfRange(shape, 1, shape.length);
        long elements = 1;
        for (long d : rowShape) {
            elements = Math.multiplyExact(elements, d);
        }
        this.rowBytes = elements * header.dtype().byteSize();
    }

    /**
     * Reads a file's header through a storage (only the header's bytes) and indexes its rows.
     *
     * @param storage where the bytes come from
     * @param file the file, or an object in its path form ({@code s3:/bucket/key})
     * @return the rows
     * @throws InvalidFileException when the file is not a supported {@code .npy}, holds a scalar, or is in Fortran
     *         order with more than one dimension (its rows are not contiguous)
     */
    public static NpyRows open(Storage storage, Path file) {
        NpyHeader header = Npy.readHeader(storage, file);
        if (header.shape().length == 0) {
            throw new InvalidFileException(file, header.dataOffset(), "an array of rows (at least one dimension)",
                    "a scalar");
        }
        if (header.fortranOrder() && header.shape().length > 1) {
            throw new InvalidFileException(file, -1, "C-order rows (numpy's default; np.ascontiguousarray before "
                    + "np.save)", "a Fortran-order array, whose rows are not contiguous");
        }
        return new NpyRows(file, header);
    }

    /**
     * The file's header.
     *
     * @return the header
     */
    public NpyHeader header() {
        return header;
    }

    @Override
    public long size() {
        return header.shape()[0];
    }

    @Override
    public long[] sampleShape() {
        return rowShape.clone();
    }

    @Override
    public List<Path> files() {
        return List.of(file);
    }

    @Override
    public DType dtype(int index) {
        return header.dtype();
    }

    @Override
    public ByteOrder byteOrder(int index) {
        return header.byteOrder();
    }

    @Override
    public int fileOf(long sample) {
        return 0;
    }

    @Override
    public long offsetOf(long sample) {
        return header.dataOffset() + sample * rowBytes;
    }

    @Override
    public Path source() {
        return file;
    }
}
