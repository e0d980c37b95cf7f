package dev.memfit.io.zarr;

import com.fasterxml.jackson.databind.JsonNode;
import dev.memfit.InvalidFileException;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.Charset;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;

/**
 * One zarr v2 array of a {@link Zarr} store, read by ranges: elements of a 1-D array (anndata's CSR {@code X/data},
 * {@code X/indices}, {@code X/indptr}, dataframe columns) and rows of an N-D one (a dense {@code X}, {@code obsm}
 * matrices), decoding each chunk the range touches once and keeping it in the store's chunk cache.
 *
 * <p>Numbers are written in native byte order and C (row-major) order whatever the chunks hold (big-endian types are
 * swapped, Fortran-order chunks transposed). Chunks absent from the store read as the array's {@code fill_value}
 * (zeros when it is null). Text ({@code |O} strings with anndata's {@code vlen-utf8} codec, fixed-length {@code U}
 * and {@code S}) is read with {@link #readStrings}. A 0-d array (a scalar in anndata's {@code uns}) reads as one
 * element. Thread-safe: any number of threads may read at once.
 *
 * <p>Caching: a chunk that a read needs only part of is decoded once into the store's cache, so reading cell after
 * cell of a CSR matrix decodes each chunk once. A chunk that a read takes whole (a loader reading runs of cells that
 * span chunks) is served from the cache when it is there, and otherwise decoded into a per-thread buffer and not
 * cached, so that streaming through an array larger than the cache neither allocates a chunk per read nor evicts the
 * chunks that partial reads come back to.
 *
 * <pre>{@code
 * try (Zarr zarr = Zarr.open(Path.of("atlas.zarr"))) {
 *     ZarrArray indptr = zarr.array("X/indptr");
 *     long[] bounds = indptr.readLongs(row, 2);              // the cell's first and past-the-end element
 *     ZarrArray data = zarr.array("X/data");
 *     float[] values = data.readFloats(bounds[0], Math.toIntExact(bounds[1] - bounds[0]));
 * }
 * }</pre>
 */
public final class ZarrArray {

    private static final ByteOrder NATIVE = ByteOrder.nativeOrder();
    /** Counted per decoded string on top of its characters: the object, its array and the reference. */
    private static final long STRING_OVERHEAD = 56;
    private static final String MISSING = "missing chunk";
    /** Chunks a read takes whole are decoded into a per-thread buffer up to this size (larger ones are allocated). */
    private static final int STREAM_BUFFER_LIMIT = 16 << 20;
    private static final ThreadLocal<byte[][]> STREAM_BUFFER = ThreadLocal.withInitial(() -> new byte[1][0]);

    private final Zarr owner;
    private final String path;
    private final int id;
    private final ZarrAttributes attributes;
    private final ZarrDType dtype;
    /** The shape as stored ({@code []} for a 0-d array). */
    private final long[] shape;
    private final int[] chunks;
    /** The shape and chunks used for reading: a 0-d array counts as {@code [1]}. */
    private final long[] dims;
    private final int[] chunkDims;
    private final long[] grid;
    private final boolean fortran;
    private final Codec compressor;
    private final String separator;
    private final JsonNode fillValue;
    /** Elements per chunk, and bytes per decoded numeric or fixed-width chunk. */
    private final int chunkElements;
    private final int chunkBytes;
    private final long rowElements;
    /** Whether a decoded chunk needs no conversion (C order, native byte order), so whole chunks can be streamed. */
    private final boolean streamable;
    /** Set for an array whose every chunk must be stored ({@link #refuseMissingChunks}). */
    private volatile boolean storedOnly;
    /** The fill value's bytes once known (empty when zero). */
    private volatile byte[] fillPattern;

