package dev.memfit.io.hdf5;

import dev.memfit.DType;
import dev.memfit.io.storage.AtomicMove;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * Writes an {@code .h5ad} in anndata 0.8's layout (CSR {@code X} with float32 values, int32 indices and int64
 * {@code indptr}; {@code obs} and {@code var} dataframes with numeric, boolean, string and categorical columns),
 * streaming the rows of {@code X} so the matrix never has to fit in memory.
 *
 * <p>Cells are appended in chunks; the values go straight to the file and the column indices to a spill file next to
 * it, copied in at the end (HDF5 contiguous datasets need their size before the next one starts). The file is written
 * under a temporary name and renamed by {@link #commit()}; a writer closed without {@code commit} deletes it.
 */
public final class H5adWriter implements AutoCloseable {

    private static final int COPY_BUFFER = 8 << 20;

    private final Path output;
    private final Path temporary;
    private final Path spill;
    private final String[] genes;
    private final Hdf5Writer hdf;
    private final Hdf5Writer.Stream values;
    private final FileChannel indices;
    private final Map<String, Object> obs = new LinkedHashMap<>();
    private final Map<String, Object> var = new LinkedHashMap<>();
    private String[] cellNames;
    private long[] indptr = new long[1024];
    private long cells;
    private boolean done;

    private H5adWriter(Path output, String[] genes) throws IOException {
        this.output = output;
        this.genes = genes.clone();
        Path folder = output.toAbsolutePath().getParent();
        Files.createDirectories(folder);
        this.temporary = folder.resolve(output.getFileName() + ".tmp-" + ProcessHandle.current().pid());
        this.spill = folder.resolve(output.getFileName() + ".indices-" + ProcessHandle.current().pid());
        this.hdf = Hdf5Writer.create(temporary);
        this.indices = FileChannel.open(spill, StandardOpenOption.CREATE, StandardOpenOption.TRUNCATE_EXISTING,
                StandardOpenOption.READ, StandardOpenOption.WRITE, StandardOpenOption.DELETE_ON_CLOSE);
        this.values = hdf.root().group("X").stream("data", DType.FLOAT32);
    }

    /**
     * Starts a file.
     *
     * @param output the {@code .h5ad} to write
     * @param genes the gene names ({@code var} index), which fix n_vars
     * @return the writer, to be committed and closed
     */
    public static H5adWriter create(Path output, String[] genes) {
        try {
            return new H5adWriter(output, genes);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot start " + output, e);
        }
    }

    /**
     * The number of cells appended so far.
     *
     * @return n_obs so far
     */
    public long cells() {
        return cells;
    }

    /**
     * Appends cells in CSR form.
     *
     * @param count the number of cells
     * @param rowStarts {@code count + 1} offsets into {@code columns}/{@code data}, starting at any value
     * @param columns gene indices, in [0, n_vars)
     * @param data the values
     */
    public void appendSparse(int count, int[] rowStarts, int[] columns, float[] data) {
        int first = rowStarts[0];
        int stored = rowStarts[count] - first;
        ByteBuffer valueBytes = ByteBuffer.allocate(stored * Float.BYTES).order(ByteOrder.LITTLE_ENDIAN);
        ByteBuffer columnBytes = ByteBuffer.allocate(stored * Integer.BYTES).order(ByteOrder.LITTLE_ENDIAN);
        for (int at = first; at < first + stored; at++) {
            if (columns[at] < 0 || columns[at] >= genes.length) {
                throw new IllegalArgumentException("gene index " + columns[at] + " outside [0, " + genes.length + ")");
            }
            valueBytes.putFloat(data[at]);
            columnBytes.putInt(columns[at]);
        }
        ensureRows(count);
        for (int r = 0; r < count; r++) {
            indptr[Math.toIntExact(cells + r + 1)] = indptr[Math.toIntExact(cells + r)] + rowStarts[r + 1] - rowStarts[r];
        }
        cells += count;
        values.append(valueBytes.flip());
        writeIndices(columnBytes.flip());
    }

    /**
     * Appends dense rows, storing only their non-zero values.
     *
     * @param count the number of cells
     * @param rows {@code count x n_vars} float32 in the platform's byte order
     */
    public void appendDense(int count, MemorySegment rows) {
        int n = genes.length;
        int nonZero = 0;
        for (long v = 0; v < (long) count * n; v++) {
            if (rows.getAtIndex(ValueLayout.JAVA_FLOAT, v) != 0f) {
                nonZero++;
            }
        }
        int[] starts = new int[count + 1];
        int[] columns = new int[nonZero];
        float[] data = new float[nonZero];
        int k = 0;
        for (int r = 0; r < count; r++) {
            for (int c = 0; c < n; c++) {
                float value = rows.getAtIndex(ValueLayout.JAVA_FLOAT, (long) r * n + c);
                if (value != 0f) {
                    columns[k] = c;
                    data[k++] = value;
                }
            }
            starts[r + 1] = k;
        }
        appendSparse(count, starts, columns, data);
    }

    private void ensureRows(int more) {
        long needed = cells + more + 1;
        if (needed > indptr.length) {
            indptr = Arrays.copyOf(indptr, Math.toIntExact(Math.max(needed, indptr.length * 2L)));
        }
    }

    private void writeIndices(ByteBuffer bytes) {
        try {
            while (bytes.hasRemaining()) {
                indices.write(bytes);
            }
        } catch (IOException e) {
            throw new UncheckedIOException("cannot write " + spill, e);
        }
    }

    /**
     * Sets the cell names ({@code obs} index); default {@code cell_0, cell_1, ...}.
     *
     * @param names one per cell, in order
     * @return this writer
     */
    public H5adWriter cellNames(String[] names) {
        cellNames = names.clone();
        return this;
    }

    /**
     * Adds an {@code obs} column.
     *
     * @param name the column
     * @param values one per cell: {@code float[]}, {@code double[]}, {@code int[]}, {@code long[]},
     *               {@code boolean[]} or {@code String[]} (stored as a categorical)
     * @return this writer
     */
    public H5adWriter obs(String name, Object values) {
        obs.put(name, values);
        return this;
    }

    /**
     * Adds a {@code var} column.
     *
     * @param name the column
     * @param values one per gene, as for {@link #obs}
     * @return this writer
     */
    public H5adWriter var(String name, Object values) {
        var.put(name, values);
        return this;
    }

    /** Finishes the file and gives it its final name, replacing any file there. */
    public void commit() {
        if (done) {
            throw new IllegalStateException(output + " already committed or closed");
        }
        try {
            long stored = indptr[Math.toIntExact(cells)];
            hdf.root().attribute("encoding-type", "anndata").attribute("encoding-version", "0.1.0");
            values.finish(stored);
            Hdf5Writer.Stream columns = hdf.root().childGroup("X").stream("indices", DType.INT32);
            ByteBuffer buffer = ByteBuffer.allocate(COPY_BUFFER);
            for (long at = 0; at < stored * Integer.BYTES; ) {
                buffer.clear();
                int read = indices.read(buffer, at);
                if (read < 0) {
                    throw new IOException("spill file " + spill + " ended early");
                }
                at += read;
                columns.append(buffer.flip());
            }
            columns.finish(stored);
            Hdf5Writer.Group matrix = hdf.root().childGroup("X");
            matrix.dataset("indptr", Arrays.copyOf(indptr, Math.toIntExact(cells + 1)));
            matrix.attribute("encoding-type", "csr_matrix").attribute("encoding-version", "0.1.0")
                    .attribute("shape", new long[]{cells, genes.length});
            String[] names = cellNames;
            if (names == null) {
                names = new String[Math.toIntExact(cells)];
                for (int i = 0; i < names.length; i++) {
                    names[i] = "cell_" + i;
                }
            }
            dataframe("obs", names, obs);
            dataframe("var", genes, var);
            for (String empty : new String[]{"layers", "obsm", "obsp", "uns", "varm", "varp"}) {
                hdf.root().group(empty).attribute("encoding-type", "dict").attribute("encoding-version", "0.1.0");
            }
            hdf.close();
            indices.close();
            AtomicMove.replace(temporary, output);
            done = true;
        } catch (IOException e) {
            throw new UncheckedIOException("cannot finish " + output, e);
        } finally {
            if (!done) {
                close();
            }
        }
    }

    private void dataframe(String name, String[] index, Map<String, Object> columns) {
        if (index.length != (name.equals("obs") ? cells : genes.length)) {
            throw new IllegalArgumentException(name + " index has " + index.length + " names for "
                    + (name.equals("obs") ? cells + " cells" : genes.length + " genes"));
        }
        Hdf5Writer.Group frame = hdf.root().group(name);
        frame.attribute("_index", "_index").attribute("column-order", columns.keySet().toArray(String[]::new))
                .attribute("encoding-type", "dataframe").attribute("encoding-version", "0.2.0");
        frame.dataset("_index", index).attribute("encoding-type", "string-array").attribute("encoding-version", "0.2.0");
        for (Map.Entry<String, Object> column : columns.entrySet()) {
            Object values = column.getValue();
            int length = java.lang.reflect.Array.getLength(values);
            if (length != index.length) {
                throw new IllegalArgumentException(name + " column '" + column.getKey() + "' has " + length
                        + " values for " + index.length + " rows");
            }
            if (values instanceof String[] labels) {
                categorical(frame.group(column.getKey()), labels);
            } else {
                frame.dataset(column.getKey(), values).attribute("encoding-type", "array").attribute("encoding-version", "0.2.0");
            }
        }
    }

    /** Strings as anndata stores them: the distinct values sorted as categories, and small integer codes (-1 for null). */
    private static void categorical(Hdf5Writer.Group group, String[] labels) {
        String[] categories = Arrays.stream(labels).filter(java.util.Objects::nonNull).distinct().sorted().toArray(String[]::new);
        Map<String, Integer> code = new LinkedHashMap<>();
        for (int i = 0; i < categories.length; i++) {
            code.put(categories[i], i);
        }
        group.attribute("encoding-type", "categorical").attribute("encoding-version", "0.2.0").attribute("ordered", false);
        group.dataset("categories", categories).attribute("encoding-type", "string-array").attribute("encoding-version", "0.2.0");
        Object codes;
        if (categories.length < Byte.MAX_VALUE) {
            byte[] small = new byte[labels.length];
            for (int i = 0; i < labels.length; i++) {
                small[i] = (byte) (labels[i] == null ? -1 : code.get(labels[i]));
            }
            codes = small;
        } else {
            int[] wide = new int[labels.length];
            for (int i = 0; i < labels.length; i++) {
                wide[i] = labels[i] == null ? -1 : code.get(labels[i]);
            }
            codes = wide;
        }
        group.dataset("codes", codes).attribute("encoding-type", "array").attribute("encoding-version", "0.2.0");
    }

    /** Abandons an uncommitted file (deletes it); does nothing after {@link #commit()}. */
    @Override
    public void close() {
        if (done) {
            return;
        }
        done = true;
        try {
            indices.close();
        } catch (IOException ignored) {
            // the spill file is deleted on close either way
        }
        try {
            hdf.abandon();
            Files.deleteIfExists(temporary);
        } catch (IOException | RuntimeException e) {
            temporary.toFile().deleteOnExit();
        }
    }
}
