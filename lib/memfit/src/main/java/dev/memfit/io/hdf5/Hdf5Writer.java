package dev.memfit.io.hdf5;

import dev.memfit.DType;
import io.jhdf.checksum.JenkinsLookup3HashLittle;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.zip.Deflater;

/**
 * A small streaming HDF5 writer: groups, attributes and datasets whose data is appended as it is produced, so a
 * dataset larger than memory is written in one pass. Datasets are contiguous, or chunked (one-dimensional) with
 * optional shuffle and deflate filters, the way h5py stores what anndata writes.
 *
 * <p>Written by hand because jhdf's writer (0.13) takes each dataset as one Java array, which puts the whole matrix on
 * the heap (its chunked and deflate support too). The files use the format's version 2 superblock and object headers
 * with compact link storage (HDF5 1.8+, what h5py writes with {@code libver='latest'}); strings are fixed-length
 * UTF-8, booleans an int8 enum {@code FALSE/TRUE} as h5py writes them. Chunked datasets use a version 3 layout
 * message with a version 1 B-tree chunk index, what h5py writes with its default {@code libver='earliest'} (anndata's
 * files), which every HDF5 reader understands. Raw data comes first in the file and the object headers are written by
 * {@link #close()}; a file that was not closed is not a valid HDF5 file (callers write under a temporary name).
 *
 * <p>One contiguous stream may be open at a time, and nothing else is written while it is (it owns the end of the
 * file until it is finished). Chunked streams can be open together and beside datasets given as arrays: each keeps
 * one chunk in memory and appends it, filtered, wherever the file ends when it is full.
 */
public final class Hdf5Writer implements AutoCloseable {

    private static final long UNDEFINED = -1L;
    private static final int SUPERBLOCK_BYTES = 48;

    private final Path file;
    private final FileChannel channel;
    private final Group root = new Group();
    private long end = SUPERBLOCK_BYTES;
    private Stream open;
    /** Chunked streams not finished yet. */
    private final Set<Stream> openChunked = new java.util.LinkedHashSet<>();
    private boolean closed;

    private Hdf5Writer(Path file) throws IOException {
        this.file = file;
        this.channel = FileChannel.open(file, StandardOpenOption.CREATE, StandardOpenOption.TRUNCATE_EXISTING,
                StandardOpenOption.WRITE, StandardOpenOption.READ);
    }

    /**
     * Creates (or truncates) a file.
     *
     * @param file where to write
     * @return the writer
     */
    public static Hdf5Writer create(Path file) {
        try {
            return new Hdf5Writer(file);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot create " + file, e);
        }
    }

    /**
     * The root group.
     *
     * @return the root group
     */
    public Group root() {
        return root;
    }

    /**
     * How a chunked dataset is stored: values per chunk, filters, and whether it may grow (what h5py records for
     * {@code maxshape=(None,)}, as anndata writes its sparse arrays). Immutable; each setting returns a copy.
     */
    public static final class Chunking {
        private final int values;
        private final int deflateLevel;
        private final boolean shuffle;
        private final boolean unlimited;

        private Chunking(int values, int deflateLevel, boolean shuffle, boolean unlimited) {
            this.values = values;
            this.deflateLevel = deflateLevel;
            this.shuffle = shuffle;
            this.unlimited = unlimited;
        }

        /**
         * Chunks of a number of values, unfiltered, of fixed size.
         *
         * @param values values per chunk, at least 1
         * @return the chunking
         */
        public static Chunking of(int values) {
            if (values < 1) {
                throw new IllegalArgumentException("a chunk holds at least 1 value, got " + values);
            }
            return new Chunking(values, -1, false, false);
        }

        /**
         * Chunks of the length h5py picks for a one-dimensional dataset of this many values ({@link #guessChunk}),
         * unfiltered, of fixed size.
         *
         * @param count the number of values the dataset will hold (0 when unknown: h5py then assumes 1,024)
         * @param type the element type
         * @return the chunking
         */
        public static Chunking h5py(long count, DType type) {
            return of(Math.toIntExact(guessChunk(new long[]{count}, type.byteSize())[0]));
        }

        /**
         * Compresses each chunk with deflate (h5py's {@code compression='gzip'}). A chunk that does not shrink is
         * stored compressed all the same (HDF5 would store it raw and say so in its filter mask, which jhdf ignores).
         *
         * @param level 0 to 9 (h5py's default is 4)
         * @return a copy with deflate
         */
        public Chunking deflate(int level) {
            if (level < 0 || level > 9) {
                throw new IllegalArgumentException("deflate level from 0 to 9, got " + level);
            }
            return new Chunking(values, level, shuffle, unlimited);
        }

        /**
         * Reorders each chunk's bytes by significance before deflate (HDF5's shuffle filter, h5py's {@code shuffle=True}).
         *
         * @return a copy with shuffle
         */
        public Chunking shuffle() {
            return new Chunking(values, deflateLevel, true, unlimited);
        }

        /**
         * Records the dataset as resizable without bound (h5py's {@code maxshape=(None,)}, as anndata writes X).
         *
         * @return a copy with an unlimited maximum size
         */
        public Chunking unlimited() {
            return new Chunking(values, deflateLevel, shuffle, true);
        }

        /**
         * The values per chunk.
         *
         * @return the chunk length
         */
        public int values() {
            return values;
        }