    ZarrArray(Zarr owner, String path, int id, JsonNode meta, ZarrAttributes attributes) {
        this.owner = owner;
        this.path = path;
        this.id = id;
        this.attributes = attributes;
        String key = key(".zarray");
        if (meta.path("zarr_format").asInt(-1) != 2) {
            throw invalid(key, "zarr_format 2", String.valueOf(meta.get("zarr_format")));
        }
        this.shape = longs(meta.get("shape"), key, "shape", 0);
        long[] chunkList = longs(meta.get("chunks"), key, "chunks", 1);
        if (chunkList.length != shape.length) {
            throw invalid(key, "as many chunk sizes as dimensions (" + shape.length + ")", "chunks " + meta.get("chunks"));
        }
        this.chunks = new int[chunkList.length];
        for (int d = 0; d < chunks.length; d++) {
            if (chunkList[d] > Integer.MAX_VALUE) {
                throw invalid(key, "chunk sizes below 2^31", "chunks " + meta.get("chunks"));
            }
            chunks[d] = (int) chunkList[d];
        }
        JsonNode type = meta.get("dtype");
        this.dtype = type != null && type.isTextual() ? ZarrDType.parse(type.asText()) : null;
        if (dtype == null) {
            throw invalid(key, "a dtype memfit reads (" + ZarrDType.SUPPORTED + ")", "dtype " + type);
        }
        String order = meta.path("order").asText("C");
        if (!order.equals("C") && !order.equals("F")) {
            throw invalid(key, "order C or F", "order " + meta.get("order"));
        }
        this.fortran = order.equals("F") && shape.length > 1;
        JsonNode compressorNode = meta.get("compressor");
        if (compressorNode == null || compressorNode.isNull()) {
            this.compressor = null;
        } else {
            this.compressor = Codecs.compressor(compressorNode);
            if (compressor == null) {
                throw invalid(key, "a compressor memfit decodes (" + Codecs.SUPPORTED + ")", "compressor " + compressorNode);
            }
        }
        JsonNode filters = meta.get("filters");
        int filterCount = filters == null || filters.isNull() ? 0 : filters.size();
        if (dtype.kind() == ZarrDType.Kind.STRING) {
            if (filterCount != 1 || !filters.get(0).path("id").asText("").equals("vlen-utf8")) {
                throw invalid(key, "the object codec vlen-utf8 for a |O array (how anndata writes strings)",
                        "filters " + filters);
            }
        } else if (filterCount > 0) {
            throw invalid(key, "no filters (memfit decodes filters only for strings: vlen-utf8)", "filters " + filters);
        }
        String dimensionSeparator = meta.path("dimension_separator").asText(".");
        if (!dimensionSeparator.equals(".") && !dimensionSeparator.equals("/")) {
            throw invalid(key, "dimension_separator \".\" or \"/\"", "\"" + dimensionSeparator + "\"");
        }
        this.separator = dimensionSeparator;
        this.fillValue = meta.get("fill_value");
        this.dims = shape.length == 0 ? new long[] {1} : shape.clone();
        this.chunkDims = shape.length == 0 ? new int[] {1} : chunks.clone();
        this.grid = new long[dims.length];
        long elements = 1;
        long row = 1;
        try {
            for (int d = 0; d < dims.length; d++) {
                grid[d] = dims[d] / chunkDims[d] + (dims[d] % chunkDims[d] == 0 ? 0 : 1);
                elements = Math.multiplyExact(elements, chunkDims[d]);
                if (d > 0) {
                    row = Math.multiplyExact(row, dims[d]);
                }
            }
            // the array's bytes must be countable, so that sizes and offsets computed from them cannot overflow
            Math.multiplyExact(Math.multiplyExact(dims[0], row), (long) Math.max(1, dtype.itemSize()));
        } catch (ArithmeticException e) {
            throw invalid(key, "a shape and chunks of fewer than 2^63 elements and bytes", "shape " + meta.get("shape")
                    + ", chunks " + meta.get("chunks") + " of " + dtype);
        }
        long bytes = elements * Math.max(1, dtype.itemSize());
        if (elements > Integer.MAX_VALUE - 8 || bytes > Integer.MAX_VALUE - 8) {
            throw invalid(key, "chunks of at most 2 GiB", "chunks " + Arrays.toString(chunks) + " of " + dtype);
        }
        this.chunkElements = (int) elements;
        this.chunkBytes = dtype.kind() == ZarrDType.Kind.STRING ? 0 : (int) bytes;
        this.rowElements = row;
        this.streamable = !fortran && (dtype.itemSize() == 1 || !dtype.isNumeric() || dtype.order() == NATIVE)
                && dtype.kind() != ZarrDType.Kind.STRING;
    }

    // ---- what the array is

    /**
     * The array's path in its store, such as {@code X/data}.
     *
     * @return the path, "" for an array at the root
     */
    public String path() {
        return path;
    }

    /**
     * The shape.
     *
     * @return the length of each dimension ({@code []} for a 0-d array)
     */
    public long[] shape() {
        return shape.clone();
    }

    /**
     * The chunk shape.
     *
     * @return the chunk length along each dimension ({@code []} for a 0-d array)
     */
    public int[] chunks() {
        return chunks.clone();
    }

    /**
     * The element type.
     *
     * @return the type
     */
    public ZarrDType dtype() {
        return dtype;
    }

    /**
     * The array's attributes ({@code .zattrs}).
     *
     * @return the attributes, empty when it has none
     */
    public ZarrAttributes attributes() {
        return attributes;
    }

    /**
     * The number of rows: the length of the first dimension (elements of a 1-D array; 1 for a 0-d array).
     *
     * @return rows
     */
    public long length() {
        return dims[0];
    }

    /**
     * Elements per row: the product of the dimensions after the first (1 for a 1-D or 0-d array).
     *
     * @return elements
     */
    public long rowElements() {
        return rowElements;
    }

    /**
     * Bytes per row as {@link #readRows} writes them.
     *
     * @return bytes
     * @throws UnsupportedOperationException for variable-length strings
     */
    public long rowBytes() {
        requireFixedWidth("rowBytes");
        return rowElements * dtype.itemSize();
    }

    /**
     * The number of elements.
     *
     * @return the product of the shape (1 for a 0-d array)
     */
    public long size() {
        return Math.multiplyExact(dims[0], rowElements);
    }

