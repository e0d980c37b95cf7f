package dev.memfit.io.hdf5;

import dev.memfit.DType;
import dev.memfit.io.anndata.FrameColumn;
import dev.memfit.io.storage.AtomicMove;
import dev.memfit.io.storage.OutputLock;
import dev.memfit.io.storage.TempFiles;

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
 * Writes an {@code .h5ad} in anndata 0.8's layout (CSR {@code X} with float32 values, or float64 ones
 * ({@link Layout#values}), int32 indices and int64
 * {@code indptr}; {@code obs} and {@code var} dataframes with numeric, boolean, string and categorical columns),
 * streaming the rows of {@code X} so the matrix never has to fit in memory.
 *
 * <p>How {@code X} is stored is a {@link Layout}. {@link Layout#anndata()} stores it as anndata (through h5py) does:
 * chunked {@code X/data}, {@code X/indices} and {@code X/indptr} of h5py's chunk length, resizable, optionally gzip;
 * values and indices then stream side by side, each a chunk at a time. {@link Layout#contiguous()} stores them
 * contiguous (fastest to read by mapping): the values go straight to the file and the column indices to a spill file
 * next to it, copied in at the end (a contiguous dataset needs its size before the next one starts). The file is
 * written under a temporary name and renamed by {@link #commit()}; a writer closed without {@code commit} deletes it.
 * The output is locked ({@link OutputLock}) from {@code create} until the writer is closed: a second writer of the
 * same file fails at once, naming the first one's pid.
 */
public final class H5adWriter implements AutoCloseable {

    private static final int COPY_BUFFER = 8 << 20;
    /** Stored values assumed for the chunk length when the layout gives no estimate (h5py's chunk: 16,384). */
    private static final long DEFAULT_EXPECTED_VALUES = 1L << 24;

    /**
     * How {@code X} is stored. Immutable; each setting returns a copy.
     *
     * <pre>{@code
     * H5adWriter.create(file, genes, H5adWriter.Layout.anndata().gzip().expectedValues(40_000_000L));
     * }</pre>
     */
    public static final class Layout {
        private final boolean chunked;
        private final int gzipLevel;
        private final boolean shuffle;
        private final long expectedValues;
        private final DType valueType;

        private Layout(boolean chunked, int gzipLevel, boolean shuffle, long expectedValues, DType valueType) {
            this.chunked = chunked;
            this.gzipLevel = gzipLevel;
            this.shuffle = shuffle;
            this.expectedValues = expectedValues;
            this.valueType = valueType;
        }

        /**
         * Contiguous, unfiltered datasets (memfit's own layout: the fastest to read, mapped).
         *
         * @return the layout
         */
        public static Layout contiguous() {
            return new Layout(false, -1, false, -1, DType.FLOAT32);
        }

        /**
         * anndata's layout as {@code write_h5ad()} leaves it: {@code X/data}, {@code X/indices} and {@code X/indptr}
         * chunked with h5py's chunk length for their size, {@code maxshape=(None,)}, uncompressed.
         *
         * @return the layout
         */
        public static Layout anndata() {
            return new Layout(true, -1, false, -1, DType.FLOAT32);
        }

        /**
         * Compresses the chunks of X with deflate at h5py's default level 4 ({@code compression='gzip'}).
         *
         * @return a copy with gzip
         * @throws IllegalStateException on the contiguous layout
         */
        public Layout gzip() {
            return gzip(4);
        }

        /**
         * Compresses the chunks of X with deflate ({@code compression='gzip', compression_opts=level}).
         *
         * @param level 0 to 9
         * @return a copy with gzip
         * @throws IllegalStateException on the contiguous layout
         */
        public Layout gzip(int level) {
            requireChunked("gzip");
            if (level < 0 || level > 9) {
                throw new IllegalArgumentException("gzip level from 0 to 9, got " + level);
            }
            return new Layout(true, level, shuffle, expectedValues, valueType);
        }

        /**
         * Adds HDF5's shuffle filter before compression ({@code shuffle=True}).
         *
         * @return a copy with shuffle
         * @throws IllegalStateException on the contiguous layout
         */
        public Layout shuffle() {
            requireChunked("shuffle");
            return new Layout(true, gzipLevel, true, expectedValues, valueType);
        }

        /**
         * Sets how many values X will store, from which the chunk length of {@code X/data} and {@code X/indices}
         * follows (h5py picks it from the final size, which a stream only knows at the end). Exact, the chunks are
         * h5py's; an estimate gives chunks close to them; without one, 2^24 values are assumed (chunks of 16,384).
         *
         * @param count the expected number of stored (non-zero) values, at least 0
         * @return a copy with the estimate
         */
        public Layout expectedValues(long count) {
            requireChunked("expectedValues");
            if (count < 0) {
                throw new IllegalArgumentException("expected values must be at least 0, got " + count);
            }
            return new Layout(true, gzipLevel, shuffle, count, valueType);
        }

        /**
         * Sets the type of X's values (default float32): {@code FLOAT64} keeps float64 values exactly (anndata reads
         * X back as float64).
         *
         * @param type {@code FLOAT32} or {@code FLOAT64}
         * @return a copy with the type
         */
        public Layout values(DType type) {
            if (type != DType.FLOAT32 && type != DType.FLOAT64) {
                throw new IllegalArgumentException("X's values are FLOAT32 or FLOAT64, not " + type);
            }
            return new Layout(chunked, gzipLevel, shuffle, expectedValues, type);
        }

        /**
         * The type of X's values.
         *
         * @return {@code FLOAT32} or {@code FLOAT64}
         */
        public DType valueType() {
            return valueType;
        }

        private void requireChunked(String setting) {
            if (!chunked) {
                throw new IllegalStateException(setting + " needs chunked datasets: use Layout.anndata()");
            }
        }

        /**
         * Whether X is chunked (anndata's layout).
         *
         * @return true when chunked
         */
        public boolean chunked() {
            return chunked;
        }

        /**
         * The gzip level.
         *
         * @return 0 to 9, or -1 when uncompressed
         */
        public int gzipLevel() {
            return gzipLevel;
        }

        /**
         * The expected number of stored values, if set.
         *
         * @return the estimate, or -1 when not set
         */
        public long expectedValues() {
            return expectedValues;
        }

        /** The chunking of a dataset of {@code count} values of {@code type}, with this layout's filters. */
        Hdf5Writer.Chunking chunking(long count, DType type) {
            Hdf5Writer.Chunking chunking = Hdf5Writer.Chunking.h5py(count, type).unlimited();
            if (shuffle) {
                chunking = chunking.shuffle();
            }
            return gzipLevel >= 0 ? chunking.deflate(gzipLevel) : chunking;
        }

        @Override
        public String toString() {
            String values = valueType == DType.FLOAT64 ? ", float64 values" : "";
            return !chunked ? "contiguous" + values : "anndata (chunked" + (shuffle ? ", shuffle" : "")
                    + (gzipLevel >= 0 ? ", gzip " + gzipLevel : "") + values + ")";
        }
    }

    private final Path output;
    private final Path temporary;
    private final Path spill;
    private final OutputLock lock;
    private final String[] genes;
    private final Layout layout;
    private final Hdf5Writer hdf;
    private final Hdf5Writer.Stream values;
    /** The indices' chunked stream (anndata layout), else null. */
    private final Hdf5Writer.Stream chunkedIndices;
    /** The indices' spill file (contiguous layout), else null. */
    private final FileChannel indices;
    private final Map<String, FrameColumn> obs = new LinkedHashMap<>();
    private final Map<String, FrameColumn> var = new LinkedHashMap<>();
    private String obsIndex = "_index";
    private String varIndex = "_index";
    private String[] cellNames;
    private long[] indptr = new long[1024];
    private long cells;
    private boolean done;

    private H5adWriter(Path output, String[] genes, Layout layout, OutputLock lock) throws IOException {
        this.output = output;
        this.lock = lock;
        this.genes = genes.clone();
        this.layout = layout;
        Path folder = output.toAbsolutePath().getParent();
        Files.createDirectories(folder);
        this.temporary = TempFiles.beside(output);
        this.hdf = Hdf5Writer.create(temporary);
        Hdf5Writer.Group matrix = hdf.root().group("X");
        if (layout.chunked) {
            long expected = layout.expectedValues >= 0 ? layout.expectedValues : DEFAULT_EXPECTED_VALUES;
            this.spill = null;
            this.indices = null;
            this.values = matrix.stream("data", layout.valueType, layout.chunking(expected, layout.valueType));
            this.chunkedIndices = matrix.stream("indices", DType.INT32, layout.chunking(expected, DType.INT32));
        } else {
            this.spill = TempFiles.beside(output, "indices");
            this.indices = FileChannel.open(spill, StandardOpenOption.CREATE, StandardOpenOption.TRUNCATE_EXISTING,
                    StandardOpenOption.READ, StandardOpenOption.WRITE, StandardOpenOption.DELETE_ON_CLOSE);
            this.values = matrix.stream("data", layout.valueType);
            this.chunkedIndices = null;
        }
    }

    /**
     * Starts a file with contiguous datasets ({@link Layout#contiguous()}).
     *
     * @param output the {@code .h5ad} to write
     * @param genes the gene names ({@code var} index), which fix n_vars
     * @return the writer, to be committed and closed
     */
    public static H5adWriter create(Path output, String[] genes) {
        return create(output, genes, Layout.contiguous());
    }

    /**
     * Starts a file.
     *
     * @param output the {@code .h5ad} to write
     * @param genes the gene names ({@code var} index), which fix n_vars
     * @param layout how X is stored, such as {@link Layout#anndata()}
     * @return the writer, to be committed and closed
     * @throws dev.memfit.MemfitException when another writer holds the output's lock
     */
    public static H5adWriter create(Path output, String[] genes, Layout layout) {
        if (layout == null) {
            throw new IllegalArgumentException("layout is null: pass H5adWriter.Layout.anndata() or contiguous()");
        }
        OutputLock lock = OutputLock.acquire(output);
        try {
            return new H5adWriter(output, genes, layout, lock);
        } catch (IOException e) {
            lock.close();
            throw new UncheckedIOException("cannot start " + output, e);
        } catch (RuntimeException e) {
            lock.close();
            throw e;
        }
    }

    /**
     * How X is stored.
     *
     * @return the layout
     */
    public Layout layout() {
        return layout;
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
     * Appends cells in CSR form (into a float64 X, each value widened exactly).
     *
     * @param count the number of cells
     * @param rowStarts {@code count + 1} offsets into {@code columns}/{@code data}, starting at any value
     * @param columns gene indices, in [0, n_vars)
     * @param data the values
     */
    public void appendSparse(int count, int[] rowStarts, int[] columns, float[] data) {
        int first = rowStarts[0];
        int stored = rowStarts[count] - first;
        boolean wide = layout.valueType == DType.FLOAT64;
        ByteBuffer valueBytes = ByteBuffer.allocate(stored * layout.valueType.byteSize()).order(ByteOrder.LITTLE_ENDIAN);
        ByteBuffer columnBytes = ByteBuffer.allocate(stored * Integer.BYTES).order(ByteOrder.LITTLE_ENDIAN);
        for (int at = first; at < first + stored; at++) {
            if (columns[at] < 0 || columns[at] >= genes.length) {
                throw new IllegalArgumentException("gene index " + columns[at] + " outside [0, " + genes.length + ")");
            }
            if (wide) {
                valueBytes.putDouble(data[at]);
            } else {
                valueBytes.putFloat(data[at]);
            }
            columnBytes.putInt(columns[at]);
        }
        append(count, rowStarts, valueBytes, columnBytes);
    }

    /**
     * Appends cells in CSR form with float64 values, into a writer whose X holds float64
     * ({@link Layout#values}{@code (DType.FLOAT64)}).
     *
     * @param count the number of cells
     * @param rowStarts {@code count + 1} offsets into {@code columns}/{@code data}, starting at any value
     * @param columns gene indices, in [0, n_vars)
     * @param data the values
     * @throws IllegalStateException when X holds float32, which would round them
     */
    public void appendSparse(int count, int[] rowStarts, int[] columns, double[] data) {
        if (layout.valueType != DType.FLOAT64) {
            throw new IllegalStateException("float64 values appended to a float32 X would be rounded; create the writer "
                    + "with a layout of float64 values: H5adWriter.Layout.contiguous().values(DType.FLOAT64)");
        }
        int first = rowStarts[0];
        int stored = rowStarts[count] - first;
        ByteBuffer valueBytes = ByteBuffer.allocate(stored * Double.BYTES).order(ByteOrder.LITTLE_ENDIAN);
        ByteBuffer columnBytes = ByteBuffer.allocate(stored * Integer.BYTES).order(ByteOrder.LITTLE_ENDIAN);
        for (int at = first; at < first + stored; at++) {
            if (columns[at] < 0 || columns[at] >= genes.length) {
                throw new IllegalArgumentException("gene index " + columns[at] + " outside [0, " + genes.length + ")");
            }
            valueBytes.putDouble(data[at]);
            columnBytes.putInt(columns[at]);
        }
        append(count, rowStarts, valueBytes, columnBytes);
    }

    private void append(int count, int[] rowStarts, ByteBuffer valueBytes, ByteBuffer columnBytes) {
        ensureRows(count);
        for (int r = 0; r < count; r++) {
            indptr[Math.toIntExact(cells + r + 1)] = indptr[Math.toIntExact(cells + r)] + rowStarts[r + 1] - rowStarts[r];
        }
        cells += count;
        values.append(valueBytes.flip());
        if (chunkedIndices != null) {
            chunkedIndices.append(columnBytes.flip());
        } else {
            writeIndices(columnBytes.flip());
        }
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
     * Names the {@code obs} index (pandas' {@code obs.index.name}; default none, stored as {@code _index}).
     *
     * @param name the name, such as {@code "barcode"}, or {@code "_index"} for none
     * @return this writer
     */
    public H5adWriter obsIndexName(String name) {
        obsIndex = checkIndexName(name);
        return this;
    }

    /**
     * Names the {@code var} index (pandas' {@code var.index.name}; default none, stored as {@code _index}).
     *
     * @param name the name, such as {@code "gene_ids"}, or {@code "_index"} for none
     * @return this writer
     */
    public H5adWriter varIndexName(String name) {
        varIndex = checkIndexName(name);
        return this;
    }

    private static String checkIndexName(String name) {
        if (name == null || name.isEmpty() || name.contains("/")) {
            throw new IllegalArgumentException("an index name is a non-empty HDF5 name without '/', got '" + name + "'");
        }
        return name;
    }

    /**
     * Adds an {@code obs} column with its type, written in anndata 0.8's encoding for it: numbers and bools as an
     * {@code array} of the same type, strings as a {@code string-array}, a categorical with its codes' type, its
     * categories in their order and its {@code ordered} flag, a nullable column as {@code nullable-integer} or
     * {@code nullable-boolean}.
     *
     * @param name the column, not given before
     * @param column one value per cell
     * @return this writer
     * @throws IllegalArgumentException when the column was given already
     */
    public H5adWriter obs(String name, FrameColumn column) {
        return put(obs, "obs", name, column);
    }

    /**
     * Adds a {@code var} column with its type, as {@link #obs(String, FrameColumn)} does.
     *
     * @param name the column, not given before
     * @param column one value per gene
     * @return this writer
     * @throws IllegalArgumentException when the column was given already
     */
    public H5adWriter var(String name, FrameColumn column) {
        return put(var, "var", name, column);
    }

    /**
     * Adds an {@code obs} column from a Java array.
     *
     * @param name the column, not given before
     * @param values one per cell: {@code float[]}, {@code double[]}, {@code int[]}, {@code long[]},
     *               {@code boolean[]}, {@code String[]} (stored as a categorical of the distinct strings, sorted;
     *               {@code null} as missing) or a {@link FrameColumn}
     * @return this writer
     * @throws IllegalArgumentException when the column was given already
     */
    public H5adWriter obs(String name, Object values) {
        return put(obs, "obs", name, column(values));
    }

    /**
     * Adds a {@code var} column from a Java array.
     *
     * @param name the column, not given before
     * @param values one per gene, as for {@link #obs(String, Object)}
     * @return this writer
     * @throws IllegalArgumentException when the column was given already
     */
    public H5adWriter var(String name, Object values) {
        return put(var, "var", name, column(values));
    }

    private H5adWriter put(Map<String, FrameColumn> frame, String frameName, String name, FrameColumn column) {
        if (column == null) {
            throw new IllegalArgumentException(frameName + " column '" + name + "' is null");
        }
        if (frame.putIfAbsent(name, column) != null) {
            // a second column of one name would replace the first without a word
            throw new IllegalArgumentException(frameName + " already has a column '" + name + "'");
        }
        return this;
    }

    /** A Java array as the column memfit has always written for it. */
    private static FrameColumn column(Object values) {
        return switch (values) {
            case FrameColumn column -> column;
            case String[] labels -> FrameColumn.Categorical.ofLabels(labels);
            case boolean[] flags -> new FrameColumn.Bools(flags);
            case float[] numbers -> FrameColumn.Numbers.of(numbers);
            case double[] numbers -> FrameColumn.Numbers.of(numbers);
            case int[] numbers -> FrameColumn.Numbers.of(numbers);
            case long[] numbers -> FrameColumn.Numbers.of(numbers);
            case null, default -> throw new IllegalArgumentException("a column is a float[], double[], int[], long[], "
                    + "boolean[], String[] or FrameColumn, not " + (values == null ? "null" : values.getClass().getSimpleName()));
        };
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
            Hdf5Writer.Group matrix = hdf.root().childGroup("X");
            long[] rowPointers = Arrays.copyOf(indptr, Math.toIntExact(cells + 1));
            if (chunkedIndices != null) {
                chunkedIndices.finish(stored);
                matrix.dataset("indptr", rowPointers, layout.chunking(rowPointers.length, DType.INT64));
            } else {
                copySpilledIndices(stored);
                matrix.dataset("indptr", rowPointers);
            }
            matrix.attribute("encoding-type", "csr_matrix").attribute("encoding-version", "0.1.0")
                    .attribute("shape", new long[]{cells, genes.length});
            String[] names = cellNames;
            if (names == null) {
                names = new String[Math.toIntExact(cells)];
                for (int i = 0; i < names.length; i++) {
                    names[i] = "cell_" + i;
                }
            }
            dataframe("obs", names, obsIndex, obs);
            dataframe("var", genes, varIndex, var);
            for (String empty : new String[]{"layers", "obsm", "obsp", "uns", "varm", "varp"}) {
                hdf.root().group(empty).attribute("encoding-type", "dict").attribute("encoding-version", "0.1.0");
            }
            hdf.close();
            if (indices != null) {
                indices.close();
            }
            AtomicMove.replace(temporary, output);
            done = true;
            lock.close();
        } catch (IOException e) {
            throw new UncheckedIOException("cannot finish " + output, e);
        } finally {
            if (!done) {
                close();
            }
        }
    }

    private void copySpilledIndices(long stored) throws IOException {
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
    }

    private void dataframe(String name, String[] index, String indexName, Map<String, FrameColumn> columns) {
        if (index.length != (name.equals("obs") ? cells : genes.length)) {
            throw new IllegalArgumentException(name + " index has " + index.length + " names for "
                    + (name.equals("obs") ? cells + " cells" : genes.length + " genes"));
        }
        if (columns.containsKey(indexName)) {
            throw new IllegalArgumentException(name + " index name '" + indexName + "' is also a column's");
        }
        Hdf5Writer.Group frame = hdf.root().group(name);
        frame.attribute("_index", indexName).attribute("column-order", columns.keySet().toArray(String[]::new))
                .attribute("encoding-type", "dataframe").attribute("encoding-version", "0.2.0");
        strings(frame, indexName, index, name + " index");
        for (Map.Entry<String, FrameColumn> column : columns.entrySet()) {
            FrameColumn values = column.getValue();
            if (values.size() != index.length) {
                throw new IllegalArgumentException(name + " column '" + column.getKey() + "' has " + values.size()
                        + " values for " + index.length + " rows");
            }
            write(frame, column.getKey(), values, name + " column '" + column.getKey() + "'");
        }
    }

    /** One column in anndata 0.8's encoding for its kind (anndata's {@code write_elem}). */
    private static void write(Hdf5Writer.Group frame, String key, FrameColumn column, String what) {
        switch (column) {
            case FrameColumn.Numbers numbers -> array(frame.dataset(key, numbers.dtype(), numbers.values()));
            case FrameColumn.Bools flags -> array(frame.dataset(key, flags.values()));
            case FrameColumn.Strings texts -> strings(frame, key, texts.values(), what);
            case FrameColumn.Categorical categorical -> {
                Hdf5Writer.Group group = frame.group(key);
                group.attribute("encoding-type", "categorical").attribute("encoding-version", "0.2.0")
                        .attribute("ordered", categorical.ordered());
                write(group, "codes", categorical.codes(), what + " (codes)");
                write(group, "categories", categorical.categories(), what + " (categories)");
            }
            case FrameColumn.Nullable nullable -> {
                Hdf5Writer.Group group = frame.group(key);
                group.attribute("encoding-type", nullable.isBoolean() ? "nullable-boolean" : "nullable-integer")
                        .attribute("encoding-version", "0.1.0");
                // a mask only where the file had one: anndata reads a column without one as all present
                if (nullable.mask() != null) {
                    write(group, "mask", new FrameColumn.Bools(nullable.mask()), what + " (mask)");
                }
                write(group, "values", nullable.values(), what + " (values)");
            }
        }
    }

    private static void array(Hdf5Writer.Dataset dataset) {
        dataset.attribute("encoding-type", "array").attribute("encoding-version", "0.2.0");
    }

    /**
     * Strings as a {@code string-array}, stored fixed-length and null-padded (UTF-8): a string holding U+0000 would
     * come back cut there, so it is refused.
     */
    private static void strings(Hdf5Writer.Group frame, String key, String[] values, String what) {
        for (int i = 0; i < values.length; i++) {
            if (values[i].indexOf('\0') >= 0) {
                throw new IllegalArgumentException(what + ": string " + i + " holds a NUL character, which a fixed-length "
                        + "HDF5 string cannot keep");
            }
        }
        frame.dataset(key, values).attribute("encoding-type", "string-array").attribute("encoding-version", "0.2.0");
    }

    /** Abandons an uncommitted file (deletes it); does nothing after {@link #commit()}. */
    @Override
    public void close() {
        if (done) {
            return;
        }
        done = true;
        try {
            if (indices != null) {
                indices.close();
            }
        } catch (IOException ignored) {
            // the spill file is deleted on close either way
        }
        try {
            hdf.abandon();
            Files.deleteIfExists(temporary);
        } catch (IOException | RuntimeException e) {
            temporary.toFile().deleteOnExit();
        } finally {
            lock.close();
        }
    }
}
