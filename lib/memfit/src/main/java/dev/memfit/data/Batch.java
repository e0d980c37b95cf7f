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
 * One mini-batch: the sample indices and their data in off-heap memory, in the platform's byte order: dense (C
 * order, {@link #data()}), or, from a loader built with {@link LoaderBuilder#optSparseBatches(boolean)}, sparse rows
 * as CSR ({@link #values()}, {@link #columnIndices()}, {@link #rowOffsets()}), whose {@link #toNDArray(NDManager)}
 * densifies on the array's device.
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
    /** Sparse batches: the stored values, their column indices (int32) and the row offsets (int64, size + 1). */
    private final MemorySegment values;
    private final MemorySegment columns;
    private final MemorySegment rowOffsets;
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
        this.values = null;
        this.columns = null;
        this.rowOffsets = null;
    }

    /** A sparse batch: rows of {@code shape[1]} columns as CSR. */
    Batch(long epoch, long number, long[] indices, MemorySegment buffer, MemorySegment values, MemorySegment columns,
          MemorySegment rowOffsets, Shape shape, DType dtype, Consumer<MemorySegment> release) {
        this.buffer = buffer;
        this.epoch = epoch;
        this.number = number;
        this.indices = indices;
        this.data = null;
        this.values = values;
        this.columns = columns;
        this.rowOffsets = rowOffsets;
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
     * Whether the rows are sparse (CSR), from a loader built with {@link LoaderBuilder#optSparseBatches(boolean)}.
     *
     * @return true for a sparse batch
     */
    public boolean isSparse() {
        return values != null;
    }

    /**
     * The values the batch holds: its stored values when sparse, every element when dense.
     *
     * @return the value count
     */
    public long storedValues() {
        return values != null ? values.byteSize() / dtype.byteSize() : shape.size();
    }

    /**
     * The batch's memory, C order, native byte order, exactly {@code size * sampleBytes} long.
     *
     * @return the segment
     * @throws IllegalStateException for a sparse batch (use {@link #values()} and its indices, or
     *         {@link #toNDArray(NDManager)})
     */
    public MemorySegment data() {
        checkOpen();
        if (data == null) {
            throw new IllegalStateException("batch " + number + " is sparse (optSparseBatches): read values(), "
                    + "columnIndices() and rowOffsets(), or toNDArray(manager) for its dense form");
        }
        return data;
    }

    /**
     * A sparse batch's stored values, row after row, in {@link #dtype()} and native byte order.
     *
     * @return {@link #storedValues()} values
     * @throws IllegalStateException for a dense batch
     */
    public MemorySegment values() {
        return sparsePart(values);
    }

    /**
     * A sparse batch's column index (the gene) of each stored value, int32 in native byte order.
     *
     * @return {@link #storedValues()} indices
     * @throws IllegalStateException for a dense batch
     */
    public MemorySegment columnIndices() {
        return sparsePart(columns);
    }

    /**
     * A sparse batch's row offsets, int64 in native byte order: row {@code r}'s values are at
     * {@code [rowOffsets[r], rowOffsets[r + 1])}, from 0 to {@link #storedValues()}.
     *
     * @return {@code size + 1} offsets
     * @throws IllegalStateException for a dense batch
     */
    public MemorySegment rowOffsets() {
        return sparsePart(rowOffsets);
    }

    private MemorySegment sparsePart(MemorySegment part) {
        checkOpen();
        if (values == null) {
            throw new IllegalStateException("batch " + number + " is dense: read data(), or build the loader with "
                    + "optSparseBatches(true) for CSR rows");
        }
        return part;
    }

    /**
     * The batch as a DJL array of shape {@link #shape()}: a dense batch shares this batch's memory (no copy); a sparse
     * one is densified by the engine on the manager's device (its values and positions are copied there, then set
     * into zeros), so that only that device holds the dense form.
     *
     * @param manager the manager that will own the array; use one sub-manager per batch
     * @return the array
     */
    public NDArray toNDArray(NDManager manager) {
        checkOpen();
        if (values == null) {
            return manager.create(data.asByteBuffer().order(ByteOrder.nativeOrder()), shape, DjlTypes.of(dtype));
        }
        long nnz = storedValues();
        NDArray dense = manager.zeros(new Shape(shape.size()), DjlTypes.of(dtype));
        if (nnz == 0) {
            return dense.reshape(shape);
        }
        long width = shape.size() / Math.max(1, shape.get(0));
        try (java.lang.foreign.Arena scratch = java.lang.foreign.Arena.ofConfined()) {
            MemorySegment positions = scratch.allocate(nnz * Long.BYTES, Long.BYTES);
            long rows = shape.get(0);
            for (long r = 0; r < rows; r++) {
                long from = rowOffsets.getAtIndex(ValueLayout.JAVA_LONG, r);
                long to = rowOffsets.getAtIndex(ValueLayout.JAVA_LONG, r + 1);
                for (long k = from; k < to; k++) {
                    positions.setAtIndex(ValueLayout.JAVA_LONG, k, r * width + columns.getAtIndex(ValueLayout.JAVA_INT, k));
                }
            }
            NDArray at = manager.create(positions.asByteBuffer().order(ByteOrder.nativeOrder()), new Shape(nnz),
                    ai.djl.ndarray.types.DataType.INT64);
            NDArray stored = manager.create(values.asByteBuffer().order(ByteOrder.nativeOrder()), new Shape(nnz),
                    DjlTypes.of(dtype));
            // create copies to the device: the scratch positions can go once the arrays exist
            NDArray filled = dense.put(at, stored).reshape(shape);
            at.close();
            stored.close();
            dense.close();
            return filled;
        }
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
        if (this.values != null) {
            long width = count / Math.max(1, shape.get(0));
            for (long r = 0; r < shape.get(0); r++) {
                long to = rowOffsets.getAtIndex(ValueLayout.JAVA_LONG, r + 1);
                for (long k = rowOffsets.getAtIndex(ValueLayout.JAVA_LONG, r); k < to; k++) {
                    values[Math.toIntExact(r * width + columns.getAtIndex(ValueLayout.JAVA_INT, k))] +=
                            (float) dtype.getDouble(this.values, k * dtype.byteSize(), ByteOrder.nativeOrder());
                }
            }
            return values;
        }
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