    /**
     * The compressor, for {@code inspect}.
     *
     * @return such as "blosc(lz4, shuffle)", or "none"
     */
    public String compressor() {
        return compressor == null ? "none" : compressor.describe();
    }

    /**
     * The bytes of the array's chunks as they lie in the store (compressed), asking the store for each chunk's size
     * (in a bucket, a request per chunk not asked about before); chunks left out (fill value) count 0.
     *
     * @return bytes
     */
    public long storedBytes() {
        long total = 0;
        long chunksInAll = 1;
        for (long g : grid) {
            chunksInAll = Math.multiplyExact(chunksInAll, g);
        }
        long[] coords = new long[grid.length];
        for (long c = 0; c < chunksInAll; c++) {
            long rest = c;
            for (int d = grid.length - 1; d >= 0; d--) {
                coords[d] = rest % grid[d];
                rest /= grid[d];
            }
            total += Math.max(0, owner.store().size(chunkKey(coords)));
        }
        return total;
    }

    @Override
    public String toString() {
        return (path.isEmpty() ? "/" : path) + " " + dtype + " " + Arrays.toString(shape) + " chunks "
                + Arrays.toString(chunks) + (fortran ? " F order" : "") + " " + compressor();
    }

    // ---- raw rows

    /**
     * Reads rows into memory: {@code count} rows from {@code first}, each {@link #rowBytes()} bytes, in C order and
     * native byte order (the layout of {@link ZarrDType#toDType()} arrays). For a 1-D array rows are elements; for
     * fixed-length text ({@code S}, {@code U}) the bytes are the chunk's, unconverted.
     *
     * @param first the first row
     * @param count rows
     * @param into at least {@code count * rowBytes()} bytes
     * @throws IndexOutOfBoundsException when the rows are not in the array or {@code into} is too small
     * @throws InvalidFileException naming the chunk's key when a chunk does not decode
     */
    public void readRows(long first, long count, MemorySegment into) {
        requireFixedWidth("readRows");
        checkRange(first, count, dims[0]);
        long need = Math.multiplyExact(count, rowBytes());
        if (into.byteSize() < need) {
            throw new IndexOutOfBoundsException(this + ": " + count + " rows need " + need + " bytes, the segment has "
                    + into.byteSize());
        }
        if (count == 0) {
            return;
        }
        int n = dims.length;
        int item = dtype.itemSize();
        long firstChunk = first / chunkDims[0];
        long lastChunk = (first + count - 1) / chunkDims[0];
        long[] coords = new long[n];
        for (long c0 = firstChunk; c0 <= lastChunk; c0++) {
            long rowStart = Math.max(first, c0 * chunkDims[0]);
            long rowEnd = Math.min(first + count, Math.min((c0 + 1) * chunkDims[0], dims[0]));
            Arrays.fill(coords, 0);
            coords[0] = c0;
            boolean whole = rowStart == c0 * chunkDims[0] && rowEnd == Math.min((c0 + 1) * chunkDims[0], dims[0]);
            while (true) {
                byte[] chunk = whole && streamable ? streamedChunk(coords) : numericChunk(coords);
                copyRegion(chunk, coords, rowStart, rowEnd, first, into, item);
                int d = n - 1;
                while (d >= 1 && ++coords[d] == grid[d]) {
                    coords[d] = 0;
                    d--;
                }
                if (d < 1) {
                    break;
                }
            }
        }
    }

    /**
     * Reads elements of a 1-D (or 0-d) array into memory, in native byte order; the same as {@link #readRows}.
     *
     * @param offset the first element
     * @param count elements
     * @param into at least {@code count} times the element size
     * @throws UnsupportedOperationException when the array has more than one dimension
     */
    public void read(long offset, long count, MemorySegment into) {
        requireVector("read");
        readRows(offset, count, into);
    }

    /**
     * Copies the part of one chunk inside rows [rowStart, rowEnd) to the output laid out from row {@code first}; a
     * null chunk (not in the store) writes the fill value there instead, without a chunk-sized buffer.
     */
    private void copyRegion(byte[] chunk, long[] coords, long rowStart, long rowEnd, long first, MemorySegment into,
            int item) {
        if (chunk == null && storedOnly) {
            throw missing(coords);
        }
        int n = dims.length;
        long[] lo = new long[n];
        long[] hi = new long[n];
        lo[0] = rowStart;
        hi[0] = rowEnd;
        boolean wholeRows = true;
        for (int d = 1; d < n; d++) {
            lo[d] = coords[d] * chunkDims[d];
            hi[d] = Math.min(lo[d] + chunkDims[d], dims[d]);
            wholeRows &= chunkDims[d] == dims[d];
        }
        long chunkRowStart = coords[0] * chunkDims[0];
        if (wholeRows) {
            // every row of the chunk is a whole row of the array: one copy
            long bytes = (rowEnd - rowStart) * rowElements * item;
            long from = (rowStart - chunkRowStart) * rowElements * item;
            long to = (rowStart - first) * rowElements * item;
            if (chunk == null) {
                fill(into, to, bytes);
            } else {
                MemorySegment.copy(chunk, (int) from, into, ValueLayout.JAVA_BYTE, to, (int) bytes);
            }
            return;
        }
        int runBytes = (int) ((hi[n - 1] - lo[n - 1]) * item);
        long[] index = lo.clone();
        while (true) {
            long out = 0;
            long in = 0;
            for (int d = 0; d < n; d++) {
                out = out * (d == 0 ? 1 : dims[d]) + (d == 0 ? index[0] - first : index[d]);
                in = in * chunkDims[d] + (index[d] - (d == 0 ? chunkRowStart : lo[d]));
            }
            if (chunk == null) {
                fill(into, out * item, runBytes);
            } else {
                MemorySegment.copy(chunk, (int) (in * item), into, ValueLayout.JAVA_BYTE, out * item, runBytes);
            }
            int d = n - 2;
            while (d >= 0 && ++index[d] == hi[d]) {
                index[d] = lo[d];
                d--;
            }
            if (d < 0) {
                break;
            }
        }
    }

