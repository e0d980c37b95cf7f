package dev.memfit.data;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.Shape;
import dev.memfit.DType;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.util.function.Consumer;

/**
 * One mini-batch: the sample indices and their data in off-heap memory, in the platform's byte order.
 *
 * <p>A batch borrows one of its loader's buffers. It stays valid until it is closed or until the next batch is taken
 * from the same iterator, whichever comes first; an {@code NDArray} made with {@link #toNDArray(NDManager)} shares the
 * memory, so use it (or move it to the device) within that window.
 */
public final class Batch implements AutoCloseable {

    private final long epoch;
    private final long number;
    private final long[] indices;
    private final MemorySegment data;
    private final Shape shape;
    private final DType dtype;
    private final MemorySegment buffer;
    private final Consumer<MemorySegment> release;
    private boolean closed;

    Batch(long epoch, long number, long[] indices, MemorySegment buffer, MemorySegment data, Shape shape, DType dtype,
          Consumer<MemorySegment> release) {
        this.buffer = buffer;
        this.epoch = epoch;
        this.number = number;
        this.indices = indices;
        this.data = data;
        this.shape = shape;
        this.dtype = dtype;
        this.release = release;
    }

    /**
     * The epoch this batch belongs to.
     *
     * @return the epoch number
     */
    public long epoch() {
        return epoch;
    }

    /**
     * The position of this batch in its epoch, from 0.
     *
     * @return the batch number
     */
    public long number() {
        return number;
    }

    /**
     * The number of samples.
     *
     * @return the batch size (the last batch of an epoch may be smaller)
     */
    public int size() {
        return indices.length;
    }

    /**
     * The indices of the samples, in batch order (a copy).
     *
     * @return the indices
     */
    public long[] indices() {
        return indices.clone();
    }

    /**
     * The shape of the batch: its size followed by the sample shape.
     *
     * @return the shape
     */
    public Shape shape() {
        return shape;
    }

    /**
     * The element type.
     *
     * @return the dtype
     */
    public DType dtype() {
        return dtype;
    }

    /**
     * The batch's memory, C order, native byte order, exactly {@code size * sampleBytes} long.
     *
     * @return the segment
     */
    public MemorySegment data() {
        checkOpen();
        return data;
    }

    /**
     * The batch as a DJL array that shares this batch's memory (no copy).
     *
     * @param manager the manager that will own the array; use one sub-manager per batch
     * @return the array, of shape {@link #shape()}
     */
    public NDArray toNDArray(NDManager manager) {
        checkOpen();
        return manager.create(data.asByteBuffer().order(ByteOrder.nativeOrder()), shape, DjlTypes.of(dtype));
    }

    /**
     * Copies the batch into a float array, converting from any element type.
     *
     * @return {@code size * sampleSize} floats in C order
     */
    public float[] toFloatArray() {
        checkOpen();
        long count = shape.size();
        float[] values = new float[Math.toIntExact(count)];
        if (dtype == DType.FLOAT32) {
            MemorySegment.copy(data, ValueLayout.JAVA_FLOAT, 0, values, 0, values.length);
        } else {
            for (int i = 0; i < values.length; i++) {
                values[i] = (float) dtype.getDouble(data, (long) i * dtype.byteSize(), ByteOrder.nativeOrder());
            }
        }
        return values;
    }

    private void checkOpen() {
        if (closed) {
            throw new IllegalStateException("batch " + number + " of epoch " + epoch + " was released; "
                    + "use a batch before taking the next one, or copy what you keep");
        }
    }

    /**
     * Gives the buffer back to the loader. Idempotent.
     */
    @Override
    public void close() {
        if (!closed) {
            closed = true;
            release.accept(buffer);
        }
    }
}
