package dev.memfit.source;

import ai.djl.ndarray.types.Shape;
import dev.memfit.DType;
import dev.memfit.io.npy.Npy;
import dev.memfit.io.npy.NpyArray;

import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.util.Arrays;

/**
 * The rows of a {@code .npy} array as samples, memory-mapped or held in native memory.
 *
 * <p>Row {@code i} of an array of shape {@code (n, d1, d2...)} is sample {@code i} of shape {@code (d1, d2...)}.
 * Fortran-order and foreign-byte-order files are translated row by row (slower, never scrambled).
 */
public final class NpySource implements SampleSource {

    private final NpyArray array;
    private final Shape sampleShape;
    private final long rowBytes;
    private final boolean contiguous;
    /** Set for a mapped file larger than memory: each batch's whole pages are unmapped once copied. */
    private volatile boolean dropAfterReading;

    private NpySource(NpyArray array) {
        this.array = array;
        long[] shape = array.shape();
        if (shape.length == 0) {
            throw new IllegalArgumentException(array.path() + ": a scalar array has no rows to sample");
        }
        this.sampleShape = new Shape(Arrays.copyOfRange(shape, 1, shape.length));
        this.rowBytes = array.rowBytes();
        this.contiguous = array.isRowContiguousNative();
    }

    /**
     * Memory-maps a file: the OS pages rows in on demand, the heap holds nothing of the data.
     *
     * @param file the {@code .npy} file
     * @return the source, to be closed
     */
    public static NpySource mapped(Path file) {
        return new NpySource(Npy.map(file));
    }

    /**
     * Reads a whole file into native memory first.
     *
     * @param file the {@code .npy} file
     * @return the source, to be closed
     */
    public static NpySource inMemory(Path file) {
        return new NpySource(Npy.load(file));
    }

    /**
     * The underlying array.
     *
     * @return the array
     */
    public NpyArray array() {
        return array;
    }

    @Override
    public long size() {
        return array.rows();
    }

    @Override
    public Shape sampleShape() {
        return sampleShape;
    }

    @Override
    public DType dtype() {
        return array.dtype();
    }

    @Override
    public void read(long index, MemorySegment into) {
        checkIndex(index);
        array.copyRows(index, 1, into, 0);
    }

    /**
     * Loaded, or mapped and small enough to stay in the page cache: rows are copied from memory. A mapped file larger
     * than the memory left to this process ({@link dev.memfit.ProcessMemory#available()}, read when the loader is
     * built; inside a container, a file already cached counts as used) is read from storage as the rows are touched,
     * and is read a whole batch a thread. Cut into parts, epochs in file order of an 800 MiB file inside a 320 MiB limit took 1.11-1.17 times the
     * disk's sequential read, in whole batches 1.04-1.10 times (the first epoch 0.44-0.59 s against 0.35-0.46 s; three
     * alternated runs of {@code ./memfit bench disk --file F --memory 320m --cpus 1}).
     */
    @Override
    public boolean readsFromMemory() {
        return readsFromMemory(dev.memfit.ProcessMemory.current());
    }

    /** {@link #readsFromMemory()} with the memory this process may use given. */
    boolean readsFromMemory(dev.memfit.ProcessMemory memory) {
        return !array.isMapped() || memory.fitsInMemory(array.data().byteSize());
    }

    @Override
    public void readBatch(long[] indices, MemorySegment into) {
        MemorySegment data = array.data();
        long size = size();
        long runStart = -1;
        long runEnd = -1;
        for (int i = 0; i < indices.length; i++) {
            long index = indices[i];
            if (index < 0 || index >= size) {
                checkIndex(index);
            }
            if (contiguous) {
                dev.memfit.NativeCopy.copy(data, index * rowBytes, into, i * rowBytes, rowBytes);
            } else {
                array.copyRows(index, 1, into, i * rowBytes);
            }
            if (dropAfterReading) {
                // runs of consecutive rows: one call for a batch in file order, one a row for a shuffled one
                if (index != runEnd) {
                    letGo(data, runStart, runEnd);
                    runStart = index;
                }
                runEnd = index + 1;
            }
        }
        if (dropAfterReading) {
            letGo(data, runStart, runEnd);
        }
    }

    /** Lets go of each batch's whole pages once copied, as {@link #expectReads} does for a file larger than memory. */
    void dropAfterReading(boolean enabled) {
        this.dropAfterReading = enabled && array.isMapped();
    }

    /** Unmaps the whole pages of rows [start, end), copied already. */
    private void letGo(MemorySegment data, long start, long end) {
        if (start < 0) {
            return;
        }
        long page = dev.memfit.io.storage.PageCache.PAGE;
        long first = (data.address() + start * rowBytes + page - 1) & -page;
        long last = (data.address() + end * rowBytes) & -page;
        if (last > first) {
            dev.memfit.io.storage.PageCache.advise(data.asSlice(first - data.address(), last - first),
                    dev.memfit.io.storage.PageCache.ReadAdvice.DONE);
        }
    }

    /**
     * A mapped file larger than the memory this process may use passes the loader's order on to the kernel, and lets
     * go of the pages of each batch once copied (they stay in the page cache, unmapped: reclaiming mapped pages under
     * a memory limit costs more than reading them).
     */
    @Override
    public void expectReads(dev.memfit.io.storage.PageCache.ReadAdvice order) {
        if (array.isMapped()) {
            boolean fits = dev.memfit.ProcessMemory.current().fitsInMemory(array.data().byteSize());
            dev.memfit.io.storage.PageCache.advise(array.data(), fits ? dev.memfit.io.storage.PageCache.ReadAdvice.NORMAL : order);
            dropAfterReading = !fits;
        }
    }

    private void checkIndex(long index) {
        if (index < 0 || index >= size()) {
            throw new IndexOutOfBoundsException("sample " + index + " outside [0, " + size() + ") of " + array.path());
        }
    }

    /**
     * The file's name and size, the array's shape and type, and a checksum of 16 blocks spread over its data
     * ({@link NpyArray#sampledChecksum()}): the same whether mapped or loaded, and on any path.
     */
    @Override
    public String fingerprint() {
        return array.path().getFileName() + " (" + array.header() + ")"
                + SampleSource.content(array.sampledChecksum());
    }

    @Override
    public String describe() {
        return (array.isMapped() ? "mapped " : "in-memory ") + array.path().getFileName();
    }

    @Override
    public void close() {
        array.close();
    }
}
