package dev.memfit.io.hdf5;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.memfit.DType;
import dev.memfit.PythonPeer;
import io.jhdf.HdfFile;
import io.jhdf.api.Attribute;
import io.jhdf.api.Dataset;
import io.jhdf.api.Group;
import io.jhdf.api.Node;
import io.jhdf.object.datatype.DataType;
import io.jhdf.object.datatype.EnumDataType;
import io.jhdf.object.datatype.FixedPoint;
import io.jhdf.object.datatype.FloatingPoint;
import io.jhdf.object.datatype.StringData;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.reflect.Array;
import java.math.BigInteger;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeSet;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Files written by {@link Hdf5Writer}, read back by the reference library (Debian's h5py over libhdf5) and by jhdf.
 *
 * <p>Each test records what it wrote in the JSON shape {@link #DESCRIBE} prints (one entry per object path: kind,
 * datatype, shape, C-order values, attributes), so a read-back is compared value for value. Floats travel as their
 * bit patterns, so NaN, -0.0 and subnormals are compared exactly.
 */
class Hdf5WriterTest {

    @TempDir
    Path dir;

    private static final ObjectMapper JSON = new ObjectMapper();
    private static final byte[] SIGNATURE = {(byte) 0x89, 'H', 'D', 'F', '\r', '\n', 0x1a, '\n'};

    /**
     * Prints {"checks": ..., "objects": {path: description}} for an HDF5 file, as h5py sees it. The checks are the
     * structural promises: superblock version 2, every datatype identical to the one h5py itself writes for that
     * numpy type (its FALSE/TRUE enum for bool, fixed-length UTF-8 strings), contiguous layout, UTF-8 names.
     */
    private static final String DESCRIBE = """
            import sys, json, h5py, numpy as np
            from h5py import h5t, h5d, h5a
            f = h5py.File(sys.argv[1], 'r')
            checks = {'superblock': f.id.get_create_plist().get_version()[0],
                      'types_unlike_h5py': [], 'not_contiguous': [], 'names_not_utf8': []}
            def tdesc(dt):
                s = h5py.check_string_dtype(dt)
                return 'S%d %s' % (dt.itemsize, s.encoding) if s is not None else '%s%d' % (dt.kind, dt.itemsize)
            def values(arr, dt):
                flat = np.asarray(arr, dtype=dt).reshape(-1)
                if dt.kind == 'f': return [int(x) for x in flat.view('<u%d' % dt.itemsize)]
                if dt.kind == 'b': return [bool(x) for x in flat]
                if dt.kind == 'S': return [x.decode('utf-8') for x in flat]
                return [int(x) for x in flat]
            def same_as_h5py(where, tid, dt):
                if not tid.equal(h5t.py_create(dt)): checks['types_unlike_h5py'].append(where)
            def attrs(path, obj):
                out = {}
                for name in obj.attrs:
                    aid = obj.attrs.get_id(name)
                    dt = aid.dtype
                    same_as_h5py(path + '@' + name, aid.get_type(), dt)
                    if h5a.get_info(obj.id, name=name.encode('utf-8')).cset != h5t.CSET_UTF8:
                        checks['names_not_utf8'].append(path + '@' + name)
                    out[name] = {'type': tdesc(dt), 'shape': list(aid.shape), 'values': values(obj.attrs[name], dt)}
                return out
            objects = {}
            def describe(path, obj):
                if isinstance(obj, h5py.Group):
                    for name in obj:
                        if obj.id.links.get_info(name.encode('utf-8')).cset != h5t.CSET_UTF8:
                            checks['names_not_utf8'].append(path.rstrip('/') + '/' + name)
                    objects[path] = {'kind': 'group', 'links': sorted(obj.keys()), 'attrs': attrs(path, obj)}
                else:
                    dt = obj.dtype
                    same_as_h5py(path, obj.id.get_type(), dt)
                    if obj.id.get_create_plist().get_layout() != h5d.CONTIGUOUS: checks['not_contiguous'].append(path)
                    objects[path] = {'kind': 'dataset', 'type': tdesc(dt), 'shape': list(obj.shape),
                                     'values': values(obj[()], dt), 'attrs': attrs(path, obj)}
            describe('/', f)
            f.visititems(lambda name, obj: describe('/' + name, obj))
            print(json.dumps({'checks': checks, 'objects': objects}))
            """;

    // ---------------------------------------------------------------- recording what was written

    /** The objects written so far, by path, in {@link #DESCRIBE}'s format. */
    private final ObjectNode expected = JSON.createObjectNode();
    private final Map<Hdf5Writer.Node, String> paths = new IdentityHashMap<>();

    private Hdf5Writer.Group root(Hdf5Writer writer) {
        paths.put(writer.root(), "/");
        expected.set("/", groupEntry());
        return writer.root();
    }

    private static ObjectNode groupEntry() {
        ObjectNode entry = JSON.createObjectNode().put("kind", "group");
        entry.putArray("links");
        entry.putObject("attrs");
        return entry;
    }

    private String child(Hdf5Writer.Group parent, String name) {
        String parentPath = paths.get(parent);
        ((ArrayNode) expected.get(parentPath).get("links")).add(name);
        return parentPath.equals("/") ? "/" + name : parentPath + "/" + name;
    }

    private Hdf5Writer.Group group(Hdf5Writer.Group parent, String name) {
        Hdf5Writer.Group group = parent.group(name);
        String path = child(parent, name);
        paths.put(group, path);
        expected.set(path, groupEntry());
        return group;
    }

    private Hdf5Writer.Dataset dataset(Hdf5Writer.Group parent, String name, Object values) {
        Hdf5Writer.Dataset dataset = parent.dataset(name, values);
        Typed typed = typed(values);
        record(dataset, child(parent, name), typed.type, new long[]{typed.values.size()}, typed.values);
        return dataset;
    }

    private void record(Hdf5Writer.Dataset dataset, String path, String type, long[] shape, ArrayNode values) {
        paths.put(dataset, path);
        ObjectNode entry = JSON.createObjectNode().put("kind", "dataset").put("type", type);
        ArrayNode dimensions = entry.putArray("shape");
        Arrays.stream(shape).forEach(dimensions::add);
        entry.set("values", values);
        entry.putObject("attrs");
        expected.set(path, entry);
    }

    /** Sets an attribute and records it: the boxed scalars are rank-0 attributes, arrays rank 1. */
    private void attribute(Hdf5Writer.Node node, String name, Object value) {
        node.attribute(name, value);
        Typed typed = typed(value);
        ObjectNode attribute = JSON.createObjectNode().put("type", typed.type);
        ArrayNode shape = attribute.putArray("shape");
        if (value.getClass().isArray()) {
            shape.add(typed.values.size());
        }
        attribute.set("values", typed.values);
        ((ObjectNode) expected.get(paths.get(node)).get("attrs")).set(name, attribute);
    }

    private record Typed(String type, ArrayNode values) {
    }

    /** The HDF5 type each Java value should be stored as, and its values as {@link #DESCRIBE} prints them. */
    private static Typed typed(Object value) {
        ArrayNode values = JSON.createArrayNode();
        return switch (value) {
            case String s -> typed(new String[]{s});
            case String[] a -> {
                int width = 1; // fixed-length: as wide as the longest UTF-8 encoding, at least one byte
                for (String s : a) {
                    values.add(s);
                    width = Math.max(width, s.getBytes(StandardCharsets.UTF_8).length);
                }
                yield new Typed("S" + width + " utf-8", values);
            }
            case Boolean b -> new Typed("b1", values.add(b));
            case boolean[] a -> {
                for (boolean b : a) {
                    values.add(b);
                }
                yield new Typed("b1", values);
            }
            case Integer i -> new Typed("i8", values.add(i)); // Integer attributes are widened to int64
            case Long l -> new Typed("i8", values.add(l));
            case Double d -> new Typed("f8", values.add(unsigned(Double.doubleToRawLongBits(d))));
            case byte[] a -> {
                for (byte b : a) {
                    values.add(b);
                }
                yield new Typed("i1", values);
            }
            case int[] a -> {
                Arrays.stream(a).forEach(values::add);
                yield new Typed("i4", values);
            }
            case long[] a -> {
                Arrays.stream(a).forEach(values::add);
                yield new Typed("i8", values);
            }
            case float[] a -> {
                for (float f : a) {
                    values.add(Integer.toUnsignedLong(Float.floatToRawIntBits(f)));
                }
                yield new Typed("f4", values);
            }
            case double[] a -> {
                for (double d : a) {
                    values.add(unsigned(Double.doubleToRawLongBits(d)));
                }
                yield new Typed("f8", values);
            }
            default -> throw new AssertionError("test bug: " + value.getClass());
        };
    }

    private static BigInteger unsigned(long bits) {
        return new BigInteger(Long.toUnsignedString(bits));
    }

    /** The numpy-style name of a streamed element type. */
    private static String typeName(DType type) {
        return switch (type) {
            case BOOL -> "b1";
            case INT8, INT16, INT32, INT64 -> "i" + type.byteSize();
            case UINT8, UINT16, UINT32, UINT64 -> "u" + type.byteSize();
            case FLOAT16, FLOAT32, FLOAT64 -> "f" + type.byteSize();
        };
    }

    /**
     * Streams raw little-endian elements (two's complement or IEEE bits in the low bytes of each long) in pieces of
     * the given element counts, each piece through a different kind of buffer, and records the dataset.
     */
    private Hdf5Writer.Dataset streamed(Hdf5Writer.Group parent, String name, DType type, long[] raw, int[] pieces,
                                        long... shape) {
        int size = type.byteSize();
        Hdf5Writer.Stream stream = parent.stream(name, type);
        int at = 0;
        for (int p = 0; p < pieces.length; p++) {
            ByteBuffer piece = buffer(p, pieces[p] * size);
            int start = piece.position();
            for (int i = 0; i < pieces[p]; i++) {
                for (int b = 0; b < size; b++) {
                    piece.put((byte) (raw[at + i] >>> (8 * b)));
                }
            }
            piece.limit(piece.position()).position(start);
            if (p % 3 == 2) {
                piece = piece.asReadOnlyBuffer();
            }
            stream.append(piece);
            assertEquals(0, piece.remaining(), "append consumes the buffer");
            at += pieces[p];
        }
        assertEquals(raw.length, at, "test bug: pieces do not add up");
        Hdf5Writer.Dataset dataset = stream.finish(shape);
        ArrayNode values = JSON.createArrayNode();
        for (long r : raw) {
            long bits = size == 8 ? r : r & ((1L << (8 * size)) - 1);
            if (type == DType.BOOL) {
                values.add(bits != 0);
            } else if (typeName(type).startsWith("i")) {
                values.add(bits << (64 - 8 * size) >> (64 - 8 * size)); // sign-extend
            } else {
                values.add(unsigned(bits));
            }
        }
        record(dataset, child(parent, name), typeName(type), shape, values);
        return dataset;
    }

    /**
     * A buffer with room for {@code bytes} bytes from its position: heap, direct, or one with junk before the
     * position and after the room, which the writer must not write.
     */
    private static ByteBuffer buffer(int piece, int bytes) {
        return switch (piece % 3) {
            case 0 -> ByteBuffer.allocate(bytes);
            case 1 -> ByteBuffer.allocateDirect(bytes);
            default -> {
                byte[] junk = new byte[bytes + 10];
                Arrays.fill(junk, (byte) 0x99);
                yield ByteBuffer.wrap(junk).position(5);
            }
        };
    }

    // ---------------------------------------------------------------- reading back

    private static JsonNode h5py(Path file) {
        return parse(PythonPeer.run(DESCRIBE, file));
    }

    private static JsonNode parse(String json) {
        try {
            return JSON.readTree(json);
        } catch (IOException e) {
            throw new AssertionError("not JSON: " + json, e);
        }
    }

    /** Re-parses, so that equal numbers get the same node class whichever way they were built. */
    private static JsonNode normalized(JsonNode node) {
        return parse(node.toString());
    }

    private static final Comparator<String> CODE_POINTS = (a, b) -> Arrays.compare(a.codePoints().toArray(), b.codePoints().toArray());

    /** Compares object by object, so a failure names the path; links in name order, as HDF5 lists compact links. */
    private static void assertSameObjects(JsonNode expectedObjects, JsonNode actualObjects, String reader) {
        JsonNode want = normalized(expectedObjects);
        JsonNode got = normalized(actualObjects);
        for (JsonNode entry : List.of(want, got)) {
            for (JsonNode object : entry) {
                if (object.has("links")) {
                    List<String> links = new ArrayList<>();
                    object.get("links").forEach(l -> links.add(l.asText()));
                    links.sort(CODE_POINTS);
                    ArrayNode sorted = ((ObjectNode) object).putArray("links");
                    links.forEach(sorted::add);
                }
            }
        }
        TreeSet<String> wantPaths = new TreeSet<>();
        want.fieldNames().forEachRemaining(wantPaths::add);
        TreeSet<String> gotPaths = new TreeSet<>();
        got.fieldNames().forEachRemaining(gotPaths::add);
        assertEquals(wantPaths, gotPaths, reader + ": objects in the file");
        for (String path : wantPaths) {
            assertEquals(want.get(path), got.get(path), reader + ": " + path);
        }
    }

    private static void assertH5pyReadsBack(Path file, JsonNode expectedObjects) {
        JsonNode described = h5py(file);
        JsonNode checks = described.get("checks");
        assertEquals(2, checks.get("superblock").asInt(), "superblock version");
        assertEquals("[]", checks.get("types_unlike_h5py").toString(), "datatypes that differ from h5py's own encoding");
        assertEquals("[]", checks.get("not_contiguous").toString(), "datasets not stored contiguously");
        assertEquals("[]", checks.get("names_not_utf8").toString(), "link or attribute names not marked UTF-8");
        assertSameObjects(expectedObjects, described.get("objects"), "h5py");
    }

    /** The same description as {@link #DESCRIBE}, through jhdf. */
    private static ObjectNode jhdf(Path file) {
        ObjectNode objects = JSON.createObjectNode();
        try (HdfFile hdf = new HdfFile(file)) {
            describe("/", hdf, objects);
        }
        return objects;
    }

    private static void describe(String path, Node node, ObjectNode objects) {
        ObjectNode entry = objects.putObject(path);
        if (node instanceof Group group) {
            entry.put("kind", "group");
            ArrayNode links = entry.putArray("links");
            group.getChildren().keySet().forEach(links::add);
        } else {
            Dataset dataset = (Dataset) node;
            entry.put("kind", "dataset").put("type", typeName(dataset.getDataType()));
            ArrayNode shape = entry.putArray("shape");
            Arrays.stream(dataset.getDimensionsAsLong()).forEach(shape::add);
            entry.set("values", flatValues(dataset.getDataType(), dataset.getSize() == 0 ? null : dataset.getDataFlat()));
        }
        ObjectNode attrs = entry.putObject("attrs");
        for (Map.Entry<String, Attribute> a : node.getAttributes().entrySet()) {
            Attribute attribute = a.getValue();
            ObjectNode out = attrs.putObject(a.getKey()).put("type", typeName(attribute.getDataType()));
            ArrayNode shape = out.putArray("shape");
            Arrays.stream(attribute.getDimensionsAsLong()).forEach(shape::add);
            out.set("values", flatValues(attribute.getDataType(), attribute.isEmpty() ? null : attribute.getData()));
        }
        if (node instanceof Group group) {
            for (Map.Entry<String, Node> child : group.getChildren().entrySet()) {
                describe(path.equals("/") ? "/" + child.getKey() : path + "/" + child.getKey(), child.getValue(), objects);
            }
        }
    }

    private static String typeName(DataType type) {
        return switch (type) {
            case FixedPoint f -> (f.isSigned() ? "i" : "u") + f.getSize();
            case FloatingPoint f -> "f" + f.getSize();
            case StringData s -> "S" + s.getSize() + " " + s.getCharset().name().toLowerCase(Locale.ROOT);
            case EnumDataType e when e.getEnumMapping().equals(Map.of(0, "FALSE", 1, "TRUE"))
                    && e.getBaseType() instanceof FixedPoint base && base.isSigned() && base.getSize() == 1 -> "b1";
            default -> "unexpected " + type;
        };
    }

    /** jhdf's values (scalars boxed, arrays flat, enums as member names) flattened in C order. */
    private static ArrayNode flatValues(DataType type, Object data) {
        ArrayNode values = JSON.createArrayNode();
        if (data == null) {
            return values;
        }
        if (data.getClass().isArray()) {
            for (int i = 0; i < Array.getLength(data); i++) {
                values.addAll(flatValues(type, Array.get(data, i)));
            }
            return values;
        }
        switch (data) {
            case String s when type instanceof EnumDataType -> values.add(switch (s) {
                case "TRUE" -> true;
                case "FALSE" -> false;
                default -> throw new AssertionError("bool enum member " + s);
            });
            case String s -> values.add(s);
            case Float f -> values.add(Integer.toUnsignedLong(Float.floatToRawIntBits(f)));
            case Double d -> values.add(unsigned(Double.doubleToRawLongBits(d)));
            case BigInteger b -> values.add(b);
            case Number n -> values.add(n.longValue());
            default -> throw new AssertionError("jhdf value " + data.getClass());
        }
        return values;
    }

    // ---------------------------------------------------------------- the file with every feature

    /** 255 bytes of UTF-8, the longest link name the writer takes. */
    private static final String LONGEST_NAME = "é".repeat(127) + "z";

    private static final float[] FLOATS = {0f, -0f, 1.5f, -2.25e-3f, Float.MIN_VALUE, Float.MAX_VALUE,
            Float.POSITIVE_INFINITY, Float.NEGATIVE_INFINITY, Float.NaN, Float.intBitsToFloat(0x7fc0_0001)};
    private static final double[] DOUBLES = {0d, -0d, Math.PI, -1e-300, Double.MIN_VALUE, Double.MAX_VALUE,
            Double.POSITIVE_INFINITY, Double.NEGATIVE_INFINITY, Double.NaN, Double.longBitsToDouble(0x7ff8_0000_0000_0001L)};

    /** Writes every kind of node, attribute and element type the writer supports, recording each in {@link #expected}. */
    private Path writeEverything() throws IOException {
        Path file = dir.resolve("every.h5");
        Files.write(file, new byte[100_000]); // create() truncates what was there
        try (Hdf5Writer writer = Hdf5Writer.create(file)) {
            Hdf5Writer.Group root = root(writer);

            // every attribute value type, scalar and array, with extremes and non-ASCII text
            attribute(root, "string", "héllo wörld ✓ 日本");
            attribute(root, "empty string", "");
            attribute(root, "strings", new String[]{"a", "ünïcödé", "", "a longer string of plain ASCII"});
            attribute(root, "no strings", new String[0]);
            attribute(root, "true", Boolean.TRUE);
            attribute(root, "false", Boolean.FALSE);
            attribute(root, "booleans", new boolean[]{true, false, false, true});
            attribute(root, "int", Integer.MIN_VALUE);
            attribute(root, "long", Long.MAX_VALUE);
            attribute(root, "double", -0.0);
            attribute(root, "nan", Double.NaN);
            attribute(root, "ints", new int[]{Integer.MIN_VALUE, -1, 0, 1, Integer.MAX_VALUE});
            attribute(root, "longs", new long[]{Long.MIN_VALUE, -1, 0, Long.MAX_VALUE});
            attribute(root, "doubles", DOUBLES);
            attribute(root, "floats", FLOATS);
            attribute(root, "bytes", new byte[]{Byte.MIN_VALUE, -1, 0, Byte.MAX_VALUE});
            attribute(root, "no ints", new int[0]);
            attribute(root, "nöm dé ättribut ☃", 42L);
            root.attribute("overwritten", "first value"); // replaced below: one attribute, last value
            attribute(root, "overwritten", new long[]{7, 8});

            // a dataset from each kind of Java array, and empty ones
            Hdf5Writer.Group arrays = group(root, "arrays");
            dataset(arrays, "float32", FLOATS);
            dataset(arrays, "float64", DOUBLES);
            dataset(arrays, "int32", new int[]{Integer.MIN_VALUE, -7, 0, 7, Integer.MAX_VALUE});
            dataset(arrays, "int64", new long[]{Long.MIN_VALUE, -7, 0, 7, Long.MAX_VALUE});
            dataset(arrays, "int8", new byte[]{Byte.MIN_VALUE, -7, 0, 7, Byte.MAX_VALUE});
            dataset(arrays, "bool", new boolean[]{true, true, false, true, false});
            dataset(arrays, "strings", new String[]{"gène", "", "x", "日本語のテキスト", "tab\tand newline\n"});
            dataset(arrays, "empty float64", new double[0]);
            dataset(arrays, "empty bool", new boolean[0]);
            dataset(arrays, "empty strings", new String[0]);
            Hdf5Writer.Dataset withAttributes = dataset(arrays, "with attributes", new int[]{1, 2, 3});
            attribute(withAttributes, "unit", "counts");
            attribute(withAttributes, "scale", 0.5);

            // every streamable element type, with extremes; pieces of uneven sizes including empty ones
            Hdf5Writer.Group streams = group(root, "streams");
            long[] ints = {0, 1, -1, 0x55, 0x7f, 0x80, 0xff, 0x1234, 0x7fff, 0x8000, 0xffff, 0x1234_5678, 0x7fff_ffffL,
                    0x8000_0000L, 0xffff_ffffL, Long.MAX_VALUE, Long.MIN_VALUE, 0x0123_4567_89ab_cdefL};
            for (DType type : DType.values()) {
                if (type == DType.BOOL || type == DType.FLOAT16 || typeName(type).startsWith("f")) {
                    continue;
                }
                long[] raw = ints.clone();
                streamed(streams, type.name().toLowerCase(Locale.ROOT), type, raw, new int[]{0, 5, 1, 0, 12}, raw.length);
            }
            long[] floatBits = new long[FLOATS.length];
            for (int i = 0; i < FLOATS.length; i++) {
                floatBits[i] = Float.floatToRawIntBits(FLOATS[i]);
            }
            streamed(streams, "float32", DType.FLOAT32, floatBits, new int[]{3, 0, 7}, floatBits.length);
            long[] doubleBits = Arrays.stream(DOUBLES).mapToLong(Double::doubleToRawLongBits).toArray();
            streamed(streams, "float64", DType.FLOAT64, doubleBits, new int[]{10}, doubleBits.length);
            streamed(streams, "bool", DType.BOOL, new long[]{1, 0, 0, 1, 1, 1, 0}, new int[]{2, 0, 0, 5}, 7);

            // a 3-D streamed array in uneven pieces, a rank-0 scalar, empty ones, attributes after finish()
            long[] cube = new long[3 * 4 * 5];
            for (int i = 0; i < cube.length; i++) {
                cube[i] = Float.floatToRawIntBits(i * 0.25f - 3);
            }
            Hdf5Writer.Dataset cubeData = streamed(streams, "cube", DType.FLOAT32, cube, new int[]{13, 0, 1, 46}, 3, 4, 5);
            attribute(cubeData, "axes", new String[]{"z", "y", "x"});
            streamed(streams, "scalar", DType.INT16, new long[]{-12345}, new int[]{0, 1, 0});
            streamed(streams, "empty", DType.FLOAT64, new long[0], new int[0], 0);
            streamed(streams, "empty 2d", DType.INT32, new long[0], new int[]{0, 0}, 0, 7);

            // nested groups with attributes at every level, empty groups, non-ASCII and longest names
            Hdf5Writer.Group nested = root;
            for (String name : new String[]{"a", "données", "ß", "日本語", "e"}) {
                nested = group(nested, name);
                attribute(nested, "depth", (long) paths.get(nested).split("/").length - 1);
            }
            dataset(nested, "μ-values", new double[]{1e-6, 2e-6});
            group(root, "empty");
            attribute(group(root, "empty with attributes"), "note", "no children");
            attribute(group(root, LONGEST_NAME), LONGEST_NAME, LONGEST_NAME);

            // many links in one group (compact storage holds them all in one object header)
            Hdf5Writer.Group many = group(root, "many");
            for (int i = 0; i < 300; i++) {
                if (i % 2 == 0) {
                    dataset(many, "d" + i, new int[]{i});
                } else {
                    attribute(group(many, "g" + i), "i", i);
                }
            }
            // a group handed back by childGroup is the same one
            assertSame(many, root.childGroup("many"));
        }
        return file;
    }

    @Test
    void h5pyReadsBackEveryFeatureExactly() throws IOException {
        Path file = writeEverything();
        assertH5pyReadsBack(file, expected);
    }

    @Test
    void jhdfReadsBackEveryFeatureExactly() throws IOException {
        Path file = writeEverything();
        assertSameObjects(expected, jhdf(file), "jhdf");
    }

    @Test
    void theSuperblockRecordsTheFileSizeAndTheOldContentIsGone() throws IOException {
        Path file = writeEverything();
        ByteBuffer superblock = ByteBuffer.wrap(Arrays.copyOf(Files.readAllBytes(file), 48)).order(ByteOrder.LITTLE_ENDIAN);
        assertArrayEquals(SIGNATURE, Arrays.copyOf(superblock.array(), 8));
        assertEquals(2, superblock.get(8), "superblock version");
        // end-of-file address at byte 28: a truncated (or untruncated, longer) file would not match it
        assertEquals(Files.size(file), superblock.getLong(28));
        assertTrue(Files.size(file) < 100_000, "the 100 kB written there before was truncated");
    }

    @Test
    void anEmptyFileIsAValidHdf5File() {
        Path file = dir.resolve("empty.h5");
        try (Hdf5Writer writer = Hdf5Writer.create(file)) {
            root(writer);
        }
        assertH5pyReadsBack(file, expected);
        assertSameObjects(expected, jhdf(file), "jhdf");
    }

    // ---------------------------------------------------------------- unfinished files

    private static void assertNotHdf5(Path file) throws IOException {
        byte[] bytes = Files.readAllBytes(file);
        // raw data starts after the 48-byte superblock, which only close() writes
        assertArrayEquals(new byte[48], Arrays.copyOf(bytes, 48), "no superblock");
        assertEquals("False", PythonPeer.run("import sys, h5py; print(h5py.is_hdf5(sys.argv[1]))", file));
        assertThrows(Exception.class, () -> new HdfFile(file).close(), "jhdf opens it");
    }

    private static ByteBuffer someData() {
        byte[] bytes = new byte[4096];
        Arrays.fill(bytes, (byte) 0x5a);
        return ByteBuffer.wrap(bytes);
    }

    @Test
    void anAbandonedFileIsNotAnHdf5File() throws IOException {
        Path file = dir.resolve("abandoned.h5");
        Hdf5Writer writer = Hdf5Writer.create(file);
        writer.root().group("g").attribute("a", 1L).dataset("d", new double[]{1, 2, 3});
        Hdf5Writer.Stream stream = writer.root().stream("s", DType.UINT8);
        stream.append(someData());
        stream.finish(4096);
        writer.abandon();
        assertTrue(Files.exists(file), "abandon() leaves deleting it to the caller");
        assertNotHdf5(file);
        writer.close(); // after abandon(), close() must not finish the file
        assertNotHdf5(file);
    }

    @Test
    void aFileIsNotAnHdf5FileUntilClosed() throws IOException {
        Path file = dir.resolve("in-progress.h5");
        try (Hdf5Writer writer = Hdf5Writer.create(file)) {
            writer.root().dataset("d", new long[]{1, 2, 3});
            Hdf5Writer.Stream stream = writer.root().stream("s", DType.UINT8);
            stream.append(someData());
            assertNotHdf5(file);
            stream.finish(4096);
            assertNotHdf5(file);
        }
        assertEquals("True", PythonPeer.run("import sys, h5py; print(h5py.is_hdf5(sys.argv[1]))", file));
    }

    @Test
    void closingWithAStreamStillOpenFailsAndLeavesNoValidFile() throws IOException {
        Path file = dir.resolve("open-stream.h5");
        Hdf5Writer writer = Hdf5Writer.create(file);
        writer.root().group("g").stream("s", DType.INT32).append(ByteBuffer.allocate(8));
        IllegalStateException e = assertThrows(IllegalStateException.class, writer::close);
        assertTrue(e.getMessage().contains("still being streamed"), e.getMessage());
        writer.close(); // closing again is a no-op, not a second attempt
        assertNotHdf5(file);
    }

    @Test
    void anAttributeTooLargeForItsHeaderMessageFailsAtCloseAndLeavesNoValidFile() throws IOException {
        Path file = dir.resolve("big-attribute.h5");
        Hdf5Writer writer = Hdf5Writer.create(file);
        writer.root().attribute("big", new long[9000]); // 72 kB: over the 64 KiB a header message can hold
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, writer::close);
        assertTrue(e.getMessage().contains("over 64 KiB"), e.getMessage());
        assertNotHdf5(file);
    }

    @Test
    void aFileThatCannotBeCreatedFailsWithItsName() {
        Path file = dir.resolve("no such folder/out.h5");
        UncheckedIOException e = assertThrows(UncheckedIOException.class, () -> Hdf5Writer.create(file));
        assertTrue(e.getMessage().contains("cannot create " + file), e.getMessage());
    }

    // ---------------------------------------------------------------- streams

    @Test
    void onlyOneStreamAtATimeInTheWholeFile() {
        Path file = dir.resolve("streams.h5");
        try (Hdf5Writer writer = Hdf5Writer.create(file)) {
            Hdf5Writer.Group root = root(writer);
            Hdf5Writer.Group other = group(root, "other");
            Hdf5Writer.Stream first = root.stream("first", DType.INT64);
            first.append(ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN).putLong(-5).flip());
            // refused in the same group and in another one, before the name is taken
            IllegalStateException e = assertThrows(IllegalStateException.class, () -> root.stream("second", DType.INT64));
            assertTrue(e.getMessage().contains("still being streamed"), e.getMessage());
            assertThrows(IllegalStateException.class, () -> other.stream("second", DType.INT64));
            Hdf5Writer.Dataset done = first.finish(1);
            record(done, child(root, "first"), "i8", new long[]{1}, JSON.createArrayNode().add(-5));
            // finished streams refuse more data
            e = assertThrows(IllegalStateException.class, () -> first.append(ByteBuffer.allocate(8)));
            assertTrue(e.getMessage().contains("already finished"), e.getMessage());
            // the refused names are free, and a new stream can start now
            streamed(other, "second", DType.INT64, new long[]{6, 7}, new int[]{1, 1}, 2);
        }
        assertH5pyReadsBack(file, expected);
    }

    @Test
    void streamMisuseIsRefusedWithoutCorruptingTheData() {
        Path file = dir.resolve("misuse.h5");
        try (Hdf5Writer writer = Hdf5Writer.create(file)) {
            Hdf5Writer.Group root = root(writer);
            IllegalArgumentException unsupported = assertThrows(IllegalArgumentException.class,
                    () -> root.stream("half", DType.FLOAT16));
            assertTrue(unsupported.getMessage().contains("FLOAT16"), unsupported.getMessage());

            Hdf5Writer.Stream stream = root.stream("half", DType.INT16); // the name and the stream slot are free
            stream.append(ByteBuffer.wrap(new byte[]{1, 0, 2, 0}));
            ByteBuffer partial = ByteBuffer.wrap(new byte[]{3, 0, 4});
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> stream.append(partial));
            assertTrue(e.getMessage().contains("not a whole number of 2-byte values"), e.getMessage());
            assertEquals(3, partial.remaining(), "a refused buffer is not consumed");
            // a shape that does not match what was appended is refused and the stream stays open
            IllegalStateException shape = assertThrows(IllegalStateException.class, () -> stream.finish(3));
            assertTrue(shape.getMessage().contains("needs 3 values, 2 were appended"), shape.getMessage());
            assertThrows(IllegalStateException.class, () -> stream.finish(1, 1));
            stream.append(ByteBuffer.wrap(new byte[]{(byte) 0xff, (byte) 0xff}));
            Hdf5Writer.Dataset done = stream.finish(3);
            record(done, child(root, "half"), "i2", new long[]{3}, JSON.createArrayNode().add(1).add(2).add(-1));
        }
        assertH5pyReadsBack(file, expected);
    }

    /** An array added mid-stream would land inside the stream's extent: it is refused, and the stream goes on intact. */
    @Test
    void anArrayDatasetIsRefusedWhileStreamingAndTheStreamStaysIntact() {
        Path file = dir.resolve("interleaved.h5");
        try (Hdf5Writer writer = Hdf5Writer.create(file)) {
            Hdf5Writer.Group root = root(writer);
            Hdf5Writer.Stream stream = root.stream("streamed", DType.INT32);
            stream.append(ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN).putInt(1).putInt(2).flip());
            IllegalStateException refused = assertThrows(IllegalStateException.class,
                    () -> root.dataset("array", new int[]{7, 8, 9}));
            assertTrue(refused.getMessage().contains("cannot add dataset array") && refused.getMessage().contains("finish the stream first"),
                    refused.getMessage());
            stream.append(ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN).putInt(3).putInt(4).flip());
            record(stream.finish(4), child(root, "streamed"), "i4", new long[]{4}, JSON.createArrayNode().add(1).add(2).add(3).add(4));
        }
        assertH5pyReadsBack(file, expected);
    }

    // ---------------------------------------------------------------- refused input

    @Test
    void unsupportedAttributeValuesAreRefusedWhenSetAndLeaveNoTrace() {
        Path file = dir.resolve("refused.h5");
        Object[] unsupported = {1f, (short) 1, (byte) 1, 'c', new short[]{1}, new char[]{'c'}, new long[][]{{1}},
                new Boolean[]{true}, new Integer[]{1}, List.of("a"), Map.of("k", "v"), BigInteger.ONE, new Object()};
        try (Hdf5Writer writer = Hdf5Writer.create(file)) {
            Hdf5Writer.Group root = root(writer);
            Hdf5Writer.Dataset dataset = dataset(root, "d", new int[]{1});
            for (Object value : unsupported) {
                for (Hdf5Writer.Node node : List.of(root, dataset)) {
                    IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> node.attribute("x", value));
                    assertEquals("cannot write a " + value.getClass().getSimpleName() + " to HDF5", e.getMessage());
                }
                // nor as a dataset, and the name stays free
                assertThrows(IllegalArgumentException.class, () -> root.dataset("x", value));
            }
            // null is refused when set too (it would otherwise fail only at close(), after all the data)
            assertThrows(RuntimeException.class, () -> root.attribute("x", null));
            dataset(root, "x", new long[]{3});
        }
        assertH5pyReadsBack(file, expected);
    }

    @Test
    void badAndDuplicateNamesAreRefused() {
        Path file = dir.resolve("names.h5");
        try (Hdf5Writer writer = Hdf5Writer.create(file)) {
            Hdf5Writer.Group root = root(writer);
            group(root, "taken");
            for (String bad : new String[]{"", "a/b", "/", "é".repeat(128)}) { // the last is 256 bytes of UTF-8
                IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> root.group(bad));
                assertTrue(e.getMessage().startsWith("bad HDF5 link name"), e.getMessage());
                assertThrows(IllegalArgumentException.class, () -> root.dataset(bad, new int[]{1}));
                assertThrows(IllegalArgumentException.class, () -> root.stream(bad, DType.INT8));
            }
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> root.group("taken"));
            assertTrue(e.getMessage().contains("'taken' already exists"), e.getMessage());
            assertThrows(IllegalArgumentException.class, () -> root.dataset("taken", new int[]{1}));
            assertThrows(IllegalArgumentException.class, () -> root.stream("taken", DType.INT8));
            // a refused stream leaves the stream slot free
            streamed(root, "fine", DType.INT8, new long[]{-2}, new int[]{1}, 1);
            dataset(group(root, "same name in another group is fine"), "taken", new int[]{1});

            e = assertThrows(IllegalArgumentException.class, () -> root.childGroup("missing"));
            assertTrue(e.getMessage().contains("no group 'missing'"), e.getMessage());
            assertThrows(IllegalArgumentException.class, () -> root.childGroup("fine"), "a dataset is not a group");
        }
        assertH5pyReadsBack(file, expected);
    }
}
