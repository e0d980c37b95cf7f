package dev.memfit.io.hdf5;

import dev.memfit.DType;
import dev.memfit.InvalidFileException;
import dev.memfit.MemfitException;
import io.jhdf.HdfFile;
import io.jhdf.api.Attribute;
import io.jhdf.api.Dataset;
import io.jhdf.api.Group;
import io.jhdf.api.Node;
import io.jhdf.api.dataset.ChunkedDataset;
import io.jhdf.api.dataset.ContiguousDataset;
import io.jhdf.object.datatype.EnumDataType;
import io.jhdf.object.datatype.FixedPoint;
import io.jhdf.object.datatype.FloatingPoint;
import dev.memfit.NativeMemory;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.foreign.Arena;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.file.StandardOpenOption;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.reflect.Array;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * An AnnData {@code .h5ad} file read with jhdf, out of core: {@code X} dense or CSR (int32 or int64
 * {@code indptr}), read by row ranges, never whole; {@code obs} and {@code var} dataframes with numeric, string and
 * categorical columns, in the layout anndata 0.8 writes.
 *
 * <p>The CSR row pointer is read and checked at open (monotone, starting at 0, ending at the number of stored
 * values): 8 bytes per cell in memory. Column indices are checked against {@code n_vars} as rows are read.
 */
public final class H5ad implements AutoCloseable {

    /** Floats read at once from a dense X (16 MiB of heap): reads of more rows go in blocks of whole rows. */
    static final long DENSE_BLOCK_FLOATS = 1L << 22;

    private final Path file;
    private final HdfFile hdf;
    private final long observations;
    private final long variables;
    private final Vector dense;
    private final Vector data;
    private final Vector indices;
    private final long[] indptr;
    private final FileMapping mapping;

    private H5ad(Path file, HdfFile hdf, long observations, long variables, FileMapping mapping, Vector dense,
                 Vector data, Vector indices, long[] indptr) {
        this.file = file;
        this.hdf = hdf;
        this.observations = observations;
        this.variables = variables;
        this.mapping = mapping;
        this.dense = dense;
        this.data = data;
        this.indices = indices;
        this.indptr = indptr;
    }

    /**
     * Opens a file and checks its layout.
     *
     * @param file the {@code .h5ad}
     * @return the reader, to be closed
     */
    public static H5ad open(Path file) {
        if (!java.nio.file.Files.isRegularFile(file)) {
            throw new InvalidFileException(file, -1, "an .h5ad file", "no such file");
        }
        HdfFile hdf;
        try {
            hdf = new HdfFile(file);
        } catch (RuntimeException e) {
            throw new InvalidFileException(file, -1, "an HDF5 file (.h5ad)", "a file jhdf cannot open: " + e.getMessage(), e);
        }
        FileMapping mapping = null;
        try {
            // decoded chunks of X/data, X/indices and X/indptr, shared: one bound for the whole file
            ChunkedVector.Cache cache = new ChunkedVector.Cache(ChunkedVector.Cache.DEFAULT_BYTES);
            String encoding = stringAttribute(hdf, "encoding-type");
            Node x = hdf.getChildren().get("X");
            if (!"anndata".equals(encoding) && x == null) {
                throw new InvalidFileException(file, -1, "an AnnData file (root attribute encoding-type=anndata, or an X)",
                        "encoding-type " + encoding + " and no X");
            }
            if (x instanceof Dataset matrix) {
                int[] dims = matrix.getDimensions();
                if (dims.length != 2) {
                    throw new InvalidFileException(file, -1, "a two-dimensional X", "X of " + dims.length + " dimensions");
                }
                mapping = FileMapping.of(file);
                return new H5ad(file, hdf, dims[0], dims[1], mapping, new Vector(file, hdf, mapping, matrix, cache), null, null, null);
            }
            if (!(x instanceof Group group)) {
                throw new InvalidFileException(file, -1, "an X dataset or CSR group", x == null ? "no X" : x.getType().toString());
            }
            String format = stringAttribute(group, "encoding-type");
            if (format == null) {
                format = stringAttribute(group, "h5sparse_format") == null ? null : stringAttribute(group, "h5sparse_format") + "_matrix";
            }
            if (!"csr_matrix".equals(format)) {
                throw new InvalidFileException(file, -1, "X as csr_matrix (or dense)", "X encoded as " + format);
            }
            long[] shape = longs(group.getAttribute("shape").getData());
            mapping = FileMapping.of(file);
            Vector values = new Vector(file, hdf, mapping, dataset(file, group, "data"), cache);
            Vector columns = new Vector(file, hdf, mapping, dataset(file, group, "indices"), cache);
            Vector pointerVector = new Vector(file, hdf, mapping, dataset(file, group, "indptr"), cache);
            long[] pointers = new long[Math.toIntExact(pointerVector.length())];
            pointerVector.longs(0, pointers.length, pointers);
            if (pointers.length != shape[0] + 1) {
                throw new InvalidFileException(file, -1, "X/indptr of n_obs + 1 = " + (shape[0] + 1) + " entries", pointers.length + " entries");
            }
            long nnz = values.length();
            if (pointers[0] != 0 || pointers[pointers.length - 1] != nnz) {
                throw new InvalidFileException(file, -1, "X/indptr from 0 to the " + nnz + " stored values",
                        "from " + pointers[0] + " to " + pointers[pointers.length - 1]);
            }
            for (int i = 1; i < pointers.length; i++) {
                if (pointers[i] < pointers[i - 1]) {
                    throw new InvalidFileException(file, -1, "X/indptr not decreasing",
                            "indptr[" + i + "] = " + pointers[i] + " < indptr[" + (i - 1) + "] = " + pointers[i - 1]);
                }
            }
            return new H5ad(file, hdf, shape[0], shape[1], mapping, null, values, columns, pointers);
        } catch (RuntimeException e) {
            hdf.close();
            if (mapping != null) {
                mapping.close();
            }
            throw e;
        }
    }