        /**
         * The deflate level.
         *
         * @return 0 to 9, or -1 without deflate
         */
        public int deflateLevel() {
            return deflateLevel;
        }

        /**
         * Whether the shuffle filter runs before deflate.
         *
         * @return true with shuffle
         */
        public boolean shuffled() {
            return shuffle;
        }

        /**
         * Whether the maximum size is unlimited.
         *
         * @return true when resizable
         */
        public boolean isUnlimited() {
            return unlimited;
        }

        @Override
        public String toString() {
            return "chunks of " + values + (shuffle ? ", shuffle" : "") + (deflateLevel >= 0 ? ", deflate " + deflateLevel : "")
                    + (unlimited ? ", unlimited" : "");
        }
    }

    private static final double CHUNK_BASE = 16 * 1024;
    private static final double CHUNK_MIN = 8 * 1024;
    private static final double CHUNK_MAX = 1024 * 1024;

    /**
     * h5py's chunk shape for a dataset ({@code h5py._hl.filters.guess_chunk}, what it uses whenever chunks are
     * implied, as for anndata's {@code maxshape=(None,)}): a target of 16 KiB times 2^log10(size in MiB), kept
     * between 8 KiB and 1 MiB, reached by halving the axes in turn (rounding up) until the chunk is under the target
     * or within 50% of it, and under 1 MiB.
     *
     * @param shape the dataset's shape (a 0 counts as 1,024, as h5py guesses for unlimited axes)
     * @param typeSize bytes per value
     * @return the chunk shape
     */
    public static long[] guessChunk(long[] shape, int typeSize) {
        if (shape.length == 0) {
            throw new IllegalArgumentException("chunks are not allowed for scalar datasets");
        }
        double[] chunks = new double[shape.length];
        double size = typeSize;
        for (int i = 0; i < shape.length; i++) {
            chunks[i] = shape[i] != 0 ? shape[i] : 1024;
            size *= chunks[i];
        }
        double target = CHUNK_BASE * Math.pow(2, Math.log10(size / (1024. * 1024)));
        if (target > CHUNK_MAX) {
            target = CHUNK_MAX;
        } else if (target < CHUNK_MIN) {
            target = CHUNK_MIN;
        }
        for (int index = 0; ; index++) {
            double values = 1;
            for (double c : chunks) {
                values *= c;
            }
            double chunkBytes = values * typeSize;
            if ((chunkBytes < target || Math.abs(chunkBytes - target) / target < 0.5) && chunkBytes < CHUNK_MAX) {
                break;
            }
            if (values == 1) {
                break; // an element larger than CHUNK_MAX
            }
            chunks[index % chunks.length] = Math.ceil(chunks[index % chunks.length] / 2.0);
        }
        long[] result = new long[chunks.length];
        for (int i = 0; i < chunks.length; i++) {
            result[i] = (long) chunks[i];
        }
        return result;
    }

    /** Attributes shared by groups and datasets. */
    public abstract sealed class Node permits Group, Dataset {
        final Map<String, Object> attributes = new LinkedHashMap<>();
        long address = UNDEFINED;
        String name = "/";

        @Override
        public String toString() {
            return name;
        }

        /**
         * Sets an attribute.
         *
         * @param name the name
         * @param value a {@code String}, {@code String[]}, {@code Boolean}, {@code Integer}, {@code Long},
         *              {@code Double}, {@code long[]}, {@code int[]} or {@code double[]}
         * @return this node
         */
        public Node attribute(String name, Object value) {
            Encoded.of(value); // fail early on an unsupported type
            attributes.put(name, value);
            return this;
        }
    }

    /** A group: children by name in insertion order. */
    public final class Group extends Node {
        private final Map<String, Node> children = new LinkedHashMap<>();

        private Group() {
        }

        @Override
        public Group attribute(String name, Object value) {
            super.attribute(name, value);
            return this;
        }

        /**
         * A child group added earlier.
         *
         * @param name its name
         * @return the group
         */
        public Group childGroup(String name) {
            if (children.get(name) instanceof Group group) {
                return group;
            }
            throw new IllegalArgumentException("no group '" + name + "' here in " + file);
        }

        /**
         * Adds a child group.
         *
         * @param name its name
         * @return the new group
         */
        public Group group(String name) {
            return add(name, new Group());
        }

        /**
         * Adds a dataset from a Java array, written to the file now; not while a stream is open.
         *
         * @param name its name
         * @param values a {@code float[]}, {@code double[]}, {@code int[]}, {@code long[]}, {@code byte[]},
         *               {@code boolean[]} or {@code String[]}
         * @return the dataset
         */
        public Dataset dataset(String name, Object values) {
            return addArray(name, Encoded.of(values));
        }

        private Dataset addArray(String name, Encoded encoded) {
            if (open != null) {
                // Its bytes would land inside the open stream's contiguous extent.
                throw new IllegalStateException("cannot add dataset " + name + " to " + file + " while dataset "
                        + open.dataset + " is being streamed: finish the stream first");
            }
            Dataset dataset = add(name, new Dataset(encoded.datatype, new long[]{encoded.count}));
            dataset.dataAddress = encoded.data.remaining() == 0 ? UNDEFINED : end;
            dataset.dataBytes = encoded.data.remaining();
            writeAtEnd(encoded.data);
            return dataset;
        }

