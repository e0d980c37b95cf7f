package dev.memfit.io.hdf5;

import dev.memfit.DType;
import dev.memfit.InvalidFileException;
import io.jhdf.AbstractNode;
import io.jhdf.HdfFile;
import io.jhdf.ObjectHeader;
import io.jhdf.api.Dataset;
import io.jhdf.api.dataset.ChunkedDataset;
import io.jhdf.btree.BTreeV1;
import io.jhdf.dataset.chunked.Chunk;
import io.jhdf.dataset.chunked.DatasetInfo;
import io.jhdf.dataset.chunked.indexing.BTreeIndex;
import io.jhdf.dataset.chunked.indexing.ExtensibleArrayIndex;
import io.jhdf.dataset.chunked.indexing.FixedArrayIndex;
import io.jhdf.dataset.chunked.indexing.ImplicitChunkIndex;
import io.jhdf.dataset.chunked.indexing.SingleChunkIndex;
import io.jhdf.filter.FilterManager;
import io.jhdf.object.message.DataLayoutMessage.ChunkedDataLayoutMessage;
import io.jhdf.object.message.DataLayoutMessage.ChunkedDataLayoutMessageV4;
import io.jhdf.object.message.FilterPipelineMessage;
import io.jhdf.object.message.FilterPipelineMessage.FilterInfo;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.BitSet;
import java.util.Collection;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;
import java.util.zip.DataFormatException;

/**
 * A one- or two-dimensional chunked HDF5 dataset read without jhdf on the read path: a 1-D one by element ranges
 * (anndata stores every sparse array this way: {@code maxshape=(None,)} forces chunking, often with gzip), a 2-D one
 * by row ranges (dense X written with {@code compression=}, or chunked by h5py).
 *
 * <p>The chunk index is read once at open through jhdf's public index classes and flattened into arrays by chunk
 * number (row-major over the chunk grid). Unfiltered chunks are served from the file mapping (zero copy when a 1-D
 * range lies in one chunk or in file-adjacent chunks). Filtered chunks (deflate, shuffle, fletcher32 natively; lzf,
 * lz4 and bitshuffle through jhdf's filters) are decoded on the calling thread, each chunk's filter mask honoured, and
 * kept in a {@link Cache} bounded in bytes. A 2-D row range touches a band of chunk rows times every chunk column:
 * each chunk is decoded (or found in the cache) once per read and all its rows in the range copied at once.
 * Thread-safe.
 */
final class ChunkedVector {

    private static final int DEFLATE = 1;
    private static final int SHUFFLE = 2;
    private static final int FLETCHER32 = 3;
    /** Filters jhdf 0.13 decodes (lzf, lz4, bitshuffle): delegated one at a time so that masks are honoured. */
    private static final List<Integer> THROUGH_JHDF = List.of(32000, 32004, 32008);

    /**
     * The most bytes one stored byte can decode to: deflate's largest ratio (a 258-byte match coded in 2 bits,
     * 1032:1), above what lzf (88:1) and lz4 (255:1), the other compressors memfit reads, can reach. A chunk claiming
     * more than its stored size times this is damaged, whatever it holds.
     */
    static final long MOST_EXPANSION = 1032;


    private final Path file;
    private final String name;
    private final MemorySegment mapping;
    /** Elements of a 1-D dataset; rows of a 2-D one. */
    private final long length;
    /** 1 for a 1-D dataset; the number of columns of a 2-D one. */
    private final long columns;
    private final boolean matrix;
    private final int elementSize;
    /** Elements per chunk of a 1-D dataset; rows per chunk of a 2-D one. */
    private final int chunkElements;
    /** 1 for a 1-D dataset; columns per chunk of a 2-D one. */
    private final int chunkColumns;
    /** Chunks per chunk row (1 for a 1-D dataset). */
    private final int gridColumns;
    private final int chunkBytes;
    /** What unwritten chunks of a 2-D dataset read as (1-D datasets need 0). */
    private final double fill;
    /** Per chunk number: file offset of the stored chunk (-1: never written, reads as the fill value), stored size, filter mask. */
    private final long[] offsets;
    private final int[] sizes;
    private final int[] masks;
    private final FilterInfo[] filters;
    private final Cache cache;
    private final int cacheId;
    /** How many chunks of the grid are stored (the others read as the fill value). */
    private final int storedChunks;
    private String index = "none (no chunk written)";