    private static Dataset dataset(Path file, Group group, String name) {
        if (group.getChildren().get(name) instanceof Dataset dataset) {
            return dataset;
        }
        throw new InvalidFileException(file, -1, "a dataset " + group.getPath() + name, "none");
    }

    private static String stringAttribute(Node node, String name) {
        Attribute attribute = node.getAttribute(name);
        if (attribute == null) {
            return null;
        }
        Object value = attribute.getData();
        return value instanceof String text ? text : value instanceof String[] texts && texts.length == 1 ? texts[0] : String.valueOf(value);
    }

    private static long[] longs(Object array) {
        long[] values = new long[Array.getLength(array)];
        for (int i = 0; i < values.length; i++) {
            values[i] = ((Number) Array.get(array, i)).longValue();
        }
        return values;
    }

    /**
     * The number of cells.
     *
     * @return n_obs
     */
    public long observations() {
        return observations;
    }

    /**
     * The number of genes.
     *
     * @return n_vars
     */
    public long variables() {
        return variables;
    }

    /**
     * Whether X is stored as CSR.
     *
     * @return true for sparse
     */
    public boolean sparse() {
        return indptr != null;
    }

    /**
     * The number of stored values of X (all values when dense).
     *
     * @return nnz
     */
    public long storedValues() {
        return sparse() ? indptr[indptr.length - 1] : observations * variables;
    }

    /**
     * Reads rows of X as dense float32 in the platform's byte order.
     *
     * @param first the first row
     * @param count how many rows
     * @param into at least {@code count * n_vars * 4} bytes; overwritten
     */
    public void readRows(long first, int count, MemorySegment into) {
        long rowBytes = variables * Float.BYTES;
        long[] offsets = new long[count];
        for (int r = 0; r < count; r++) {
            offsets[r] = r * rowBytes;
        }
        readRows(first, count, into, offsets);
    }

