package dev.memfit.data;

import ai.djl.ndarray.types.DataType;
import dev.memfit.DType;

/**
 * DJL's data type for each of memfit's element types. Kept here, where batches become {@code NDArray}s, rather than
 * on {@link DType}: a type every format and shard plan uses must not reference DJL, or a process without DJL on its
 * class path (a Spark executor running the submit jar) fails to load it.
 */
final class DjlTypes {

    private DjlTypes() {
    }

    /**
     * The matching DJL data type.
     *
     * @param type the element type
     * @return the DJL type
     * @throws UnsupportedOperationException for unsigned types wider than a byte, which DJL's PyTorch engine lacks
     */
    static DataType of(DType type) {
        return switch (type) {
            case BOOL -> DataType.BOOLEAN;
            case INT8 -> DataType.INT8;
            case UINT8 -> DataType.UINT8;
            case INT16 -> DataType.INT16;
            case INT32 -> DataType.INT32;
            case INT64 -> DataType.INT64;
            case FLOAT16 -> DataType.FLOAT16;
            case FLOAT32 -> DataType.FLOAT32;
            case FLOAT64 -> DataType.FLOAT64;
            case UINT16, UINT32, UINT64 -> throw new UnsupportedOperationException(type + " has no DJL data type; "
                    + "convert the batches, e.g. with optConvertTo(DType.FLOAT32) on the loader builder");
        };
    }
}