    /**
     * Reads the chunk index of a dataset and checks it.
     *
     * @param file the file, for messages
     * @param hdf the open file
     * @param mapping the whole file, mapped
     * @param dataset a one- or two-dimensional chunked dataset
     * @param cache where decoded chunks are kept, shared by the datasets of one file
     * @throws InvalidFileException when the index points outside the file or off the chunk grid, or a filter is
     *         not supported
     */
    ChunkedVector(Path file, HdfFile hdf, MemorySegment mapping, Dataset dataset, Cache cache) {
        this.file = file;
        this.name = dataset.getPath();
        this.mapping = mapping;
        this.cache = cache;
        this.cacheId = cache.register();
        long[] dims = dataset.getDimensionsAsLong();
        int[] chunkDims = ((ChunkedDataset) dataset).getChunkDimensions();
        if (dims.length < 1 || dims.length > 2 || chunkDims.length != dims.length || Arrays.stream(chunkDims).anyMatch(c -> c <= 0)) {
            throw new InvalidFileException(file, -1, "a one- or two-dimensional chunked " + name, "dimensions "
                    + Arrays.toString(dims) + ", chunks " + Arrays.toString(chunkDims));
        }
        this.length = dims[0];
        this.columns = dims.length == 2 ? dims[1] : 1;
        this.matrix = dims.length == 2;
        this.elementSize = dataset.getDataType().getSize();
        this.chunkElements = chunkDims[0];
        this.chunkColumns = dims.length == 2 ? chunkDims[1] : 1;
        this.gridColumns = Math.toIntExact((columns + chunkColumns - 1) / chunkColumns);
        this.chunkBytes = Math.multiplyExact(Math.multiplyExact(chunkElements, chunkColumns), elementSize);
        ObjectHeader header = ((AbstractNode) dataset).getHeader();
        this.filters = header.hasMessageOfType(FilterPipelineMessage.class)
                ? header.getMessageOfType(FilterPipelineMessage.class).getFilters().toArray(FilterInfo[]::new) : new FilterInfo[0];
        for (FilterInfo filter : filters) {
            int id = filter.getId();
            if (id != DEFLATE && id != SHUFFLE && id != FLETCHER32 && !THROUGH_JHDF.contains(id)) {
                throw new InvalidFileException(file, -1, name + " compressed with a filter memfit reads (deflate, shuffle, "
                        + "fletcher32, lzf, lz4, bitshuffle)", "filter " + id + " (" + filter.getName() + ")");
            }
        }
        long chunkCount = Math.multiplyExact((length + chunkElements - 1) / chunkElements, (long) gridColumns);
        // every chunk of a dataset anndata or h5py writes is stored, each with an index entry of at least 8 bytes: a
        // count past what the file could index is a damaged shape or chunk size, refused before 16 bytes per chunk
        // of bookkeeping are allocated for it
        long mostChunks = mapping.byteSize() / 8 + 1024;
        if (chunkCount > mostChunks) {
            throw new InvalidFileException(file, -1, name + " of at most " + mostChunks + " chunks (an index entry each "
                    + "in this " + mapping.byteSize() + "-byte file)", chunkCount + " chunks of " + Arrays.toString(chunkDims)
                    + " for dimensions " + Arrays.toString(dims));
        }
        int count = Math.toIntExact(chunkCount);
        this.offsets = new long[count];
        this.sizes = new int[count];
        this.masks = new int[count];
        Arrays.fill(offsets, -1);
        long base = hdf.getUserBlockSize();
        int stored = 0;
        for (Chunk chunk : chunks(hdf, dataset, header, chunkDims)) {
            long[] at0 = chunk.getChunkOffset();
            long element = at0[0];
            long column = dims.length == 2 ? at0[1] : 0;
            long at = base + chunk.getAddress();
            int size = chunk.getSize();
            if (element < 0 || element % chunkElements != 0 || element >= length
                    || column < 0 || column % chunkColumns != 0 || column >= columns) {
                throw new InvalidFileException(file, at, "chunks of " + name + " at multiples of " + Arrays.toString(chunkDims)
                        + " below " + Arrays.toString(dims), "a chunk at " + Arrays.toString(at0));
            }
            int k = Math.toIntExact(element / chunkElements * gridColumns + column / chunkColumns);
            if (offsets[k] >= 0) {
                throw new InvalidFileException(file, at, "one chunk of " + name + " at " + Arrays.toString(at0), "two");
            }
            if (at < 0 || size <= 0 || at + size > mapping.byteSize()) {
                throw new InvalidFileException(file, at, "chunk " + k + " of " + name + " (" + size + " bytes) inside the "
                        + mapping.byteSize() + "-byte file", "a chunk past its end");
            }
            BitSet skipped = chunk.getFilterMask();
            int mask = skipped == null || skipped.isEmpty() ? 0 : (int) skipped.toLongArray()[0];
            if (raw(mask) && size != chunkBytes) {
                throw new InvalidFileException(file, at, "unfiltered chunk " + k + " of " + name + " of " + chunkBytes + " bytes",
                        size + " bytes");
            }
            // checked here, before anything is allocated for the chunk: a damaged chunk shape (or stored size) would
            // otherwise size a decoding buffer by its claim
            long most = mostDecodedBytes(size, mask);
            if (chunkBytes > most) {
                throw new InvalidFileException(file, at, "chunk " + k + " of " + name + " (" + size + " bytes stored) decoding to at most "
                        + most + " bytes (" + (most == size ? "its filters do not compress" : MOST_EXPANSION + " times its stored size, "
                        + "deflate's largest ratio") + ")", "chunks of " + chunkBytes + " bytes (" + Arrays.toString(chunkDims)
                        + " of " + elementSize + "-byte elements)");
            }
            stored++;
            offsets[k] = at;
            sizes[k] = size;
            masks[k] = mask;
        }
        double fillValue = 0;
        if (Arrays.stream(offsets).anyMatch(offset -> offset < 0)) {
            // unwritten chunks read as the fill value: zeros (the HDF5 and h5py default) for 1-D datasets, whose raw
            // bytes are served as stored; any number for 2-D ones, which are converted value by value anyway
            Object value = dataset.getFillValue();
            if (value instanceof Number number && number.doubleValue() != 0) {
                if (dims.length == 1) {
                    throw new InvalidFileException(file, -1, name + " with unwritten chunks filled with 0",
                            "fill value " + value + " (not supported)");
                }
                fillValue = number.doubleValue();
            }
        }
        this.fill = fillValue;
        this.storedChunks = stored;
    }

