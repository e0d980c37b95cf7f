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
import dev.memfit.ProgressListener;
import dev.memfit.io.anndata.AnnData;
import dev.memfit.io.anndata.ReaderSettings;
import dev.memfit.io.anndata.AnnDataColumns;
import dev.memfit.io.anndata.CscTranspose;
import dev.memfit.io.anndata.FrameColumn;
import dev.memfit.io.anndata.SharedTranspose;

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
 * An AnnData {@code .h5ad} file read with jhdf, out of core: {@code X} dense, CSR or CSC (int32 or int64
 * {@code indptr}), read by row ranges, never whole; {@code obs} and {@code var} dataframes, each column with its
 * type ({@link #frameColumns}: numbers of every numpy width, bools, strings, categoricals, pandas' nullable integers
 * and bools) in the encodings anndata 0.7 and 0.8 write, or as labels ({@link #columns}).
 *
 * <p>The CSR row pointer is read and checked at open (monotone, starting at 0, ending at the number of stored
 * values): 8 bytes per cell in memory. Column indices are checked against {@code n_vars} as rows are read.
 *
 * <p>Duplicate entries (a column stored more than once in a CSR row, or a row more than once in a CSC column: scipy
 * keeps them when it is handed such arrays, and {@code has_canonical_format} is then false) are <b>summed</b>, as
 * scipy's {@code toarray()}, {@code sum_duplicates()} and every arithmetic on the matrix do: {@link #readRows} adds
 * each stored value into its cell, so the dense rows are scipy's {@code X[rows].toarray()}; {@link #readCsr} hands
 * the entries over as stored (duplicates included, in the file's order) and its callers merge them (sharding writes
 * each row with sorted, unique gene indices); {@link #sum}, {@link #columnSums} and {@link #totals} add every stored
 * value, duplicates included, as numpy does. Unsorted indices within a row are accepted as well.
 *
 * <p>The {@code obs} and {@code var} dataframes are checked at open: their index and every column must hold
 * {@code n_obs} (for {@code obs}) or {@code n_vars} (for {@code var}) entries, as anndata requires, or the file is
 * refused with an {@link InvalidFileException} naming the dataset; nothing downstream invents or drops names.
 *
 * <p>Chunked datasets (sparse X's arrays, and dense X written with compression or explicit chunks) are read from
 * decoded chunks kept in one cache per open file, bounded by {@link Builder#optChunkCacheBytes}
 * (default 64 MiB). For a chunked dense X the bound is raised at open to at least two bands of chunks (one chunk
 * row times every chunk column, decoded), so that consecutive row ranges sharing a band decode it once;
 * {@link #forEachChunk} reads whole bands, so a pass decodes every chunk exactly once whatever the bound.
 * {@link #chunkCacheStatistics()} says how the cache did.
 *
 * <p>A CSC X (anndata's {@code csc_matrix}, stored gene by gene) has its column pointer read and checked at open
 * (8 bytes per gene), and is transposed to CSR out of core when rows are first read ({@link #prepareRows}): see
 * {@link Builder} for the scratch folder, the memory budget and the progress bar. Everything else (shape,
 * {@code obs}, {@code var}, {@link #storedValues}, {@link #sum}) is read without transposing.
 *
 * <p>Nothing is allocated by a size the file only claims: every chunk of a one-dimensional array (X's {@code data},
 * {@code indices} and {@code indptr}, the {@code obs}/{@code var} columns) must be stored, as anndata writes them, and
 * no chunk may claim to decode to more than deflate's largest ratio (1032:1) allows for its stored bytes; a column,
 * read whole by jhdf, is checked against its storage first; a compact dataset (kept in its object header, at most
 * 64 KiB) is read whole. CSR and CSC {@code indices} must be as long as {@code data}.
 *
 * <p>This is the {@code .h5ad} reader of {@link AnnData}; {@code dev.memfit.io.AnnDataFiles} opens it or the zarr
 * one from what a path is.
 */
public final class H5ad implements AnnData {

    /** The platform's float32 and int32, at any alignment: what {@link #readCsr} writes. */
    private static final ValueLayout.OfFloat FLOAT_NATIVE = ValueLayout.JAVA_FLOAT_UNALIGNED;
    private static final ValueLayout.OfInt INT_NATIVE = ValueLayout.JAVA_INT_UNALIGNED;

    private final Path file;
    private final HdfFile hdf;
    private final long observations;
    private final long variables;
    private final Vector dense;
    private final Vector data;
    private final Vector indices;
    private final long[] indptr;
    private final FileMapping mapping;
    /** Set for a CSC X only. */
    private final Csc csc;
    /** The matrix read as X: {@code X}, {@code raw/X} or {@code layers/NAME}. */
    private String layer = "X";
    /** The dataframe of its columns: {@code var}, or {@code raw/var} for {@code raw/X}. */
    private String varFrame = "var";

    /** A CSC X: its column pointers, the shared transpose and how to make it. */
    private record Csc(long[] columnPointers, SharedTranspose shared, Path scratch, long budget, ProgressListener listener) {
    }

    private H5ad(Path file, HdfFile hdf, long observations, long variables, FileMapping mapping, Vector dense,
                 Vector data, Vector indices, long[] indptr, Csc csc) {
        this.file = file;
        this.hdf = hdf;
        this.observations = observations;
        this.variables = variables;
        this.mapping = mapping;
        this.dense = dense;
        this.data = data;
        this.indices = indices;
        this.indptr = indptr;
        this.csc = csc;
    }

    /**
     * Opens a file and checks its layout. A CSC X is transposed when rows are first read, under the default scratch
     * folder, with the default budget, drawing a console progress bar ({@link Builder} changes those).
     *
     * @param file the {@code .h5ad}
     * @return the reader, to be closed
     */
    public static H5ad open(Path file) {
        return builder().setFile(file).open();
    }

    /** The bound of a file's cache of decoded chunks unless {@link Builder#optChunkCacheBytes} sets another: 64 MiB. */
    public static final long DEFAULT_CHUNK_CACHE_BYTES = ReaderSettings.DEFAULT_CHUNK_CACHE_BYTES;

    /**
     * A reader with settings for a CSC X: {@code H5ad.builder().setFile(f).optProgress(p).optScratch(dir).open()}.
     *
     * @return the builder
     */
    public static Builder builder() {
        return new Builder();
    }

    /**
     * Settings of a reader. Only a CSC X uses them: it is transposed to CSR in the scratch folder, with at most the
     * memory budget plus 8 bytes per cell for row pointers, reporting "Transposing X (CSC to CSR)" in stored values.
     */
    public static final class Builder extends ReaderSettings<Builder> {
        private Path file;

        private Builder() {
        }

        @Override
        protected Builder self() {
            return this;
        }

        /**
         * Sets the file (required).
         *
         * @param file the {@code .h5ad}
         * @return this builder
         */
        public Builder setFile(Path file) {
            this.file = file;
            return this;
        }

        /**
         * Opens the file and checks its layout.
         *
         * @return the reader, to be closed
         * @throws MemfitException naming the setting to change
         */
        public H5ad open() {
            if (file == null) {
                throw new MemfitException("setFile(file) is required: the .h5ad to read");
            }
            long bytes = checkSettings();
            H5ad h5ad = H5ad.open(file, AnnData.matrixPath(layer()), scratchFolder(), bytes, chunkCacheBytes(), progress());
            try {
                h5ad.checkFrame("obs", h5ad.observations, "n_obs");
                h5ad.checkFrame(h5ad.varFrame, h5ad.variables, "n_vars");
                return h5ad;
            } catch (RuntimeException e) {
                h5ad.close();
                throw e;
            }
        }
    }

    /**
     * Refuses a dataframe whose index or a listed column does not hold one entry per row (obs) or column (var) of X,
     * from the datasets' shapes only (nothing is read): a short {@code obs} index would otherwise leave cells
     * without names, a long one name cells that do not exist.
     */
    private void checkFrame(String frame, long expected, String count) {
        // everything jhdf throws on a damaged frame (not only its HdfExceptions: a string attribute's global heap
        // index or length can be garbage too) becomes an InvalidFileException naming the file and the frame
        Hdf5.read(file, "/" + frame, () -> {
            checkFrameShapes(frame, expected, count);
            return null;
        });
    }

    private void checkFrameShapes(String frame, long expected, String count) {
        try {
            if (!(child(hdf, frame) instanceof Group group)) {
                return;   // index() and columns() refuse a missing frame when asked for it
            }
            String indexName = stringAttribute(group, "_index");
            List<String> names = new ArrayList<>();
            names.add(indexName == null ? "_index" : indexName);
            Attribute columnOrder = group.getAttribute("column-order");
            if (columnOrder != null && !columnOrder.isEmpty() && columnOrder.getData() instanceof String[] listed) {
                names.addAll(Arrays.asList(listed));
            }
            for (String name : names) {
                Node node = group.getChildren().get(name);
                Dataset values = node instanceof Dataset dataset ? dataset
                        : node instanceof Group encoded && encoded.getChildren().get("codes") instanceof Dataset codes ? codes
                        : node instanceof Group encoded && encoded.getChildren().get("values") instanceof Dataset nullable ? nullable
                        : null;
                if (values == null) {
                    continue;   // read (and refused) only if asked for
                }
                long[] dimensions = values.getDimensionsAsLong();
                long length = dimensions.length == 0 ? -1 : dimensions[0];
                if (length != expected) {
                    throw new InvalidFileException(file, -1, values.getPath() + " of " + count + " = " + expected
                            + " entries (one per " + (frame.equals("obs") ? "cell, row" : "gene, column") + " of X)",
                            length < 0 ? "a scalar" : length + " entries; the " + frame + " dataframe does not match X");
                }
            }
        } catch (io.jhdf.exceptions.HdfException e) {
            throw new InvalidFileException(file, -1, "a readable /" + frame + " dataframe", e.getMessage(), e);
        }
    }

    /**
     * The matrices of a file that can be read as X ({@link Builder#optLayer}): {@code X}, {@code raw/X} and each
     * {@code layers/NAME}, with their shapes and encodings, from the metadata only.
     *
     * @return matrix path to a description such as {@code 2700 x 32738 csr_matrix float32}
     */
    public Map<String, String> matrices() {
        Map<String, String> found = new LinkedHashMap<>();
        Hdf5.read(file, "/", () -> {
            describeMatrix(found, "X", hdf.getChildren().get("X"));
            if (hdf.getChildren().get("raw") instanceof Group raw) {
                describeMatrix(found, "raw/X", raw.getChildren().get("X"));
            }
            if (hdf.getChildren().get("layers") instanceof Group layers) {
                for (Map.Entry<String, Node> entry : layers.getChildren().entrySet()) {
                    describeMatrix(found, "layers/" + entry.getKey(), entry.getValue());
                }
            }
            return null;
        });
        return found;
    }

    private void describeMatrix(Map<String, String> found, String name, Node node) {
        if (node instanceof Dataset dense && dense.getDimensions().length == 2) {
            int[] dims = dense.getDimensions();
            found.put(name, dims[0] + " x " + dims[1] + " dense " + Hdf5.typeName(dense.getDataType()));
        } else if (node instanceof Group group) {
            String encoding = stringAttribute(group, "encoding-type");
            Attribute shapeAttribute = group.getAttribute("shape");
            if (shapeAttribute != null && !shapeAttribute.isEmpty() && group.getChildren().get("data") instanceof Dataset values) {
                long[] shape = longs(shapeAttribute.getData());
                found.put(name, (shape.length == 2 ? shape[0] + " x " + shape[1] + " " : "") + encoding + " "
                        + Hdf5.typeName(values.getDataType()));
            }
        }
    }

    /**
     * The type X's values are stored in: float32, float64, or an integer type (counts stored as integers).
     *
     * @return the stored type of {@code X/data}, or of a dense X
     */
    public DType storedType() {
        return dense != null ? dense.type : data.type;
    }

    /**
     * The float type that holds X's values as stored, which memfit computes in and writes: {@code FLOAT64} for a
     * float64 X, {@code FLOAT32} for float32, float16 and integer counts (scanpy computes on integer counts in
     * float32 too). Read rows in it with {@link #readRows(long, int, MemorySegment, DType)} and
     * {@link #readCsr(long, int, MemorySegment, MemorySegment, long[], DType)}.
     *
     * @return {@code FLOAT32} or {@code FLOAT64}
     */
    public DType floatType() {
        return storedType() == DType.FLOAT64 ? DType.FLOAT64 : DType.FLOAT32;
    }

    /**
     * The matrix read as X: {@code X}, {@code raw/X} or {@code layers/NAME}.
     *
     * @return its path in the file
     */
    public String layer() {
        return layer;
    }

    @Override
    public Path location() {
        return file;
    }

    @Override
    public String format() {
        return "AnnData .h5ad";
    }

    private static H5ad open(Path file, String matrix, Path scratch, long budget, long cacheBytes, ProgressListener listener) {
        H5ad h5ad = openMatrix(file, matrix, scratch, budget, cacheBytes, listener);
        h5ad.layer = matrix;
        h5ad.varFrame = matrix.equals("raw/X") ? "raw/var" : "var";
        return h5ad;
    }

    private static H5ad openMatrix(Path file, String matrix, Path scratch, long budget, long cacheBytes,
                                   ProgressListener listener) {
        if (!java.nio.file.Files.isRegularFile(file)) {
            throw new InvalidFileException(file, -1, "an .h5ad file", java.nio.file.Files.isDirectory(file) ? "a directory"
                    : java.nio.file.Files.exists(file) ? "not a regular file" : "no such file");
        }
        HdfFile hdf;
        try {
            hdf = Hdf5.open(file);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read " + file, e);
        } catch (RuntimeException e) {
            throw new InvalidFileException(file, -1, "an HDF5 file (.h5ad)", "a file jhdf cannot open: " + Hdf5.reason(e), e);
        }
        FileMapping mapping = null;
        // the node being read, for the message when jhdf fails on a damaged file
        String node = "/";
        try {
            // decoded chunks of X/data, X/indices and X/indptr, shared: one bound for the whole file
            ChunkedVector.Cache cache = new ChunkedVector.Cache(cacheBytes);
            String encoding = stringAttribute(hdf, "encoding-type");
            Node x = hdf.getChildren().get("X");
            node = "/X";
            if (!"anndata".equals(encoding) && x == null) {
                throw new InvalidFileException(file, -1, "an AnnData file (root attribute encoding-type=anndata, or an X)",
                        "encoding-type " + encoding + " and no X");
            }
            if (!matrix.equals("X")) {
                node = "/" + matrix;
                x = child(hdf, matrix);
                if (x == null) {
                    throw new MemfitException(file + ": no matrix " + matrix + " to read as X; the file has "
                            + String.join(", ", listMatrices(hdf)));
                }
            }
            if (x instanceof Dataset denseMatrix) {
                int[] dims = denseMatrix.getDimensions();
                if (dims.length != 2) {
                    throw new InvalidFileException(file, -1, "a two-dimensional " + matrix, matrix + " of " + dims.length + " dimensions");
                }
                mapping = FileMapping.of(file);
                Vector values = new Vector(file, hdf, mapping, denseMatrix, cache);
                if (values.chunked != null) {
                    // two bands: the one a read ends in, which the next read starts in, and the one being decoded
                    cache.atLeast(2 * values.chunked.bandBytes());
                }
                return new H5ad(file, hdf, dims[0], dims[1], mapping, values, null, null, null, null);
            }
            if (!(x instanceof Group group)) {
                throw new InvalidFileException(file, -1, "an " + matrix + " dataset or CSR group", x == null ? "no " + matrix : x.getType().toString());
            }
            String format = stringAttribute(group, "encoding-type");
            if (format == null) {
                format = stringAttribute(group, "h5sparse_format") == null ? null : stringAttribute(group, "h5sparse_format") + "_matrix";
            }
            if ("csc_matrix".equals(format)) {
                mapping = FileMapping.of(file);
                return openCsc(file, hdf, group, mapping, cache, scratch, budget, listener);
            }
            if (!"csr_matrix".equals(format)) {
                throw new InvalidFileException(file, -1, matrix + " as csr_matrix, csc_matrix or a dense dataset", matrix + " encoded as " + format);
            }
            long[] shape = shape(file, group);
            mapping = FileMapping.of(file);
            node = "/" + matrix + "/data";
            Vector values = new Vector(file, hdf, mapping, dataset(file, group, "data"), cache);
            node = "/" + matrix + "/indices";
            Vector columns = new Vector(file, hdf, mapping, dataset(file, group, "indices"), cache);
            node = "/" + matrix + "/indptr";
            Vector pointerVector = new Vector(file, hdf, mapping, dataset(file, group, "indptr"), cache);
            values.checkArray();
            columns.checkArray();
            pointerVector.checkArray();
            if (columns.length() != values.length()) {
                throw new InvalidFileException(file, columns.offsetOf(0), matrix + "/indices (column indices) as long as "
                        + matrix + "/data: " + values.length() + " entries", columns.length() + " entries");
            }
            long[] pointers = new long[Math.toIntExact(pointerVector.length())];
            pointerVector.longs(0, pointers.length, pointers);
            if (pointers.length != shape[0] + 1) {
                throw new InvalidFileException(file, -1, matrix + "/indptr of n_obs + 1 = " + (shape[0] + 1) + " entries", pointers.length + " entries");
            }
            long nnz = values.length();
            if (pointers[0] != 0 || pointers[pointers.length - 1] != nnz) {
                throw new InvalidFileException(file, -1, matrix + "/indptr from 0 to the " + nnz + " stored values",
                        "from " + pointers[0] + " to " + pointers[pointers.length - 1]);
            }
            for (int i = 1; i < pointers.length; i++) {
                if (pointers[i] < pointers[i - 1]) {
                    throw new InvalidFileException(file, -1, matrix + "/indptr not decreasing",
                            "indptr[" + i + "] = " + pointers[i] + " < indptr[" + (i - 1) + "] = " + pointers[i - 1]);
                }
            }
            return new H5ad(file, hdf, shape[0], shape[1], mapping, null, values, columns, pointers, null);
        } catch (RuntimeException e) {
            hdf.close();
            if (mapping != null) {
                mapping.close();
            }
            throw e instanceof MemfitException ? e : Hdf5.unreadable(file, node, e);
        }
    }

    /** The node at a relative path such as {@code raw/X}, or null. */
    private static Node child(Group root, String path) {
        Node node = root;
        for (String name : path.split("/")) {
            if (!(node instanceof Group group)) {
                return null;
            }
            node = group.getChildren().get(name);
        }
        return node;
    }

    /** The matrices readable as X, by name only, for the message of a missing layer. */
    private static List<String> listMatrices(HdfFile hdf) {
        List<String> names = new ArrayList<>();
        if (hdf.getChildren().containsKey("X")) {
            names.add("X");
        }
        if (child(hdf, "raw/X") != null) {
            names.add("raw/X");
        }
        if (hdf.getChildren().get("layers") instanceof Group layers) {
            layers.getChildren().keySet().forEach(name -> names.add("layers/" + name));
        }
        return names;
    }

    /** A CSC X: the column pointers are read and checked now; the rows are transposed when first read. */
    private static H5ad openCsc(Path file, HdfFile hdf, Group group, FileMapping mapping, ChunkedVector.Cache cache,
                                Path scratch, long budget, ProgressListener listener) {
        String matrix = group.getPath().replaceAll("^/|/$", "");
        long[] shape = shape(file, group);
        Vector values = new Vector(file, hdf, mapping, dataset(file, group, "data"), cache);
        Vector rows = new Vector(file, hdf, mapping, dataset(file, group, "indices"), cache);
        Vector pointerVector = new Vector(file, hdf, mapping, dataset(file, group, "indptr"), cache);
        values.checkArray();
        rows.checkArray();
        pointerVector.checkArray();
        if (shape[1] > Integer.MAX_VALUE - 8 || shape[0] > Integer.MAX_VALUE - 8) {
            throw new InvalidFileException(file, -1, "a CSC X of fewer than 2^31 cells and genes", "shape " + Arrays.toString(shape));
        }
        if (pointerVector.length() != shape[1] + 1) {
            throw new InvalidFileException(file, pointerVector.offsetOf(0), matrix + "/indptr (column pointers of a CSC X) of n_vars + 1 = "
                    + (shape[1] + 1) + " entries", pointerVector.length() + " entries");
        }
        long[] pointers = new long[Math.toIntExact(pointerVector.length())];
        pointerVector.longs(0, pointers.length, pointers);
        long nnz = values.length();
        if (rows.length() != nnz) {
            throw new InvalidFileException(file, rows.offsetOf(0), matrix + "/indices (row indices) as long as X/data: " + nnz + " entries",
                    rows.length() + " entries");
        }
        if (pointers[0] != 0 || pointers[pointers.length - 1] != nnz) {
            throw new InvalidFileException(file, pointerVector.offsetOf(0), matrix + "/indptr (column pointers) from 0 to the " + nnz
                    + " stored values", "from " + pointers[0] + " to " + pointers[pointers.length - 1]);
        }
        for (int i = 1; i < pointers.length; i++) {
            if (pointers[i] < pointers[i - 1]) {
                throw new InvalidFileException(file, pointerVector.offsetOf(i), matrix + "/indptr (column pointers) not decreasing",
                        "indptr[" + i + "] = " + pointers[i] + " < indptr[" + (i - 1) + "] = " + pointers[i - 1]);
            }
        }
        return new H5ad(file, hdf, shape[0], shape[1], mapping, null, values, rows, null,
                new Csc(pointers, SharedTranspose.acquire(file, group.getPath()), scratch, budget, listener));
    }

    /**
     * Makes rows readable now: transposes a CSC X to CSR (the first read of rows does it otherwise), so that its
     * progress bar comes before the caller's own. Nothing to do for CSR or dense X, or when done already, by this
     * reader or another one open on the same file.
     */
    public void prepareRows() {
        rows();
    }

    /** The transposed rows of a CSC X, made on first use. */
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
                Window window = indices.window(start, n, indices.type == DType.INT32 ? DType.INT32 : DType.INT64);
                MemorySegment bytes = window.values();
                long first = start - window.first();
                if (window.intLayout() != null) {
                    ValueLayout.OfInt layout = window.intLayout();
                    for (int i = 0; i < n; i++) {
                        into[i] = bytes.get(layout, (first + i) * Integer.BYTES);
                    }
                } else {
                    ValueLayout.OfLong layout = window.longLayout();
                    for (int i = 0; i < n; i++) {
                        into[i] = bytes.get(layout, (first + i) * Long.BYTES);
                    }
                }
            }

            @Override
            public void values(long start, int n, double[] into) {
                data.doubles(start, n, into);
            }

            @Override
            public long rowIndexOffset(long element) {
                return indices.offsetOf(element);
            }
        };
        return csc.shared().rows(new CscTranspose(file, source, csc.columnPointers(), observations, csc.budget(), floatType()),
                csc.scratch(), csc.listener());
    }

    /**
     * How X is stored.
     *
     * @return CSR, CSC or DENSE
     */
    public Layout layout() {
        return csc != null ? Layout.CSC : indptr != null ? Layout.CSR : Layout.DENSE;
    }

    private static Dataset dataset(Path file, Group group, String name) {
        if (group.getChildren().get(name) instanceof Dataset dataset) {
            return dataset;
        }
        throw new InvalidFileException(file, -1, "a dataset " + group.getPath() + name, "none");
    }

    /** The {@code shape} attribute of a sparse X: {@code [n_obs, n_vars]}. */
    private static long[] shape(Path file, Group group) {
        Attribute attribute = group.getAttribute("shape");
        long[] shape = attribute == null || attribute.isEmpty() ? new long[0] : longs(attribute.getData());
        if (shape.length != 2 || shape[0] < 0 || shape[1] < 0) {
            throw new InvalidFileException(file, -1, "an attribute shape = [n_obs, n_vars] on " + group.getPath(),
                    attribute == null ? "none" : Arrays.toString(shape));
        }
        return shape;
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
     * Whether X is stored sparse, CSR or CSC ({@link #layout} tells which).
     *
     * @return true for sparse
     */
    public boolean sparse() {
        return layout() != Layout.DENSE;
    }

    /**
     * The number of stored values of X: for CSR, the stored entries (anndata's {@code X.nnz}, explicit zeros
     * included); for dense X, all {@code n_obs x n_vars} values. Known at open; {@link #totals()} counts the non-zero
     * values by a pass.
     *
     * @return stored values
     */
    public long storedValues() {
        return csc != null ? csc.columnPointers()[csc.columnPointers().length - 1]
                : indptr != null ? indptr[indptr.length - 1] : observations * variables;
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
        if (!sparse()) {
            dense.rows(first, count, into, rowOffsets, false);
            return;
        }
        CscTranspose.Rows transposed = rows();
        long[] indptr = transposed == null ? this.indptr : transposed.rowPointers();
        long start = indptr[Math.toIntExact(first)];
        int n = Math.toIntExact(indptr[Math.toIntExact(first + count)] - start);
        Window values = transposed != null ? transposedValues(transposed, start, n) : data.window(start, n, DType.FLOAT32);
        Window columns = transposed != null ? new Window(transposed.columns(), 0, null, ValueLayout.JAVA_INT, null)
                : indices.window(start, n, indices.type == DType.INT32 ? DType.INT32 : DType.INT64);
        // Each row's values and indices are copied out in bulk (MemorySegment.copy translates the file's byte order),
        // added into a dense row on the heap and copied into place in bulk. Reading the windows value by value in a
        // loop would see mapped and heap segments at the same call sites (a chunked file's window is a slice of the
        // mapping or a copy, call by call): C2 then compiles, deoptimizes and recompiles the loop over and over,
        // which made a stream 30 times slower in a notebook. Plain arrays have no such profile.
        RowScratch scratch = RowScratch.get(Math.toIntExact(variables));
        MemorySegment valueBytes = values.values();
        MemorySegment columnBytes = columns.values();
        ValueLayout.OfInt narrow = columns.intLayout();
        ValueLayout.OfLong wide = columns.longLayout();
        long valueFirst = values.first();
        long columnFirst = columns.first();
        float[] row = scratch.row;
        for (int r = 0; r < count; r++) {
            long rowStart = indptr[Math.toIntExact(first + r)];
            int stored = Math.toIntExact(indptr[Math.toIntExact(first + r + 1)] - rowStart);
            float[] rowValues = scratch.values(stored);
            int[] rowColumns = scratch.columns(stored);
            MemorySegment.copy(valueBytes, values.floatLayout(), (rowStart - valueFirst) * Float.BYTES, rowValues, 0, stored);
            if (wide == null) {
                MemorySegment.copy(columnBytes, narrow, (rowStart - columnFirst) * Integer.BYTES, rowColumns, 0, stored);
            } else {
                long[] wideColumns = scratch.wide(stored);
                MemorySegment.copy(columnBytes, wide, (rowStart - columnFirst) * Long.BYTES, wideColumns, 0, stored);
                for (int i = 0; i < stored; i++) {
                    rowColumns[i] = wideColumns[i] < 0 || wideColumns[i] >= variables ? -1 : (int) wideColumns[i];
                }
            }
            for (int i = 0; i < stored; i++) {
                int column = rowColumns[i];
                if (column < 0 || column >= row.length) {
                    java.util.Arrays.fill(row, 0f);
                    long at = rowStart + i;
                    long found = wide == null ? column : columnBytes.get(wide, (at - columnFirst) * Long.BYTES);
                    throw new InvalidFileException(file, transposed != null ? -1 : indices.offsetOf(at), layer + "/indices in [0, "
                            + variables + ") (n_vars)", "index " + found + " at stored value " + at + " (row " + (first + r) + ")");
                }
                // added, not set: a column stored twice in a row counts twice, as scipy's toarray() sums duplicates
                row[column] += rowValues[i];
            }
            MemorySegment.copy(row, 0, into, FLOAT_NATIVE, rowOffsets[r], row.length);
            for (int i = 0; i < stored; i++) {
                row[rowColumns[i]] = 0f;
            }
        }
    }

    /** Per-thread arrays of {@link #readRows(long, int, MemorySegment, long[])}: a dense row (kept zero between rows). */
    private static final class RowScratch {
        private static final ThreadLocal<RowScratch> CURRENT = new ThreadLocal<>();

        private final float[] row;
        private float[] values = new float[0];
        private int[] columns = new int[0];
        private long[] wide = new long[0];

        private RowScratch(int variables) {
            this.row = new float[variables];
        }

        static RowScratch get(int variables) {
            RowScratch scratch = CURRENT.get();
            if (scratch == null || scratch.row.length != variables) {
                scratch = new RowScratch(variables);
                CURRENT.set(scratch);
            }
            return scratch;
        }

        float[] values(int n) {
            if (values.length < n) {
                values = new float[Math.max(n, values.length * 2)];
            }
            return values;
        }

        int[] columns(int n) {
            if (columns.length < n) {
                columns = new int[Math.max(n, columns.length * 2)];
            }
            return columns;
        }

        long[] wide(int n) {
            if (wide.length < n) {
                wide = new long[Math.max(n, wide.length * 2)];
            }
            return wide;
        }
    }

    /**
     * The number of values stored for a range of rows of a sparse X (a CSC X's after its transpose): what
     * {@link #readCsr} writes for it.
     *
     * @param first the first row
     * @param count how many rows
     * @return the stored (non-zero) values of those rows
     * @throws MemfitException when X is dense
     */
    public long storedValues(long first, long count) {
        requireSparse();
        if (first < 0 || count < 0 || first + count > observations) {
            throw new IndexOutOfBoundsException("rows [" + first + ", " + (first + count) + ") outside [0, " + observations + ") of " + file);
        }
        long[] pointers = rowPointers();
        return pointers[Math.toIntExact(first + count)] - pointers[Math.toIntExact(first)];
    }

    /** The CSR row pointers: the file's, or those of a CSC X's transpose (made here if not yet). */
    private long[] rowPointers() {
        CscTranspose.Rows transposed = rows();
        return transposed == null ? indptr : transposed.rowPointers();
    }

    /**
     * Reads a range of rows of a sparse X as stored (a CSC X from its transpose to CSR): values as float32, column
     * indices as int32 and row starts, in the platform's byte order, without densifying (sharding to CSR copies each
     * stored value once). Column indices are
     * checked against {@code n_vars}; their order within a row is the file's, and a column stored twice in a row
     * comes twice (the caller sums duplicates, as scipy does: see the class comment).
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
    public long readCsr(long first, int count, MemorySegment values, MemorySegment columns, long[] rowStarts) {
        long n = storedValues(first, count);
        if (variables > Integer.MAX_VALUE) {
            throw new MemfitException(file + ": " + variables + " genes do not fit int32 column indices");
        }
        CscTranspose.Rows transposed = rows();
        long[] indptr = transposed == null ? this.indptr : transposed.rowPointers();
        long start = indptr[Math.toIntExact(first)];
        for (int r = 0; r <= count; r++) {
            rowStarts[r] = indptr[Math.toIntExact(first + r)] - start;
        }
        if (n == 0) {
            return 0;
        }
        Window stored = transposed != null ? transposedValues(transposed, start, Math.toIntExact(n))
                : data.window(start, Math.toIntExact(n), DType.FLOAT32);
        Window indexes = transposed != null ? new Window(transposed.columns(), 0, null, ValueLayout.JAVA_INT, null)
                : indices.window(start, Math.toIntExact(n), indices.type == DType.INT32 ? DType.INT32 : DType.INT64);
        // bulk copies (swapping bytes where the file's order is not the platform's): a layout that is not a constant
        // (the file's byte order) would cost a var handle lookup per value in a loop
        MemorySegment.copy(stored.values(), stored.floatLayout(), (start - stored.first()) * Float.BYTES, values,
                FLOAT_NATIVE, 0, n);
        MemorySegment columnBytes = indexes.values();
        long columnFirst = indexes.first();
        if (indexes.intLayout() != null) {
            MemorySegment.copy(columnBytes, indexes.intLayout(), (start - columnFirst) * Integer.BYTES, columns,
                    INT_NATIVE, 0, n);
        } else {
            ValueLayout.OfLong wide = indexes.longLayout();
            for (long i = 0; i < n; i++) {
                long column = columnBytes.get(wide, (start + i - columnFirst) * Long.BYTES);
                // out of int range: stored as -1 here so that the check below names it
                columns.set(INT_NATIVE, i * Integer.BYTES, column < 0 || column >= variables ? -1 : (int) column);
            }
        }
        int genes = (int) variables;
        for (long i = 0; i < n; i++) {
            int column = columns.get(INT_NATIVE, i * Integer.BYTES);
            if (column < 0 || column >= genes) {
                long at = start + i;
                long found = indexes.intLayout() != null ? column
                        : columnBytes.get(indexes.longLayout(), (at - columnFirst) * Long.BYTES);
                throw new InvalidFileException(file, transposed != null ? -1 : indices.offsetOf(at), layer + "/indices in [0, "
                        + variables + ") (n_vars)", "index " + found + " at stored value " + at);
            }
        }
        return n;
    }

    /**
     * Stored values {@code [start, start + n)} of a transposed CSC X as float32: in place when the transpose holds
     * float32, else rounded from its float64 values into a heap copy.
     */
    private static Window transposedValues(CscTranspose.Rows transposed, long start, int n) {
        if (transposed.valueType() == DType.FLOAT32) {
            return new Window(transposed.values(), 0, ValueLayout.JAVA_FLOAT, null, null);
        }
        float[] copy = new float[n];
        for (int i = 0; i < n; i++) {
            copy[i] = (float) transposed.values().getAtIndex(ValueLayout.JAVA_DOUBLE, start + i);
        }
        return new Window(MemorySegment.ofArray(copy), start, ValueLayout.JAVA_FLOAT, null, null);
    }

    /**
     * Reads rows of X as dense values of a float type in the platform's byte order: float32 as
     * {@link #readRows(long, int, MemorySegment)}, or float64, each value exactly as stored for a float64 (or float32,
     * or integer) X.
     *
     * @param first the first row
     * @param count how many rows
     * @param into at least {@code count * n_vars * type.byteSize()} bytes; overwritten
     * @param type {@code FLOAT32} or {@code FLOAT64}, such as {@link #floatType()}
     */
    public void readRows(long first, int count, MemorySegment into, DType type) {
        long rowBytes = variables * checkFloat(type).byteSize();
        long[] offsets = new long[count];
        for (int r = 0; r < count; r++) {
            offsets[r] = r * rowBytes;
        }
        readRows(first, count, into, offsets, type);
    }

    /**
     * Reads rows of X as dense values of a float type, each row to its own place, as
     * {@link #readRows(long, int, MemorySegment, long[])} does for float32.
     *
     * @param first the first row
     * @param count how many rows
     * @param into the destination
     * @param rowOffsets the byte offset in {@code into} of each row ({@code n_vars * type.byteSize()} bytes each)
     * @param type {@code FLOAT32} or {@code FLOAT64}
     */
    public void readRows(long first, int count, MemorySegment into, long[] rowOffsets, DType type) {
        if (checkFloat(type) == DType.FLOAT32) {
            readRows(first, count, into, rowOffsets);
            return;
        }
        if (first < 0 || count < 0 || first + count > observations) {
            throw new IndexOutOfBoundsException("rows [" + first + ", " + (first + count) + ") outside [0, " + observations + ") of " + file);
        }
        if (!sparse()) {
            dense.rows(first, count, into, rowOffsets, true);
            return;
        }
        long rowBytes = variables * Double.BYTES;
        CscTranspose.Rows transposed = rows();
        long[] pointers = transposed == null ? this.indptr : transposed.rowPointers();
        long start = pointers[Math.toIntExact(first)];
        int n = Math.toIntExact(pointers[Math.toIntExact(first + count)] - start);
        double[] values = new double[n];
        long[] columns = new long[n];
        storedRun(transposed, start, n, values, columns);
        for (int r = 0; r < count; r++) {
            long rowOffset = rowOffsets[r];
            into.asSlice(rowOffset, rowBytes).fill((byte) 0);
            for (long at = pointers[Math.toIntExact(first + r)]; at < pointers[Math.toIntExact(first + r + 1)]; at++) {
                int i = (int) (at - start);
                long column = columns[i];
                if (column < 0 || column >= variables) {
                    throw new InvalidFileException(file, transposed != null ? -1 : indices.offsetOf(at), layer + "/indices in [0, "
                            + variables + ") (n_vars)", "index " + column + " at stored value " + at + " (row " + (first + r) + ")");
                }
                // added, not set: a column stored twice in a row counts twice, as scipy's toarray() sums duplicates
                long target = rowOffset + column * Double.BYTES;
                into.set(ValueLayout.JAVA_DOUBLE_UNALIGNED, target, into.get(ValueLayout.JAVA_DOUBLE_UNALIGNED, target) + values[i]);
            }
        }
    }

    /**
     * Reads a range of rows of a sparse X as stored, as {@link #readCsr(long, int, MemorySegment, MemorySegment, long[])}
     * does, with the values in a float type: float32, or float64 (each value exactly as stored for a float64 X).
     *
     * @param first the first row
     * @param count how many rows
     * @param values at least {@code storedValues(first, count) * type.byteSize()} bytes; overwritten
     * @param columns at least {@code storedValues(first, count) * 4} bytes; overwritten
     * @param rowStarts at least {@code count + 1} entries, as {@link #readCsr(long, int, MemorySegment, MemorySegment, long[])}
     * @param type {@code FLOAT32} or {@code FLOAT64}
     * @return the number of values read
     */
    public long readCsr(long first, int count, MemorySegment values, MemorySegment columns, long[] rowStarts, DType type) {
        if (checkFloat(type) == DType.FLOAT32) {
            return readCsr(first, count, values, columns, rowStarts);
        }
        long n = storedValues(first, count);
        if (variables > Integer.MAX_VALUE) {
            throw new MemfitException(file + ": " + variables + " genes do not fit int32 column indices");
        }
        CscTranspose.Rows transposed = rows();
        long[] pointers = transposed == null ? this.indptr : transposed.rowPointers();
        long start = pointers[Math.toIntExact(first)];
        for (int r = 0; r <= count; r++) {
            rowStarts[r] = pointers[Math.toIntExact(first + r)] - start;
        }
        int block = 1 << 20;
        double[] read = new double[(int) Math.min(block, Math.max(1, n))];
        long[] genes = new long[read.length];
        for (long done = 0; done < n; done += block) {
            int m = (int) Math.min(block, n - done);
            storedRun(transposed, start + done, m, read, genes);
            for (int i = 0; i < m; i++) {
                long column = genes[i];
                if (column < 0 || column >= variables) {
                    long at = start + done + i;
                    throw new InvalidFileException(file, transposed != null ? -1 : indices.offsetOf(at), layer + "/indices in [0, "
                            + variables + ") (n_vars)", "index " + column + " at stored value " + at);
                }
                values.setAtIndex(ValueLayout.JAVA_DOUBLE_UNALIGNED, done + i, read[i]);
                columns.setAtIndex(INT_NATIVE, done + i, (int) column);
            }
        }
        return n;
    }

    /** Stored values {@code [start, start + n)} as float64 with their column indices, from the file or its transpose. */
    private void storedRun(CscTranspose.Rows transposed, long start, int n, double[] values, long[] columns) {
        if (transposed == null) {
            data.doubles(start, n, values);
            indices.longs(start, n, columns);
            return;
        }
        boolean wide = transposed.valueType() == DType.FLOAT64;
        for (int i = 0; i < n; i++) {
            values[i] = wide ? transposed.values().getAtIndex(ValueLayout.JAVA_DOUBLE, start + i)
                    : transposed.values().getAtIndex(ValueLayout.JAVA_FLOAT, start + i);
            columns[i] = transposed.columns().getAtIndex(ValueLayout.JAVA_INT, start + i);
        }
    }

    private static DType checkFloat(DType type) {
        if (type != DType.FLOAT32 && type != DType.FLOAT64) {
            throw new IllegalArgumentException("rows are read as FLOAT32 or FLOAT64, not " + type);
        }
        return type;
    }

    private void requireSparse() {
        if (!sparse()) {
            throw new MemfitException(file + ": X is stored dense, not CSR or CSC; read it with readRows");
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

    /**
     * One pass over X in chunks of about 16 MB of dense rows: memory stays at one chunk whatever the file size. For
     * a chunked dense X the chunks are whole bands of its HDF5 chunks (while a band is at most 64 MB), so each HDF5
     * chunk is decoded once in the pass.
     *
     * @param consumer receives each chunk
     */
    public void forEachChunk(RowsConsumer consumer) {
        forEachBlock(false, consumer);
    }

    /** Consecutive blocks of rows as float32 or float64 ({@code wide}) values; see {@link #forEachChunk}. */
    private void forEachBlock(boolean wide, RowsConsumer consumer) {
        int valueBytes = wide ? Double.BYTES : Float.BYTES;
        long rowBytes = Math.max(1, variables * valueBytes);
        long chunk = Math.max(1, (16L << 20) / rowBytes);
        if (dense != null && dense.chunked != null) {
            long band = dense.chunked.chunkRows();
            if (band * rowBytes <= 64L << 20) {
                chunk = Math.max(band, chunk / band * band);
            }
        }
        chunk = Math.min(chunk, Math.max(1, observations));
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment rows = arena.allocate(chunk * variables * valueBytes, 8);
            long[] offsets = new long[(int) chunk];
            for (int r = 0; r < offsets.length; r++) {
                offsets[r] = r * variables * valueBytes;
            }
            for (long first = 0; first < observations; first += chunk) {
                int count = (int) Math.min(chunk, observations - first);
                if (wide) {
                    dense.rows(first, count, rows, offsets, true);
                } else {
                    readRows(first, count, rows, offsets);
                }
                consumer.accept(first, count, rows);
            }
        }
    }

    /**
     * The float64 sum of all of X, accumulated from the stored values (float64 data is never rounded to float32
     * on the way), so that it equals numpy's {@code X.sum(dtype=np.float64)} up to summation order; a CSC X is
     * summed from its stored values, without transposing.
     *
     * @return the sum
     */
    public double sum() {
        return totals().sum();
    }

    /**
     * The sum and the number of non-zero values of X, in one pass over the stored values: the CSR values only
     * (never densified), or every dense row.
     *
     * @return the totals
     */
    public Totals totals() {
        dev.memfit.CompensatedSum sum = new dev.memfit.CompensatedSum();
        long[] nonZero = new long[1];
        if (sparse()) {
            int block = 1 << 20;
            double[] values = new double[(int) Math.min(block, Math.max(1, storedValues()))];
            for (long start = 0; start < storedValues(); start += block) {
                int n = (int) Math.min(block, storedValues() - start);
                data.doubles(start, n, values);
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

    /**
     * The sum of each column (gene) of X over all rows (cells), accumulated in float64 from the stored values: the
     * CSR values and their column indices or the CSC values by column (never densified nor transposed), or every
     * dense row.
     *
     * @return one total per column, in var order
     */
    public double[] columnSums() {
        int genes = Math.toIntExact(variables);
        double[] totals = new double[genes];
        if (csc != null) {
            // stored gene by gene: each column's total is the sum of its run of values, no index needed
            long[] pointers = csc.columnPointers();
            int block = 1 << 20;
            double[] values = new double[(int) Math.min(block, Math.max(1, storedValues()))];
            int column = 0;
            for (long start = 0; start < storedValues(); start += block) {
                int n = (int) Math.min(block, storedValues() - start);
                data.doubles(start, n, values);
                for (int i = 0; i < n; i++) {
                    while (pointers[column + 1] <= start + i) {
                        column++;
                    }
                    totals[column] += values[i];
                }
            }
        } else if (sparse()) {
            int block = 1 << 20;
            double[] values = new double[(int) Math.min(block, Math.max(1, storedValues()))];
            long[] columns = new long[values.length];
            for (long start = 0; start < storedValues(); start += block) {
                int n = (int) Math.min(block, storedValues() - start);
                data.doubles(start, n, values);
                indices.longs(start, n, columns);
                for (int i = 0; i < n; i++) {
                    long column = columns[i];
                    if (column < 0 || column >= variables) {
                        throw new InvalidFileException(file, indices.offsetOf(start + i), layer + "/indices in [0, " + variables
                                + ") (n_vars)", "index " + column + " at stored value " + (start + i));
                    }
                    totals[(int) column] += values[i];
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

    @Override
    public void reserveChunkCache(long bytes) {
        (dense != null ? dense : data).cache.atLeast(bytes);
    }

    /**
     * How the chunk cache of this file has done since it was opened: chunk reads served from the cache (hits),
     * chunks decoded, decoded bytes, and its bound (see the class comment).
     *
     * @return the counters
     */
    public ChunkCacheStatistics chunkCacheStatistics() {
        return (dense != null ? dense : data).cache.statistics();
    }

    /**
     * The chunk cache counters summed over every {@code .h5ad} opened in this process (a stream opens one per
     * reader thread); take the difference of two snapshots to measure a piece of work.
     *
     * @return the counters; the bound is what files opened now get by default
     */
    public static ChunkCacheStatistics processChunkCacheStatistics() {
        return ChunkedVector.Cache.processStatistics();
    }

    /**
     * Counters of a chunk cache.
     *
     * @param hits chunk reads served by a chunk already decoded
     * @param decodes chunks decoded (chunk reads that missed)
     * @param decodedBytes the bytes those decodes produced
     * @param budgetBytes the cache's bound
     */
    public record ChunkCacheStatistics(long hits, long decodes, long decodedBytes, long budgetBytes) {
        /**
         * The share of chunk reads served from the cache.
         *
         * @return hits / (hits + decodes), NaN before any chunk read
         */
        public double hitRate() {
            return hits + decodes == 0 ? Double.NaN : (double) hits / (hits + decodes);
        }

        /**
         * The counts since an earlier snapshot.
         *
         * @param before the earlier snapshot
         * @return the difference, with this snapshot's bound
         */
        public ChunkCacheStatistics minus(ChunkCacheStatistics before) {
            return new ChunkCacheStatistics(hits - before.hits, decodes - before.decodes, decodedBytes - before.decodedBytes,
                    budgetBytes);
        }
    }

    /**
     * The names of a dataframe's columns ({@code obs} or {@code var}) in their stored order, excluding the index;
     * nothing else is read.
     *
     * @param frame "obs" or "var"
     * @return the names of its {@code column-order} attribute
     */
    public List<String> columnNames(String frame) {
        Group group = frame(frame);
        return Hdf5.read(file, group.getPath(), () -> {
            Attribute columnOrder = group.getAttribute("column-order");
            List<String> order = new ArrayList<>();
            if (columnOrder != null && !columnOrder.isEmpty()) {
                Object names = columnOrder.getData();
                if (names instanceof String[] listed) {
                    order.addAll(Arrays.asList(listed));
                } else if (names instanceof String single) {
                    order.add(single);   // h5py stores a one-name list as a scalar when written by hand
                }
            }
            return order;
        });
    }

    /**
     * The columns of a dataframe ({@code obs} or {@code var}) with their types, in their stored order, excluding the
     * index: what memfit carries into the files it writes, unchanged. Read from anndata 0.8's encodings and the
     * later spec's ({@code array}, {@code string-array}, {@code categorical}, {@code nullable-integer},
     * {@code nullable-boolean}) and from anndata 0.7's (a dataset of codes whose attribute {@code categories}
     * references the categories, {@code __categories/<name>}, whose attribute {@code ordered} says ordered).
     *
     * @param frame "obs" or "var"
     * @return column name to column
     * @throws InvalidFileException naming the file, the column, what memfit carries and what it found, for a column
     *         it cannot carry exactly (a 2-D or compound dataset, float16, an unknown encoding), never changing one
     */
    public Map<String, FrameColumn> frameColumns(String frame) {
        Group group = frame(frame);
        Map<String, FrameColumn> columns = new LinkedHashMap<>();
        for (String name : columnNames(frame)) {
            columns.put(name, column(group, frame, name));
        }
        return columns;
    }

    /**
     * One column of {@code obs} or {@code var} with its type, as {@link #frameColumns} reads it.
     *
     * @param frame "obs" or "var"
     * @param name the column
     * @return the column
     * @throws MemfitException naming the columns that exist when it does not
     */
    public FrameColumn frameColumn(String frame, String name) {
        List<String> names = columnNames(frame);
        if (!names.contains(name)) {
            throw new MemfitException(file + ": " + frame + " has no column '" + name + "'; it has " + names);
        }
        return column(frame(frame), frame, name);
    }

    /**
     * The columns of a dataframe ({@code obs} or {@code var}) in their stored order, excluding the index, as labels
     * ({@link FrameColumn#labels()}): convenient to read, but integers become float64 and categoricals their labels.
     * {@link #frameColumns} keeps the types.
     *
     * @param frame "obs" or "var"
     * @return column name to its values: a {@code String[]} (strings and categorical labels, null when missing), a
     *         {@code boolean[]} (numpy bool, stored by h5py as an HDF5 enum) or a {@code double[]} (numbers)
     */
    public Map<String, Object> columns(String frame) {
        Map<String, Object> labels = new LinkedHashMap<>();
        frameColumns(frame).forEach((name, column) -> labels.put(name, column.labels()));
        return labels;
    }

    /**
     * One column of {@code obs} or {@code var} as labels.
     *
     * @param frame "obs" or "var"
     * @param name the column
     * @return a {@code String[]}, a {@code boolean[]} or a {@code double[]}, as {@link #columns} returns them
     * @throws MemfitException naming the columns that exist when it does not
     */
    public Object column(String frame, String name) {
        return frameColumn(frame, name).labels();
    }

    /**
     * The index of a dataframe: cell barcodes for {@code obs}, gene names for {@code var}.
     *
     * @param frame "obs" or "var"
     * @return the names
     */
    public String[] index(String frame) {
        Group group = frame(frame);
        FrameColumn values = column(group, frame, indexName(frame));
        if (values instanceof FrameColumn.Strings names) {
            return names.values();
        }
        Object labels = values.labels();
        String[] names = new String[Array.getLength(labels)];
        for (int i = 0; i < names.length; i++) {
            names[i] = String.valueOf(Array.get(labels, i));
        }
        return names;
    }

    /**
     * The name of a dataframe's index, as its {@code _index} attribute gives it: {@code "_index"} for an unnamed
     * index (pandas' {@code None}), else the name (say {@code "gene_ids"}), which is also the index dataset's name.
     *
     * @param frame "obs" or "var"
     * @return the name
     */
    public String indexName(String frame) {
        Group group = frame(frame);
        String name = Hdf5.read(file, group.getPath(), () -> stringAttribute(group, "_index"));
        return name == null ? "_index" : name;
    }

    /** The group of a dataframe. */
    private Group frame(String frame) {
        // the genes of the matrix read: raw/X has its own, in raw/var
        String path = "var".equals(frame) ? varFrame : frame;
        Node node = Hdf5.read(file, "/" + path, () -> child(hdf, path));
        if (!(node instanceof Group group)) {
            throw new InvalidFileException(file, -1, "a dataframe group /" + path, node == null ? "none" : "a dataset");
        }
        return group;
    }

    /** A column, checked to hold one value per row of the dataframe (n_obs for obs, n_vars for var). */
    private FrameColumn column(Group group, String frame, String name) {
        String path = "/" + frame + "/" + name;
        FrameColumn values = Hdf5.read(file, path, () -> readColumn(group, path, name));
        long expected = "obs".equals(frame) ? observations : "var".equals(frame) ? variables : -1;
        AnnDataColumns.checkLength(file, path, frame, expected, values.size());
        return values;
    }

    private static final String CARRIED = AnnDataColumns.CARRIED;
    private static final String CONVERT = AnnDataColumns.CONVERT;

    private FrameColumn readColumn(Group group, String path, String name) {
        Node node = group.getChildren().get(name);
        if (node instanceof Dataset dataset) {
            if (dataset.getAttribute("categories") != null) {
                return legacyCategorical(group, dataset, path, name);
            }
            String encoding = stringAttribute(dataset, "encoding-type");
            if (encoding != null && !encoding.equals("array") && !encoding.equals("string-array")) {
                throw new InvalidFileException(file, -1, CARRIED + " in " + path, "a dataset of encoding-type '" + encoding
                        + "'" + CONVERT);
            }
            return array(dataset, path);
        }
        if (node instanceof Group encoded) {
            String encoding = stringAttribute(encoded, "encoding-type");
            Map<String, Node> children = encoded.getChildren();
            if ("categorical".equals(encoding) || encoding == null && children.containsKey("codes")
                    && children.containsKey("categories")) {
                return categorical(encoded, path);
            }
            if ("nullable-integer".equals(encoding) || "nullable-boolean".equals(encoding)) {
                return nullable(encoded, path, "nullable-boolean".equals(encoding));
            }
            throw new InvalidFileException(file, -1, CARRIED + " in " + path, "a group of encoding-type '" + encoding
                    + "' holding " + children.keySet() + CONVERT);
        }
        throw new InvalidFileException(file, -1, "a column " + path + " (listed in column-order)", "none");
    }

    /** A one-dimensional dataset of numbers, bools or strings, with its exact type. */
    private FrameColumn array(Dataset dataset, String path) {
        int[] dimensions = dataset.getDimensions();
        io.jhdf.object.datatype.DataType type = dataset.getDataType();
        if (dimensions.length != 1) {
            throw new InvalidFileException(file, -1, CARRIED + " in " + path, "a dataset of shape " + Arrays.toString(dimensions)
                    + " (" + Hdf5.typeName(type) + ")" + CONVERT);
        }
        boolean empty = dataset.isEmpty() || dimensions[0] == 0;
        if (!empty) {
            checkStored(dataset, path);
        }
        Object data = empty ? null : dataset.getData();
        if (type instanceof FixedPoint fixed) {
            DType dtype = switch (fixed.getSize()) {
                case 1 -> fixed.isSigned() ? DType.INT8 : DType.UINT8;
                case 2 -> fixed.isSigned() ? DType.INT16 : DType.UINT16;
                case 4 -> fixed.isSigned() ? DType.INT32 : DType.UINT32;
                case 8 -> fixed.isSigned() ? DType.INT64 : DType.UINT64;
                default -> null;
            };
            if (dtype != null) {
                return new FrameColumn.Numbers(dtype, integers(data, dtype, empty ? 0 : Array.getLength(data)));
            }
        } else if (type instanceof FloatingPoint floating && (floating.getSize() == 4 || floating.getSize() == 8)) {
            if (floating.getSize() == 4) {
                return FrameColumn.Numbers.of(empty ? new float[0] : (float[]) data);
            }
            return FrameColumn.Numbers.of(empty ? new double[0] : (double[]) data);
        } else if (type instanceof EnumDataType enumeration && BOOLEAN_ENUM.equals(enumeration.getEnumMapping())) {
            // anndata (through h5py) stores numpy bool as an HDF5 enum {FALSE: 0, TRUE: 1}; jhdf reads its names
            String[] names = empty ? new String[0] : (String[]) data;
            boolean[] flags = new boolean[names.length];
            for (int i = 0; i < names.length; i++) {
                flags[i] = "TRUE".equals(names[i]);
            }
            return new FrameColumn.Bools(flags);
        } else if (dataset.getJavaType() == String.class) {
            String[] texts = empty ? new String[0] : ((String[]) data).clone();
            for (int i = 0; i < texts.length; i++) {
                if (texts[i] == null) {
                    texts[i] = "";   // an unset variable-length string, which h5py reads as ''
                }
            }
            return new FrameColumn.Strings(texts);
        }
        throw new InvalidFileException(file, -1, CARRIED + " in " + path, "a dataset of " + Hdf5.typeName(type) + CONVERT);
    }

    /**
     * Refuses a one-dimensional dataset read whole (a dataframe column) whose claimed size the file does not back,
     * before jhdf allocates it (jhdf sizes its array by the claim, then reads): contiguous data must lie inside the
     * file, compact data inside its object header, and chunked data must have every chunk stored (as anndata writes
     * it), each decoding to at most {@link ChunkedVector#MOST_EXPANSION} times its stored size.
     */
    private void checkStored(Dataset dataset, String path) {
        long claimed = Hdf5.claimedBytes(dataset);
        long fileBytes = mapping.bytes.byteSize();
        switch (dataset) {
            case ChunkedDataset ignored ->
                    new ChunkedVector(file, hdf, mapping.bytes, dataset, new ChunkedVector.Cache(0)).requireComplete(path);
            case io.jhdf.dataset.CompactDataset compact -> {
                int stored = compact.getDataBuffer().remaining();
                if (claimed > stored) {
                    throw new InvalidFileException(file, -1, path + " (" + claimed + " bytes claimed) inside its compact storage",
                            stored + " bytes in its object header");
                }
            }
            case ContiguousDataset contiguous -> {
                long address = hdf.getUserBlockSize() + contiguous.getDataAddress();
                if (address < 0 || claimed > fileBytes - address) {
                    throw new InvalidFileException(file, address, path + " (" + claimed + " bytes claimed) inside the "
                            + fileBytes + "-byte file", "data past its end");
                }
            }
            default -> throw new InvalidFileException(file, -1, path + " stored contiguous, compact or chunked",
                    dataset.getClass().getSimpleName());
        }
    }

    /** jhdf's integers (unsigned ones widened: uint8/uint16 as int, uint32 as long, uint64 as BigInteger) in their storage. */
    private static Object integers(Object data, DType dtype, int n) {
        switch (dtype) {
            case INT8, UINT8 -> {
                if (data instanceof byte[] bytes) {
                    return bytes;
                }
                byte[] values = new byte[n];
                for (int i = 0; i < n; i++) {
                    values[i] = (byte) ((Number) Array.get(data, i)).intValue();
                }
                return values;
            }
            case INT16, UINT16 -> {
                if (data instanceof short[] shorts) {
                    return shorts;
                }
                short[] values = new short[n];
                for (int i = 0; i < n; i++) {
                    values[i] = (short) ((Number) Array.get(data, i)).intValue();
                }
                return values;
            }
            case INT32, UINT32 -> {
                if (data instanceof int[] ints) {
                    return ints;
                }
                int[] values = new int[n];
                for (int i = 0; i < n; i++) {
                    values[i] = (int) ((Number) Array.get(data, i)).longValue();
                }
                return values;
            }
            default -> {
                if (data instanceof long[] longs) {
                    return longs;
                }
                long[] values = new long[n];
                for (int i = 0; i < n; i++) {
                    // a uint64 above 2^63 comes as a BigInteger: its low 64 bits are the stored pattern
                    values[i] = ((Number) Array.get(data, i)).longValue();
                }
                return values;
            }
        }
    }

    /** A categorical group ({@code codes}, {@code categories}, attribute {@code ordered}), checked. */
    private FrameColumn categorical(Group group, String path) {
        Map<String, Node> children = group.getChildren();
        if (!(children.get("categories") instanceof Dataset categorySet) || !(children.get("codes") instanceof Dataset codeSet)) {
            throw new InvalidFileException(file, -1, "a categorical column " + path + " (datasets codes and categories)",
                    "a group holding " + children.keySet() + " (encoding-type " + stringAttribute(group, "encoding-type") + ")");
        }
        return categorical(path, array(codeSet, path + "/codes"), array(categorySet, path + "/categories"),
                booleanAttribute(group, "ordered", path));
    }

    /**
     * anndata 0.7's categorical: a dataset of codes whose attribute {@code categories} is an object reference to the
     * categories (anndata wrote them to {@code __categories/<name>} beside the columns; zarr stores wrote that path
     * as a string), whose attribute {@code ordered} says whether they are ordered.
     */
    private FrameColumn legacyCategorical(Group group, Dataset codeSet, String path, String name) {
        Object reference = codeSet.getAttribute("categories").getData();
        Node conventional = group.getChildren().get("__categories") instanceof Group categories
                ? categories.getChildren().get(name) : null;
        Node target = null;
        String found;
        if (reference instanceof Number address) {
            // jhdf reads an object reference as the address of the object's header; the dataset anndata wrote to
            // __categories/<name> has that address (getNodeByAddress finds any other target, under no path)
            if (conventional != null && conventional.getAddress() == address.longValue()) {
                target = conventional;
            } else {
                try {
                    target = hdf.getNodeByAddress(address.longValue());
                } catch (RuntimeException e) {
                    target = null;
                }
            }
            found = "an object reference to address " + address + " that is " + (target == null ? "no object" : "a group");
        } else if (reference instanceof String relative) {
            Node node = group;
            for (String part : relative.split("/")) {
                node = part.isEmpty() || node == null ? node : node instanceof Group parent ? parent.getChildren().get(part) : null;
            }
            target = node;
            found = "the path '" + relative + "', which names " + (node == null ? "nothing" : "a group");
        } else {
            found = "an attribute categories of " + Hdf5.typeName(codeSet.getAttribute("categories").getDataType());
        }
        if (!(target instanceof Dataset categorySet)) {
            throw new InvalidFileException(file, -1, "the categories of the anndata 0.7 categorical " + path
                    + " (an object reference to a dataset such as " + group.getPath() + "__categories/" + name + ")", found);
        }
        String categoriesPath = target == conventional ? group.getPath() + "__categories/" + name : path + " (its categories)";
        return categorical(path, array(codeSet, path), array(categorySet, categoriesPath),
                booleanAttribute(categorySet, "ordered", categoriesPath));
    }

    private FrameColumn categorical(String path, FrameColumn codes, FrameColumn categories, boolean ordered) {
        return AnnDataColumns.categorical(file, path, codes, categories, ordered);
    }

    /** A nullable column ({@code values} and an optional {@code mask}, true where missing). */
    private FrameColumn nullable(Group group, String path, boolean bools) {
        Map<String, Node> children = group.getChildren();
        String kind = bools ? "nullable-boolean" : "nullable-integer";
        if (!(children.get("values") instanceof Dataset valueSet)) {
            throw new InvalidFileException(file, -1, "a " + kind + " column " + path + " (a dataset values and a mask)",
                    "a group holding " + children.keySet());
        }
        FrameColumn values = array(valueSet, path + "/values");
        FrameColumn mask = null;
        if (children.get("mask") != null) {
            if (!(children.get("mask") instanceof Dataset maskSet)) {
                throw new InvalidFileException(file, -1, "a bool mask in " + path + "/mask", "something else" + CONVERT);
            }
            mask = array(maskSet, path + "/mask");
        }
        return AnnDataColumns.nullable(file, path, values, mask, bools);
    }

    /** An attribute that h5py wrote from a Python or numpy bool (an enum, read as "TRUE"/"FALSE"), or a number. */
    private boolean booleanAttribute(Node node, String name, String path) {
        Attribute attribute = node.getAttribute(name);
        if (attribute == null || attribute.isEmpty()) {
            return false;   // anndata reads a missing 'ordered' as False
        }
        Object value = attribute.getData();
        if (value != null && value.getClass().isArray() && Array.getLength(value) == 1) {
            value = Array.get(value, 0);
        }
        return switch (value) {
            case Boolean flag -> flag;
            case String text when text.equalsIgnoreCase("TRUE") -> true;
            case String text when text.equalsIgnoreCase("FALSE") -> false;
            case Number number -> number.longValue() != 0;
            case null, default -> throw new InvalidFileException(file, -1, "a bool attribute '" + name + "' on " + path,
                    String.valueOf(value));
        };
    }

    /** The HDF5 enum h5py writes for numpy's bool. */
    private static final Map<Integer, String> BOOLEAN_ENUM = Map.of(0, "FALSE", 1, "TRUE");

    /** Closes the file. */
    @Override
    public void close() {
        hdf.close();
        mapping.close();
        if (csc != null) {
            csc.shared().release();
        }
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
     * (anndata's default for dense X), through {@link ChunkedVector} when it is chunked (sparse X/data, X/indices and
     * X/indptr, always chunked by anndata, often compressed; dense X written with compression or explicit chunks),
     * from a heap copy of a compact dataset (at most 64 KiB, kept in its object header, which jhdf cannot slice).
     * Anything else is refused at open unless it holds no elements, so no read goes through jhdf.
     */
    private static final class Vector {
        private final Path file;
        private final Dataset dataset;
        private final MemorySegment mapped;
        private final long address;
        private final DType type;
        private final ByteOrder order;
        private final ChunkedVector chunked;
        private final ChunkedVector.Cache cache;

        Vector(Path file, HdfFile hdf, FileMapping mapping, Dataset dataset, ChunkedVector.Cache cache) {
            this.file = file;
            this.dataset = dataset;
            this.cache = cache;
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
                throw new InvalidFileException(file, -1, dataset.getPath() + " of float32, float64 or integers",
                        Hdf5.typeName(dataset.getDataType()) + "; convert it in anndata, e.g. adata.X = adata.X.astype('float32'),"
                                + " and write the file again");
            }
            this.type = elementType;
            this.order = byteOrder;
            long bytes = Hdf5.claimedBytes(dataset);
            if (dataset instanceof io.jhdf.dataset.CompactDataset compact && !dataset.isEmpty()) {
                // kept in its object header (at most 64 KiB): read whole, once, and sliced as the mapping is (jhdf
                // cannot read a compact dataset by hyperslabs)
                java.nio.ByteBuffer stored = compact.getDataBuffer().duplicate();
                if (bytes > stored.remaining()) {
                    throw new InvalidFileException(file, -1, dataset.getPath() + " (" + bytes + " bytes claimed) inside its compact storage",
                            stored.remaining() + " bytes in its object header");
                }
                byte[] copy = new byte[(int) bytes];
                stored.get(copy);
                this.address = -1;
                this.mapped = MemorySegment.ofArray(copy);
                this.chunked = null;
            } else if (dataset instanceof ContiguousDataset contiguous && dataset.getFilters().isEmpty() && !dataset.isEmpty()) {
                this.address = hdf.getUserBlockSize() + contiguous.getDataAddress();
                if (address < 0 || bytes > mapping.bytes.byteSize() - address) {
                    throw new InvalidFileException(file, address, dataset.getPath() + " (" + bytes + " bytes) inside the file",
                            "data past the end of the " + mapping.bytes.byteSize() + "-byte file");
                }
                this.mapped = mapping.bytes.asSlice(address, bytes);
                this.chunked = null;
            } else if (dataset instanceof ChunkedDataset && dataset.getDimensionsAsLong().length >= 1
                    && dataset.getDimensionsAsLong().length <= 2) {
                // chunks never written read as the fill value (a 1-D array of X must have every chunk: checkArray)
                this.address = -1;
                this.mapped = null;
                this.chunked = new ChunkedVector(file, hdf, mapping.bytes, dataset, cache);
            } else if (bytes == 0) {
                // no elements (an all-zero X's data, a matrix of no genes): every read is of none
                this.address = -1;
                this.mapped = null;
                this.chunked = null;
            } else {
                throw new InvalidFileException(file, -1, dataset.getPath() + " with its data stored (contiguous, compact, or"
                        + " chunked in one or two dimensions)", dataset.isEmpty() ? "a dataset never written (no storage"
                        + " allocated) claiming " + bytes + " bytes" : "a " + dataset.getClass().getSimpleName() + " of dimensions "
                        + Arrays.toString(dataset.getDimensionsAsLong()));
            }
        }

        long length() {
            return dataset.getDimensionsAsLong()[0];
        }

        /**
         * Refuses an array of X (data, indices, indptr) that is not one-dimensional, or chunked with unwritten
         * chunks: anndata writes every chunk, and only stored chunks make the file back the length it claims.
         */
        void checkArray() {
            long[] dimensions = dataset.getDimensionsAsLong();
            if (dimensions.length != 1) {
                throw new InvalidFileException(file, -1, dataset.getPath() + " as a one-dimensional array", dimensions.length
                        + " dimensions " + Arrays.toString(dimensions));
            }
            if (chunked != null) {
                chunked.requireComplete(dataset.getPath());
            }
        }

        /**
         * Elements {@code [start, start + n)} as float32 values or as int32/int64 indices ({@code as}): in place in
         * the mapping when stored that way, else read and converted to float32 or int64 on the heap.
         */
        Window window(long start, int n, DType as) {
            if (n == 0) {
                // rows without stored values (an all-zero X has an empty, unchunked X/data jhdf cannot slice)
                return switch (as) {
                    case FLOAT32 -> new Window(MemorySegment.NULL, start, ValueLayout.JAVA_FLOAT, null, null);
                    case INT32 -> new Window(MemorySegment.NULL, start, null, ValueLayout.JAVA_INT, null);
                    default -> new Window(MemorySegment.NULL, start, null, null, ValueLayout.JAVA_LONG);
                };
            }
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

        /**
         * Rows of a 2-D dataset as float32 or float64 ({@code wide}) in the platform's byte order, row {@code r} at
         * byte {@code rowOffsets[r]} of {@code into}: converted straight from the mapping or from decoded chunks.
         */
        void rows(long first, int count, MemorySegment into, long[] rowOffsets, boolean wide) {
            int width = dataset.getDimensions()[1];
            if (mapped != null) {
                long rowBytes = (long) width * type.byteSize();
                for (int r = 0; r < count; r++) {
                    ChunkedVector.convert(mapped, (first + r) * rowBytes, type, order, into, rowOffsets[r], width, wide);
                }
                return;
            }
            if (chunked != null) {
                chunked.rows(first, count, type, order, wide, into, rowOffsets);
            }
            // else the matrix holds no values (no rows, or rows of no genes): nothing to write
        }

        /** Elements of a 1-D dataset as float64, exactly as stored for float32/float64 (and integers up to 2^53). */
        void doubles(long start, int n, double[] into) {
            if (n == 0) {
                return;
            }
            MemorySegment target = MemorySegment.ofArray(into);
            if (mapped != null) {
                ChunkedVector.convert(mapped, start * type.byteSize(), type, order, target, 0, n, true);
            } else if (chunked != null) {
                ChunkedVector.convert(chunked.bytes(start, n), 0, type, order, target, 0, n, true);
            }
        }

        void floats(long start, int n, float[] into) {
            if (n == 0) {
                return;
            }
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
            }
        }

        /** Converts to int64; int32 and int64 stored in the mapping are read in place by {@link #window} instead. */
        void longs(long start, int n, long[] into) {
            if (n == 0) {
                return;
            }
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
            }
        }
    }
}