    // ---- typed reads of 1-D arrays

    /**
     * Reads elements as whole numbers: booleans (0, 1) and integers; unsigned 64-bit values above
     * {@link Long#MAX_VALUE} come back with their bits as they are (negative).
     *
     * @param offset the first element
     * @param count elements
     * @return the values
     * @throws UnsupportedOperationException for floats and text, or an array of more than one dimension
     */
    public long[] readLongs(long offset, int count) {
        requireVector("readLongs");
        requireWhole("readLongs");
        return longsOf(raw(offset, count), count);
    }

    private void requireWhole(String method) {
        if (dtype.kind() == ZarrDType.Kind.FLOAT || dtype.isText()) {
            throw new UnsupportedOperationException(this + " holds " + dtype.kind() + ", not whole numbers: use "
                    + (dtype.isText() ? "readStrings" : "readDoubles") + ", not " + method);
        }
    }

    private long[] longsOf(ByteBuffer raw, int count) {
        long[] out = new long[count];
        int item = dtype.itemSize();
        boolean signed = dtype.kind() == ZarrDType.Kind.INT;
        for (int i = 0; i < count; i++) {
            int at = i * item;
            out[i] = switch (item) {
                case 1 -> signed ? raw.get(at) : raw.get(at) & 0xffL;
                case 2 -> signed ? raw.getShort(at) : raw.getShort(at) & 0xffffL;
                case 4 -> signed ? raw.getInt(at) : raw.getInt(at) & 0xffffffffL;
                default -> raw.getLong(at);
            };
        }
        return out;
    }

    private double[] doublesOf(ByteBuffer raw, int count) {
        double[] out = new double[count];
        for (int i = 0; i < count; i++) {
            out[i] = number(raw, i);
        }
        return out;
    }

    /**
     * Reads elements as doubles: any numeric type (booleans as 0 and 1, unsigned integers as their value).
     *
     * @param offset the first element
     * @param count elements
     * @return the values
     * @throws UnsupportedOperationException for text, or an array of more than one dimension
     */
    public double[] readDoubles(long offset, int count) {
        requireVector("readDoubles");
        requireNumeric("readDoubles");
        return doublesOf(raw(offset, count), count);
    }

    /**
     * Reads elements as floats: any numeric type, converted as a Java cast would (CSR {@code X/data} is float32 and
     * comes back exactly).
     *
     * @param offset the first element
     * @param count elements
     * @return the values
     * @throws UnsupportedOperationException for text, or an array of more than one dimension
     */
    public float[] readFloats(long offset, int count) {
        requireVector("readFloats");
        requireNumeric("readFloats");
        ByteBuffer raw = raw(offset, count);
        float[] out = new float[count];
        if (dtype.kind() == ZarrDType.Kind.FLOAT && dtype.itemSize() == 4) {
            raw.asFloatBuffer().get(out);
            return out;
        }
        for (int i = 0; i < count; i++) {
            out[i] = (float) number(raw, i);
        }
        return out;
    }

    private double number(ByteBuffer raw, int i) {
        int item = dtype.itemSize();
        int at = i * item;
        return switch (dtype.kind()) {
            case FLOAT -> item == 2 ? Float.float16ToFloat(raw.getShort(at)) : item == 4 ? raw.getFloat(at) : raw.getDouble(at);
            case INT -> item == 1 ? raw.get(at) : item == 2 ? raw.getShort(at) : item == 4 ? raw.getInt(at) : (double) raw.getLong(at);
            default -> item == 1 ? raw.get(at) & 0xff : item == 2 ? raw.getShort(at) & 0xffff
                    : item == 4 ? raw.getInt(at) & 0xffffffffL : unsigned(raw.getLong(at));
        };
    }

    private static double unsigned(long bits) {
        double value = (double) (bits >>> 1) * 2.0;
        return value + (bits & 1);
    }