    /** The most bytes a stored chunk of this size can decode to with the filters its mask leaves applied. */
    private long mostDecodedBytes(int size, int mask) {
        for (int i = 0; i < filters.length; i++) {
            int id = filters[i].getId();
            if ((mask & 1 << i) == 0 && id != SHUFFLE && id != FLETCHER32) {
                return size * MOST_EXPANSION;
            }
        }
        return size;   // shuffle and checksums keep the size (the checksum adds 4 bytes)
    }

    /**
     * Whether every chunk of the grid is stored: so for every dataset anndata writes, which writes all its data.
     * Only then does the file's size bound the dataset's (each stored chunk decodes to at most
     * {@link #MOST_EXPANSION} times its size); an unwritten chunk costs nothing in the file whatever its size.
     *
     * @return true when no chunk reads as the fill value
     */
    boolean complete() {
        return storedChunks == offsets.length;
    }

    /**
     * Refuses a dataset with unwritten chunks where it is read whole by its claimed length (an obs column, a row
     * pointer): its size would then be justified by nothing in the file.
     *
     * @param what what the dataset is, for the message
     * @throws InvalidFileException when a chunk is not stored
     */
    void requireComplete(String what) {
        if (!complete()) {
            throw new InvalidFileException(file, -1, what + " with every chunk stored, as anndata writes it (it is read whole)",
                    (offsets.length - storedChunks) + " of its " + offsets.length + " chunks unwritten (" + length
                            + " elements claimed, in chunks of " + chunkElements + ")");
        }
    }

    /** The chunk index through jhdf's public index classes (what its own lazy lookup does, once, here). */
    private Collection<Chunk> chunks(HdfFile hdf, Dataset dataset, ObjectHeader header, int[] chunkDims) {
        var storage = hdf.getHdfBackingStorage();
        DatasetInfo info = new DatasetInfo(chunkBytes, dataset.getDimensionsAsLong(), chunkDims);
        try {
            if (header.hasMessageOfType(ChunkedDataLayoutMessageV4.class)) {
                var layout = header.getMessageOfType(ChunkedDataLayoutMessageV4.class);
                if (layout.getAddress() == -1L) {
                    return List.of();
                }
                index = switch (layout.getIndexingType()) {
                    case ChunkedDataLayoutMessageV4.SINGLE_CHUNK_INDEX -> "single chunk";
                    case ChunkedDataLayoutMessageV4.IMPLICIT_INDEX -> "implicit";
                    case ChunkedDataLayoutMessageV4.FIXED_ARRAY_INDEX -> "fixed array";
                    case ChunkedDataLayoutMessageV4.EXTENSIBLE_ARRAY_INDEX -> "extensible array";
                    default -> "B-tree v2";
                };
                return (switch (layout.getIndexingType()) {
                    case ChunkedDataLayoutMessageV4.SINGLE_CHUNK_INDEX -> new SingleChunkIndex(layout, info);
                    case ChunkedDataLayoutMessageV4.IMPLICIT_INDEX -> new ImplicitChunkIndex(layout.getAddress(), info);
                    case ChunkedDataLayoutMessageV4.FIXED_ARRAY_INDEX -> new FixedArrayIndex(storage, layout.getAddress(), info);
                    case ChunkedDataLayoutMessageV4.EXTENSIBLE_ARRAY_INDEX -> new ExtensibleArrayIndex(storage, layout.getAddress(), info);
                    case ChunkedDataLayoutMessageV4.B_TREE_V2_INDEX -> new BTreeIndex(storage, layout.getAddress(), info);
                    default -> throw new InvalidFileException(file, -1, "a chunk index type 1 to 5 for " + name,
                            "type " + layout.getIndexingType());
                }).getAllChunks();
            }
            var layout = header.getMessageOfType(ChunkedDataLayoutMessage.class);
            if (layout.getBTreeAddress() == -1L) {
                return List.of();
            }
            index = "B-tree v1";
            return new ArrayList<>(BTreeV1.createDataBTree(storage, layout.getBTreeAddress(), chunkDims.length).getChunks());
        } catch (InvalidFileException e) {
            throw e;
        } catch (RuntimeException e) {
            throw new InvalidFileException(file, -1, "a readable chunk index for " + name, Hdf5.reason(e)
                    + "; the file is probably truncated or damaged: copy or write it again", e);
        }
    }

