package dev.memfit.io.mrc;

import dev.memfit.DType;
import dev.memfit.io.storage.MappedFileWriter;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Path;

/**
 * Fills a new MRC stack image by image through a mapping, keeping the statistics the header needs (min, max, mean,
 * rms), then writes the final header and moves the file into place atomically on {@link #commit()}.
 */
public final class MrcWriter implements AutoCloseable {

    private final MrcHeader header;
    private final MappedFileWriter file;
    private double min = Double.POSITIVE_INFINITY;
    private double max = Double.NEGATIVE_INFINITY;
    private double sum;
    private double sumOfSquares;
    private long count;

    MrcWriter(Path target, MrcHeader requested) {
        this.header = new MrcHeader(requested.nx(), requested.ny(), requested.nz(), requested.dtype(),
                requested.byteOrder(), 0, requested.voxelSize());
        this.file = MappedFileWriter.open(target, header.encode(0, 0, 0, 0), header.nz() * header.imageBytes());
    }

    /**
     * The header being written.
     *
     * @return the header
     */
    public MrcHeader header() {
        return header;
    }

    /**
     * Writes consecutive images, converting from float32 to the file's mode and byte order.
     *
     * @param first the index of the first image
     * @param images whole images of float32 in the platform's byte order
     */
    public void writeImages(long first, MemorySegment images) {
        long pixels = images.byteSize() / Float.BYTES;
        if (pixels % header.imagePixels() != 0) {
            throw new IllegalArgumentException(images.byteSize() + " bytes are not whole images of " + header.nx() + "x" + header.ny());
        }
        long n = pixels / header.imagePixels();
        if (first < 0 || first + n > header.nz()) {
            throw new IndexOutOfBoundsException("images [" + first + ", " + (first + n) + ") outside [0, " + header.nz() + ")");
        }
        DType dtype = header.dtype();
        MemorySegment data = file.data();
        long base = first * header.imageBytes();
        double localMin = Double.POSITIVE_INFINITY;
        double localMax = Double.NEGATIVE_INFINITY;
        double localSum = 0;
        double localSquares = 0;
        for (long p = 0; p < pixels; p++) {
            double value = images.get(ValueLayout.JAVA_FLOAT, p * Float.BYTES);
            dtype.setDouble(data, base + p * dtype.byteSize(), header.byteOrder(), value);
            double stored = dtype.getDouble(data, base + p * dtype.byteSize(), header.byteOrder());
            localMin = Math.min(localMin, stored);
            localMax = Math.max(localMax, stored);
            localSum += stored;
            localSquares += stored * stored;
        }
        synchronized (this) {
            min = Math.min(min, localMin);
            max = Math.max(max, localMax);
            sum += localSum;
            sumOfSquares += localSquares;
            count += pixels;
        }
    }

    /**
     * Writes the header with the statistics, flushes and moves the file to its final name.
     *
     * @return the final path
     */
    public synchronized Path commit() {
        double mean = count == 0 ? 0 : sum / count;
        double rms = count == 0 ? 0 : Math.sqrt(Math.max(0, sumOfSquares / count - mean * mean));
        file.rewriteHeader(header.encode((float) (count == 0 ? 0 : min), (float) (count == 0 ? 0 : max), (float) mean, (float) rms));
        return file.commit();
    }

    /**
     * Releases the mapping; without a prior {@link #commit()}, deletes the temporary file.
     */
    @Override
    public void close() {
        file.close();
    }

}