        /**
         * Adds a one-dimensional dataset of numbers of a given type (unsigned ones included) from the Java array that
         * stores them, written to the file now; not while a stream is open.
         *
         * @param name its name
         * @param type an integer type, {@code FLOAT32} or {@code FLOAT64}
         * @param values {@code byte[]} for int8 and uint8, {@code short[]} for int16 and uint16, {@code int[]} for
         *               int32 and uint32, {@code long[]} for int64 and uint64 (unsigned values as their bit pattern),
         *               {@code float[]} for float32, {@code double[]} for float64
         * @return the dataset
         */
        public Dataset dataset(String name, DType type, Object values) {
            return addArray(name, Encoded.typed(type, values));
        }

        /**
         * Starts a dataset whose values are appended with {@link Stream#append}; until {@link Stream#finish} no other
         * stream can be opened.
         *
         * @param name its name
         * @param type a numeric element type
         * @return the stream
         */
        public Stream stream(String name, DType type) {
            if (open != null) {
                throw new IllegalStateException("dataset " + open.dataset + " is still being streamed into " + file);
            }
            if (!openChunked.isEmpty()) {
                // their chunks would land inside this stream's contiguous extent
                throw new IllegalStateException("chunked dataset " + openChunked.iterator().next().dataset
                        + " is still being streamed into " + file + ": finish it before a contiguous stream");
            }
            Dataset dataset = add(name, new Dataset(Datatypes.numeric(type), null));
            dataset.dataAddress = end;
            open = new Stream(dataset, type.byteSize(), null);
            return open;
        }

        /**
         * Starts a one-dimensional chunked dataset whose values are appended with {@link Stream#append}. Any number
         * of chunked streams can be open at once, and arrays added meanwhile; not while a contiguous stream is open.
         *
         * @param name its name
         * @param type a numeric element type
         * @param chunking the chunk length and filters
         * @return the stream
         */
        public Stream stream(String name, DType type, Chunking chunking) {
            if (open != null) {
                throw new IllegalStateException("dataset " + open.dataset + " is still being streamed into " + file);
            }
            if ((long) chunking.values * type.byteSize() > Integer.MAX_VALUE - 64) {
                throw new IllegalArgumentException("chunks of " + chunking.values + " " + type + " values exceed 2 GiB");
            }
            Dataset dataset = add(name, new Dataset(Datatypes.numeric(type), null));
            dataset.chunking = chunking;
            Stream stream = new Stream(dataset, type.byteSize(), new Chunker(chunking, type.byteSize()));
            openChunked.add(stream);
            return stream;
        }

        /**
         * Adds a one-dimensional chunked dataset from a numeric Java array, written to the file now; not while a
         * contiguous stream is open.
         *
         * @param name its name
         * @param values a {@code float[]}, {@code double[]}, {@code int[]}, {@code long[]} or {@code byte[]}
         * @param chunking the chunk length and filters
         * @return the dataset
         */
        public Dataset dataset(String name, Object values, Chunking chunking) {
            DType type = switch (values) {
                case float[] a -> DType.FLOAT32;
                case double[] a -> DType.FLOAT64;
                case int[] a -> DType.INT32;
                case long[] a -> DType.INT64;
                case byte[] a -> DType.INT8;
                default -> throw new IllegalArgumentException("cannot write a " + values.getClass().getSimpleName()
                        + " as a chunked HDF5 dataset");
            };
            Encoded encoded = Encoded.of(values);
            Stream stream = stream(name, type, chunking);
            stream.append(encoded.data);
            return stream.finish(encoded.count);
        }

        private <T extends Node> T add(String name, T node) {
            if (name.isEmpty() || name.contains("/") || name.getBytes(StandardCharsets.UTF_8).length > 255) {
                throw new IllegalArgumentException("bad HDF5 link name '" + name + "'");
            }
            if (children.putIfAbsent(name, node) != null) {
                throw new IllegalArgumentException("'" + name + "' already exists in this group of " + file);
            }
            node.name = (this.name.equals("/") ? "" : this.name) + "/" + name;
            return node;
        }
    }

    /** A dataset, contiguous or chunked. */
    public final class Dataset extends Node {
        private final byte[] datatype;
        private long[] shape;
        long dataAddress = UNDEFINED;
        long dataBytes;
        /** Null when contiguous; with it, {@code dataAddress} is the chunk B-tree's. */
        Chunking chunking;

        private Dataset(byte[] datatype, long[] shape) {
            this.datatype = datatype;
            this.shape = shape;
        }

        @Override
        public Dataset attribute(String name, Object value) {
            super.attribute(name, value);
            return this;
        }
    }

    /** Appends the values of one dataset, little-endian, in C order. */
    public final class Stream {
        private final Dataset dataset;
        private final int elementBytes;
        private final Chunker chunker;
        private boolean finished;

        private Stream(Dataset dataset, int elementBytes, Chunker chunker) {
            this.dataset = dataset;
            this.elementBytes = elementBytes;
            this.chunker = chunker;
        }