    /**
     * Reads rows of X as dense float32 in the platform's byte order, each to its own place (a streaming shuffle
     * buffer reads a chunk straight into its free slots this way, without an intermediate copy).
     *
     * @param first the first row
     * @param count how many rows
     * @param into the destination
     * @param rowOffsets the byte offset in {@code into} of each row ({@code n_vars * 4} bytes each, overwritten)
     */
    public void readRows(long first, int count, MemorySegment into, long[] rowOffsets) {
        if (first < 0 || count < 0 || first + count > observations) {
            throw new IndexOutOfBoundsException("rows [" + first + ", " + (first + count) + ") outside [0, " + observations + ") of " + file);
        }
        long rowBytes = variables * Float.BYTES;
        if (!sparse()) {
            // in blocks of whole rows, so that a read of many wide rows neither overflows a Java array nor holds a
            // heap copy of the whole range
            int width = Math.toIntExact(variables);
            int blockRows = (int) Math.max(1, Math.min(count, DENSE_BLOCK_FLOATS / Math.max(1, width)));
            float[] block = new float[Math.toIntExact((long) blockRows * width)];
            for (int done = 0; done < count; done += blockRows) {
                int rows = Math.min(blockRows, count - done);
                dense.floats((first + done) * variables, rows * width, block);
                for (int r = 0; r < rows; r++) {
                    MemorySegment.copy(block, r * width, into, ValueLayout.JAVA_FLOAT, rowOffsets[done + r], width);
                }
            }
            return;
        }
        long start = indptr[Math.toIntExact(first)];
        int n = Math.toIntExact(indptr[Math.toIntExact(first + count)] - start);
        Window values = data.window(start, n, DType.FLOAT32);
        Window columns = indices.window(start, n, indices.type == DType.INT32 ? DType.INT32 : DType.INT64);
        // locals, not record accessors, in the loop: this is the hot path of streaming and sharding
        MemorySegment valueBytes = values.values();
        MemorySegment columnBytes = columns.values();
        ValueLayout.OfFloat valueLayout = values.floatLayout();
        ValueLayout.OfInt narrow = columns.intLayout();
        ValueLayout.OfLong wide = columns.longLayout();
        boolean isWide = wide != null;
        long valueFirst = values.first();
        long columnFirst = columns.first();
        for (int r = 0; r < count; r++) {
            long rowEnd = indptr[Math.toIntExact(first + r + 1)];
            long rowOffset = rowOffsets[r];
            // zero each row just before its values go in, while it is in cache (one pass over the memory, not two)
            into.asSlice(rowOffset, rowBytes).fill((byte) 0);
            for (long at = indptr[Math.toIntExact(first + r)]; at < rowEnd; at++) {
                long column = isWide ? columnBytes.get(wide, (at - columnFirst) * Long.BYTES)
                        : columnBytes.get(narrow, (at - columnFirst) * Integer.BYTES);
                if (column < 0 || column >= variables) {
                    throw new InvalidFileException(file, indices.offsetOf(at), "X/indices in [0, " + variables + ") (n_vars)",
                            "index " + column + " at stored value " + at + " (row " + (first + r) + ")");
                }
                into.set(ValueLayout.JAVA_FLOAT, rowOffset + column * Float.BYTES, valueBytes.get(valueLayout, (at - valueFirst) * Float.BYTES));
            }
        }
    }

    /**
     * The number of values stored for a range of rows of a CSR X: what {@link #readCsr} writes for it.
     *
     * @param first the first row
     * @param count how many rows
     * @return the stored (non-zero) values of those rows
     * @throws MemfitException when X is not CSR
     */
    public long storedValues(long first, long count) {
        requireCsr();
        if (first < 0 || count < 0 || first + count > observations) {
            throw new IndexOutOfBoundsException("rows [" + first + ", " + (first + count) + ") outside [0, " + observations + ") of " + file);
        }
        return indptr[Math.toIntExact(first + count)] - indptr[Math.toIntExact(first)];
    }

