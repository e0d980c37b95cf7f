package dev.memfit.io.mrc;

import dev.memfit.DType;
import dev.memfit.InvalidFileException;
import dev.memfit.io.storage.Storage;

import java.lang.foreign.MemorySegment;
import java.nio.file.Path;

/**
 * Reads images of one MRC file as float32 in the platform's byte order, converting from the file's mode; made by
 * {@link Mrc#open(Path)} or {@link Mrc#open(Path, Storage)}.
 */
public final class MrcReader implements AutoCloseable {

    private final Path file;
    private final MrcHeader header;
    private final Storage storage;
    private final boolean ownsStorage;

    MrcReader(Path file, MrcHeader header, Storage storage, boolean ownsStorage) {
        this.file = file;
        this.header = header;
        this.storage = storage;
        this.ownsStorage = ownsStorage;
    }

    /**
     * The file's header, read and validated when the reader was opened.
     *
     * @return the header
     */
    public MrcHeader header() {
        return header;
    }

    /**
     * Reads consecutive images.
     *
     * @param first the first image
     * @param count how many images
     * @param into at least {@code count * imagePixels() * 4} bytes, also used to stage the raw bytes
     * @throws InvalidFileException when the images are not all in the file
     */
    public void readImages(long first, int count, MemorySegment into) {
        if (first < 0 || count < 0 || first > header.nz() - count) {
            throw new InvalidFileException(file, -1, "images in [0, " + header.nz() + ")",
                    "a request for images [" + first + ", " + (first + count) + ")");
        }
        long pixels = header.imagePixels() * count;
        long staging = DType.stagingOffset(pixels, header.dtype(), DType.FLOAT32);
        storage.read(file, header.imageOffset(first), into.asSlice(staging, pixels * header.dtype().byteSize()));
        DType.convertInPlace(into, pixels, header.dtype(), header.byteOrder(), DType.FLOAT32);
    }

    /** Closes the storage when the reader opened it. */
    @Override
    public void close() {
        if (ownsStorage) {
            storage.close();
        }
    }
}