    private ByteBuffer raw(long offset, int count) {
        if (count < 0) {
            throw new IndexOutOfBoundsException(this + ": a count of " + count);
        }
        byte[] bytes = new byte[Math.multiplyExact(count, dtype.itemSize())];
        readRows(offset, count, MemorySegment.ofArray(bytes));
        return ByteBuffer.wrap(bytes).order(NATIVE);
    }

    /**
     * Reads elements as text: {@code |O} strings (anndata's), {@code U} and {@code S} strings with their trailing
     * NULs removed as numpy does ({@code S} bytes read as ISO-8859-1).
     *
     * @param offset the first element
     * @param count elements
     * @return the strings
     * @throws UnsupportedOperationException for numbers, or an array of more than one dimension
     */
    public String[] readStrings(long offset, int count) {
        requireVector("readStrings");
        if (!dtype.isText()) {
            throw new UnsupportedOperationException(this + " holds numbers, not text: use readLongs or readDoubles");
        }
        checkRange(offset, count, dims[0]);
        String[] out = new String[count];
        if (dtype.kind() != ZarrDType.Kind.STRING) {
            byte[] bytes = new byte[Math.multiplyExact(count, dtype.itemSize())];
            readRows(offset, count, MemorySegment.ofArray(bytes));
            for (int i = 0; i < count; i++) {
                out[i] = fixedString(bytes, i * dtype.itemSize());
            }
            return out;
        }
        int done = 0;
        long[] coords = new long[1];
        while (done < count) {
            long element = offset + done;
            coords[0] = element / chunkDims[0];
            int within = (int) (element - coords[0] * chunkDims[0]);
            int n = (int) Math.min(count - done, chunkDims[0] - within);
            Object chunk = chunk(coords);
            if (chunk == MISSING) {
                Arrays.fill(out, done, done + n, fillString());
            } else {
                String[] strings = (String[]) chunk;
                if (within + n > strings.length) {
                    throw invalid(chunkKey(coords), "at least " + (within + n) + " strings", strings.length + " strings");
                }
                System.arraycopy(strings, within, out, done, n);
            }
            done += n;
        }
        return out;
    }

    private String fixedString(byte[] bytes, int at) {
        int item = dtype.itemSize();
        if (dtype.kind() == ZarrDType.Kind.BYTES) {
            int end = at + item;
            while (end > at && bytes[end - 1] == 0) {
                end--;
            }
            return new String(bytes, at, end - at, StandardCharsets.ISO_8859_1);
        }
        int end = at + item;
        while (end > at && bytes[end - 1] == 0 && bytes[end - 2] == 0 && bytes[end - 3] == 0 && bytes[end - 4] == 0) {
            end -= 4;
        }
        Charset utf32 = dtype.order() == ByteOrder.BIG_ENDIAN ? Charset.forName("UTF-32BE") : Charset.forName("UTF-32LE");
        return new String(bytes, at, end - at, utf32);
    }

    // ---- whole arrays

    /**
     * Reads the whole array as whole numbers, flattened in C order (see {@link #readLongs}).
     *
     * @return the values
     * @throws UnsupportedOperationException for floats and text, or more than 2^31 - 9 elements
     */
    public long[] toLongArray() {
        requireWhole("toLongArray");
        return longsOf(wholeBytes(), wholeCount());
    }

    /**
     * Reads the whole array as doubles, flattened in C order (see {@link #readDoubles}).
     *
     * @return the values
     * @throws UnsupportedOperationException for text, or more than 2^31 - 9 elements
     */
    public double[] toDoubleArray() {
        requireNumeric("toDoubleArray");
        return doublesOf(wholeBytes(), wholeCount());
    }

    /**
     * Reads the whole of a 1-D (or 0-d) array as text (see {@link #readStrings}).
     *
     * @return the strings
     * @throws UnsupportedOperationException for numbers, more than one dimension, or more than 2^31 - 9 elements
     */
    public String[] toStringArray() {
        return readStrings(0, wholeCount());
    }

    /**
     * Reads the whole of a 1-D array that must have every chunk stored, as anndata writes its arrays (sparse
     * pointers, dataframe columns): its bytes in native byte order, as {@link #readRows} writes them. Memory grows with
     * the chunks read, never with the shape {@code .zarray} claims; a chunk the store lacks is refused rather than read
     * as the fill value, which nothing in the store would back.
     *
     * @return the elements' bytes
     * @throws InvalidFileException naming the missing or damaged chunk, or an array of more than 2 GiB
     */
    byte[] readStoredBytes() {
        requireVector("readStoredBytes");
        requireFixedWidth("readStoredBytes");
        long total = dims[0] * dtype.itemSize();
        if (total > Integer.MAX_VALUE - 8) {
            throw invalid(key(".zarray"), "an array of at most 2 GiB to read whole", total + " bytes");
        }
        byte[] out = new byte[(int) Math.min(total, 1 << 16)];
        int filled = 0;
        long[] coords = new long[1];
        for (long c = 0; filled < total; c++) {
            coords[0] = c;
            byte[] chunk = streamable ? streamedChunk(coords) : numericChunk(coords);
            if (chunk == null) {
                throw missing(coords);
            }
            int take = (int) Math.min(chunkBytes, total - filled);
            if (take > out.length - filled) {
                out = Arrays.copyOf(out, (int) Math.min(total, Math.max(2L * out.length, (long) filled + take)));
            }
            System.arraycopy(chunk, 0, out, filled, take);
            filled += take;
        }
        return out;
    }