    /**
     * Reads a range of rows of a CSR X as stored: values as float32, column indices as int32 and row starts, in the
     * platform's byte order, without densifying (sharding to CSR copies each stored value once). Column indices are
     * checked against {@code n_vars}; their order within a row is the file's.
     *
     * @param first the first row
     * @param count how many rows
     * @param values at least {@code storedValues(first, count) * 4} bytes; overwritten
     * @param columns at least {@code storedValues(first, count) * 4} bytes; overwritten
     * @param rowStarts at least {@code count + 1} entries: row {@code r}'s values are at
     *                  {@code [rowStarts[r], rowStarts[r + 1])}, from {@code rowStarts[0] = 0}
     * @return the number of values read
     * @throws MemfitException when X is not CSR or has more than 2^31 - 1 genes
     */
    public long readCsr(long first, int count, MemorySegment values, MemorySegment columns, long[] rowStarts) {
        long n = storedValues(first, count);
        if (variables > Integer.MAX_VALUE) {
            throw new MemfitException(file + ": " + variables + " genes do not fit int32 column indices");
        }
        long start = indptr[Math.toIntExact(first)];
        for (int r = 0; r <= count; r++) {
            rowStarts[r] = indptr[Math.toIntExact(first + r)] - start;
        }
        if (n == 0) {
            return 0;
        }
        Window stored = data.window(start, Math.toIntExact(n), DType.FLOAT32);
        Window indexes = indices.window(start, Math.toIntExact(n), indices.type == DType.INT32 ? DType.INT32 : DType.INT64);
        MemorySegment valueBytes = stored.values();
        MemorySegment columnBytes = indexes.values();
        ValueLayout.OfFloat valueLayout = stored.floatLayout();
        ValueLayout.OfInt narrow = indexes.intLayout();
        ValueLayout.OfLong wide = indexes.longLayout();
        long valueFirst = stored.first();
        long columnFirst = indexes.first();
        for (long i = 0; i < n; i++) {
            long at = start + i;
            long column = wide != null ? columnBytes.get(wide, (at - columnFirst) * Long.BYTES)
                    : columnBytes.get(narrow, (at - columnFirst) * Integer.BYTES);
            if (column < 0 || column >= variables) {
                throw new InvalidFileException(file, indices.offsetOf(at), "X/indices in [0, " + variables + ") (n_vars)",
                        "index " + column + " at stored value " + at);
            }
            columns.setAtIndex(ValueLayout.JAVA_INT, i, (int) column);
            values.setAtIndex(ValueLayout.JAVA_FLOAT, i, valueBytes.get(valueLayout, (at - valueFirst) * Float.BYTES));
        }
        return n;
    }

    private void requireCsr() {
        if (indptr == null) {
            throw new MemfitException(file + ": X is stored dense, not CSR; read it with readRows");
        }
    }

    /**
     * Stored values of one dataset, element {@code i} of the dataset at index {@code i - first} of {@code values}:
     * the whole mapping ({@code first} 0) when the file stores them as wanted (no copy, no garbage per chunk), else a
     * heap copy of the run asked for, read through jhdf and converted. One layout is set, the others are null.
     */
    private record Window(MemorySegment values, long first, ValueLayout.OfFloat floatLayout, ValueLayout.OfInt intLayout,
                          ValueLayout.OfLong longLayout) {
    }

    /** Receives consecutive rows of X as dense float32. */
    @FunctionalInterface
    public interface RowsConsumer {
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
     * One pass over X in chunks of about 16 MB of dense rows: memory stays at one chunk whatever the file size.
     *
     * @param consumer receives each chunk
     */
    public void forEachChunk(RowsConsumer consumer) {
        long chunk = Math.max(1, (16L << 20) / Math.max(1, variables * Float.BYTES));
        try (java.lang.foreign.Arena arena = java.lang.foreign.Arena.ofConfined()) {
            MemorySegment rows = arena.allocate(chunk * variables * Float.BYTES);
            for (long first = 0; first < observations; first += chunk) {
                int count = (int) Math.min(chunk, observations - first);
                readRows(first, count, rows);
                consumer.accept(first, count, rows);
            }
        }
    }

    /**
     * The float64 sum of all of X, read in chunks of rows.
     *
     * @return the sum
     */
    public double sum() {
        double[] total = new double[1];
        forEachChunk((first, count, rows) -> {
            for (long v = 0; v < count * variables; v++) {
                total[0] += rows.getAtIndex(ValueLayout.JAVA_FLOAT, v);
            }
        });
        return total[0];
    }

