package dev.memfit.io;

import dev.memfit.MemfitException;
import io.jhdf.HdfFile;
import io.jhdf.api.Attribute;
import io.jhdf.api.Dataset;
import io.jhdf.api.Group;
import io.jhdf.api.Node;

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

    private final Path file;
    private final HdfFile hdf;
    private final long observations;
    private final long variables;
    private final Dataset dense;
    private final Dataset data;
    private final Dataset indices;
    private final long[] indptr;

    private H5ad(Path file, HdfFile hdf, long observations, long variables, Dataset dense, Dataset data, Dataset indices,
                 long[] indptr) {
        this.file = file;
        this.hdf = hdf;
        this.observations = observations;
        this.variables = variables;
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
        HdfFile hdf;
        try {
            hdf = new HdfFile(file);
        } catch (RuntimeException e) {
            throw new InvalidFileException(file, -1, "an HDF5 file (.h5ad)", "a file jhdf cannot open: " + e.getMessage(), e);
        }
        try {
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
                return new H5ad(file, hdf, dims[0], dims[1], matrix, null, null, null);
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
            Dataset values = dataset(file, group, "data");
            Dataset columns = dataset(file, group, "indices");
            long[] pointers = longs(dataset(file, group, "indptr").getData());
            if (pointers.length != shape[0] + 1) {
                throw new InvalidFileException(file, -1, "X/indptr of n_obs + 1 = " + (shape[0] + 1) + " entries", pointers.length + " entries");
            }
            long nnz = values.getDimensionsAsLong()[0];
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
            return new H5ad(file, hdf, shape[0], shape[1], null, values, columns, pointers);
        } catch (RuntimeException e) {
            hdf.close();
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
        if (first < 0 || count < 0 || first + count > observations) {
            throw new IndexOutOfBoundsException("rows [" + first + ", " + (first + count) + ") outside [0, " + observations + ") of " + file);
        }
        long rowBytes = variables * Float.BYTES;
        if (!sparse()) {
            Object block = dense.getData(new long[]{first, 0}, new int[]{count, Math.toIntExact(variables)});
            for (int r = 0; r < count; r++) {
                Object row = Array.get(block, r);
                for (int c = 0; c < variables; c++) {
                    into.setAtIndex(ValueLayout.JAVA_FLOAT, r * variables + c, ((Number) Array.get(row, c)).floatValue());
                }
            }
            return;
        }
        into.asSlice(0, count * rowBytes).fill((byte) 0);
        long start = indptr[Math.toIntExact(first)];
        long end = indptr[Math.toIntExact(first + count)];
        if (end == start) {
            return;
        }
        int n = Math.toIntExact(end - start);
        Object values = data.getData(new long[]{start}, new int[]{n});
        long[] columns = longs(indices.getData(new long[]{start}, new int[]{n}));
        int k = 0;
        for (int r = 0; r < count; r++) {
            long rowEnd = indptr[Math.toIntExact(first + r + 1)];
            for (long at = indptr[Math.toIntExact(first + r)]; at < rowEnd; at++, k++) {
                long column = columns[k];
                if (column < 0 || column >= variables) {
                    throw new InvalidFileException(file, -1, "X/indices in [0, " + variables + ") (n_vars)",
                            "index " + column + " at stored value " + at + " (row " + (first + r) + ")");
                }
                into.setAtIndex(ValueLayout.JAVA_FLOAT, r * variables + column, ((Number) Array.get(values, k)).floatValue());
            }
        }
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
     * @return column name to its values: a {@code String[]} (strings and categorical labels) or a {@code double[]}
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
     * @return a {@code String[]} or a {@code double[]}
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
    }
}