    /** Whether a chunk with this mask is stored as is: no filters, or every one skipped. */
    private boolean raw(int mask) {
        long all = filters.length >= Long.SIZE ? -1L : (1L << filters.length) - 1;
        return filters.length == 0 || ((mask & 0xffffffffL) & all) == all;
    }

    /**
     * The kind of chunk index the file has for this dataset, for diagnostics and tests.
     *
     * @return "B-tree v1", "single chunk", "implicit", "fixed array", "extensible array" or "B-tree v2"
     */
    String index() {
        return index;
    }

    /**
     * The number of elements.
     *
     * @return the dataset's length
     */
    long length() {
        return length;
    }

    /**
     * The file offset of an element when its chunk is stored unfiltered, for messages.
     *
     * @param element an element
     * @return its byte offset in the file, or -1 when it is compressed or never written
     */
    long offsetOf(long element) {
        if (matrix) {
            return -1;
        }
        int k = (int) (element / chunkElements);
        return k < offsets.length && offsets[k] >= 0 && raw(masks[k]) ? offsets[k] + element % chunkElements * elementSize : -1;
    }

    /**
     * Elements {@code [start, start + n)} in the file's byte order, element {@code start} at byte 0: a slice of the
     * mapping when they lie in one unfiltered chunk or in file-adjacent ones, a slice of a decoded chunk when in one,
     * else a heap copy.
     *
     * @param start the first element
     * @param n how many
     * @return {@code n * elementSize} bytes
     */
    MemorySegment bytes(long start, long n) {
        if (matrix) {
            throw new IllegalStateException(name + " is two-dimensional: read it by rows");
        }
        if (start < 0 || n < 0 || start + n > length) {
            throw new IndexOutOfBoundsException("elements [" + start + ", " + (start + n) + ") outside [0, " + length + ") of "
                    + name + " in " + file);
        }
        long byteCount = n * elementSize;
        if (n == 0) {
            return MemorySegment.ofArray(new byte[0]);
        }
        int first = (int) (start / chunkElements);
        int last = (int) ((start + n - 1) / chunkElements);
        long within = start % chunkElements * elementSize;
        if (first == last && offsets[first] >= 0 && !raw(masks[first])) {
            return MemorySegment.ofArray(decoded(first)).asSlice(within, byteCount);
        }
        if (adjacentRaw(first, last)) {
            return mapping.asSlice(offsets[first] + within, byteCount);
        }
        byte[] copy = new byte[Math.toIntExact(byteCount)];
        MemorySegment into = MemorySegment.ofArray(copy);
        long done = 0;
        for (int k = first; k <= last; k++) {
            long from = k == first ? within : 0;
            long take = Math.min(chunkBytes - from, byteCount - done);
            if (offsets[k] < 0) {
                into.asSlice(done, take).fill((byte) 0);
            } else if (raw(masks[k])) {
                MemorySegment.copy(mapping, offsets[k] + from, into, done, take);
            } else {
                MemorySegment.copy(MemorySegment.ofArray(decoded(k)), from, into, done, take);
            }
            done += take;
        }
        return into;
    }

    /**
     * The bytes one decoded read of a band of chunk rows holds: every chunk column of one chunk row, decoded. A cache
     * of at least this size lets consecutive row ranges that share a band decode its chunks once.
     *
     * @return bytes (0 for a 1-D dataset)
     */
    long bandBytes() {
        return matrix ? (long) gridColumns * chunkBytes : 0;
    }

    /**
     * Rows per chunk of a 2-D dataset: reads of whole multiples of it, starting at a multiple of it, touch every
     * chunk once.
     *
     * @return rows
     */
    int chunkRows() {
        return chunkElements;
    }

