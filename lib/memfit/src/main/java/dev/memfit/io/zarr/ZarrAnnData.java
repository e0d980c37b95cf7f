package dev.memfit.io.zarr;

import dev.memfit.CompensatedSum;
import dev.memfit.DType;
import dev.memfit.InvalidFileException;
import dev.memfit.MemfitException;
import dev.memfit.ProgressListener;
import dev.memfit.io.anndata.AnnData;
import dev.memfit.io.anndata.ReaderSettings;
import dev.memfit.io.anndata.AnnDataColumns;
import dev.memfit.io.anndata.CscTranspose;
import dev.memfit.io.anndata.FrameColumn;
import dev.memfit.io.anndata.SharedTranspose;
import dev.memfit.io.storage.Storage;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * An AnnData object in a zarr v2 store, read out of core: a {@code .zarr} folder as anndata's {@code write_zarr}
 * writes it (Blosc lz4 chunks by default), a {@code .zarr.zip} archive, or either in a bucket through an object cache
 * ({@link Builder#optStorage}), read chunk by chunk, never staged whole. The same {@link AnnData} as an {@code .h5ad}
 * gives: {@code X}, {@code raw/X} or {@code layers/NAME} dense, CSR or CSC (transposed to CSR out of core when rows
 * are first read, shared with {@link CscTranspose} like the {@code .h5ad} reader's), in its own precision, and the
 * {@code obs}/{@code var} columns with their types in anndata 0.8's encodings (the same {@code encoding-type}
 * attributes as in an {@code .h5ad}) and anndata 0.7's (codes whose attribute {@code categories} names
 * {@code __categories/<name>}).
 *
 * <p>Arrays are found by anndata's layout (the paths {@code X}, {@code X/data}, {@code obs/<column>}, and the
 * attributes {@code _index}, {@code column-order}, {@code encoding-type}, {@code shape}), never by listing keys, so a
 * store in a bucket needs no consolidated metadata; only {@link #matrices()} lists {@code layers}, where the store can
 * be listed (a local folder, an archive, or consolidated metadata).
 *
 * <p>The CSR row pointers (8 bytes a cell) or the CSC column pointers (8 bytes a gene) are read and checked at open,
 * and so are the lengths of the {@code obs} and {@code var} columns. Decoded chunks are kept in the store's chunk
 * cache ({@link Zarr}, 64 MiB by default); reads that take whole chunks (a stream's runs of cells) decode them into a
 * per-thread buffer instead. Errors name the store and the key ({@code atlas.zarr/X/data/3}). Thread-safe reads.
 */
public final class ZarrAnnData implements AnnData {

    /** Bytes of stored rows of a dense X read at once (whole rows, at least one). */
    private static final long DENSE_BLOCK_BYTES = 16L << 20;
    /**
     * Stored values read at once by a pass over a sparse X or a read of its rows (12 bytes each on the heap): a
     * small fixed block, so that the memory a read takes does not follow the row pointers' claims.
     */
    private static final int BLOCK = 1 << 16;

    private final Zarr zarr;
    private final Path location;
    private final String layer;
    private final String varFrame;
    private final long observations;
    private final long variables;
    private final ZarrArray dense;
    private final ZarrArray data;
    private final ZarrArray indices;
    private final long[] indptr;
    private final Csc csc;

    /** A CSC X: its column pointers, the shared transpose and how to make it. */
    private record Csc(long[] columnPointers, SharedTranspose shared, Path scratch, long budget, ProgressListener listener) {
    }

    private ZarrAnnData(Zarr zarr, Path location, String layer, long observations, long variables, ZarrArray dense,
                        ZarrArray data, ZarrArray indices, long[] indptr, Csc csc) {
        this.zarr = zarr;
        this.location = location;
        this.layer = layer;
        this.varFrame = layer.equals("raw/X") ? "raw/var" : "var";
        this.observations = observations;
        this.variables = variables;
        this.dense = dense;
        this.data = data;
        this.indices = indices;
        this.indptr = indptr;
        this.csc = csc;
    }

    /**
     * Opens a local store ({@code .zarr} folder or {@code .zarr.zip}) with the default settings.
     *
     * @param store the folder or archive
     * @return the reader, to be closed
     */
    public static ZarrAnnData open(Path store) {
        return builder().setStore(store).open();
    }

    /**
     * A reader with settings: {@code ZarrAnnData.builder().setStore(path).optLayer("counts").open()}.
     *
     * @return the builder
     */
    public static Builder builder() {
        return new Builder();
    }

    /** Settings of a reader; those for a CSC X are {@code H5ad}'s. */
    public static final class Builder extends ReaderSettings<Builder> {
        private Path store;
        private Storage storage;

        private Builder() {
        }

        @Override
        protected Builder self() {
            return this;
        }

        /**
         * Sets the store (required): a {@code .zarr} folder or a {@code .zarr.zip} archive, or its path in the storage
         * of {@link #optStorage} ({@code s3:/bucket/atlas.zarr}).
         *
         * @param path the store
         * @return this builder
         */
        public Builder setStore(Path path) {
            this.store = path;
            return this;
        }

        /**
         * Reads the store through a storage the caller keeps open (default: local files), such as an object cache for
         * a store in a bucket, read chunk by chunk.
         *
         * @param bytes the storage, or null for local files
         * @return this builder
         */
        public Builder optStorage(Storage bytes) {
            this.storage = bytes;
            return this;
        }

        /**
         * Opens the store and checks its layout.
         *
         * @return the reader, to be closed
         * @throws MemfitException naming the setting to change
         * @throws InvalidFileException naming the store and the key when it is not an AnnData store memfit reads
         */
        public ZarrAnnData open() {
            if (store == null) {
                throw new MemfitException("setStore(path) is required: the .zarr folder or .zarr.zip to read");
            }
            long bytes = checkSettings();
            if (storage == null && !Files.exists(store)) {
                throw new InvalidFileException(store, -1, "a zarr store (a .zarr folder or .zarr.zip)", "no such file or folder");
            }
            Zarr zarr = storage == null ? Zarr.open(Storage.local(), store, chunkCacheBytes(), true)
                    : Zarr.open(storage, store, chunkCacheBytes());
            ZarrAnnData read;
            try {
                read = ZarrAnnData.openMatrix(zarr, store, storage, AnnData.matrixPath(layer()), scratchFolder(), bytes,
                        progress());
            } catch (RuntimeException e) {
                zarr.close();
                throw e;
            }
            try {
                read.checkFrame("obs", read.observations, "n_obs");
                read.checkFrame(read.varFrame, read.variables, "n_vars");
                return read;
            } catch (RuntimeException e) {
                read.close();
                throw e;
            }
        }
    }

    private static ZarrAnnData openMatrix(Zarr zarr, Path location, Storage storage, String matrix, Path scratch,
                                          long budget, ProgressListener listener) {
        String encoding = zarr.attributes("").encodingType().orElse(null);
        if (!"anndata".equals(encoding) && !zarr.isGroup("X") && !zarr.isArray("X")) {
            throw new InvalidFileException(location, -1, "an AnnData store (root attribute encoding-type=anndata, or an X)",
                    "encoding-type " + encoding + " and no X");
        }
        if (zarr.isArray(matrix)) {
            ZarrArray values = zarr.array(matrix);
            long[] shape = values.shape();
            if (shape.length != 2) {
                throw new InvalidFileException(zarr.location(matrix), -1, "a two-dimensional " + matrix,
                        matrix + " of " + shape.length + " dimensions");
            }
            checkValues(zarr, values);
            return new ZarrAnnData(zarr, location, matrix, shape[0], shape[1], values, null, null, null, null);
        }
        if (!zarr.isGroup(matrix)) {
            if (matrix.equals("X")) {
                throw new InvalidFileException(zarr.location("X"), -1, "an X array or CSR group", "none");
            }
            throw new MemfitException(location + ": no matrix " + matrix + " to read as X; the store has "
                    + String.join(", ", listMatrices(zarr)));
        }
        ZarrAttributes attributes = zarr.attributes(matrix);
        String format = attributes.encodingType().orElse(null);
        if (!"csr_matrix".equals(format) && !"csc_matrix".equals(format)) {
            throw new InvalidFileException(zarr.location(matrix), -1, matrix + " as csr_matrix, csc_matrix or a dense array",
                    matrix + " encoded as " + format);
        }
        boolean byColumns = "csc_matrix".equals(format);
        long[] shape;
        try {
            shape = attributes.longs("shape").orElse(new long[0]);
        } catch (MemfitException e) {
            shape = new long[0];
        }
        if (shape.length != 2 || shape[0] < 0 || shape[1] < 0) {
            throw new InvalidFileException(zarr.location(matrix + "/.zattrs"), -1, "an attribute shape = [n_obs, n_vars] on "
                    + matrix, attributes.has("shape") ? attributes.json() : "none");
        }
        ZarrArray values = member(zarr, matrix, "data");
        ZarrArray positions = member(zarr, matrix, "indices");
        ZarrArray pointerArray = member(zarr, matrix, "indptr");
        checkValues(zarr, values);
        // anndata writes every chunk: one missing is damage, not fill values (which would back the stored-value
        // count the row pointers give with nothing in the store)
        values.refuseMissingChunks();
        positions.refuseMissingChunks();
        for (ZarrArray index : List.of(positions, pointerArray)) {
            if (index.dtype().kind() != ZarrDType.Kind.INT && index.dtype().kind() != ZarrDType.Kind.UINT) {
                throw new InvalidFileException(zarr.location(index.path() + "/.zarray"), -1, index.path() + " of integers",
                        index.dtype().toString());
            }
        }
        long nnz = values.length();
        if (positions.length() != nnz) {
            throw new InvalidFileException(zarr.location(positions.path() + "/.zarray"), -1, positions.path() + " as long as "
                    + values.path() + ": " + nnz + " entries", positions.length() + " entries");
        }
        long pointed = byColumns ? shape[1] : shape[0];
        if (pointed > Integer.MAX_VALUE - 8) {
            throw new InvalidFileException(zarr.location(matrix), -1, "fewer than 2^31 " + (byColumns ? "genes" : "cells"),
                    "shape " + Arrays.toString(shape));
        }
        if (pointerArray.length() != pointed + 1) {
            throw new InvalidFileException(zarr.location(pointerArray.path() + "/.zarray"), -1, pointerArray.path()
                    + (byColumns ? " (column pointers of a CSC X) of n_vars + 1 = " : " of n_obs + 1 = ") + (pointed + 1)
                    + " entries", pointerArray.length() + " entries");
        }
        long[] pointers = pointerArray.readStoredLongs();
        if (pointers[0] != 0 || pointers[pointers.length - 1] != nnz) {
            throw new InvalidFileException(zarr.location(pointerArray.path()), -1, pointerArray.path() + " from 0 to the " + nnz
                    + " stored values", "from " + pointers[0] + " to " + pointers[pointers.length - 1]);
        }
        for (int i = 1; i < pointers.length; i++) {
            if (pointers[i] < pointers[i - 1]) {
                throw new InvalidFileException(zarr.location(pointerArray.path()), -1, pointerArray.path() + " not decreasing",
                        "indptr[" + i + "] = " + pointers[i] + " < indptr[" + (i - 1) + "] = " + pointers[i - 1]);
            }
        }
        if (!byColumns) {
            return new ZarrAnnData(zarr, location, matrix, shape[0], shape[1], null, values, positions, pointers, null);
        }
        if (shape[0] > Integer.MAX_VALUE - 8) {
            throw new InvalidFileException(zarr.location(matrix), -1, "a CSC X of fewer than 2^31 cells", "shape "
                    + Arrays.toString(shape));
        }
        SharedTranspose shared = storage == null ? SharedTranspose.acquire(location, matrix)
                : SharedTranspose.acquire(storage.describe() + " " + location, matrix);
        return new ZarrAnnData(zarr, location, matrix, shape[0], shape[1], null, values, positions, null,
                new Csc(pointers, shared, scratch, budget, listener));
    }

    /** An array of a sparse matrix group, or a refusal naming the group. */
    private static ZarrArray member(Zarr zarr, String matrix, String name) {
        String path = matrix + "/" + name;
        if (!zarr.isArray(path)) {
            throw new InvalidFileException(zarr.location(path), -1, "a zarr array " + path, "none");
        }
        ZarrArray array = zarr.array(path);
        if (array.shape().length != 1) {
            throw new InvalidFileException(zarr.location(path + "/.zarray"), -1, "a one-dimensional " + path,
                    "shape " + Arrays.toString(array.shape()));
        }
        return array;
    }

    /** Values memfit reads as X: float32, float64 or integers, as the {@code .h5ad} reader takes them. */
    private static void checkValues(Zarr zarr, ZarrArray values) {
        ZarrDType type = values.dtype();
        boolean fits = type.kind() == ZarrDType.Kind.INT || type.kind() == ZarrDType.Kind.UINT
                || type.kind() == ZarrDType.Kind.FLOAT && type.itemSize() >= 4;
        if (!fits) {
            throw new InvalidFileException(zarr.location(values.path() + "/.zarray"), -1, values.path()
                    + " of float32, float64 or integers", type + "; convert it in anndata, e.g. adata.X = "
                    + "adata.X.astype('float32'), and write the store again");
        }
    }

    /** The matrices readable as X, by name, for the message of a missing layer. */
    private static List<String> listMatrices(Zarr zarr) {
        List<String> names = new ArrayList<>();
        if (zarr.isArray("X") || zarr.isGroup("X")) {
            names.add("X");
        }
        if (zarr.isArray("raw/X") || zarr.isGroup("raw/X")) {
            names.add("raw/X");
        }
        if (zarr.isGroup("layers")) {
            try {
                zarr.children("layers").forEach(name -> names.add("layers/" + name));
            } catch (MemfitException e) {
                names.add("layers/... (not listed: a store in a bucket without consolidated metadata)");
            }
        }
        return names;
    }

    /**
     * Refuses a dataframe whose index or a listed column does not hold one entry per cell (obs) or gene (var), from
     * the arrays' shapes only.
     */
    private void checkFrame(String frame, long expected, String count) {
        if (!zarr.isGroup(frame)) {
            return;   // index() and columns() refuse a missing frame when asked for it
        }
        ZarrAttributes attributes = zarr.attributes(frame);
        List<String> names = new ArrayList<>();
        names.add(attributes.string("_index").orElse("_index"));
        try {
            names.addAll(attributes.strings("column-order"));
        } catch (MemfitException e) {
            throw new InvalidFileException(zarr.location(frame + "/.zattrs"), -1, "column-order as a list of names",
                    e.getMessage());
        }
        for (String name : names) {
            String path = frame + "/" + name;
            String values = zarr.isArray(path) ? path : zarr.isArray(path + "/codes") ? path + "/codes"
                    : zarr.isArray(path + "/values") ? path + "/values" : null;
            if (values == null) {
                continue;   // read (and refused) only if asked for
            }
            long[] shape = zarr.array(values).shape();
            long length = shape.length == 0 ? -1 : shape[0];
            if (length != expected) {
                throw new InvalidFileException(zarr.location(values), -1, "/" + values + " of " + count + " = " + expected
                        + " entries (one per " + (frame.equals("obs") ? "cell, row" : "gene, column") + " of X)",
                        length < 0 ? "a scalar" : length + " entries; the " + frame + " dataframe does not match X");
            }
        }
    }

    // ---- what X is

    @Override
    public Path location() {
        return location;
    }

    @Override
    public String format() {
        return "AnnData .zarr";
    }

    @Override
    public String layer() {
        return layer;
    }

    @Override
    public Layout layout() {
        return csc != null ? Layout.CSC : indptr != null ? Layout.CSR : Layout.DENSE;
    }

    @Override
    public long observations() {
        return observations;
    }

    @Override
    public long variables() {
        return variables;
    }

    @Override
    public long storedValues() {
        return csc != null ? csc.columnPointers()[csc.columnPointers().length - 1]
                : indptr != null ? indptr[indptr.length - 1] : observations * variables;
    }

    @Override
    public long storedValues(long first, long count) {
        if (!sparse()) {
            throw new MemfitException(location + ": " + layer + " is stored dense, not CSR or CSC; read it with readRows");
        }
        checkRows(first, count);
        long[] pointers = rowPointers();
        return pointers[Math.toIntExact(first + count)] - pointers[Math.toIntExact(first)];
    }

    @Override
    public DType storedType() {
        return (dense != null ? dense : data).dtype().toDType();
    }

    /**
     * The bytes of the matrix read as X as they lie in the store (its arrays' chunks, compressed): what a store in a
     * bucket, whose keys are not listed, is described by.
     *
     * @return bytes
     */
    public long matrixBytes() {
        return dense != null ? dense.storedBytes() : data.storedBytes() + indices.storedBytes()
                + zarr.array(layer + "/indptr").storedBytes();
    }

    /**
     * The zarr store, for its chunk cache counters ({@link Zarr#decodedChunks}, {@link Zarr#cacheHits}).
     *
     * @return the store
     */
    public Zarr store() {
        return zarr;
    }

    // ---- CSC

    @Override
    public void reserveChunkCache(long bytes) {
        zarr.cache().atLeast(bytes);
    }

    @Override
    public void prepareRows() {
        rows();
    }

    /** The transposed rows of a CSC X, made on first use (by this reader or another one on the same store). */
    private CscTranspose.Rows rows() {
        if (csc == null) {
            return null;
        }
        CscTranspose.Rows ready = csc.shared().ready();
        if (ready != null) {
            return ready;
        }
        CscTranspose.Source source = new CscTranspose.Source() {
            @Override
            public void rows(long start, int n, long[] into) {
                System.arraycopy(indices.readLongs(start, n), 0, into, 0, n);
            }

            @Override
            public void values(long start, int n, double[] into) {
                System.arraycopy(data.readDoubles(start, n), 0, into, 0, n);
            }

            @Override
            public long rowIndexOffset(long element) {
                return -1;
            }
        };
        return csc.shared().rows(new CscTranspose(location, source, csc.columnPointers(), observations, csc.budget(),
                floatType()), csc.scratch(), csc.listener());
    }

    /** The CSR row pointers: the store's, or those of a CSC X's transpose (made here if not yet). */
    private long[] rowPointers() {
        CscTranspose.Rows transposed = rows();
        return transposed == null ? indptr : transposed.rowPointers();
    }

    // ---- rows

    @Override
    public void readRows(long first, int count, MemorySegment into, long[] rowOffsets, DType type) {
        boolean wide = AnnData.checkFloat(type) == DType.FLOAT64;
        checkRows(first, count);
        if (!sparse()) {
            denseRows(first, count, into, rowOffsets, wide);
            return;
        }
        if (variables > Integer.MAX_VALUE) {
            throw new MemfitException(location + ": " + variables + " genes do not fit int32 column indices");
        }
        CscTranspose.Rows transposed = rows();
        long[] pointers = transposed == null ? indptr : transposed.rowPointers();
        int size = type.byteSize();
        long rowBytes = variables * size;
        for (int r = 0; r < count; r++) {
            into.asSlice(rowOffsets[r], rowBytes).fill((byte) 0);
        }
        long start = pointers[Math.toIntExact(first)];
        long end = pointers[Math.toIntExact(first + count)];
        // the stored values in blocks: the heap taken is one block whatever the row pointers say
        int block = (int) Math.min(BLOCK, Math.max(1, end - start));
        MemorySegment values = MemorySegment.ofArray(new byte[block * size]);
        MemorySegment columns = MemorySegment.ofArray(new int[block]);
        int r = 0;
        for (long at = start; at < end; at += block) {
            int m = (int) Math.min(block, end - at);
            if (transposed != null) {
                fromTranspose(transposed, at, m, values, columns, type);
            } else {
                readStoredValues(at, m, values, type);
                storedColumns(at, m, columns);
            }
            for (int i = 0; i < m; i++) {
                while (pointers[Math.toIntExact(first + r + 1)] <= at + i) {
                    r++;
                }
                // added, not set: a column stored twice in a row counts twice, as scipy's toarray() sums duplicates
                long target = rowOffsets[r] + (long) columns.getAtIndex(ValueLayout.JAVA_INT_UNALIGNED, i) * size;
                if (wide) {
                    into.set(ValueLayout.JAVA_DOUBLE_UNALIGNED, target, into.get(ValueLayout.JAVA_DOUBLE_UNALIGNED, target)
                            + values.getAtIndex(ValueLayout.JAVA_DOUBLE_UNALIGNED, i));
                } else {
                    into.set(ValueLayout.JAVA_FLOAT_UNALIGNED, target, into.get(ValueLayout.JAVA_FLOAT_UNALIGNED, target)
                            + values.getAtIndex(ValueLayout.JAVA_FLOAT_UNALIGNED, i));
                }
            }
        }
    }

    /** Rows of a dense X converted to float32 or float64, in blocks of whole rows. */
    private void denseRows(long first, int count, MemorySegment into, long[] rowOffsets, boolean wide) {
        ZarrDType stored = dense.dtype();
        int item = stored.itemSize();
        long width = variables;
        long rowBytes = width * item;
        int blockRows = (int) Math.max(1, Math.min(count, DENSE_BLOCK_BYTES / Math.max(1, rowBytes)));
        MemorySegment block = MemorySegment.ofArray(new byte[Math.toIntExact(Math.max(1, blockRows * rowBytes))]);
        boolean same = stored.kind() == ZarrDType.Kind.FLOAT && item == (wide ? Double.BYTES : Float.BYTES);
        for (int done = 0; done < count; done += blockRows) {
            int rows = Math.min(blockRows, count - done);
            dense.readRows(first + done, rows, block);
            for (int r = 0; r < rows; r++) {
                long from = r * rowBytes;
                long to = rowOffsets[done + r];
                if (same) {
                    MemorySegment.copy(block, from, into, to, rowBytes);
                } else {
                    for (long c = 0; c < width; c++) {
                        double value = element(block, from + c * item, stored);
                        if (wide) {
                            into.set(ValueLayout.JAVA_DOUBLE_UNALIGNED, to + c * Double.BYTES, value);
                        } else {
                            into.set(ValueLayout.JAVA_FLOAT_UNALIGNED, to + c * Float.BYTES, (float) value);
                        }
                    }
                }
            }
        }
    }

    /** One numeric element in native byte order, as a double (exact for float32, float64 and integers up to 2^53). */
    private static double element(MemorySegment bytes, long offset, ZarrDType type) {
        return switch (type.kind()) {
            case FLOAT -> type.itemSize() == 4 ? bytes.get(ValueLayout.JAVA_FLOAT_UNALIGNED, offset)
                    : bytes.get(ValueLayout.JAVA_DOUBLE_UNALIGNED, offset);
            case INT -> switch (type.itemSize()) {
                case 1 -> bytes.get(ValueLayout.JAVA_BYTE, offset);
                case 2 -> bytes.get(ValueLayout.JAVA_SHORT_UNALIGNED, offset);
                case 4 -> bytes.get(ValueLayout.JAVA_INT_UNALIGNED, offset);
                default -> (double) bytes.get(ValueLayout.JAVA_LONG_UNALIGNED, offset);
            };
            default -> switch (type.itemSize()) {
                case 1 -> bytes.get(ValueLayout.JAVA_BYTE, offset) & 0xff;
                case 2 -> bytes.get(ValueLayout.JAVA_SHORT_UNALIGNED, offset) & 0xffff;
                case 4 -> bytes.get(ValueLayout.JAVA_INT_UNALIGNED, offset) & 0xffffffffL;
                default -> unsigned(bytes.get(ValueLayout.JAVA_LONG_UNALIGNED, offset));
            };
        };
    }

    private static double unsigned(long bits) {
        return (double) (bits >>> 1) * 2.0 + (bits & 1);
    }

    @Override
    public long readCsr(long first, int count, MemorySegment values, MemorySegment columns, long[] rowStarts, DType type) {
        AnnData.checkFloat(type);
        long n = storedValues(first, count);
        if (variables > Integer.MAX_VALUE) {
            throw new MemfitException(location + ": " + variables + " genes do not fit int32 column indices");
        }
        CscTranspose.Rows transposed = rows();
        long[] pointers = transposed == null ? indptr : transposed.rowPointers();
        long start = pointers[Math.toIntExact(first)];
        for (int r = 0; r <= count; r++) {
            rowStarts[r] = pointers[Math.toIntExact(first + r)] - start;
        }
        if (n == 0) {
            return 0;
        }
        if (transposed != null) {
            fromTranspose(transposed, start, n, values, columns, type);
            return n;
        }
        readStoredValues(start, n, values, type);
        storedColumns(start, n, columns);
        return n;
    }

    /** Stored values {@code [start, start + n)} of X in a float type: copied as stored when the types agree. */
    private void readStoredValues(long start, long n, MemorySegment into, DType type) {
        ZarrDType stored = data.dtype();
        int size = type.byteSize();
        if (stored.kind() == ZarrDType.Kind.FLOAT && stored.itemSize() == size) {
            data.readRows(start, n, into.asSlice(0, n * size));
            return;
        }
        for (long done = 0; done < n; done += BLOCK) {
            int m = (int) Math.min(BLOCK, n - done);
            double[] read = data.readDoubles(start + done, m);
            for (int i = 0; i < m; i++) {
                if (size == Double.BYTES) {
                    into.setAtIndex(ValueLayout.JAVA_DOUBLE_UNALIGNED, done + i, read[i]);
                } else {
                    into.setAtIndex(ValueLayout.JAVA_FLOAT_UNALIGNED, done + i, (float) read[i]);
                }
            }
        }
    }

    /** Column indices {@code [start, start + n)} of a CSR X as int32, each checked against n_vars. */
    private void storedColumns(long start, long n, MemorySegment into) {
        ZarrDType stored = indices.dtype();
        if (stored.kind() == ZarrDType.Kind.INT && stored.itemSize() == Integer.BYTES) {
            indices.readRows(start, n, into.asSlice(0, n * Integer.BYTES));
            for (long i = 0; i < n; i++) {
                int column = into.getAtIndex(ValueLayout.JAVA_INT_UNALIGNED, i);
                if (column < 0 || column >= variables) {
                    throw badColumn(column, start + i);
                }
            }
            return;
        }
        for (long done = 0; done < n; done += BLOCK) {
            int m = (int) Math.min(BLOCK, n - done);
            long[] read = indices.readLongs(start + done, m);
            for (int i = 0; i < m; i++) {
                if (read[i] < 0 || read[i] >= variables) {
                    throw badColumn(read[i], start + done + i);
                }
                into.setAtIndex(ValueLayout.JAVA_INT_UNALIGNED, done + i, (int) read[i]);
            }
        }
    }

    private InvalidFileException badColumn(long column, long at) {
        String key = indices.chunkKey(new long[] {at / indices.chunks()[0]});
        return new InvalidFileException(zarr.location(key), -1, indices.path() + " in [0, " + variables + ") (n_vars)",
                "index " + column + " at stored value " + at);
    }

    /** Values and columns of a transposed CSC X, from its mapped files. */
    private static void fromTranspose(CscTranspose.Rows transposed, long start, long n, MemorySegment values,
                                      MemorySegment columns, DType type) {
        MemorySegment.copy(transposed.columns(), ValueLayout.JAVA_INT, start * Integer.BYTES, columns,
                ValueLayout.JAVA_INT_UNALIGNED, 0, n);
        if (transposed.valueType() == type) {
            MemorySegment.copy(transposed.values(), start * type.byteSize(), values, 0, n * type.byteSize());
            return;
        }
        boolean wideSource = transposed.valueType() == DType.FLOAT64;
        for (long i = 0; i < n; i++) {
            double value = wideSource ? transposed.values().getAtIndex(ValueLayout.JAVA_DOUBLE, start + i)
                    : transposed.values().getAtIndex(ValueLayout.JAVA_FLOAT, start + i);
            if (type == DType.FLOAT64) {
                values.setAtIndex(ValueLayout.JAVA_DOUBLE_UNALIGNED, i, value);
            } else {
                values.setAtIndex(ValueLayout.JAVA_FLOAT_UNALIGNED, i, (float) value);
            }
        }
    }

    private void checkRows(long first, long count) {
        if (first < 0 || count < 0 || first + count > observations) {
            throw new IndexOutOfBoundsException("rows [" + first + ", " + (first + count) + ") outside [0, " + observations
                    + ") of " + location);
        }
    }

    // ---- passes

    @Override
    public void forEachChunk(RowsConsumer consumer) {
        forEachBlock(false, consumer);
    }

    /** Consecutive blocks of rows as float32 or float64 ({@code wide}); whole row chunks of a dense X where they fit. */
    private void forEachBlock(boolean wide, RowsConsumer consumer) {
        int valueBytes = wide ? Double.BYTES : Float.BYTES;
        long rowBytes = Math.max(1, variables * valueBytes);
        long chunk = Math.max(1, (16L << 20) / rowBytes);
        if (dense != null) {
            long band = dense.chunks()[0];
            if (band * rowBytes <= 64L << 20) {
                chunk = Math.max(band, chunk / band * band);
            }
        }
        chunk = Math.min(chunk, Math.max(1, observations));
        DType type = wide ? DType.FLOAT64 : DType.FLOAT32;
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment rows = arena.allocate(Math.max(1, chunk * variables * valueBytes), 8);
            long[] offsets = new long[(int) chunk];
            for (int r = 0; r < offsets.length; r++) {
                offsets[r] = r * variables * valueBytes;
            }
            for (long first = 0; first < observations; first += chunk) {
                int count = (int) Math.min(chunk, observations - first);
                readRows(first, count, rows, offsets, type);
                consumer.accept(first, count, rows);
            }
        }
    }

    @Override
    public Totals totals() {
        CompensatedSum sum = new CompensatedSum();
        long[] nonZero = new long[1];
        if (sparse()) {
            long stored = storedValues();
            for (long start = 0; start < stored; start += BLOCK) {
                int n = (int) Math.min(BLOCK, stored - start);
                double[] values = data.readDoubles(start, n);
                for (int i = 0; i < n; i++) {
                    sum.add(values[i]);
                    nonZero[0] += values[i] != 0 ? 1 : 0;
                }
            }
        } else {
            forEachBlock(true, (first, count, rows) -> {
                long n = count * variables;
                for (long v = 0; v < n; v++) {
                    double value = rows.getAtIndex(ValueLayout.JAVA_DOUBLE, v);
                    sum.add(value);
                    nonZero[0] += value != 0 ? 1 : 0;
                }
            });
        }
        return new Totals(sum.value(), nonZero[0]);
    }

    @Override
    public double[] columnSums() {
        int genes = Math.toIntExact(variables);
        double[] totals = new double[genes];
        long stored = storedValues();
        if (csc != null) {
            long[] pointers = csc.columnPointers();
            int column = 0;
            for (long start = 0; start < stored; start += BLOCK) {
                int n = (int) Math.min(BLOCK, stored - start);
                double[] values = data.readDoubles(start, n);
                for (int i = 0; i < n; i++) {
                    while (pointers[column + 1] <= start + i) {
                        column++;
                    }
                    totals[column] += values[i];
                }
            }
        } else if (sparse()) {
            for (long start = 0; start < stored; start += BLOCK) {
                int n = (int) Math.min(BLOCK, stored - start);
                double[] values = data.readDoubles(start, n);
                long[] columns = indices.readLongs(start, n);
                for (int i = 0; i < n; i++) {
                    if (columns[i] < 0 || columns[i] >= variables) {
                        throw badColumn(columns[i], start + i);
                    }
                    totals[(int) columns[i]] += values[i];
                }
            }
        } else {
            forEachBlock(true, (first, count, rows) -> {
                for (int r = 0; r < count; r++) {
                    long base = (long) r * genes;
                    for (int g = 0; g < genes; g++) {
                        totals[g] += rows.getAtIndex(ValueLayout.JAVA_DOUBLE, base + g);
                    }
                }
            });
        }
        return totals;
    }

    // ---- matrices

    @Override
    public Map<String, String> matrices() {
        Map<String, String> found = new LinkedHashMap<>();
        describeMatrix(found, "X");
        describeMatrix(found, "raw/X");
        if (zarr.isGroup("layers")) {
            List<String> names;
            try {
                names = zarr.children("layers");
            } catch (MemfitException e) {
                // a store in a bucket without consolidated metadata: its layers are not listed (one is read by name)
                found.put("layers/*", "not listed (a folder in a bucket without consolidated metadata); read one by name, "
                        + "--layer NAME");
                names = List.of();
            }
            for (String name : names) {
                describeMatrix(found, "layers/" + name);
            }
        }
        return found;
    }

    private void describeMatrix(Map<String, String> found, String name) {
        if (zarr.isArray(name)) {
            ZarrArray array = zarr.array(name);
            long[] shape = array.shape();
            if (shape.length == 2) {
                found.put(name, shape[0] + " x " + shape[1] + " dense " + typeName(array.dtype()));
            }
        } else if (zarr.isGroup(name) && zarr.isArray(name + "/data")) {
            ZarrAttributes attributes = zarr.attributes(name);
            long[] shape;
            try {
                shape = attributes.longs("shape").orElse(new long[0]);
            } catch (MemfitException e) {
                shape = new long[0];
            }
            if (attributes.has("shape")) {
                found.put(name, (shape.length == 2 ? shape[0] + " x " + shape[1] + " " : "")
                        + attributes.encodingType().orElse(null) + " " + typeName(zarr.array(name + "/data").dtype()));
            }
        }
    }

    /** numpy's name of a type, as the {@code .h5ad} reader names HDF5 types. */
    private static String typeName(ZarrDType type) {
        return type.isNumeric() ? type.toDType().name().toLowerCase(java.util.Locale.ROOT) : type.toString();
    }

    // ---- dataframes

    /** The group of a dataframe: {@code obs}, {@code var}, or {@code raw/var} when {@code raw/X} is read. */
    private String frame(String frame) {
        String path = "var".equals(frame) ? varFrame : frame;
        if (!zarr.isGroup(path)) {
            throw new InvalidFileException(zarr.location(path), -1, "a dataframe group /" + path,
                    zarr.isArray(path) ? "an array" : "none");
        }
        return path;
    }

    @Override
    public List<String> columnNames(String frame) {
        String path = frame(frame);
        try {
            return zarr.attributes(path).strings("column-order");
        } catch (MemfitException e) {
            throw new InvalidFileException(zarr.location(path + "/.zattrs"), -1, "column-order as a list of names",
                    e.getMessage());
        }
    }

    @Override
    public Map<String, FrameColumn> frameColumns(String frame) {
        String path = frame(frame);
        Map<String, FrameColumn> columns = new LinkedHashMap<>();
        for (String name : columnNames(frame)) {
            columns.put(name, column(path, frame, name));
        }
        return columns;
    }

    @Override
    public FrameColumn frameColumn(String frame, String name) {
        List<String> names = columnNames(frame);
        if (!names.contains(name)) {
            throw new MemfitException(location + ": " + frame + " has no column '" + name + "'; it has " + names);
        }
        return column(frame(frame), frame, name);
    }

    @Override
    public String[] index(String frame) {
        FrameColumn values = column(frame(frame), frame, indexName(frame));
        if (values instanceof FrameColumn.Strings names) {
            return names.values();
        }
        Object labels = values.labels();
        String[] names = new String[java.lang.reflect.Array.getLength(labels)];
        for (int i = 0; i < names.length; i++) {
            names[i] = String.valueOf(java.lang.reflect.Array.get(labels, i));
        }
        return names;
    }

    @Override
    public String indexName(String frame) {
        return zarr.attributes(frame(frame)).string("_index").orElse("_index");
    }

    /** A column, checked to hold one value per row of the dataframe (n_obs for obs, n_vars for var). */
    private FrameColumn column(String group, String frame, String name) {
        String path = group + "/" + name;
        FrameColumn values = readColumn(group, path);
        long expected = "obs".equals(frame) ? observations : "var".equals(frame) ? variables : -1;
        AnnDataColumns.checkLength(zarr.location(path), "/" + path, frame, expected, values.size());
        return values;
    }

    private FrameColumn readColumn(String group, String path) {
        String shown = "/" + path;
        if (zarr.isArray(path)) {
            ZarrArray array = zarr.array(path);
            ZarrAttributes attributes = array.attributes();
            if (attributes.has("categories")) {
                return legacyCategorical(group, array, shown);
            }
            String encoding = attributes.encodingType().orElse(null);
            if (encoding != null && !encoding.equals("array") && !encoding.equals("string-array")) {
                throw new InvalidFileException(zarr.location(path), -1, AnnDataColumns.CARRIED + " in " + shown,
                        "an array of encoding-type '" + encoding + "'" + AnnDataColumns.CONVERT);
            }
            return array(array, shown);
        }
        if (zarr.isGroup(path)) {
            ZarrAttributes attributes = zarr.attributes(path);
            String encoding = attributes.encodingType().orElse(null);
            boolean coded = zarr.isArray(path + "/codes") && zarr.isArray(path + "/categories");
            if ("categorical".equals(encoding) || encoding == null && coded) {
                if (!coded) {
                    throw new InvalidFileException(zarr.location(path), -1, "a categorical column " + shown
                            + " (arrays codes and categories)", "a group without them (encoding-type " + encoding + ")");
                }
                boolean ordered = attributes.bool("ordered").orElse(false);
                return AnnDataColumns.categorical(zarr.location(path), shown, array(zarr.array(path + "/codes"), shown + "/codes"),
                        array(zarr.array(path + "/categories"), shown + "/categories"), ordered);
            }
            if ("nullable-integer".equals(encoding) || "nullable-boolean".equals(encoding)) {
                boolean bools = "nullable-boolean".equals(encoding);
                if (!zarr.isArray(path + "/values")) {
                    throw new InvalidFileException(zarr.location(path), -1, "a " + encoding + " column " + shown
                            + " (an array values and a mask)", "a group without values");
                }
                FrameColumn values = array(zarr.array(path + "/values"), shown + "/values");
                FrameColumn mask = zarr.isArray(path + "/mask") ? array(zarr.array(path + "/mask"), shown + "/mask") : null;
                return AnnDataColumns.nullable(zarr.location(path), shown, values, mask, bools);
            }
            throw new InvalidFileException(zarr.location(path), -1, AnnDataColumns.CARRIED + " in " + shown,
                    "a group of encoding-type '" + encoding + "'" + AnnDataColumns.CONVERT);
        }
        throw new InvalidFileException(zarr.location(path), -1, "a column " + shown + " (listed in column-order)", "none");
    }

    /**
     * anndata 0.7's categorical in a zarr store: an array of codes whose attribute {@code categories} is the path of
     * the categories relative to the dataframe ({@code __categories/<name>}), whose attribute {@code ordered} says
     * whether they are ordered.
     */
    private FrameColumn legacyCategorical(String group, ZarrArray codes, String shown) {
        String reference = codes.attributes().string("categories").orElse(null);
        String target = reference == null ? null : group + "/" + reference.replaceAll("^/+", "");
        if (target == null || !zarr.isArray(target)) {
            throw new InvalidFileException(zarr.location(codes.path() + "/.zattrs"), -1, "the categories of the anndata 0.7 "
                    + "categorical " + shown + " (the path of an array such as __categories/<name>)",
                    reference == null ? "an attribute categories that is not a path: " + codes.attributes().json()
                            : "the path '" + reference + "', which names " + (zarr.isGroup(target) ? "a group" : "nothing"));
        }
        ZarrArray categories = zarr.array(target);
        return AnnDataColumns.categorical(zarr.location(codes.path()), shown, array(codes, shown),
                array(categories, "/" + target), categories.attributes().bool("ordered").orElse(false));
    }

    /** A one-dimensional array of numbers, bools or strings, with its exact type. */
    private FrameColumn array(ZarrArray array, String shown) {
        long[] shape = array.shape();
        ZarrDType type = array.dtype();
        if (shape.length != 1) {
            throw new InvalidFileException(zarr.location(array.path()), -1, AnnDataColumns.CARRIED + " in " + shown,
                    "an array of shape " + Arrays.toString(shape) + " (" + type + ")" + AnnDataColumns.CONVERT);
        }
        if (shape[0] > Integer.MAX_VALUE - 8) {
            throw new InvalidFileException(zarr.location(array.path()), -1, "a column of fewer than 2^31 rows in " + shown,
                    shape[0] + " rows");
        }
        int n = (int) shape[0];
        if (type.isText()) {
            String[] texts = array.readStoredStrings();
            for (int i = 0; i < texts.length; i++) {
                if (texts[i] == null) {
                    texts[i] = "";
                }
            }
            return new FrameColumn.Strings(texts);
        }
        if (type.kind() == ZarrDType.Kind.FLOAT && type.itemSize() == 2) {
            throw new InvalidFileException(zarr.location(array.path()), -1, AnnDataColumns.CARRIED + " in " + shown,
                    "an array of float16" + AnnDataColumns.CONVERT);
        }
        byte[] raw = array.readStoredBytes();
        ByteBuffer bytes = ByteBuffer.wrap(raw).order(ByteOrder.nativeOrder());
        return switch (type.kind()) {
            case BOOL -> {
                boolean[] flags = new boolean[n];
                for (int i = 0; i < n; i++) {
                    flags[i] = raw[i] != 0;
                }
                yield new FrameColumn.Bools(flags);
            }
            case FLOAT -> {
                if (type.itemSize() == 4) {
                    float[] values = new float[n];
                    bytes.asFloatBuffer().get(values);
                    yield FrameColumn.Numbers.of(values);
                }
                double[] values = new double[n];
                bytes.asDoubleBuffer().get(values);
                yield FrameColumn.Numbers.of(values);
            }
            default -> {
                Object values = switch (type.itemSize()) {
                    case 1 -> raw;
                    case 2 -> {
                        short[] shorts = new short[n];
                        bytes.asShortBuffer().get(shorts);
                        yield shorts;
                    }
                    case 4 -> {
                        int[] ints = new int[n];
                        bytes.asIntBuffer().get(ints);
                        yield ints;
                    }
                    default -> {
                        long[] longs = new long[n];
                        bytes.asLongBuffer().get(longs);
                        yield longs;
                    }
                };
                yield new FrameColumn.Numbers(type.toDType(), values);
            }
        };
    }

    /** Closes the store and gives up this reader's use of a CSC X's transpose. */
    @Override
    public void close() {
        zarr.close();
        if (csc != null) {
            csc.shared().release();
        }
    }

    @Override
    public String toString() {
        return "AnnData .zarr " + location + " (" + layer + ": " + observations + " x " + variables + " " + layout() + ")";
    }
}
