package dev.memfit.nd4j;

import dev.memfit.data.Batch;
import dev.memfit.DType;
import dev.memfit.io.npy.NpyArray;
import dev.memfit.io.npy.NpyHeader;
import org.bytedeco.javacpp.BytePointer;
import org.bytedeco.javacpp.Pointer;
import org.nd4j.linalg.api.buffer.DataBuffer;
import org.nd4j.linalg.api.buffer.DataType;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.nd4j.linalg.factory.Nd4j;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.ByteOrder;

/**
 * ND4J views of memfit memory: batches and {@code .npy} arrays as {@link INDArray}s, without copying where the
 * layout allows.
 *
 * <p>A view shares memory with its batch or mapping and is valid only while that is open (a batch until the next one
 * is taken). Fortran-order files become ND4J arrays with {@code 'f'} ordering, so element {@code (i, j)} is right;
 * ND4J 1.0.0-M2.1's own {@code Nd4j.createFromNpyFile} reads such files as C order and scrambles them.
 */
public final class Nd4jArrays {

    private Nd4jArrays() {
    }

    /**
     * A batch as an ND4J array of shape {@code (batch, sample...)}, sharing the batch's memory.
     *
     * @param batch the batch, in native byte order and C order
     * @return the view
     */
    public static INDArray view(Batch batch) {
        long[] shape = batch.shape().getShape();
        return wrap(batch.data(), batch.dtype(), shape, 'c');
    }

    /**
     * A whole {@code .npy} array as an ND4J array.
     *
     * <p>Files in native byte order are viewed without a copy, in C or Fortran order as stored; files in the other
     * byte order are copied once into native memory owned by the returned array's buffer.
     *
     * @param array the array (up to 2^31 - 1 elements, ND4J's buffer limit)
     * @return the ND4J array
     */
    public static INDArray view(NpyArray array) {
        DType dtype = array.dtype();
        long elements = array.header().elementCount();
        if (elements > Integer.MAX_VALUE) {
            throw new IllegalArgumentException(array.path() + " has " + elements
                    + " elements; ND4J buffers hold at most 2^31 - 1: view rows instead");
        }
        char order = array.header().fortranOrder() ? 'f' : 'c';
        boolean nativeOrder = dtype.byteSize() == 1 || array.header().byteOrder().equals(ByteOrder.nativeOrder());
        if (nativeOrder) {
            return wrap(array.data(), dtype, array.shape(), order);
        }
        MemorySegment copy = Arena.ofAuto().allocate(Math.max(1, array.data().byteSize()), 64);
        int size = dtype.byteSize();
        for (long e = 0; e < elements; e++) {
            dtype.setDouble(copy, e * size, ByteOrder.nativeOrder(),
                    dtype.getDouble(array.data(), e * size, array.header().byteOrder()));
        }
        return wrap(copy.asSlice(0, array.data().byteSize()), dtype, array.shape(), order);
    }

    private static INDArray wrap(MemorySegment memory, DType dtype, long[] shape, char order) {
        DataType type = toNd4j(dtype);
        long length = 1;
        for (long dim : shape) {
            length *= dim;
        }
        // A JavaCPP pointer at the segment's address: ND4J's ByteBuffer factories copy, this one does not.
        Pointer pointer = new BytePointer(memory.asByteBuffer());
        DataBuffer buffer = Nd4j.createBuffer(pointer, length, type);
        long[] strides = NpyHeader.elementStrides(shape, order == 'f');
        return Nd4j.create(buffer, shape, strides, 0, order, type);
    }

    /**
     * The ND4J data type of a memfit element type.
     *
     * @param dtype the element type
     * @return the ND4J type
     */
    public static DataType toNd4j(DType dtype) {
        return switch (dtype) {
            case BOOL -> DataType.BOOL;
            case INT8 -> DataType.BYTE;
            case UINT8 -> DataType.UBYTE;
            case INT16 -> DataType.SHORT;
            case UINT16 -> DataType.UINT16;
            case INT32 -> DataType.INT;
            case UINT32 -> DataType.UINT32;
            case INT64 -> DataType.LONG;
            case UINT64 -> DataType.UINT64;
            case FLOAT16 -> DataType.HALF;
            case FLOAT32 -> DataType.FLOAT;
            case FLOAT64 -> DataType.DOUBLE;
        };
    }
}