    /**
     * Rows {@code [first, first + count)} of a 2-D dataset, every column, converted to float32 or float64 in the
     * platform's byte order; row {@code r} goes to {@code into} at byte {@code rowOffsets[r]}. Each chunk the range
     * touches is decoded (or taken from the cache) once, and all its rows in the range are copied from it at once;
     * partial edge chunks give only their part inside the dataset; unwritten chunks read as the fill value.
     *
     * @param first the first row
     * @param count how many rows
     * @param stored the stored element type
     * @param order the stored byte order
     * @param wide float64 values rather than float32
     * @param into the destination
     * @param rowOffsets the byte offset of each row in {@code into}
     */
    void rows(long first, int count, DType stored, ByteOrder order, boolean wide, MemorySegment into, long[] rowOffsets) {
        if (!matrix) {
            throw new IllegalStateException(name + " is one-dimensional: read it by element ranges");
        }
        if (first < 0 || count < 0 || first + count > length) {
            throw new IndexOutOfBoundsException("rows [" + first + ", " + (first + count) + ") outside [0, " + length + ") of "
                    + name + " in " + file);
        }
        if (count == 0) {
            return;
        }
        int outSize = wide ? Double.BYTES : Float.BYTES;
        long rowStride = (long) chunkColumns * elementSize;
        int firstBand = (int) (first / chunkElements);
        int lastBand = (int) ((first + count - 1) / chunkElements);
        for (int band = firstBand; band <= lastBand; band++) {
            long bandStart = (long) band * chunkElements;
            long from = Math.max(first, bandStart);
            long to = Math.min(first + count, bandStart + chunkElements);
            for (int j = 0; j < gridColumns; j++) {
                int k = band * gridColumns + j;
                long column = (long) j * chunkColumns;
                int width = (int) Math.min(chunkColumns, columns - column);
                MemorySegment chunk = offsets[k] < 0 ? null : raw(masks[k]) ? mapping.asSlice(offsets[k], chunkBytes)
                        : MemorySegment.ofArray(decoded(k));
                for (long r = from; r < to; r++) {
                    long target = rowOffsets[(int) (r - first)] + column * outSize;
                    if (chunk == null) {
                        fill(into, target, width, wide, fill);
                    } else {
                        convert(chunk, (r - bandStart) * rowStride, stored, order, into, target, width, wide);
                    }
                }
            }
        }
    }

    private static void fill(MemorySegment into, long at, int n, boolean wide, double value) {
        if (value == 0 && Double.doubleToRawLongBits(value) == 0) {
            into.asSlice(at, (long) n * (wide ? Double.BYTES : Float.BYTES)).fill((byte) 0);
        } else if (wide) {
            for (int i = 0; i < n; i++) {
                into.set(ValueLayout.JAVA_DOUBLE_UNALIGNED, at + (long) i * Double.BYTES, value);
            }
        } else {
            for (int i = 0; i < n; i++) {
                into.set(ValueLayout.JAVA_FLOAT_UNALIGNED, at + (long) i * Float.BYTES, (float) value);
            }
        }
    }

    /**
     * Converts {@code n} consecutive stored elements to float32 or float64 in the platform's byte order: a bulk copy
     * (byte-swapped when needed) when the types match, a loop specialised by type otherwise.
     *
     * @param from the stored bytes
     * @param fromOffset the first element's byte offset
     * @param stored the stored type
     * @param order the stored byte order
     * @param into the destination
     * @param intoOffset the first value's byte offset
     * @param n how many
     * @param wide float64 rather than float32
     */
    static void convert(MemorySegment from, long fromOffset, DType stored, ByteOrder order, MemorySegment into,
                        long intoOffset, int n, boolean wide) {
        if (stored == DType.FLOAT32 && !wide) {
            MemorySegment.copy(from, ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(order), fromOffset, into,
                    ValueLayout.JAVA_FLOAT_UNALIGNED, intoOffset, n);
        } else if (stored == DType.FLOAT64 && wide) {
            MemorySegment.copy(from, ValueLayout.JAVA_DOUBLE_UNALIGNED.withOrder(order), fromOffset, into,
                    ValueLayout.JAVA_DOUBLE_UNALIGNED, intoOffset, n);
        } else if (stored == DType.FLOAT64 || stored == DType.FLOAT32) {
            DType.convertFloats(from, fromOffset, stored, order, into, intoOffset, n);
        } else if (stored == DType.INT32 || stored == DType.INT64) {
            // count matrices stored as integers (int64 exactly up to 2^53 in float64)
            ValueLayout.OfInt narrow = ValueLayout.JAVA_INT_UNALIGNED.withOrder(order);
            ValueLayout.OfLong long64 = ValueLayout.JAVA_LONG_UNALIGNED.withOrder(order);
            boolean isLong = stored == DType.INT64;
            for (int i = 0; i < n; i++) {
                double value = isLong ? from.get(long64, fromOffset + (long) i * Long.BYTES)
                        : from.get(narrow, fromOffset + (long) i * Integer.BYTES);
                if (wide) {
                    into.set(ValueLayout.JAVA_DOUBLE_UNALIGNED, intoOffset + (long) i * Double.BYTES, value);
                } else {
                    into.set(ValueLayout.JAVA_FLOAT_UNALIGNED, intoOffset + (long) i * Float.BYTES, (float) value);
                }
            }
        } else {
            int size = stored.byteSize();
            for (int i = 0; i < n; i++) {
                double value = stored.getDouble(from, fromOffset + (long) i * size, order);
                if (wide) {
                    into.set(ValueLayout.JAVA_DOUBLE_UNALIGNED, intoOffset + (long) i * Double.BYTES, value);
                } else {
                    into.set(ValueLayout.JAVA_FLOAT_UNALIGNED, intoOffset + (long) i * Float.BYTES, (float) value);
                }
            }
        }
    }

