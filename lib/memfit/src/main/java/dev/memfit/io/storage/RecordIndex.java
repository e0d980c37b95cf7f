package dev.memfit.io.storage;

import dev.memfit.DType;
import java.nio.ByteOrder;
import java.nio.file.Path;
import java.util.List;

/**
 * Where each sample's bytes are: fixed-size records at known offsets of one or more files, such as the images of
 * {@code .mrcs} stacks, the rows of a packed HDF5 dataset or a folder of one-sample {@code .npy} files.
 *
 * <p>A lazy source reads records through a {@link Storage}, coalescing neighbours in the same file into one read.
 */
public interface RecordIndex {

    /**
     * The number of samples.
     *
     * @return the count
     */
    long size();

    /**
     * The shape of one sample.
     *
     * @return the dimensions, such as {@code (ny, nx)}
     */
    long[] sampleShape();

    /**
     * The files records live in.
     *
     * @return the files
     */
    List<Path> files();

    /**
     * The element type of records in a file.
     *
     * @param file an index into {@link #files()}
     * @return the type as stored
     */
    DType dtype(int file);

    /**
     * The byte order of records in a file.
     *
     * @param file an index into {@link #files()}
     * @return the order as stored
     */
    ByteOrder byteOrder(int file);

    /**
     * The file of a sample.
     *
     * @param sample the sample index
     * @return an index into {@link #files()}
     */
    int fileOf(long sample);

    /**
     * The byte offset of a sample's record in its file.
     *
     * @param sample the sample index
     * @return the offset
     */
    long offsetOf(long sample);

    /**
     * Where this index was opened from, for messages.
     *
     * @return a path
     */
    Path source();
}