    /**
     * The columns of a dataframe ({@code obs} or {@code var}) in their stored order, excluding the index.
     *
     * @param frame "obs" or "var"
     * @return column name to its values: a {@code String[]} (strings and categorical labels), a {@code boolean[]}
     *         (numpy bool, stored by h5py as an HDF5 enum) or a {@code double[]} (numbers)
     */
    public Map<String, Object> columns(String frame) {
        Map<String, Object> columns = new LinkedHashMap<>();
        if (!(hdf.getChildren().get(frame) instanceof Group group)) {
            throw new InvalidFileException(file, -1, "a dataframe group /" + frame, "none");
        }
        List<String> order = new ArrayList<>();
        Attribute columnOrder = group.getAttribute("column-order");
        if (columnOrder != null && !columnOrder.isEmpty() && columnOrder.getData() instanceof String[] names) {
            order.addAll(Arrays.asList(names));
        }
        for (String name : order) {
            columns.put(name, column(group, name));
        }
        return columns;
    }

    /**
     * One column of {@code obs} or {@code var}.
     *
     * @param frame "obs" or "var"
     * @param name the column
     * @return a {@code String[]}, a {@code boolean[]} or a {@code double[]}, as {@link #columns} returns them
     * @throws MemfitException naming the columns that exist when it does not
     */
    public Object column(String frame, String name) {
        Map<String, Object> all = columns(frame);
        if (!all.containsKey(name)) {
            throw new MemfitException(file + ": " + frame + " has no column '" + name + "'; it has " + all.keySet());
        }
        return all.get(name);
    }

    /**
     * The index of a dataframe: cell barcodes for {@code obs}, gene names for {@code var}.
     *
     * @param frame "obs" or "var"
     * @return the names
     */
    public String[] index(String frame) {
        if (!(hdf.getChildren().get(frame) instanceof Group group)) {
            throw new InvalidFileException(file, -1, "a dataframe group /" + frame, "none");
        }
        String indexName = stringAttribute(group, "_index");
        Object values = column(group, indexName == null ? "_index" : indexName);
        return values instanceof String[] names ? names : new String[0];
    }

    private Object column(Group group, String name) {
        Node node = group.getChildren().get(name);
        if (node instanceof Dataset dataset) {
            Object values = dataset.getData();
            if (dataset.getDataType() instanceof EnumDataType type && values instanceof String[] names
                    && BOOLEAN_ENUM.equals(type.getEnumMapping())) {
                // anndata (through h5py) stores numpy bool as an HDF5 enum {FALSE: 0, TRUE: 1}; jhdf reads its names
                boolean[] flags = new boolean[names.length];
                for (int i = 0; i < names.length; i++) {
                    flags[i] = "TRUE".equals(names[i]);
                }
                return flags;
            }
            if (values instanceof String[] strings) {
                return strings;
            }
            return toDoubles(values);
        }
        if (node instanceof Group categorical) {
            String[] categories = (String[]) ((Dataset) categorical.getChildren().get("categories")).getData();
            long[] codes = longs(((Dataset) categorical.getChildren().get("codes")).getData());
            String[] labels = new String[codes.length];
            for (int i = 0; i < codes.length; i++) {
                labels[i] = codes[i] < 0 ? null : categories[(int) codes[i]];
            }
            return labels;
        }
        throw new InvalidFileException(file, -1, "a column " + group.getPath() + name, "none");
    }

    /** The HDF5 enum h5py writes for numpy's bool. */
    private static final Map<Integer, String> BOOLEAN_ENUM = Map.of(0, "FALSE", 1, "TRUE");

    private static double[] toDoubles(Object array) {
        double[] values = new double[Array.getLength(array)];
        for (int i = 0; i < values.length; i++) {
            Object value = Array.get(array, i);
            values[i] = value instanceof Boolean flag ? (flag ? 1 : 0) : ((Number) value).doubleValue();
        }
        return values;
    }

    /** Closes the file. */
    @Override
    public void close() {
        hdf.close();
        mapping.close();
    }