    private boolean adjacentRaw(int first, int last) {
        for (int k = first; k <= last; k++) {
            if (offsets[k] < 0 || !raw(masks[k]) || k > first && offsets[k] != offsets[k - 1] + chunkBytes) {
                return false;
            }
        }
        return true;
    }

    /** A decoded chunk, from the cache or decoded here once however many threads ask at the same time. */
    private byte[] decoded(int k) {
        long key = (long) cacheId << 32 | k;
        CompletableFuture<byte[]> entry = cache.entries.get(key);
        if (entry == null) {
            CompletableFuture<byte[]> mine = new CompletableFuture<>();
            entry = cache.entries.putIfAbsent(key, mine);
            if (entry == null) {
                // decoded outside the map's locks: a slow chunk does not hold up other keys of the same bin
                entry = mine;
                try {
                    mine.complete(decode(k));
                    cache.decoded(chunkBytes);
                    cache.added(key, chunkBytes);
                } catch (RuntimeException | Error e) {
                    cache.entries.remove(key, mine);
                    mine.completeExceptionally(e);
                }
            } else {
                cache.hit();
            }
        } else {
            cache.hit();
        }
        try {
            return entry.join();
        } catch (CompletionException e) {
            if (e.getCause() instanceof RuntimeException cause) {
                throw cause;
            }
            throw e;
        }
    }

    /** Runs the pipeline backwards over one stored chunk, skipping the filters its mask says were not applied. */
    private byte[] decode(int k) {
        MemorySegment stored = mapping.asSlice(offsets[k], sizes[k]);
        byte[] current = null;
        for (int i = filters.length - 1; i >= 0; i--) {
            if ((masks[k] & 1 << i) != 0) {
                continue;
            }
            FilterInfo filter = filters[i];
            MemorySegment input = current == null ? stored : MemorySegment.ofArray(current);
            try {
                current = switch (filter.getId()) {
                    case DEFLATE -> dev.memfit.io.codec.Zlib.inflate(input, expectedSize(k, i));
                    case SHUFFLE -> unshuffle(input.toArray(ValueLayout.JAVA_BYTE), filter.getData().length > 0 ? filter.getData()[0] : elementSize);
                    case FLETCHER32 -> fletcher32(input);
                    default -> {
                        checkSizesForJhdf(filter, input, expectedSize(k, i));
                        yield FilterManager.getPipeline(List.of(filter)).decode(input.toArray(ValueLayout.JAVA_BYTE));
                    }
                };
            } catch (InvalidFileException e) {
                throw e;
            } catch (RuntimeException | DataFormatException e) {
                throw corrupt(k, filter, Hdf5.reason(e) + "; the file is damaged: copy or write it again", e);
            }
        }
        if (current == null || current.length != chunkBytes) {
            throw new InvalidFileException(file, offsets[k], "chunk " + k + " of " + name + " decoding to " + chunkBytes + " bytes",
                    (current == null ? sizes[k] : current.length) + " bytes");
        }
        return current;
    }

    /**
     * Checks the sizes that jhdf's lzf, lz4 and bitshuffle decoders allocate by (the filter's parameters, the
     * stream's headers) against the size the chunk must decode to, and the lz4 block lengths against the stream,
     * before jhdf allocates anything: jhdf trusts them.
     */
    private static void checkSizesForJhdf(FilterInfo filter, MemorySegment input, int size) throws DataFormatException {
        int[] data = filter.getData();
        switch (filter.getId()) {
            case 32000 -> {
                // h5py's lzf: cd_values[2] is the chunk's size in bytes, which jhdf allocates
                if (data.length < 3 || data[2] != size) {
                    throw new DataFormatException("lzf parameters " + Arrays.toString(data) + " for a chunk of " + size + " bytes");
                }
            }
            case 32004 -> checkLz4Blocks(input, size, false);
            case 32008 -> {
                // bitshuffle: [.., .., element size, block size, compression]; lz4 streams are framed as the lz4 filter's
                if (data.length < 5 || data[2] <= 0 || data[3] < 0) {
                    throw new DataFormatException("bitshuffle parameters " + Arrays.toString(data));
                }
                if (data[4] == 2) {
                    checkLz4Blocks(input, size, true);
                }
            }
            default -> {
                // no other filter gets this far (the constructor refuses them)
            }
        }
    }