    /**
     * {@link #readStoredBytes()} as whole numbers (see {@link #readLongs}).
     *
     * @return the values
     */
    long[] readStoredLongs() {
        requireWhole("readStoredLongs");
        byte[] bytes = readStoredBytes();
        return longsOf(ByteBuffer.wrap(bytes).order(NATIVE), bytes.length / dtype.itemSize());
    }

    /**
     * Reads the whole of a 1-D text array that must have every chunk stored, as {@link #readStoredBytes()} reads
     * numbers: the strings as {@link #readStrings} gives them, the array growing with the chunks read.
     *
     * @return the strings
     * @throws InvalidFileException naming the missing or damaged chunk
     */
    String[] readStoredStrings() {
        requireVector("readStoredStrings");
        if (dtype.kind() != ZarrDType.Kind.STRING) {
            byte[] bytes = readStoredBytes();
            String[] out = new String[bytes.length / dtype.itemSize()];
            for (int i = 0; i < out.length; i++) {
                out[i] = fixedString(bytes, i * dtype.itemSize());
            }
            return out;
        }
        if (dims[0] > Integer.MAX_VALUE - 8) {
            throw invalid(key(".zarray"), "fewer than 2^31 strings to read whole", dims[0] + " strings");
        }
        int total = (int) dims[0];
        String[] out = new String[Math.min(total, 1 << 12)];
        int filled = 0;
        long[] coords = new long[1];
        for (long c = 0; filled < total; c++) {
            coords[0] = c;
            Object chunk = chunk(coords);
            if (chunk == MISSING) {
                throw missing(coords);
            }
            String[] strings = (String[]) chunk;
            int take = (int) Math.min(chunkElements, total - filled);
            if (strings.length < take) {
                throw invalid(chunkKey(coords), "at least " + take + " strings", strings.length + " strings");
            }
            if (take > out.length - filled) {
                out = Arrays.copyOf(out, (int) Math.min(total, Math.max(2L * out.length, (long) filled + take)));
            }
            System.arraycopy(strings, 0, out, filled, take);
            filled += take;
        }
        return out;
    }

    /**
     * Makes every read refuse a chunk the store lacks rather than read it as the fill value: for arrays anndata
     * writes whole (a sparse X's data and indices), where a missing chunk is damage.
     */
    void refuseMissingChunks() {
        storedOnly = true;
    }

    private InvalidFileException missing(long[] coords) {
        return invalid(chunkKey(coords), "chunk " + Arrays.toString(coords) + " of " + this + " stored (anndata writes every"
                + " chunk of the arrays memfit reads whole or by stored values)", "no such key in the store");
    }

    private int wholeCount() {
        long size = size();
        if (size > Integer.MAX_VALUE - 8) {
            throw new UnsupportedOperationException(this + " has " + size + " elements, more than a Java array holds: read it "
                    + "by ranges");
        }
        return (int) size;
    }

    /** The whole array's bytes in C order and native byte order. */
    private ByteBuffer wholeBytes() {
        byte[] bytes = new byte[Math.multiplyExact(wholeCount(), dtype.itemSize())];
        readRows(0, dims[0], MemorySegment.ofArray(bytes));
        return ByteBuffer.wrap(bytes).order(NATIVE);
    }

    // ---- chunks

    /**
     * A chunk that a read takes whole: from the cache when it is there, else decoded into this thread's buffer and
     * not cached (a reader that takes whole chunks streams through them; caching them would only evict the chunks
     * that partial reads come back to). The buffer is valid until this thread's next read.
     */
    private byte[] streamedChunk(long[] coords) {
        long number = chunkNumber(coords);
        Object cached = owner.cache().peek(new ChunkCache.Key(id, number));
        if (cached != null) {
            return cached == MISSING ? null : (byte[]) cached;
        }
        String key = chunkKey(coords);
        byte[] raw = owner.store().get(key);
        if (raw == null) {
            return null;
        }
        if (compressor == null) {
            owner.cache().decodedUncached();
            if (raw.length != chunkBytes) {
                throw invalid(key, "a chunk of " + chunkBytes + " bytes (no compressor)", raw.length + " bytes");
            }
            return raw;
        }
        checkDecodable(key, raw);
        byte[] buffer = chunkBytes > STREAM_BUFFER_LIMIT ? new byte[chunkBytes] : streamBuffer(chunkBytes);
        owner.cache().decodedUncached();
        try {
            compressor.decodeInto(raw, chunkBytes, buffer);
        } catch (Codec.Corrupt e) {
            throw new InvalidFileException(owner.store().location(key), -1, "a chunk encoded with " + compressor.describe(),
                    e.getMessage(), e);
        }
        return buffer;
    }