    /** The whole file mapped read-only, shared by the datasets that are stored contiguous and unfiltered. */
    private static final class FileMapping implements AutoCloseable {
        private final Arena arena = Arena.ofShared();
        private final MemorySegment bytes;
        private final NativeMemory.Reservation reservation;

        private FileMapping(Path file) throws IOException {
            try (FileChannel channel = FileChannel.open(file, StandardOpenOption.READ)) {
                bytes = channel.map(FileChannel.MapMode.READ_ONLY, 0, channel.size(), arena);
                reservation = NativeMemory.MAPPED.reserve(channel.size());
            }
        }

        static FileMapping of(Path file) {
            try {
                return new FileMapping(file);
            } catch (IOException e) {
                throw new UncheckedIOException("cannot map " + file, e);
            }
        }

        @Override
        public void close() {
            arena.close();
            reservation.close();
        }
    }

    /**
     * A numeric dataset read by ranges: straight from the mapping when it is stored contiguous and unfiltered
     * (anndata's default for dense X), through {@link ChunkedVector} when it is one-dimensional and chunked (sparse
     * X/data, X/indices and X/indptr, always chunked by anndata, often compressed), through jhdf's hyperslab reads
     * otherwise. Dense 2-D chunked X (written with compression) still takes the jhdf path, which decodes every
     * chunk a read touches again on each read: to be moved onto decoded chunks too.
     */
    private static final class Vector {
        private final Path file;
        private final Dataset dataset;
        private final MemorySegment mapped;
        private final long address;
        private final DType type;
        private final ByteOrder order;
        private final ChunkedVector chunked;

        Vector(Path file, HdfFile hdf, FileMapping mapping, Dataset dataset, ChunkedVector.Cache cache) {
            this.file = file;
            this.dataset = dataset;
            DType elementType = null;
            ByteOrder byteOrder = ByteOrder.LITTLE_ENDIAN;
            if (dataset.getDataType() instanceof FloatingPoint floating) {
                elementType = floating.getSize() == 4 ? DType.FLOAT32 : floating.getSize() == 8 ? DType.FLOAT64 : null;
                byteOrder = floating.getByteOrder();
            } else if (dataset.getDataType() instanceof FixedPoint fixed) {
                elementType = switch (fixed.getSize()) {
                    case 1 -> fixed.isSigned() ? DType.INT8 : DType.UINT8;
                    case 2 -> fixed.isSigned() ? DType.INT16 : DType.UINT16;
                    case 4 -> fixed.isSigned() ? DType.INT32 : DType.UINT32;
                    case 8 -> fixed.isSigned() ? DType.INT64 : DType.UINT64;
                    default -> null;
                };
                byteOrder = fixed.getByteOrder();
            }
            if (elementType == null) {
                throw new InvalidFileException(file, -1, "numeric values in " + dataset.getPath(), dataset.getDataType().toString());
            }
            this.type = elementType;
            this.order = byteOrder;
            long bytes = dataset.getSize() * (long) type.byteSize();
            if (dataset instanceof ContiguousDataset contiguous && dataset.getFilters().isEmpty() && !dataset.isEmpty()) {
                this.address = hdf.getUserBlockSize() + contiguous.getDataAddress();
                if (address < 0 || address + bytes > mapping.bytes.byteSize()) {
                    throw new InvalidFileException(file, address, dataset.getPath() + " (" + bytes + " bytes) inside the file",
                            "data past the end of the " + mapping.bytes.byteSize() + "-byte file");
                }
                this.mapped = mapping.bytes.asSlice(address, bytes);
                this.chunked = null;
            } else {
                this.address = -1;
                this.mapped = null;
                this.chunked = dataset instanceof ChunkedDataset && dataset.getDimensions().length == 1 && !dataset.isEmpty()
                        ? new ChunkedVector(file, hdf, mapping.bytes, dataset, cache) : null;
            }
        }

        long length() {
            return dataset.getDimensionsAsLong()[0];
        }

