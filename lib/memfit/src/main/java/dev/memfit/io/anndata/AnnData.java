package dev.memfit.io.anndata;

import dev.memfit.DType;
import dev.memfit.MemfitException;

import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * An AnnData object read out of core, whatever holds it: an {@code .h5ad} file ({@code dev.memfit.io.hdf5.H5ad}) or a
 * zarr store, a {@code .zarr} folder or a {@code .zarr.zip} archive, local or in a bucket
 * ({@code dev.memfit.io.zarr.ZarrAnnData}). One matrix is read as X ({@link #layer()}: {@code X}, {@code raw/X} or
 * {@code layers/NAME}), dense, CSR or CSC (a CSC X is transposed to CSR out of core when rows are first read,
 * {@link CscTranspose}), by row ranges, never whole, in its own precision ({@link #floatType()}); the {@code obs} and
 * {@code var} dataframes are read column by column with their types ({@link FrameColumn}). Open one with
 * {@code dev.memfit.io.AnnDataFiles}, which picks the reader from what the path is.
 *
 * <p>Both formats hold the same layout, written by anndata with the same {@code encoding-type} attributes, so every
 * reader gives the same rows, values, sums and columns for the same AnnData: duplicate entries in a row are summed
 * (as scipy's {@code toarray()} does) by {@link #readRows}, handed over as stored by {@link #readCsr}, and every stored
 * value counts in {@link #sum}, {@link #totals} and {@link #columnSums}.
 */
public interface AnnData extends AutoCloseable {

    /** How X is stored. */
    enum Layout {
        /** Compressed sparse rows ({@code csr_matrix}): cells are read straight from the file. */
        CSR,
        /** Compressed sparse columns ({@code csc_matrix}): transposed to CSR out of core before rows are read. */
        CSC,
        /** A two-dimensional array. */
        DENSE
    }

    /**
     * The sum and the non-zero count of X.
     *
     * @param sum the float64 sum of every value
     * @param nonZeroValues how many values are not zero (for CSR, stored entries that are not explicit zeros)
     */
    record Totals(double sum, long nonZeroValues) {
    }

    /** Receives consecutive rows of X as dense float32. */
    @FunctionalInterface
    interface RowsConsumer {
        /**
         * Handles rows.
         *
         * @param first the index of the first row
         * @param count the number of rows
         * @param rows {@code count x n_vars} float32 values, valid during the call
         */
        void accept(long first, int count, MemorySegment rows);
    }

    /**
     * The path in an AnnData object of the matrix a layer setting names: {@code X}; {@code raw} or {@code raw/X};
     * {@code layers/NAME} or just {@code NAME} (such as {@code counts}).
     *
     * @param layer the setting
     * @return {@code X}, {@code raw/X} or {@code layers/NAME}
     */
    static String matrixPath(String layer) {
        String name = layer.strip();
        if (name.startsWith("/")) {
            name = name.substring(1);
        }
        return switch (name) {
            case "X" -> "X";
            case "raw", "raw/X" -> "raw/X";
            default -> name.startsWith("layers/") ? name : "layers/" + name;
        };
    }

    /**
     * Checks the settings shared by every reader's builder.
     *
     * @param layer the matrix setting
     * @param budget the transpose budget, or -1 for the default
     * @return the budget to use
     * @throws MemfitException naming the setting to change
     */
    static long checkSettings(String layer, long budget) {
        long bytes = budget < 0 ? CscTranspose.configuredBudget() : budget;
        if (bytes < 192) {
            throw new MemfitException("optTransposeBudget(" + bytes + "): give at least 192 bytes (256 MiB by default)");
        }
        if (layer == null || layer.isBlank()) {
            throw new MemfitException("optLayer(" + (layer == null ? "null" : "\"\"") + "): give X, raw/X or a layer's "
                    + "name; leave it out for X");
        }
        return bytes;
    }

    /**
     * Where the data is, as opened: the {@code .h5ad}, the {@code .zarr} folder or {@code .zarr.zip}, or a store's
     * path in its storage ({@code s3:/bucket/atlas.zarr}).
     *
     * @return the path
     */
    Path location();

    /**
     * The format, for descriptions: {@code AnnData .h5ad} or {@code AnnData .zarr}.
     *
     * @return the description
     */
    String format();

    /**
     * The matrix read as X: {@code X}, {@code raw/X} or {@code layers/NAME}.
     *
     * @return its path in the AnnData object
     */
    String layer();

    /**
     * How X is stored.
     *
     * @return CSR, CSC or DENSE
     */
    Layout layout();

    /**
     * Whether X is stored sparse, CSR or CSC ({@link #layout} tells which).
     *
     * @return true for sparse
     */
    default boolean sparse() {
        return layout() != Layout.DENSE;
    }

    /**
     * The number of cells.
     *
     * @return n_obs
     */
    long observations();

    /**
     * The number of genes.
     *
     * @return n_vars
     */
    long variables();

    /**
     * The number of stored values of X: for CSR and CSC the stored entries (anndata's {@code X.nnz}, explicit zeros
     * included); for a dense X all {@code n_obs x n_vars} values. Known at open.
     *
     * @return stored values
     */
    long storedValues();

    /**
     * The number of values stored for a range of rows of a sparse X (a CSC X's after its transpose): what
     * {@link #readCsr} writes for it.
     *
     * @param first the first row
     * @param count how many rows
     * @return the stored values of those rows
     * @throws MemfitException when X is dense
     */
    long storedValues(long first, long count);

    /**
     * The type X's values are stored in: float32, float64, or an integer type (counts stored as integers).
     *
     * @return the stored type
     */
    DType storedType();

    /**
     * The float type that holds X's values as stored, which memfit computes in and writes: {@code FLOAT64} for a
     * float64 X, {@code FLOAT32} for float32, float16 and integer counts (scanpy computes on integer counts in float32
     * too).
     *
     * @return {@code FLOAT32} or {@code FLOAT64}
     */
    default DType floatType() {
        return storedType() == DType.FLOAT64 ? DType.FLOAT64 : DType.FLOAT32;
    }

    /**
     * Reads rows of X as dense float32 in the platform's byte order.
     *
     * @param first the first row
     * @param count how many rows
     * @param into at least {@code count * n_vars * 4} bytes; overwritten
     */
    default void readRows(long first, int count, MemorySegment into) {
        readRows(first, count, into, DType.FLOAT32);
    }

    /**
     * Reads rows of X as dense float32, each to its own place (a loader reads a run of cells straight into their
     * places in a batch this way).
     *
     * @param first the first row
     * @param count how many rows
     * @param into the destination
     * @param rowOffsets the byte offset in {@code into} of each row ({@code n_vars * 4} bytes each, overwritten)
     */
    default void readRows(long first, int count, MemorySegment into, long[] rowOffsets) {
        readRows(first, count, into, rowOffsets, DType.FLOAT32);
    }

    /**
     * Reads rows of X as dense values of a float type in the platform's byte order: float32, or float64 (each value
     * exactly as stored for a float64, float32 or integer X).
     *
     * @param first the first row
     * @param count how many rows
     * @param into at least {@code count * n_vars * type.byteSize()} bytes; overwritten
     * @param type {@code FLOAT32} or {@code FLOAT64}, such as {@link #floatType()}
     */
    default void readRows(long first, int count, MemorySegment into, DType type) {
        long rowBytes = variables() * checkFloat(type).byteSize();
        long[] offsets = new long[count];
        for (int r = 0; r < count; r++) {
            offsets[r] = r * rowBytes;
        }
        readRows(first, count, into, offsets, type);
    }

    /**
     * Reads rows of X as dense values of a float type, each row to its own place.
     *
     * @param first the first row
     * @param count how many rows
     * @param into the destination
     * @param rowOffsets the byte offset in {@code into} of each row ({@code n_vars * type.byteSize()} bytes each)
     * @param type {@code FLOAT32} or {@code FLOAT64}
     */
    void readRows(long first, int count, MemorySegment into, long[] rowOffsets, DType type);

    /**
     * Reads a range of rows of a sparse X as stored (a CSC X from its transpose to CSR): values as float32, column
     * indices as int32 and row starts, in the platform's byte order, without densifying. Column indices are checked
     * against {@code n_vars}; their order within a row is the file's, and a column stored twice in a row comes twice.
     *
     * @param first the first row
     * @param count how many rows
     * @param values at least {@code storedValues(first, count) * 4} bytes; overwritten
     * @param columns at least {@code storedValues(first, count) * 4} bytes; overwritten
     * @param rowStarts at least {@code count + 1} entries: row {@code r}'s values are at
     *                  {@code [rowStarts[r], rowStarts[r + 1])}, from {@code rowStarts[0] = 0}
     * @return the number of values read
     * @throws MemfitException when X is dense or has more than 2^31 - 1 genes
     */
    default long readCsr(long first, int count, MemorySegment values, MemorySegment columns, long[] rowStarts) {
        return readCsr(first, count, values, columns, rowStarts, DType.FLOAT32);
    }

    /**
     * Reads a range of rows of a sparse X as stored, as {@link #readCsr(long, int, MemorySegment, MemorySegment, long[])}
     * does, with the values in a float type: float32, or float64 (each value exactly as stored for a float64 X).
     *
     * @param first the first row
     * @param count how many rows
     * @param values at least {@code storedValues(first, count) * type.byteSize()} bytes; overwritten
     * @param columns at least {@code storedValues(first, count) * 4} bytes; overwritten
     * @param rowStarts at least {@code count + 1} entries
     * @param type {@code FLOAT32} or {@code FLOAT64}
     * @return the number of values read
     */
    long readCsr(long first, int count, MemorySegment values, MemorySegment columns, long[] rowStarts, DType type);

    /**
     * Makes rows readable now: transposes a CSC X to CSR (the first read of rows does it otherwise), so that its
     * progress bar comes before the caller's own. Nothing to do for CSR or dense X, or when done already.
     */
    void prepareRows();

    /**
     * Raises the bound of the reader's cache of decoded chunks to at least this many bytes, for a reader that will
     * come back to the same chunks: a loader's block-shuffled window of cells must fit, or each batch would decode its
     * chunks again. Nothing to do for data read from a mapping (contiguous, uncompressed). The bound is never lowered.
     *
     * @param bytes the least bound
     */
    default void reserveChunkCache(long bytes) {
    }

    /**
     * One pass over X in chunks of about 16 MB of dense float32 rows: memory stays at one chunk whatever the size.
     *
     * @param consumer receives each chunk
     */
    void forEachChunk(RowsConsumer consumer);

    /**
     * The float64 sum of all of X, accumulated from the stored values (float64 data is never rounded to float32 on
     * the way), so that it equals numpy's {@code X.sum(dtype=np.float64)} up to summation order.
     *
     * @return the sum
     */
    default double sum() {
        return totals().sum();
    }

    /**
     * The sum and the number of non-zero values of X, in one pass over the stored values.
     *
     * @return the totals
     */
    Totals totals();

    /**
     * The sum of each column (gene) of X over all rows, accumulated in float64 from the stored values.
     *
     * @return one total per column, in var order
     */
    double[] columnSums();

    /**
     * The names of a dataframe's columns ({@code obs} or {@code var}) in their stored order, excluding the index.
     *
     * @param frame "obs" or "var" ({@code raw/var} when {@code raw/X} is read)
     * @return the names of its {@code column-order} attribute
     */
    List<String> columnNames(String frame);

    /**
     * The columns of a dataframe with their types, in their stored order, excluding the index: what memfit carries
     * into the files it writes, unchanged.
     *
     * @param frame "obs" or "var"
     * @return column name to column
     * @throws dev.memfit.InvalidFileException naming the store, the column, what memfit carries and what it found,
     *         for a column it cannot carry exactly
     */
    Map<String, FrameColumn> frameColumns(String frame);

    /**
     * One column of {@code obs} or {@code var} with its type.
     *
     * @param frame "obs" or "var"
     * @param name the column
     * @return the column
     * @throws MemfitException naming the columns that exist when it does not
     */
    FrameColumn frameColumn(String frame, String name);

    /**
     * The columns of a dataframe as labels ({@link FrameColumn#labels()}); {@link #frameColumns} keeps the types.
     *
     * @param frame "obs" or "var"
     * @return column name to a {@code String[]}, a {@code boolean[]} or a {@code double[]}
     */
    default Map<String, Object> columns(String frame) {
        Map<String, Object> labels = new LinkedHashMap<>();
        frameColumns(frame).forEach((name, column) -> labels.put(name, column.labels()));
        return labels;
    }

    /**
     * One column of {@code obs} or {@code var} as labels.
     *
     * @param frame "obs" or "var"
     * @param name the column
     * @return a {@code String[]}, a {@code boolean[]} or a {@code double[]}
     */
    default Object column(String frame, String name) {
        return frameColumn(frame, name).labels();
    }

    /**
     * The index of a dataframe: cell barcodes for {@code obs}, gene names for {@code var}.
     *
     * @param frame "obs" or "var"
     * @return the names
     */
    String[] index(String frame);

    /**
     * The name of a dataframe's index, as its {@code _index} attribute gives it: {@code "_index"} for an unnamed
     * index, else the name (which is also the index array's name).
     *
     * @param frame "obs" or "var"
     * @return the name
     */
    String indexName(String frame);

    /**
     * The matrices that can be read as X: {@code X}, {@code raw/X} and each {@code layers/NAME}, with their shapes and
     * encodings, from the metadata only.
     *
     * @return matrix path to a description such as {@code 2700 x 32738 csr_matrix float32}
     */
    Map<String, String> matrices();

    /** Closes the file or store. */
    @Override
    void close();

    /**
     * Checks a float type of a read.
     *
     * @param type the type asked for
     * @return the type
     * @throws IllegalArgumentException unless it is {@code FLOAT32} or {@code FLOAT64}
     */
    static DType checkFloat(DType type) {
        if (type != DType.FLOAT32 && type != DType.FLOAT64) {
            throw new IllegalArgumentException("rows are read as FLOAT32 or FLOAT64, not " + type);
        }
        return type;
    }
}