    /**
     * The HDF5 lz4 framing (and bitshuffle's): an 8-byte big-endian total size, a 4-byte block size, then per block
     * a 4-byte length and that many bytes; the total must be the chunk's size and every block inside the stream. The
     * lz4 filter writes a block for every started block size (its block size at most the chunk's); bitshuffle only
     * for whole blocks (the rest follows as is), and allocates a block of its block size, which an lz4 block of the
     * stream must be able to decode to ({@link #MOST_EXPANSION}).
     */
    private static void checkLz4Blocks(MemorySegment input, int size, boolean bitshuffle) throws DataFormatException {
        String what = bitshuffle ? "bitshuffle lz4" : "lz4";
        ValueLayout.OfLong total = ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.BIG_ENDIAN);
        ValueLayout.OfInt word = ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.BIG_ENDIAN);
        if (input.byteSize() < 12 || input.get(total, 0) != size) {
            throw new DataFormatException(what + " stream of " + input.byteSize() + " bytes not starting with the chunk's size "
                    + size);
        }
        long block = input.get(word, 8) & 0xffffffffL;
        if (block == 0 || (bitshuffle ? block > MOST_EXPANSION * input.byteSize() : block > size && size > 0)) {
            throw new DataFormatException(what + " block size " + block + " for a chunk of " + size + " bytes");
        }
        long blocks = bitshuffle ? Math.max(1, size / block) : (size + block - 1) / block;
        long position = 12;
        for (long done = 0; done < blocks * block && done < size; done += block) {
            if (position + 4 > input.byteSize()) {
                throw new DataFormatException(what + " stream ending before the block for byte " + done);
            }
            long length = input.get(word, position) & 0xffffffffL;
            position += 4;
            if (length > input.byteSize() - position) {
                throw new DataFormatException(what + " block of " + length + " bytes at byte " + position + " of "
                        + input.byteSize());
            }
            position += length;
        }
    }

    /** The size a filter's output must have: the chunk plus the checksums of the fletcher32 filters applied before it. */
    private int expectedSize(int k, int filter) {
        int size = chunkBytes;
        for (int i = 0; i < filter; i++) {
            if (filters[i].getId() == FLETCHER32 && (masks[k] & 1 << i) == 0) {
                size += Integer.BYTES;
            }
        }
        return size;
    }

    /** HDF5 shuffle: byte plane b holds byte b of every element; trailing {@code length % size} bytes are verbatim. */
    static byte[] unshuffle(byte[] in, int size) {
        if (size <= 1) {
            return in;
        }
        byte[] out = new byte[in.length];
        int n = in.length / size;
        for (int b = 0; b < size; b++) {
            int plane = b * n;
            for (int i = 0; i < n; i++) {
                out[i * size + b] = in[plane + i];
            }
        }
        System.arraycopy(in, n * size, out, n * size, in.length - n * size);
        return out;
    }

    /** Strips and checks the trailing Fletcher-32 checksum (HDF5 stores it in either byte order, depending on version). */
    private byte[] fletcher32(MemorySegment input) throws DataFormatException {
        byte[] all = input.toArray(ValueLayout.JAVA_BYTE);
        if (all.length < Integer.BYTES) {
            throw new DataFormatException("a fletcher32 chunk of " + all.length + " bytes");
        }
        int length = all.length - Integer.BYTES;
        int sum = fletcher32(all, length);
        int little = ByteBuffer.wrap(all, length, Integer.BYTES).order(java.nio.ByteOrder.LITTLE_ENDIAN).getInt();
        if (sum != little && sum != Integer.reverseBytes(little)) {
            throw new DataFormatException("Fletcher-32 checksum " + Integer.toHexString(sum) + ", stored "
                    + Integer.toHexString(little));
        }
        return Arrays.copyOf(all, length);
    }

    /** H5_checksum_fletcher32: big-endian 16-bit words, sums folded every 360 words. */
    static int fletcher32(byte[] data, int length) {
        long sum1 = 0;
        long sum2 = 0;
        int words = length / 2;
        int at = 0;
        while (words > 0) {
            int block = Math.min(words, 360);
            words -= block;
            for (int i = 0; i < block; i++, at += 2) {
                sum1 += ((data[at] & 0xff) << 8) | (data[at + 1] & 0xff);
                sum2 += sum1;
            }
            sum1 = (sum1 & 0xffff) + (sum1 >>> 16);
            sum2 = (sum2 & 0xffff) + (sum2 >>> 16);
        }
        if (length % 2 != 0) {
            sum1 += (data[at] & 0xff) << 8;
            sum2 += sum1;
            sum1 = (sum1 & 0xffff) + (sum1 >>> 16);
            sum2 = (sum2 & 0xffff) + (sum2 >>> 16);
        }
        sum1 = (sum1 & 0xffff) + (sum1 >>> 16);
        sum2 = (sum2 & 0xffff) + (sum2 >>> 16);
        return (int) (sum2 << 16 | sum1);
    }

    private InvalidFileException corrupt(int k, FilterInfo filter, String found, Throwable cause) {
        return new InvalidFileException(file, offsets[k], "chunk " + k + " of " + name + " (" + sizes[k] + " bytes) decodable by filter "
                + filter.getId() + " (" + filter.getName() + ")", "a corrupt chunk: " + found, cause);
    }

    /**
     * Decoded chunks of the datasets of one file, bounded in bytes; evicted oldest first (reads of CSR rows and of
     * dense row bands move forward through the chunks, so the oldest is the least likely to be read again). Counts
     * hits, decodes and decoded bytes, per cache and for the whole process ({@link #processStatistics()}).
     */
    static final class Cache {
        private static final LongAdder ALL_HITS = new LongAdder();
        private static final LongAdder ALL_DECODES = new LongAdder();
        private static final LongAdder ALL_DECODED_BYTES = new LongAdder();

        private final AtomicLong budget;
        private final ConcurrentHashMap<Long, CompletableFuture<byte[]>> entries = new ConcurrentHashMap<>();
        private final ConcurrentLinkedQueue<Long> order = new ConcurrentLinkedQueue<>();
        private final AtomicLong used = new AtomicLong();
        private final AtomicInteger datasets = new AtomicInteger();
        private final LongAdder hits = new LongAdder();
        private final LongAdder decodes = new LongAdder();
        private final LongAdder decodedBytes = new LongAdder();

        /**
         * A cache.
         *
         * @param budget the most decoded bytes kept (the chunk just decoded stays, even when larger)
         */
        Cache(long budget) {
            this.budget = new AtomicLong(budget);
        }

        /**
         * Raises the bound to at least this many bytes (a dense X's band of chunks must fit, or streaming passes
         * would decode its chunks again).
         *
         * @param bytes the least bound
         */
        void atLeast(long bytes) {
            budget.accumulateAndGet(bytes, Math::max);
        }

        /**
         * The bound.
         *
         * @return bytes
         */
        long budget() {
            return budget.get();
        }

        private int register() {
            return datasets.getAndIncrement();
        }

        private void hit() {
            hits.increment();
            ALL_HITS.increment();
        }

        private void decoded(long bytes) {
            decodes.increment();
            decodedBytes.add(bytes);
            ALL_DECODES.increment();
            ALL_DECODED_BYTES.add(bytes);
        }

        private void added(long key, long bytes) {
            order.add(key);
            long total = used.addAndGet(bytes);
            while (total > budget.get()) {
                Long oldest = order.poll();
                if (oldest == null) {
                    break;
                }
                if (oldest == key) {
                    // the chunk just decoded stays, whatever the budget: its reader is about to use it
                    order.add(key);
                    break;
                }
                CompletableFuture<byte[]> entry = entries.get(oldest);
                // an entry still being decoded is not charged yet (its decoder charges it when done)
                if (entry != null && entry.isDone() && !entry.isCompletedExceptionally() && entries.remove(oldest, entry)) {
                    total = used.addAndGet(-entry.join().length);
                }
            }
        }

        /**
         * The decoded bytes held now.
         *
         * @return bytes
         */
        long usedBytes() {
            return used.get();
        }

        /**
         * What this cache has done so far.
         *
         * @return hits, decodes and decoded bytes
         */
        H5ad.ChunkCacheStatistics statistics() {
            return new H5ad.ChunkCacheStatistics(hits.sum(), decodes.sum(), decodedBytes.sum(), budget.get());
        }

        /**
         * What the caches of every file opened in this process have done so far (streams open one file per reader
         * thread: this sums them).
         *
         * @return hits, decodes and decoded bytes; the bound is the default of files opened now
         */
        static H5ad.ChunkCacheStatistics processStatistics() {
            return new H5ad.ChunkCacheStatistics(ALL_HITS.sum(), ALL_DECODES.sum(), ALL_DECODED_BYTES.sum(),
                    H5ad.DEFAULT_CHUNK_CACHE_BYTES);
        }
    }
}
