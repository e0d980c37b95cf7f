package dev.memfit.data;

import dev.memfit.DType;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.util.Arrays;

/**
 * Puts CSR rows in scipy's canonical form in place: columns ascending within a row, each once (a column stored twice
 * holds the sum, as scipy's {@code sum_duplicates} and a dense conversion give). Files anndata writes are canonical
 * already; then this is one pass that compares neighbours and moves nothing.
 */
final class SparseCanonical {

    private SparseCanonical() {
    }

    /**
     * Sorts each row's columns and sums repeated ones, moving later rows down over what was merged.
     *
     * @param values the stored values, in {@code type}, native order
     * @param columns their column indices (int32, native order)
     * @param offsets {@code rows + 1} row offsets (int64, native order), rewritten when values are merged
     * @param rows the row count
     * @param type float32 or float64
     * @return the values kept
     */
    static long sumDuplicates(MemorySegment values, MemorySegment columns, MemorySegment offsets, int rows, DType type) {
        long write = 0;
        long from = offsets.getAtIndex(ValueLayout.JAVA_LONG_UNALIGNED, 0);
        int bytes = type.byteSize();
        for (int r = 0; r < rows; r++) {
            long to = offsets.getAtIndex(ValueLayout.JAVA_LONG_UNALIGNED, r + 1);
            if (ascending(columns, from, to)) {
                if (write != from) {
                    MemorySegment.copy(columns, from * Integer.BYTES, columns, write * Integer.BYTES, (to - from) * Integer.BYTES);
                    MemorySegment.copy(values, from * bytes, values, write * bytes, (to - from) * bytes);
                }
                write += to - from;
            } else {
                write = merge(values, columns, from, to, write, type);
            }
            offsets.setAtIndex(ValueLayout.JAVA_LONG_UNALIGNED, r + 1, write);
            from = to;
        }
        return write;
    }

    private static boolean ascending(MemorySegment columns, long from, long to) {
        for (long k = from + 1; k < to; k++) {
            if (columns.getAtIndex(ValueLayout.JAVA_INT_UNALIGNED, k) <= columns.getAtIndex(ValueLayout.JAVA_INT_UNALIGNED, k - 1)) {
                return false;
            }
        }
        return true;
    }

    /** One row sorted by column (stable: equal columns keep their order), repeats summed, written from {@code write}. */
    private static long merge(MemorySegment values, MemorySegment columns, long from, long to, long write, DType type) {
        int n = Math.toIntExact(to - from);
        long[] keys = new long[n];
        double[] stored = new double[n];
        for (int k = 0; k < n; k++) {
            keys[k] = (long) columns.getAtIndex(ValueLayout.JAVA_INT_UNALIGNED, from + k) << 32 | k;
            stored[k] = type.getDouble(values, (from + k) * type.byteSize(), ByteOrder.nativeOrder());
        }
        // column indices are checked non-negative by the readers, so the packed keys sort by column, then position
        Arrays.sort(keys);
        int k = 0;
        while (k < n) {
            int column = (int) (keys[k] >>> 32);
            double sum = 0;
            while (k < n && (int) (keys[k] >>> 32) == column) {
                sum += stored[(int) keys[k]];
                k++;
            }
            columns.setAtIndex(ValueLayout.JAVA_INT_UNALIGNED, write, column);
            type.setDouble(values, write * type.byteSize(), ByteOrder.nativeOrder(), sum);
            write++;
        }
        return write;
    }
}