        /**
         * Elements {@code [start, start + n)} as float32 values or as int32/int64 indices ({@code as}): in place in
         * the mapping when stored that way, else read and converted to float32 or int64 on the heap.
         */
        Window window(long start, int n, DType as) {
            if (mapped != null && type == as) {
                return switch (as) {
                    case FLOAT32 -> new Window(mapped, 0, ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(order), null, null);
                    case INT32 -> new Window(mapped, 0, null, ValueLayout.JAVA_INT_UNALIGNED.withOrder(order), null);
                    default -> new Window(mapped, 0, null, null, ValueLayout.JAVA_LONG_UNALIGNED.withOrder(order));
                };
            }
            if (chunked != null && type == as) {
                MemorySegment bytes = chunked.bytes(start, n);
                return switch (as) {
                    case FLOAT32 -> new Window(bytes, start, ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(order), null, null);
                    case INT32 -> new Window(bytes, start, null, ValueLayout.JAVA_INT_UNALIGNED.withOrder(order), null);
                    default -> new Window(bytes, start, null, null, ValueLayout.JAVA_LONG_UNALIGNED.withOrder(order));
                };
            }
            if (as == DType.FLOAT32) {
                float[] copy = new float[n];
                floats(start, n, copy);
                return new Window(MemorySegment.ofArray(copy), start, ValueLayout.JAVA_FLOAT, null, null);
            }
            long[] copy = new long[n];
            longs(start, n, copy);
            return new Window(MemorySegment.ofArray(copy), start, null, null, ValueLayout.JAVA_LONG);
        }

        long offsetOf(long element) {
            if (chunked != null) {
                return chunked.offsetOf(element);
            }
            return address < 0 ? -1 : address + element * type.byteSize();
        }

        void floats(long start, int n, float[] into) {
            if (mapped != null && type == DType.FLOAT32) {
                MemorySegment.copy(mapped, ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(order), start * Float.BYTES, into, 0, n);
            } else if (mapped != null) {
                for (int i = 0; i < n; i++) {
                    into[i] = (float) type.getDouble(mapped, (start + i) * type.byteSize(), order);
                }
            } else if (chunked != null) {
                MemorySegment bytes = chunked.bytes(start, n);
                for (int i = 0; i < n; i++) {
                    into[i] = (float) type.getDouble(bytes, (long) i * type.byteSize(), order);
                }
            } else if (dataset.getDimensions().length == 2) {
                // dense X, chunked or compressed: whole rows (start and n are multiples of the row length)
                int columns = dataset.getDimensions()[1];
                Object rows = dataset.getData(new long[]{start / columns, 0}, new int[]{n / columns, columns});
                for (int r = 0; r < n / columns; r++) {
                    Object row = Array.get(rows, r);
                    for (int c = 0; c < columns; c++) {
                        into[r * columns + c] = ((Number) Array.get(row, c)).floatValue();
                    }
                }
            } else {
                Object values = dataset.getData(new long[]{start}, new int[]{n});
                if (values instanceof float[] floats) {
                    System.arraycopy(floats, 0, into, 0, n);
                } else {
                    for (int i = 0; i < n; i++) {
                        into[i] = ((Number) Array.get(values, i)).floatValue();
                    }
                }
            }
        }

        /** Converts to int64; int32 and int64 stored in the mapping are read in place by {@link #window} instead. */
        void longs(long start, int n, long[] into) {
            if (mapped != null) {
                for (int i = 0; i < n; i++) {
                    into[i] = (long) type.getDouble(mapped, (start + i) * type.byteSize(), order);
                }
            } else if (chunked != null) {
                MemorySegment bytes = chunked.bytes(start, n);
                for (int i = 0; i < n; i++) {
                    // int64 read as such: through a double, values past 2^53 would round
                    into[i] = type == DType.INT64 ? bytes.get(ValueLayout.JAVA_LONG_UNALIGNED.withOrder(order), (long) i * Long.BYTES)
                            : (long) type.getDouble(bytes, (long) i * type.byteSize(), order);
                }
            } else {
                Object values = dataset.getData(new long[]{start}, new int[]{n});
                for (int i = 0; i < n; i++) {
                    into[i] = ((Number) Array.get(values, i)).longValue();
                }
            }
        }
    }
}
