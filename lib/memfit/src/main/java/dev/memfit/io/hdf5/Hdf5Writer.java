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

/**
 * A small streaming HDF5 writer: groups, attributes and contiguous datasets whose data is appended as it is produced,
 * so a dataset larger than memory is written in one pass.
 *
 * <p>Written by hand because jhdf's writer (0.13) takes each dataset as one Java array, which puts the whole matrix on
 * the heap. The files use the format's version 2 superblock and object headers with compact link storage (HDF5
 * 1.8+, what h5py writes with {@code libver='latest'}); strings are fixed-length UTF-8, booleans an int8 enum
 * {@code FALSE/TRUE} as h5py writes them. Raw data comes first in the file and the object headers are written by
 * {@link #close()}; a file that was not closed is not a valid HDF5 file (callers write under a temporary name).
 *
 * <p>One streamed dataset may be open at a time, and datasets given as arrays are added while none is (a stream
 * owns the end of the file until it is finished).
 */
public final class Hdf5Writer implements AutoCloseable {

    private static final long UNDEFINED = -1L;
    private static final int SUPERBLOCK_BYTES = 48;

    private final Path file;
    private final FileChannel channel;
    private final Group root = new Group();
    private long end = SUPERBLOCK_BYTES;
    private Stream open;
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

    /** Attributes shared by groups and datasets. */
    public abstract sealed class Node permits Group, Dataset {
        final Map<String, Object> attributes = new LinkedHashMap<>();
        long address = UNDEFINED;

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
            if (open != null) {
                // Its bytes would land inside the open stream's contiguous extent.
                throw new IllegalStateException("cannot add dataset " + name + " to " + file + " while dataset "
                        + open.dataset + " is being streamed: finish the stream first");
            }
            Encoded encoded = Encoded.of(values);
            Dataset dataset = add(name, new Dataset(encoded.datatype, new long[]{encoded.count}));
            dataset.dataAddress = encoded.data.remaining() == 0 ? UNDEFINED : end;
            dataset.dataBytes = encoded.data.remaining();
            writeAtEnd(encoded.data);
            return dataset;
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
            Dataset dataset = add(name, new Dataset(Datatypes.numeric(type), null));
            dataset.dataAddress = end;
            open = new Stream(dataset, type.byteSize());
            return open;
        }

        private <T extends Node> T add(String name, T node) {
            if (name.isEmpty() || name.contains("/") || name.getBytes(StandardCharsets.UTF_8).length > 255) {
                throw new IllegalArgumentException("bad HDF5 link name '" + name + "'");
            }
            if (children.putIfAbsent(name, node) != null) {
                throw new IllegalArgumentException("'" + name + "' already exists in this group of " + file);
            }
            return node;
        }
    }

    /** A contiguous dataset. */
    public final class Dataset extends Node {
        private final byte[] datatype;
        private long[] shape;
        long dataAddress = UNDEFINED;
        long dataBytes;

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

        private Stream(Dataset dataset, int elementBytes) {
            this.dataset = dataset;
            this.elementBytes = elementBytes;
        }

        /**
         * Appends values.
         *
         * @param values little-endian values, from position to limit (consumed)
         */
        public void append(ByteBuffer values) {
            if (open != this) {
                throw new IllegalStateException("stream already finished");
            }
            if (values.remaining() % elementBytes != 0) {
                throw new IllegalArgumentException(values.remaining() + " bytes is not a whole number of " + elementBytes + "-byte values");
            }
            dataset.dataBytes += values.remaining();
            writeAtEnd(values);
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
            if (count * elementBytes != dataset.dataBytes) {
                throw new IllegalStateException("shape " + java.util.Arrays.toString(shape) + " needs " + count
                        + " values, " + dataset.dataBytes / elementBytes + " were appended");
            }
            if (dataset.dataBytes == 0) {
                dataset.dataAddress = UNDEFINED;
            }
            dataset.shape = shape.clone();
            open = null;
            return dataset;
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
            if (open != null) {
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
            messages.add(message(0x01, Datatypes.dataspace(dataset.shape)));
            messages.add(message(0x03, dataset.datatype));
            messages.add(message(0x05, new byte[]{3, 0x05})); // fill value: early allocation, never written
            ByteBuffer layout = ByteBuffer.allocate(18).order(ByteOrder.LITTLE_ENDIAN);
            layout.put((byte) 3).put((byte) 1).putLong(dataset.dataAddress).putLong(dataset.dataBytes);
            messages.add(message(0x08, layout.array()));
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
            ByteBuffer b = ByteBuffer.allocate(4 + 8 * shape.length).order(ByteOrder.LITTLE_ENDIAN);
            b.put((byte) 2).put((byte) shape.length).put((byte) 0).put((byte) (shape.length == 0 ? 0 : 1));
            for (long dimension : shape) {
                b.putLong(dimension);
            }
            return b.array();
        }
    }
}
