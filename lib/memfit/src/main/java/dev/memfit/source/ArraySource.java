package dev.memfit.source;

import dev.memfit.ProgressListener;
import ai.djl.ndarray.types.Shape;
import dev.memfit.DType;
import dev.memfit.NativeMemory;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * Samples held in native (off-heap) memory, such as a matrix generated in RAM.
 *
 * <p>The data never lives on the Java heap, so a matrix of many GB does not need a large {@code -Xmx}.
 */
public final class ArraySource implements SampleSource {

    /** The bytes {@link #copyOf} reads at once: large reads, a bounded index array. */
    private static final long COPY_BLOCK_BYTES = 64L << 20;

    private final Arena arena;
    private final MemorySegment data;
    private final long size;
    private final Shape sampleShape;
    private final DType dtype;
    private final long sampleBytes;
    private final NativeMemory.Reservation reservation;
    private final String name;
    /** The fingerprint of the data this is a copy of ({@link #copyOf}), so a loaded copy resumes a lazy run; or null. */
    private String copiedFingerprint;

    private ArraySource(String name, Arena arena, MemorySegment data, long size, Shape sampleShape, DType dtype,
                        NativeMemory.Reservation reservation) {
        this.name = name;
        this.arena = arena;
        this.data = data;
        this.size = size;
        this.sampleShape = sampleShape;
        this.dtype = dtype;
        this.sampleBytes = sampleShape.size() * dtype.byteSize();
        this.reservation = reservation;
        if (data.byteSize() < size * sampleBytes) {
            throw new IllegalArgumentException(size + " samples of " + sampleBytes + " bytes need " + size * sampleBytes
                    + " bytes, the segment has " + data.byteSize());
        }
    }

    /**
     * Allocates zeroed native memory for samples, to be filled through {@link #data()}.
     *
     * @param name a name for descriptions
     * @param size the number of samples
     * @param sampleShape the shape of one sample
     * @param dtype the element type
     * @return the source, owning its memory
     */
    public static ArraySource allocate(String name, long size, Shape sampleShape, DType dtype) {
        long bytes = Math.multiplyExact(size, sampleShape.size() * dtype.byteSize());
        Arena arena = Arena.ofShared();
        MemorySegment data = arena.allocate(Math.max(1, bytes), 64).asSlice(0, bytes);
        return new ArraySource(name, arena, data, size, sampleShape, dtype, NativeMemory.ALLOCATED.reserve(bytes));
    }

    /**
     * Every sample of another source copied into native memory, read in blocks of consecutive samples of about
     * 64 MiB (one coalesced read each), the task advanced by the samples of each block. The memory is freed if a
     * read fails.
     *
     * @param name a name for descriptions
     * @param source the samples to copy; left open
     * @param progress advanced by the samples copied
     * @return the copy, owning its memory
     */
    public static ArraySource copyOf(String name, SampleSource source, ProgressListener.Task progress) {
        ArraySource copy = allocate(name, source.size(), source.sampleShape(), source.dtype());
        long sampleBytes = source.sampleBytes();
        int block = (int) Math.max(1, Math.min(source.size(), COPY_BLOCK_BYTES / Math.max(1, sampleBytes)));
        try {
            for (long first = 0; first < source.size(); first += block) {
                long[] indices = new long[(int) Math.min(block, source.size() - first)];
                for (int i = 0; i < indices.length; i++) {
                    indices[i] = first + i;
                }
                source.readBatch(indices, copy.data.asSlice(first * sampleBytes, indices.length * sampleBytes));
                progress.step(indices.length);
            }
            copy.copiedFingerprint = source.fingerprint();
            return copy;
        } catch (RuntimeException e) {
            copy.close();
            throw e;
        }
    }

    /**
     * A float32 matrix copied into native memory, one sample per row.
     *
     * @param name a name for descriptions
     * @param rows the rows, all of one length
     * @return the source
     */
    public static ArraySource of(String name, float[][] rows) {
        int cols = rows.length == 0 ? 0 : rows[0].length;
        ArraySource source = allocate(name, rows.length, new Shape(cols), DType.FLOAT32);
        for (int r = 0; r < rows.length; r++) {
            MemorySegment.copy(rows[r], 0, source.data, ValueLayout.JAVA_FLOAT, (long) r * cols * Float.BYTES, cols);
        }
        return source;
    }

    /**
     * The samples' memory, in C order and the platform's byte order, writable.
     *
     * @return the segment
     */
    public MemorySegment data() {
        return data;
    }

    @Override
    public long size() {
        return size;
    }

    @Override
    public Shape sampleShape() {
        return sampleShape;
    }

    @Override
    public DType dtype() {
        return dtype;
    }

    @Override
    public void read(long index, MemorySegment into) {
        if (index < 0 || index >= size) {
            throw new IndexOutOfBoundsException("sample " + index + " outside [0, " + size + ") of " + name);
        }
        MemorySegment.copy(data, index * sampleBytes, into, 0, sampleBytes);
    }

    /** Held in native memory. */
    @Override
    public boolean readsFromMemory() {
        return true;
    }

    @Override
    public void readBatch(long[] indices, MemorySegment into) {
        for (int i = 0; i < indices.length; i++) {
            long index = indices[i];
            if (index < 0 || index >= size) {
                throw new IndexOutOfBoundsException("sample " + index + " outside [0, " + size + ") of " + name);
            }
            MemorySegment.copy(data, index * sampleBytes, into, i * sampleBytes, sampleBytes);
        }
    }

    @Override
    public String describe() {
        return "in-memory " + name;
    }

    /**
     * A copy ({@link #copyOf}) is the same data as its source, however it was read; otherwise as described, with a
     * checksum of 16 blocks spread over the values ({@link dev.memfit.io.npy.NpyArray#sampledChecksum(MemorySegment)}).
     */
    @Override
    public String fingerprint() {
        return copiedFingerprint != null ? copiedFingerprint : SampleSource.super.fingerprint()
                + SampleSource.content(dev.memfit.io.npy.NpyArray.sampledChecksum(data));
    }

    @Override
    public void close() {
        arena.close();
        reservation.close();
    }
}