        /**
         * Appends values.
         *
         * @param values little-endian values, from position to limit (consumed)
         */
        public void append(ByteBuffer values) {
            if (finished || closed) {
                throw new IllegalStateException("stream already finished");
            }
            if (values.remaining() % elementBytes != 0) {
                throw new IllegalArgumentException(values.remaining() + " bytes is not a whole number of " + elementBytes + "-byte values");
            }
            dataset.dataBytes += values.remaining();
            if (chunker != null) {
                chunker.append(values);
            } else {
                writeAtEnd(values);
            }
        }

        /**
         * Ends the dataset.
         *
         * @param shape its shape; the product must equal the number of values appended
         * @return the dataset, for attributes
         */
        public Dataset finish(long... shape) {
            long count = 1;
            for (long dimension : shape) {
                count = Math.multiplyExact(count, dimension);
            }
            if (finished) {
                throw new IllegalStateException("stream already finished");
            }
            if (count * elementBytes != dataset.dataBytes) {
                throw new IllegalStateException("shape " + java.util.Arrays.toString(shape) + " needs " + count
                        + " values, " + dataset.dataBytes / elementBytes + " were appended");
            }
            if (chunker != null) {
                if (shape.length != 1) {
                    throw new IllegalStateException("chunked dataset " + dataset + " is one-dimensional, not "
                            + java.util.Arrays.toString(shape));
                }
                dataset.dataAddress = chunker.finish();
                openChunked.remove(this);
            } else {
                if (dataset.dataBytes == 0) {
                    dataset.dataAddress = UNDEFINED;
                }
                open = null;
            }
            dataset.shape = shape.clone();
            finished = true;
            return dataset;
        }
    }

    /** The element size recorded in a dataset's datatype message. */
    private static int elementSize(Dataset dataset) {
        return ByteBuffer.wrap(dataset.datatype).order(ByteOrder.LITTLE_ENDIAN).getInt(4);
    }

    private static final int SHUFFLE_FILTER = 2;
    private static final int DEFLATE_FILTER = 1;
    /** Entries per version 1 B-tree node: 2K with K = 32, what HDF5 assumes for chunk indexes under a v2 superblock. */
    private static final int BTREE_ENTRIES = 64;

    /**
     * A filter pipeline message (version 2) for a chunking, or null without filters. Both filters are marked optional,
     * as HDF5's own {@code H5Pset_shuffle} and {@code H5Pset_deflate} mark them.
     */
    private static byte[] pipeline(Chunking chunking, int elementBytes) {
        int count = (chunking.shuffle ? 1 : 0) + (chunking.deflateLevel >= 0 ? 1 : 0);
        if (count == 0) {
            return null;
        }
        ByteBuffer b = ByteBuffer.allocate(2 + 10 * count).order(ByteOrder.LITTLE_ENDIAN);
        b.put((byte) 2).put((byte) count);
        if (chunking.shuffle) {
            b.putShort((short) SHUFFLE_FILTER).putShort((short) 1).putShort((short) 1).putInt(elementBytes);
        }
        if (chunking.deflateLevel >= 0) {
            b.putShort((short) DEFLATE_FILTER).putShort((short) 1).putShort((short) 1).putInt(chunking.deflateLevel);
        }
        return b.array();
    }

    /**
     * Collects one dataset's values a chunk at a time, filters each full chunk and appends it at the end of the file,
     * remembering where and how large; {@link #finish()} writes the chunk index (every filter applied: masks 0).
     *
     * <p>Filtering (deflate above all, about 50 MB/s a core) runs on the common fork-join pool while the caller goes on
     * appending; chunks are written in order as they complete, so the bytes do not depend on the thread count. A few
     * chunk buffers (at most 32 MiB of chunks) with their Deflaters are recycled: no garbage per chunk.
     */
    private final class Chunker {
        private final int elementBytes;
        private final int chunkValues;
        private final int chunkBytes;
        private final boolean filtered;
        private final Chunking chunking;
        private final int maxSlots;
        private final java.util.ArrayDeque<Slot> free = new java.util.ArrayDeque<>();
        private final java.util.ArrayDeque<Slot> pending = new java.util.ArrayDeque<>();
        private final List<Slot> all = new ArrayList<>();
        private Slot current;
        private int filled;
        private int count;
        private long[] addresses = new long[64];
        private int[] sizes = new int[64];

        Chunker(Chunking chunking, int elementBytes) {
            this.elementBytes = elementBytes;
            this.chunkValues = chunking.values;
            this.chunkBytes = chunking.values * elementBytes;
            this.chunking = chunking;
            this.filtered = chunking.shuffle || chunking.deflateLevel >= 0;
            int parallelism = java.util.concurrent.ForkJoinPool.getCommonPoolParallelism();
            this.maxSlots = !filtered ? 1 : (int) Math.max(2, Math.min(2L * parallelism + 2, (32L << 20) / chunkBytes));
            this.current = newSlot();
        }

        private Slot newSlot() {
            Slot slot = new Slot(chunking, chunkBytes, elementBytes);
            all.add(slot);
            return slot;
        }

        void append(ByteBuffer values) {
            while (values.hasRemaining()) {
                int n = Math.min(values.remaining(), chunkBytes - filled);
                values.get(current.raw, filled, n);
                filled += n;
                if (filled == chunkBytes) {
                    submit();
                }
            }
        }