    private static byte[] streamBuffer(int size) {
        byte[][] holder = STREAM_BUFFER.get();
        if (holder[0].length < size) {
            holder[0] = new byte[size];
        }
        return holder[0];
    }

    private long chunkNumber(long[] coords) {
        long number = 0;
        for (int d = 0; d < coords.length; d++) {
            number = number * grid[d] + coords[d];
        }
        return number;
    }

    /** A decoded numeric (or fixed-width text) chunk, or null for a chunk the store does not hold (the fill value). */
    private byte[] numericChunk(long[] coords) {
        Object chunk = chunk(coords);
        return chunk == MISSING ? null : (byte[]) chunk;
    }

    /**
     * Refuses a stored chunk that cannot decode to the chunk size {@code .zarray} claims, before a buffer of that size
     * is allocated for it: more than the compressor's largest ratio allows for its stored bytes.
     */
    private void checkDecodable(String key, byte[] raw) {
        long most = compressor.mostDecodedBytes(raw);
        if (chunkBytes > most) {
            throw invalid(key, "a chunk " + compressor.describe() + " can decode from its " + raw.length + " bytes (at most "
                    + most + ")", "chunks of " + chunkBytes + " bytes (" + Arrays.toString(chunks) + " of " + dtype + ")");
        }
    }

    /** The decoded chunk at these grid coordinates: a {@code byte[]}, a {@code String[]}, or {@link #MISSING}. */
    private Object chunk(long[] coords) {
        long number = chunkNumber(coords);
        long[] copy = coords.clone();
        return owner.cache().get(new ChunkCache.Key(id, number), () -> decode(copy));
    }

    private ChunkCache.Entry decode(long[] coords) {
        String key = chunkKey(coords);
        byte[] raw = owner.store().get(key);
        if (raw == null) {
            return new ChunkCache.Entry(MISSING, 64);
        }
        try {
            if (dtype.kind() == ZarrDType.Kind.STRING) {
                byte[] bytes = compressor == null ? raw : compressor.decode(raw, -1);
                int valid = (int) Math.min(chunkElements, dims[0] - coords[0] * chunkDims[0]);
                String[] strings = Codecs.vlenUtf8(bytes, valid);
                long weight = 64;
                for (String s : strings) {
                    weight += STRING_OVERHEAD + 2L * s.length();
                }
                return new ChunkCache.Entry(strings, weight);
            }
            if (compressor != null) {
                checkDecodable(key, raw);
            }
            byte[] bytes = compressor == null ? raw : compressor.decode(raw, chunkBytes);
            if (bytes.length != chunkBytes) {
                throw new Codec.Corrupt(bytes.length + " bytes where a chunk of " + Arrays.toString(chunks) + " "
                        + dtype + " holds " + chunkBytes);
            }
            if (fortran) {
                bytes = toCOrder(bytes);
            }
            if (dtype.isNumeric() && dtype.itemSize() > 1 && dtype.order() != NATIVE) {
                swap(bytes, dtype.itemSize());
            }
            return new ChunkCache.Entry(bytes, bytes.length);
        } catch (Codec.Corrupt e) {
            throw new InvalidFileException(owner.store().location(key), -1, "a chunk encoded with "
                    + (compressor == null ? "no compressor" : compressor.describe())
                    + (dtype.kind() == ZarrDType.Kind.STRING ? " and vlen-utf8" : ""), e.getMessage(), e);
        }
    }

    /** The store key of a chunk: the array's path, then the grid coordinates joined by the separator. */
    String chunkKey(long[] coords) {
        StringBuilder key = new StringBuilder(path.isEmpty() ? "" : path + "/");
        if (shape.length == 0) {
            return key.append('0').toString();
        }
        for (int d = 0; d < coords.length; d++) {
            if (d > 0) {
                key.append(separator);
            }
            key.append(coords[d]);
        }
        return key.toString();
    }

    /** Transposes a Fortran-order chunk (first index fastest) into C order. */
    private byte[] toCOrder(byte[] f) {
        int n = chunkDims.length;
        int item = dtype.itemSize();
        byte[] c = new byte[f.length];
        int[] index = new int[n];
        long[] cStride = new long[n];
        cStride[n - 1] = 1;
        for (int d = n - 2; d >= 0; d--) {
            cStride[d] = cStride[d + 1] * chunkDims[d + 1];
        }
        for (int i = 0; i < chunkElements; i++) {
            long to = 0;
            for (int d = 0; d < n; d++) {
                to += index[d] * cStride[d];
            }
            System.arraycopy(f, i * item, c, (int) to * item, item);
            for (int d = 0; d < n && ++index[d] == chunkDims[d]; d++) {
                index[d] = 0;
            }
        }
        return c;
    }

    private static void swap(byte[] bytes, int item) {
        for (int at = 0; at + item <= bytes.length; at += item) {
            for (int i = 0, j = item - 1; i < j; i++, j--) {
                byte t = bytes[at + i];
                bytes[at + i] = bytes[at + j];
                bytes[at + j] = t;
            }
        }
    }

