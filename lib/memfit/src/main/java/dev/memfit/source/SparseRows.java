package dev.memfit.source;

import java.lang.foreign.MemorySegment;

/**
 * The rows of a source whose samples are stored sparse (a CSR or CSC {@code X}, CSR shards), read as they are stored:
 * values, column indices and row offsets, never densified. A loader built with
 * {@link dev.memfit.data.LoaderBuilder#optSparseBatches(boolean)} hands batches over this way, so a batch of 4,096
 * cells of a 20,000-gene atlas with 1,000 values a cell takes about 33 MB, not the 328 MB of its dense form.
 *
 * <p>Values are in the source's {@link SampleSource#dtype()}, column indices int32 and row offsets int64, all in the
 * platform's byte order. Within a row, columns come in the order the source stores them (sorted and unique for shards
 * and for files anndata writes). Reads are thread-safe.
 */
public interface SparseRows {

    /**
     * The values stored for all rows.
     *
     * @return the stored values
     */
    long storedValues();

    /**
     * The values stored for some rows: what {@link #read} writes for them.
     *
     * @param rows the row indices
     * @return the sum of their stored values
     */
    long storedValues(long[] rows);

    /**
     * Reads rows one after the other: row {@code r} (of {@code rows[r]}) has its values and columns at
     * {@code [rowOffsets[r], rowOffsets[r + 1])}, from {@code rowOffsets[0] = 0}.
     *
     * @param rows the row indices, in the order wanted (ascending reads best: runs of consecutive rows are read at once)
     * @param values at least {@code storedValues(rows) * dtype.byteSize()} bytes; overwritten
     * @param columns at least {@code storedValues(rows) * 4} bytes; overwritten
     * @param rowOffsets at least {@code (rows.length + 1) * 8} bytes; overwritten
     * @return the values read
     */
    long read(long[] rows, MemorySegment values, MemorySegment columns, MemorySegment rowOffsets);
}