        /** Hands the current chunk, zero-padded to a whole chunk (HDF5 stores edge chunks whole), to be filtered. */
        private void submit() {
            java.util.Arrays.fill(current.raw, filled, chunkBytes, (byte) 0);
            filled = 0;
            if (!filtered) {
                record(current.raw, chunkBytes);
                return;
            }
            Slot slot = current;
            slot.task = java.util.concurrent.ForkJoinPool.commonPool().submit(slot::filter);
            pending.add(slot);
            if (!free.isEmpty()) {
                current = free.poll();
            } else if (all.size() < maxSlots) {
                current = newSlot();
            } else {
                writeOldest();
                current = free.poll();
            }
        }

        /** Waits for the oldest filtered chunk and writes it. */
        private void writeOldest() {
            Slot slot = pending.poll();
            slot.task.join();
            slot.task = null;
            record(slot.data, slot.length);
            free.add(slot);
        }

        private void record(byte[] data, int length) {
            if (count == addresses.length) {
                addresses = java.util.Arrays.copyOf(addresses, count * 2);
                sizes = java.util.Arrays.copyOf(sizes, count * 2);
            }
            addresses[count] = end;
            sizes[count] = length;
            count++;
            writeAtEnd(ByteBuffer.wrap(data, 0, length));
        }

        /** Writes the last, partial chunk and the chunk index; returns the index's address (undefined when empty). */
        long finish() {
            if (filled > 0) {
                submit();
            }
            while (!pending.isEmpty()) {
                writeOldest();
            }
            release();
            return count == 0 ? UNDEFINED : writeBTree();
        }

        /** Waits for chunks still being filtered, then frees the Deflaters' native memory. */
        void release() {
            for (Slot slot : pending) {
                try {
                    slot.task.join();
                } catch (RuntimeException ignored) {
                    // abandoning: the chunk is not written anyway
                }
            }
            pending.clear();
            all.forEach(Slot::end);
        }

        /** The left key of chunk {@code k}, or for {@code k == count} the right key of the last chunk. */
        private void key(ByteBuffer node, int k) {
            if (k < count) {
                node.putInt(sizes[k]).putInt(0).putLong((long) k * chunkValues).putLong(0);
            } else {
                // what HDF5 writes after the last chunk: its scaled offset plus one in every dimension
                node.putInt(0).putInt(0).putLong((long) count * chunkValues).putLong(elementBytes);
            }
        }

        /**
         * A version 1 B-tree of type 1 (raw data chunks): leaves of up to 64 chunks, then levels of up to 64 nodes
         * until one root. Keys are chunk offsets in elements, the element-size dimension last; every node is written
         * at its full size, which readers expect.
         */
        private long writeBTree() {
            int keyBytes = 4 + 4 + 8 * 2;
            int nodeBytes = 24 + BTREE_ENTRIES * 8 + (BTREE_ENTRIES + 1) * keyBytes;
            ByteBuffer node = ByteBuffer.allocate(nodeBytes).order(ByteOrder.LITTLE_ENDIAN);
            // entries of the level being built: child address and the chunk whose key is the child's left key
            long[] children = java.util.Arrays.copyOf(addresses, count);
            int[] firstChunk = new int[count];
            java.util.Arrays.setAll(firstChunk, i -> i);
            int entries = count;
            for (int level = 0; ; level++) {
                int nodes = (entries + BTREE_ENTRIES - 1) / BTREE_ENTRIES;
                long base = end;
                long[] nodeAddresses = new long[nodes];
                int[] nodeFirst = new int[nodes];
                for (int j = 0; j < nodes; j++) {
                    int from = j * BTREE_ENTRIES;
                    int used = Math.min(BTREE_ENTRIES, entries - from);
                    node.clear();
                    java.util.Arrays.fill(node.array(), (byte) 0);
                    node.put(new byte[]{'T', 'R', 'E', 'E'}).put((byte) 1).put((byte) level).putShort((short) used);
                    node.putLong(j > 0 ? base + (long) (j - 1) * nodeBytes : UNDEFINED);
                    node.putLong(j + 1 < nodes ? base + (long) (j + 1) * nodeBytes : UNDEFINED);
                    for (int e = 0; e < used; e++) {
                        key(node, firstChunk[from + e]);
                        node.putLong(children[from + e]);
                    }
                    key(node, from + used < entries ? firstChunk[from + used] : count);
                    nodeAddresses[j] = base + (long) j * nodeBytes;
                    nodeFirst[j] = firstChunk[from];
                    node.clear();
                    writeAtEnd(node);
                }
                if (nodes == 1) {
                    return nodeAddresses[0];
                }
                children = nodeAddresses;
                firstChunk = nodeFirst;
                entries = nodes;
            }
        }
    }

    /** One chunk's buffers and Deflater, filtered on a pool thread; {@code data[0, length)} is what is stored. */
    private static final class Slot {
        final byte[] raw;
        private final byte[] shuffled;
        private byte[] compressed;
        private final Deflater deflater;
        private final int elementBytes;
        java.util.concurrent.ForkJoinTask<?> task;
        byte[] data;
        int length;