    /** Writes the fill value over {@code bytes} bytes (whole elements) of the output from {@code at}. */
    private void fill(MemorySegment into, long at, long bytes) {
        byte[] pattern = fillValueBytes();
        if (pattern == null) {
            into.asSlice(at, bytes).fill((byte) 0);
            return;
        }
        for (long done = 0; done < bytes; done += pattern.length) {
            MemorySegment.copy(pattern, 0, into, ValueLayout.JAVA_BYTE, at + done, pattern.length);
        }
    }

    /** One element of the fill value in native byte order, or null when it is all zero bytes. */
    private byte[] fillValueBytes() {
        byte[] pattern = fillPattern;
        if (pattern == null) {
            pattern = fillPattern();
            boolean zero = true;
            for (byte b : pattern) {
                zero &= b == 0;
            }
            pattern = zero ? new byte[0] : pattern;
            fillPattern = pattern;
        }
        return pattern.length == 0 ? null : pattern;
    }

    /** One element of the fill value in native byte order ({@code fill_value} null reads as zeros). */
    private byte[] fillPattern() {
        int item = dtype.itemSize();
        ByteBuffer out = ByteBuffer.allocate(item).order(NATIVE);
        JsonNode fill = fillValue;
        if (fill == null || fill.isNull()) {
            return out.array();
        }
        String key = key(".zarray");
        switch (dtype.kind()) {
            case BOOL -> out.put((byte) (fill.asBoolean() || fill.asDouble() != 0 ? 1 : 0));
            case INT, UINT -> {
                if (!fill.canConvertToExactIntegral()) {
                    throw invalid(key, "a whole fill_value for " + dtype, "fill_value " + fill);
                }
                long value = fill.bigIntegerValue().longValue();
                switch (item) {
                    case 1 -> out.put((byte) value);
                    case 2 -> out.putShort((short) value);
                    case 4 -> out.putInt((int) value);
                    default -> out.putLong(value);
                }
            }
            case FLOAT -> {
                double value;
                if (fill.isNumber()) {
                    value = fill.asDouble();
                } else {
                    value = switch (fill.asText()) {
                        case "NaN" -> Double.NaN;
                        case "Infinity" -> Double.POSITIVE_INFINITY;
                        case "-Infinity" -> Double.NEGATIVE_INFINITY;
                        default -> throw invalid(key, "a number, \"NaN\", \"Infinity\" or \"-Infinity\" as fill_value",
                                "fill_value " + fill);
                    };
                }
                switch (item) {
                    case 2 -> out.putShort(Float.floatToFloat16((float) value));
                    case 4 -> out.putFloat((float) value);
                    default -> out.putDouble(value);
                }
            }
            default -> {
                // S and U: zarr writes a base64 fill value; NULs (empty strings) are what anndata and numpy use
                if (fill.isTextual() && !fill.asText().isEmpty()) {
                    try {
                        byte[] decoded = java.util.Base64.getDecoder().decode(fill.asText());
                        System.arraycopy(decoded, 0, out.array(), 0, Math.min(decoded.length, item));
                    } catch (IllegalArgumentException e) {
                        throw invalid(key, "a base64 fill_value for " + dtype, "fill_value " + fill);
                    }
                }
            }
        }
        return out.array();
    }

    private String fillString() {
        return fillValue != null && fillValue.isTextual() ? fillValue.asText() : "";
    }

    // ---- checks

    private void requireFixedWidth(String method) {
        if (dtype.kind() == ZarrDType.Kind.STRING) {
            throw new UnsupportedOperationException(this + " holds variable-length strings: use readStrings, not " + method);
        }
    }

    private void requireNumeric(String method) {
        if (!dtype.isNumeric()) {
            throw new UnsupportedOperationException(this + " holds text: use readStrings, not " + method);
        }
    }

    private void requireVector(String method) {
        if (dims.length != 1) {
            throw new UnsupportedOperationException(this + " has " + dims.length + " dimensions: " + method
                    + " reads 1-D arrays; use readRows");
        }
    }

    private void checkRange(long first, long count, long length) {
        if (first < 0 || count < 0 || first > length - count) {
            throw new IndexOutOfBoundsException(this + ": rows " + first + ".." + (first + count) + " outside 0.." + length);
        }
    }

    private String key(String name) {
        return path.isEmpty() ? name : path + "/" + name;
    }

    private InvalidFileException invalid(String key, String expected, String found) {
        return new InvalidFileException(owner.store().location(key), -1, expected, found);
    }

    private long[] longs(JsonNode node, String key, String field, long least) {
        if (node == null || !node.isArray()) {
            throw invalid(key, "a list of whole numbers as " + field, String.valueOf(node));
        }
        long[] out = new long[node.size()];
        for (int i = 0; i < out.length; i++) {
            JsonNode item = node.get(i);
            if (!item.canConvertToExactIntegral() || !item.canConvertToLong() || item.asLong() < least) {
                throw invalid(key, "whole numbers >= " + least + " as " + field, node.toString());
            }
            out[i] = item.asLong();
        }
        return out;
    }
}