        Slot(Chunking chunking, int bytes, int elementBytes) {
            this.elementBytes = elementBytes;
            this.raw = new byte[bytes];
            this.shuffled = chunking.shuffle ? new byte[bytes] : null;
            // zlib's bound for incompressible input: stored blocks add 5 bytes per 16 KiB, plus header and trailer
            this.compressed = chunking.deflateLevel >= 0 ? new byte[bytes + (bytes >> 12) + (bytes >> 14) + 64] : null;
            this.deflater = chunking.deflateLevel >= 0 ? new Deflater(chunking.deflateLevel) : null;
        }

        void filter() {
            data = raw;
            length = raw.length;
            if (shuffled != null) {
                shuffle(raw, shuffled, elementBytes);
                data = shuffled;
            }
            if (deflater != null) {
                // Kept compressed even when larger than raw (HDF5 would store it raw with a filter-mask bit set):
                // jhdf 0.13 ignores filter masks, and a few bytes on incompressible chunks are cheap.
                deflater.reset();
                deflater.setInput(data, 0, length);
                deflater.finish();
                int n = 0;
                while (!deflater.finished()) {
                    if (n == compressed.length) {
                        compressed = java.util.Arrays.copyOf(compressed, compressed.length * 2);
                    }
                    n += deflater.deflate(compressed, n, compressed.length - n);
                }
                data = compressed;
                length = n;
            }
        }

        void end() {
            if (deflater != null) {
                deflater.end();
            }
        }
    }

    /** HDF5's shuffle filter: byte {@code j} of every value together, for each {@code j} in turn. */
    private static void shuffle(byte[] in, byte[] out, int elementBytes) {
        int n = in.length / elementBytes;
        for (int j = 0; j < elementBytes; j++) {
            int at = j * n;
            for (int i = 0, from = j; i < n; i++, from += elementBytes) {
                out[at + i] = in[from];
            }
        }
    }

    private void writeAtEnd(ByteBuffer data) {
        try {
            while (data.hasRemaining()) {
                end += channel.write(data, end);
            }
        } catch (IOException e) {
            throw new UncheckedIOException("cannot write " + file, e);
        }
    }

    /** Closes the file without finishing it (it is not a valid HDF5 file then); the caller deletes it. */
    public void abandon() {
        closed = true;
        openChunked.forEach(stream -> stream.chunker.release());
        try {
            channel.close();
        } catch (IOException e) {
            throw new UncheckedIOException("cannot close " + file, e);
        }
    }

    /** Writes the object headers and the superblock, and closes the file. */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        try (channel) {
            if (open != null || !openChunked.isEmpty()) {
                openChunked.forEach(stream -> stream.chunker.release());
                throw new IllegalStateException("dataset still being streamed when closing " + file);
            }
            long rootAddress = writeHeaders(root);
            ByteBuffer superblock = ByteBuffer.allocate(SUPERBLOCK_BYTES).order(ByteOrder.LITTLE_ENDIAN);
            superblock.put(Hdf5.signature());
            superblock.put((byte) 2).put((byte) 8).put((byte) 8).put((byte) 0);
            superblock.putLong(0).putLong(UNDEFINED).putLong(end).putLong(rootAddress);
            superblock.putInt(checksum(superblock.array(), SUPERBLOCK_BYTES - 4));
            superblock.flip();
            while (superblock.hasRemaining()) {
                channel.write(superblock, superblock.position());
            }
        } catch (IOException e) {
            throw new UncheckedIOException("cannot write " + file, e);
        }
    }

    private long writeHeaders(Node node) {
        List<byte[]> messages = new ArrayList<>();
        if (node instanceof Group group) {
            for (Node child : group.children.values()) {
                writeHeaders(child);
            }
            messages.add(message(0x02, linkInfo()));
            messages.add(message(0x0A, new byte[]{0, 0}));
            for (Map.Entry<String, Node> child : group.children.entrySet()) {
                messages.add(message(0x06, link(child.getKey(), child.getValue().address)));
            }
        } else if (node instanceof Dataset dataset) {
            Chunking chunking = dataset.chunking;
            messages.add(message(0x01, Datatypes.dataspace(dataset.shape, chunking != null && chunking.unlimited)));
            messages.add(message(0x03, dataset.datatype));
            if (chunking == null) {
                messages.add(message(0x05, new byte[]{3, 0x05})); // fill value: early allocation, never written
                ByteBuffer layout = ByteBuffer.allocate(18).order(ByteOrder.LITTLE_ENDIAN);
                layout.put((byte) 3).put((byte) 1).putLong(dataset.dataAddress).putLong(dataset.dataBytes);
                messages.add(message(0x08, layout.array()));
            } else {
                // fill value: incremental allocation, written if set (h5py's defaults for chunked data; none is set: 0)
                messages.add(message(0x05, new byte[]{3, 0x0A}));
                byte[] pipeline = pipeline(chunking, elementSize(dataset));
                if (pipeline != null) {
                    messages.add(message(0x0B, pipeline));
                }
                // layout version 3, chunked: dimensionality (rank + 1), B-tree address, chunk dims, element size
                ByteBuffer layout = ByteBuffer.allocate(3 + 8 + 4 * 2).order(ByteOrder.LITTLE_ENDIAN);
                layout.put((byte) 3).put((byte) 2).put((byte) 2).putLong(dataset.dataAddress)
                        .putInt(chunking.values).putInt(elementSize(dataset));
                messages.add(message(0x08, layout.array()));
            }
        }
        for (Map.Entry<String, Object> attribute : node.attributes.entrySet()) {
            messages.add(message(0x0C, attribute(attribute.getKey(), Encoded.of(attribute.getValue()))));
        }
        int body = messages.stream().mapToInt(m -> m.length).sum();
        ByteBuffer header = ByteBuffer.allocate(4 + 1 + 1 + 4 + body + 4).order(ByteOrder.LITTLE_ENDIAN);
        header.put(new byte[]{'O', 'H', 'D', 'R'}).put((byte) 2).put((byte) 0x02).putInt(body);
        messages.forEach(header::put);
        header.putInt(checksum(header.array(), header.position()));
        header.flip();
        node.address = end;
        writeAtEnd(header);
        return node.address;
    }

    /** HDF5's metadata checksum (Jenkins lookup3, initial value 0) of the first {@code length} bytes. */
    private static int checksum(byte[] bytes, int length) {
        return JenkinsLookup3HashLittle.hash(java.util.Arrays.copyOf(bytes, length));
    }

    private static byte[] message(int type, byte[] data) {
        if (data.length > 0xFFFF) {
            throw new IllegalArgumentException("HDF5 header message over 64 KiB (" + data.length + " bytes)");
        }
        ByteBuffer m = ByteBuffer.allocate(4 + data.length).order(ByteOrder.LITTLE_ENDIAN);
        m.put((byte) type).putShort((short) data.length).put((byte) 0).put(data);
        return m.array();
    }

    private static byte[] linkInfo() {
        ByteBuffer b = ByteBuffer.allocate(18).order(ByteOrder.LITTLE_ENDIAN);
        b.put((byte) 0).put((byte) 0).putLong(UNDEFINED).putLong(UNDEFINED);
        return b.array();
    }

    private static byte[] link(String name, long address) {
        byte[] utf8 = name.getBytes(StandardCharsets.UTF_8);
        ByteBuffer b = ByteBuffer.allocate(2 + 1 + 1 + utf8.length + 8).order(ByteOrder.LITTLE_ENDIAN);
        // version 1; flags: name length in 1 byte, character set field present
        b.put((byte) 1).put((byte) 0x10).put((byte) 1).put((byte) utf8.length).put(utf8).putLong(address);
        return b.array();
    }

    private static byte[] attribute(String name, Encoded value) {
        byte[] utf8 = (name + "\0").getBytes(StandardCharsets.UTF_8);
        byte[] space = value.scalar ? Datatypes.dataspace(new long[0]) : Datatypes.dataspace(new long[]{value.count});
        ByteBuffer b = ByteBuffer.allocate(1 + 1 + 2 + 2 + 2 + 1 + utf8.length + value.datatype.length + space.length
                + value.data.remaining()).order(ByteOrder.LITTLE_ENDIAN);
        b.put((byte) 3).put((byte) 0).putShort((short) utf8.length).putShort((short) value.datatype.length)
                .putShort((short) space.length).put((byte) 1).put(utf8).put(value.datatype).put(space)
                .put(value.data.duplicate());
        return b.array();
    }

    /** A value as an HDF5 datatype and little-endian bytes. */
    private record Encoded(byte[] datatype, long count, boolean scalar, ByteBuffer data) {

        static Encoded of(Object value) {
            return switch (value) {
                case String s -> strings(new String[]{s}, true);
                case String[] s -> strings(s, false);
                case Boolean b -> new Encoded(Datatypes.bool(), 1, true, ByteBuffer.wrap(new byte[]{(byte) (b ? 1 : 0)}));
                case boolean[] b -> {
                    byte[] bytes = new byte[b.length];
                    for (int i = 0; i < b.length; i++) {
                        bytes[i] = (byte) (b[i] ? 1 : 0);
                    }
                    yield new Encoded(Datatypes.bool(), b.length, false, ByteBuffer.wrap(bytes));
                }
                case Integer i -> numbers(DType.INT64, 1, true, b -> b.putLong(i));
                case Long l -> numbers(DType.INT64, 1, true, b -> b.putLong(l));
                case Double d -> numbers(DType.FLOAT64, 1, true, b -> b.putDouble(d));
                case byte[] a -> new Encoded(Datatypes.numeric(DType.INT8), a.length, false, ByteBuffer.wrap(a.clone()));
                case int[] a -> numbers(DType.INT32, a.length, false, b -> b.asIntBuffer().put(a));
                case long[] a -> numbers(DType.INT64, a.length, false, b -> b.asLongBuffer().put(a));
                case float[] a -> numbers(DType.FLOAT32, a.length, false, b -> b.asFloatBuffer().put(a));
                case double[] a -> numbers(DType.FLOAT64, a.length, false, b -> b.asDoubleBuffer().put(a));
                default -> throw new IllegalArgumentException("cannot write a " + value.getClass().getSimpleName() + " to HDF5");
            };
        }

        /** A numeric array of a given type from its storage array (see {@link Group#dataset(String, DType, Object)}). */
        static Encoded typed(DType type, Object values) {
            Encoded encoded = switch (type) {
                case INT8, UINT8 -> values instanceof byte[] a
                        ? new Encoded(Datatypes.numeric(type), a.length, false, ByteBuffer.wrap(a.clone())) : null;
                case INT16, UINT16 -> values instanceof short[] a
                        ? numbers(type, a.length, false, b -> b.asShortBuffer().put(a)) : null;
                case INT32, UINT32 -> values instanceof int[] a ? numbers(type, a.length, false, b -> b.asIntBuffer().put(a)) : null;
                case INT64, UINT64 -> values instanceof long[] a ? numbers(type, a.length, false, b -> b.asLongBuffer().put(a)) : null;
                case FLOAT32 -> values instanceof float[] a ? numbers(type, a.length, false, b -> b.asFloatBuffer().put(a)) : null;
                case FLOAT64 -> values instanceof double[] a ? numbers(type, a.length, false, b -> b.asDoubleBuffer().put(a)) : null;
                default -> throw new IllegalArgumentException("no HDF5 dataset of " + type + " numbers");
            };
            if (encoded == null) {
                throw new IllegalArgumentException(type + " values cannot be stored from a "
                        + (values == null ? "null" : values.getClass().getSimpleName()));
            }
            return encoded;
        }

        private static Encoded numbers(DType type, int count, boolean scalar, java.util.function.Consumer<ByteBuffer> fill) {
            ByteBuffer b = ByteBuffer.allocate(Math.multiplyExact(count, type.byteSize())).order(ByteOrder.LITTLE_ENDIAN);
            fill.accept(b);
            return new Encoded(Datatypes.numeric(type), count, scalar, b.rewind());
        }

        private static Encoded strings(String[] values, boolean scalar) {
            byte[][] utf8 = new byte[values.length][];
            int width = 1;
            for (int i = 0; i < values.length; i++) {
                utf8[i] = values[i].getBytes(StandardCharsets.UTF_8);
                width = Math.max(width, utf8[i].length);
            }
            ByteBuffer b = ByteBuffer.allocate(Math.multiplyExact(width, values.length));
            for (int i = 0; i < values.length; i++) {
                b.position(i * width).put(utf8[i]);
            }
            return new Encoded(Datatypes.string(width), values.length, scalar, b.rewind());
        }
    }

    /** Encodings of datatype and dataspace messages. */
    private static final class Datatypes {

        static byte[] numeric(DType type) {
            return switch (type) {
                case FLOAT32 -> floating(4, 31, 23, 8, 23, 127);
                case FLOAT64 -> floating(8, 63, 52, 11, 52, 1023);
                case INT8, INT16, INT32, INT64 -> fixed(type.byteSize(), true);
                case UINT8, UINT16, UINT32, UINT64 -> fixed(type.byteSize(), false);
                case BOOL -> bool();
                default -> throw new IllegalArgumentException("no HDF5 encoding for " + type);
            };
        }

        static byte[] fixed(int size, boolean signed) {
            ByteBuffer b = ByteBuffer.allocate(12).order(ByteOrder.LITTLE_ENDIAN);
            b.put((byte) 0x10).put((byte) (signed ? 0x08 : 0)).put((byte) 0).put((byte) 0).putInt(size);
            b.putShort((short) 0).putShort((short) (size * 8));
            return b.array();
        }

        static byte[] floating(int size, int signBit, int exponentAt, int exponentBits, int mantissaBits, int bias) {
            ByteBuffer b = ByteBuffer.allocate(20).order(ByteOrder.LITTLE_ENDIAN);
            b.put((byte) 0x11).put((byte) 0x20).put((byte) signBit).put((byte) 0).putInt(size);
            b.putShort((short) 0).putShort((short) (size * 8)).put((byte) exponentAt).put((byte) exponentBits)
                    .put((byte) 0).put((byte) mantissaBits).putInt(bias);
            return b.array();
        }

        static byte[] string(int width) {
            ByteBuffer b = ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN);
            b.put((byte) 0x13).put((byte) 0x11).put((byte) 0).put((byte) 0).putInt(width); // null-padded, UTF-8
            return b.array();
        }

        /** h5py's boolean: an int8 enum with members FALSE = 0 and TRUE = 1 (version 3: names unpadded). */
        static byte[] bool() {
            byte[] base = fixed(1, true);
            byte[] names = "FALSE\0TRUE\0".getBytes(StandardCharsets.US_ASCII);
            ByteBuffer b = ByteBuffer.allocate(8 + base.length + names.length + 2).order(ByteOrder.LITTLE_ENDIAN);
            b.put((byte) 0x38).put((byte) 2).put((byte) 0).put((byte) 0).putInt(1).put(base).put(names).put((byte) 0).put((byte) 1);
            return b.array();
        }

        static byte[] dataspace(long[] shape) {
            return dataspace(shape, false);
        }

        /** A version 2 dataspace; unlimited records a maximum size of H5S_UNLIMITED in every dimension. */
        static byte[] dataspace(long[] shape, boolean unlimited) {
            ByteBuffer b = ByteBuffer.allocate(4 + 8 * shape.length * (unlimited ? 2 : 1)).order(ByteOrder.LITTLE_ENDIAN);
            b.put((byte) 2).put((byte) shape.length).put((byte) (unlimited ? 1 : 0)).put((byte) (shape.length == 0 ? 0 : 1));
            for (long dimension : shape) {
                b.putLong(dimension);
            }
            if (unlimited) {
                for (int i = 0; i < shape.length; i++) {
                    b.putLong(UNDEFINED);
                }
            }
            return b.array();
        }
    }
}
