package dev.memfit.io.zarr;

import dev.memfit.InvalidFileException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;
import org.junit.jupiter.api.io.TempDir;

import java.lang.foreign.Arena;
import java.lang.management.ManagementFactory;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.zip.Deflater;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The size principles of the zarr reader, on stores written here byte by byte (no zarr-python): whatever a store
 * claims (shapes, chunk sizes, a codec's decoded size, a zip entry's offset and size, a key) is checked against what
 * the store holds before anything is allocated or looked up by it, and each refusal names the file or key, what was
 * expected and what was found. The fuzz targets ({@link ZarrFuzzTest}, {@link ZarrChunkFuzzTest}) found most of these;
 * these tests keep them without a fuzzer.
 */
class ZarrSizeChecksTest {

    /** Bytes a refused claim may cost at most: far below every claim made here (1 GiB and more). */
    private static final long FEW_BYTES = 1 << 20;
    private static final String GROUP = "{\"zarr_format\":2}";

    @TempDir
    Path dir;

    // ---- .zarray

    @Test
    void shapesAndChunksWhoseCountsOverflowAreRefusedNamingTheZarray() throws Exception {
        Path store = group(dir.resolve("overflow.zarr"));
        // the bytes of the array overflow a long (2^63 - 1 elements of 8 bytes); the elements of a row times the rows
        // (2^32 x 2^32); the elements of a chunk (3 x 2^31)
        array(store, "bytes", "[9223372036854775807]", "[1]", "<f8", "null");
        array(store, "rows", "[4294967296,4294967296]", "[1,1]", "|u1", "null");
        array(store, "chunk", "[1,1,1]", "[2147483647,2147483647,2147483647]", "<i2", "null");
        // no overflow, but a chunk of 16 GiB
        array(store, "huge_chunk", "[65536,65536]", "[65536,65536]", "<f4", "null");
        try (Zarr zarr = Zarr.open(store)) {
            assertRefused(store.resolve("bytes/.zarray") + ": expected a shape and chunks of fewer than 2^63 elements and"
                    + " bytes, found shape [9223372036854775807], chunks [1] of <f8", () -> zarr.array("bytes"));
            assertRefused(store.resolve("rows/.zarray") + ": expected a shape and chunks of fewer than 2^63 elements and"
                    + " bytes, found shape [4294967296,4294967296], chunks [1,1] of |u1", () -> zarr.array("rows"));
            assertRefused(store.resolve("chunk/.zarray") + ": expected a shape and chunks of fewer than 2^63 elements and"
                    + " bytes, found shape [1,1,1], chunks [2147483647,2147483647,2147483647] of <i2", () -> zarr.array("chunk"));
            assertRefused(store.resolve("huge_chunk/.zarray") + ": expected chunks of at most 2 GiB, found chunks"
                    + " [65536, 65536] of <f4", () -> zarr.array("huge_chunk"));
        }
    }

    // ---- a codec's claims against the .zarray chunk size

    @Test
    void aChunkWhoseCodecClaimsMoreThanTheZarrayChunkIsRefusedBeforeAllocating() throws Exception {
        Path store = group(dir.resolve("claims.zarr"));
        int gib = 1 << 30;
        // a Blosc frame (lz4, byte shuffle) of 32 bytes whose header says it decodes to 1 GiB, for chunks of 100 bytes
        array(store, "blosc", "[100]", "[100]", "|u1", "{\"id\":\"blosc\",\"cname\":\"lz4\",\"clevel\":5,\"shuffle\":1,\"blocksize\":0}");
        Files.write(store.resolve("blosc/0"), bloscHeader(gib, 32));
        // numcodecs' lz4: a size header of 1 GiB before 28 bytes
        array(store, "lz4", "[100]", "[100]", "|u1", "{\"id\":\"lz4\",\"acceleration\":1}");
        Files.write(store.resolve("lz4/0"), ByteBuffer.allocate(32).order(ByteOrder.LITTLE_ENDIAN).putInt(gib).array());
        // a zstd frame declaring 4096 bytes of content, for chunks of 100 bytes
        array(store, "zstd", "[100]", "[100]", "|u1", "{\"id\":\"zstd\",\"level\":1}");
        Files.write(store.resolve("zstd/0"), com.github.luben.zstd.Zstd.compress(new byte[4096]));
        // vlen-utf8 strings, whose decoded size is not known in advance: a Blosc header's claim bounded by its codec
        strings(store, "blosc_strings", "[10]", "[10]", "{\"id\":\"blosc\",\"cname\":\"lz4\",\"clevel\":5,\"shuffle\":0,\"blocksize\":0}");
        Files.write(store.resolve("blosc_strings/0"), bloscHeader(gib, 32));
        // vlen-utf8 without a compressor: 2^30 items claimed by a 12-byte chunk (each item takes 4 bytes at least)
        strings(store, "many_strings", "[1073741824]", "[1073741824]", "null");
        Files.write(store.resolve("many_strings/0"), ByteBuffer.allocate(12).order(ByteOrder.LITTLE_ENDIAN).putInt(gib).array());

        try (Zarr zarr = Zarr.open(store); Arena arena = Arena.ofConfined()) {
            // read through the streamed path (whole chunks) and the cached one (part of a chunk)
            for (long count : new long[] {100, 10}) {
                assertRefusedCheaply(store.resolve("blosc/0") + ": expected a chunk encoded with blosc(lz4, shuffle), found a"
                        + " Blosc frame of 1073741824 decoded bytes where the chunk holds 100",
                        () -> zarr.array("blosc").readRows(0, count, arena.allocate(100)));
                assertRefusedCheaply(store.resolve("lz4/0") + ": expected a chunk encoded with lz4, found an lz4 chunk claiming"
                        + " 1073741824 decoded bytes where the chunk holds 100",
                        () -> zarr.array("lz4").readRows(0, count, arena.allocate(100)));
                assertRefusedCheaply(store.resolve("zstd/0") + ": expected a chunk encoded with zstd, found a zstd frame of 4096"
                        + " bytes where the chunk holds 100", () -> zarr.array("zstd").readRows(0, count, arena.allocate(100)));
            }
            assertRefusedCheaply(store.resolve("blosc_strings/0") + ": expected a chunk encoded with blosc(lz4, noshuffle) and"
                    + " vlen-utf8, found a Blosc header claiming 1073741824 decoded bytes from 32 encoded bytes, more than its"
                    + " inner codec (lz4) can give", () -> zarr.array("blosc_strings").readStrings(0, 10));
            assertRefusedCheaply(store.resolve("many_strings/0") + ": expected a chunk encoded with no compressor and"
                    + " vlen-utf8, found a vlen-utf8 chunk of 12 bytes, too short for 1073741824 items",
                    () -> zarr.array("many_strings").readStrings(0, 1));
        }
    }

    // ---- ZipStore: the central directory's offsets and sizes against the archive

    @Test
    void centralDirectoriesOutsideTheArchiveAreRefused() throws Exception {
        ZipBytes good = new ZipBytes(small());
        Path valid = good.write(dir.resolve("valid.zarr.zip"));
        try (Zarr zarr = Zarr.open(valid); Arena arena = Arena.ofConfined()) {
            zarr.array("a").readRows(0, 100, arena.allocate(100));   // the archive as written reads
        }
        long length = good.length();
        int entries = 3;
        long size = good.eocd - good.directory;

        // the directory's offset past the end
        Path past = new ZipBytes(small()).le32(ZipBytes.EOCD_OFFSET, length + 1000).write(dir.resolve("past.zarr.zip"));
        assertRefused(past + " at byte " + (length + 1000) + ": expected a central directory inside the archive, found "
                + entries + " entries in " + size + " bytes at byte " + (length + 1000) + " of " + length, () -> Zarr.open(past));
        // its size running past the end (offset + size beyond the archive, each on its own inside it)
        Path longer = new ZipBytes(small()).le32(ZipBytes.EOCD_SIZE, length - 1).write(dir.resolve("longer.zarr.zip"));
        assertRefused(longer + " at byte " + good.directory + ": expected a central directory inside the archive, found "
                + entries + " entries in " + (length - 1) + " bytes at byte " + good.directory + " of " + length,
                () -> Zarr.open(longer));
        // more entries than its bytes can hold (46 bytes each at least)
        Path many = new ZipBytes(small()).le16(ZipBytes.EOCD_ENTRIES, 0xffff).write(dir.resolve("many.zarr.zip"));
        assertRefused(many + " at byte " + good.directory + ": expected a central directory inside the archive, found "
                + "65535 entries in " + size + " bytes at byte " + good.directory + " of " + length, () -> Zarr.open(many));
        // a ZIP64 end of central directory record past the end
        long far = 1L << 40;
        Path zip64 = new ZipBytes(small(), far).write(dir.resolve("zip64.zarr.zip"));
        long zip64Length = Files.size(zip64);
        assertRefused(zip64 + " at byte " + far + ": expected a ZIP64 end of central directory record inside the "
                + zip64Length + "-byte archive, found one at byte " + far, () -> Zarr.open(zip64));
    }

    @Test
    void entriesOutsideTheArchiveOrBeyondDeflatesRatioAreRefusedBeforeAllocating() throws Exception {
        long length = new ZipBytes(small()).length();

        // a local header offset past the end
        ZipBytes header = new ZipBytes(small());
        Path headerPast = header.le32(header.central("a/0") + 42, length + 5).write(dir.resolve("header.zarr.zip"));
        assertChunkRefused(headerPast, headerPast + " at byte " + (length + 5) + ": expected the local header of entry a/0"
                + " inside the " + length + "-byte archive, found one at byte " + (length + 5));

        // a stored entry of 1 GiB in an archive of a few hundred bytes
        ZipBytes big = new ZipBytes(small());
        Path bigEntry = big.le32(big.central("a/0") + 20, 1 << 30).le32(big.central("a/0") + 24, 1 << 30)
                .write(dir.resolve("big.zarr.zip"));
        assertChunkRefused(bigEntry, bigEntry + " at byte " + big.data("a/0") + ": expected entry a/0 (1073741824 bytes) inside"
                + " the " + length + "-byte archive, found an entry past its end");

        // a deflated entry claiming 1 GiB from its few stored bytes
        Map<String, byte[]> deflated = small();
        ZipBytes claim = new ZipBytes(deflated, List.of("a/0"));
        int stored = claim.compressedSize("a/0");
        Path claimed = claim.le32(claim.central("a/0") + 24, 1 << 30).write(dir.resolve("claim.zarr.zip"));
        assertChunkRefused(claimed, claimed + " at byte " + claim.data("a/0") + ": expected deflated entry a/0 of at most "
                + stored * 1032L + " bytes (" + stored + " bytes stored, deflate's largest ratio 1032:1), found 1073741824 bytes");
        // and the same archive with the true size reads
        Path honest = new ZipBytes(deflated, List.of("a/0")).write(dir.resolve("honest.zarr.zip"));
        try (Zarr zarr = Zarr.open(honest); Arena arena = Arena.ofConfined()) {
            zarr.array("a").readRows(0, 100, arena.allocate(100));
        }
    }

    // ---- keys

    @Test
    void folderStoresRefuseKeysWithNulEmptyDotOrDotDotParts() throws Exception {
        Path store = group(dir.resolve("keys.zarr"));
        array(store, "a", "[4]", "[4]", "|u1", "null");
        // an array outside the store that '..' would reach
        array(dir, "outside", "[4]", "[4]", "|u1", "null");
        try (Zarr zarr = Zarr.open(store)) {
            assertTrue(zarr.isArray("a"));
            for (String path : List.of("a\0b", "a//b", "a/./b", "a/../b", ".", "..", "../outside", "a/..")) {
                String key = path + "/.zarray";
                InvalidFileException e = assertThrows(InvalidFileException.class, () -> zarr.isArray(path), path);
                assertTrue(e.getMessage().endsWith(": expected a zarr key naming a file inside the store (relative, no NUL, no"
                        + " empty, '.' or '..' parts), found '" + key.replace("\0", "\\0") + "'"), e.getMessage());
                assertTrue(e.getMessage().startsWith(store.toString()), e.getMessage());
            }
        }
    }

    @Test
    void aDataframeNamingAColumnOutsideTheStoreIsRefusedAtOpen() throws Exception {
        Path store = sparse(dir.resolve("escape.zarr"));
        array(dir, "secret", "[4]", "[4]", "|u1", "null");   // what '../../secret' names from obs
        Files.createDirectories(store.resolve("obs"));
        Files.writeString(store.resolve("obs/.zgroup"), GROUP);
        Files.writeString(store.resolve("obs/.zattrs"), "{\"_index\":\"_index\",\"column-order\":[\"../../secret\"],"
                + "\"encoding-type\":\"dataframe\",\"encoding-version\":\"0.2.0\"}");
        assertRefused(store + "/obs/../../secret/.zarray: expected a zarr key naming a file inside the store (relative, no"
                + " NUL, no empty, '.' or '..' parts), found 'obs/../../secret/.zarray'", () -> ZarrAnnData.open(store).close());
    }

    @Test
    void zipListingsGiveOnlyNamesThatAreKeysOfTheirOwn() throws Exception {
        Map<String, byte[]> entries = new LinkedHashMap<>();
        entries.put(".zgroup", bytes(GROUP));
        entries.put("X/.zgroup", bytes(GROUP));
        entries.put("X/data/.zarray", bytes(zarray("[4]", "[4]", "|u1", "null")));
        // X listed as its own child (an empty name), the root as a child named by blanks, a name holding NUL
        entries.put("X//data/.zarray", bytes(zarray("[4]", "[4]", "|u1", "null")));
        entries.put("    /.zattrs", bytes("{}"));
        entries.put("    /.zgroup", bytes(GROUP));
        entries.put("b\0c/.zarray", bytes(zarray("[4]", "[4]", "<M8[ns]", "null")));
        Path zip = new ZipBytes(entries).write(dir.resolve("names.zarr.zip"));
        try (Zarr zarr = Zarr.open(zip)) {
            assertEquals(List.of("X"), zarr.children(""));
            assertEquals(List.of("data"), zarr.children("X"));
            // a key holding NUL is still named in messages (written \0), not an InvalidPathException
            assertRefused(zip + "!/b\\0c/.zarray: expected a dtype memfit reads (" + ZarrDType.SUPPORTED + "), found dtype"
                    + " \"<M8[ns]\"", () -> zarr.array("b\0c"));
        }
    }

    // ---- a sparse X backed by nothing

    @Test
    void aSparseXMissingAChunkOfItsDataIndicesOrPointersIsRefusedNamingTheChunk() throws Exception {
        Path whole = sparse(dir.resolve("whole.zarr"));
        try (ZarrAnnData data = ZarrAnnData.open(whole); Arena arena = Arena.ofConfined()) {
            data.readRows(0, 4, arena.allocate(4 * 3 * Float.BYTES));
            assertEquals(21.0, data.sum());
        }
        // X/data/1 holds the values of rows 1 and 2: row 0 still reads, the rows and the sum over it are refused
        Path noData = sparse(dir.resolve("no-data.zarr"));
        Files.delete(noData.resolve("X/data/1"));
        String data = noData.resolve("X/data/1") + ": expected chunk [1] of X/data <f4 [6] chunks [2] none stored (anndata"
                + " writes every chunk of the arrays memfit reads whole or by stored values), found no such key in the store";
        try (ZarrAnnData x = ZarrAnnData.open(noData); Arena arena = Arena.ofConfined()) {
            x.readRows(0, 1, arena.allocate(3 * Float.BYTES));
            assertRefused(data, () -> x.readRows(1, 1, arena.allocate(3 * Float.BYTES)));
            assertRefused(data, x::sum);
        }
        Path noIndices = sparse(dir.resolve("no-indices.zarr"));
        Files.delete(noIndices.resolve("X/indices/2"));
        try (ZarrAnnData x = ZarrAnnData.open(noIndices); Arena arena = Arena.ofConfined()) {
            assertRefused(noIndices.resolve("X/indices/2") + ": expected chunk [2] of X/indices <i4 [6] chunks [2] none stored"
                    + " (anndata writes every chunk of the arrays memfit reads whole or by stored values), found no such key in"
                    + " the store", () -> x.readRows(3, 1, arena.allocate(3 * Float.BYTES)));
        }
        // the row pointers are read whole at open
        Path noPointers = sparse(dir.resolve("no-pointers.zarr"));
        Files.delete(noPointers.resolve("X/indptr/1"));
        assertRefused(noPointers.resolve("X/indptr/1") + ": expected chunk [1] of X/indptr <i8 [5] chunks [2] none stored"
                + " (anndata writes every chunk of the arrays memfit reads whole or by stored values), found no such key in"
                + " the store", () -> ZarrAnnData.open(noPointers).close());
    }

    // ---- helpers

    private static void assertRefused(String message, Executable call) {
        InvalidFileException e = assertThrows(InvalidFileException.class, call);
        assertEquals(message, e.getMessage());
    }

    /** {@link #assertRefused}, and the refusal allocated less than {@link #FEW_BYTES} on this thread. */
    private static void assertRefusedCheaply(String message, Executable call) {
        com.sun.management.ThreadMXBean threads = (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
        long before = threads.getCurrentThreadAllocatedBytes();
        assertRefused(message, call);
        long allocated = threads.getCurrentThreadAllocatedBytes() - before;
        assertTrue(allocated < FEW_BYTES, allocated + " bytes allocated by a refused claim: " + message);
    }

    /** Reading the archive's array a (one chunk a/0) is refused with this message, cheaply. */
    private static void assertChunkRefused(Path zip, String message) {
        try (Zarr zarr = Zarr.open(zip); Arena arena = Arena.ofConfined()) {
            ZarrArray array = zarr.array("a");
            assertRefusedCheaply(message, () -> array.readRows(0, 100, arena.allocate(100)));
        }
    }

    private static Path group(Path store) throws Exception {
        Files.createDirectories(store);
        Files.writeString(store.resolve(".zgroup"), GROUP);
        return store;
    }

    private static String zarray(String shape, String chunks, String dtype, String compressor) {
        return "{\"zarr_format\":2,\"shape\":" + shape + ",\"chunks\":" + chunks + ",\"dtype\":\"" + dtype + "\",\"compressor\":"
                + compressor + ",\"fill_value\":0,\"filters\":null,\"order\":\"C\"}";
    }

    private static void array(Path store, String path, String shape, String chunks, String dtype, String compressor)
            throws Exception {
        Files.createDirectories(store.resolve(path));
        Files.writeString(store.resolve(path).resolve(".zarray"), zarray(shape, chunks, dtype, compressor));
    }

    /** A vlen-utf8 string array, as anndata writes text. */
    private static void strings(Path store, String path, String shape, String chunks, String compressor) throws Exception {
        Files.createDirectories(store.resolve(path));
        Files.writeString(store.resolve(path).resolve(".zarray"), "{\"zarr_format\":2,\"shape\":" + shape + ",\"chunks\":"
                + chunks + ",\"dtype\":\"|O\",\"compressor\":" + compressor + ",\"fill_value\":0,"
                + "\"filters\":[{\"id\":\"vlen-utf8\"}],\"order\":\"C\"}");
    }

    /** A Blosc 1 frame header (lz4, byte shuffle) claiming {@code nbytes}, then zeros up to {@code length} bytes. */
    private static byte[] bloscHeader(int nbytes, int length) {
        return ByteBuffer.allocate(length).order(ByteOrder.LITTLE_ENDIAN)
                .put((byte) 2).put((byte) 1).put((byte) (1 << 5 | 0x01)).put((byte) 1)
                .putInt(nbytes).putInt(1 << 16).putInt(length).array();
    }

    /**
     * A 4 x 3 CSR X as anndata lays it out, every array uncompressed in chunks of 2: rows [1 2 .], [. . 3], [4 . 5],
     * [. 6 .]; values 1..6 as float32, int32 column indices, int64 row pointers [0 2 3 5 6].
     */
    private static Path sparse(Path store) throws Exception {
        group(store);
        Files.writeString(store.resolve(".zattrs"), "{\"encoding-type\":\"anndata\",\"encoding-version\":\"0.1.0\"}");
        Files.createDirectories(store.resolve("X"));
        Files.writeString(store.resolve("X/.zgroup"), GROUP);
        Files.writeString(store.resolve("X/.zattrs"), "{\"encoding-type\":\"csr_matrix\",\"encoding-version\":\"0.1.0\","
                + "\"shape\":[4,3]}");
        array(store, "X/data", "[6]", "[2]", "<f4", "null");
        array(store, "X/indices", "[6]", "[2]", "<i4", "null");
        array(store, "X/indptr", "[5]", "[2]", "<i8", "null");
        float[] values = {1, 2, 3, 4, 5, 6};
        int[] columns = {0, 1, 2, 0, 2, 1};
        long[] pointers = {0, 2, 3, 5, 6};
        for (int c = 0; c < 3; c++) {
            ByteBuffer v = ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN);
            ByteBuffer i = ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN);
            ByteBuffer p = ByteBuffer.allocate(16).order(ByteOrder.LITTLE_ENDIAN);
            for (int k = 2 * c; k < 2 * c + 2; k++) {
                v.putFloat(values[k]);
                i.putInt(columns[k]);
                p.putLong(k < pointers.length ? pointers[k] : 0);   // the last chunk of indptr is partial
            }
            Files.write(store.resolve("X/data/" + c), v.array());
            Files.write(store.resolve("X/indices/" + c), i.array());
            Files.write(store.resolve("X/indptr/" + c), p.array());
        }
        return store;
    }

    /** A store of one array a: 100 bytes in one chunk, uncompressed. */
    private static Map<String, byte[]> small() {
        Map<String, byte[]> entries = new LinkedHashMap<>();
        entries.put(".zgroup", bytes(GROUP));
        entries.put("a/.zarray", bytes(zarray("[100]", "[100]", "|u1", "null")));
        byte[] chunk = new byte[100];
        for (int i = 0; i < chunk.length; i++) {
            chunk[i] = (byte) i;
        }
        entries.put("a/0", chunk);
        return entries;
    }

    private static byte[] bytes(String text) {
        return text.getBytes(StandardCharsets.UTF_8);
    }

    /**
     * A zip archive as zarr-python's ZipStore writes it (entries stored; some deflated, as anndata's archives have
     * them), with the positions of its records kept so that a test can damage one field.
     */
    private static final class ZipBytes {
        static final int EOCD_ENTRIES = 10;
        static final int EOCD_SIZE = 12;
        static final int EOCD_OFFSET = 16;

        private final ByteBuffer bytes;
        private final Map<String, Integer> centrals = new LinkedHashMap<>();
        private final Map<String, Integer> data = new LinkedHashMap<>();
        private final Map<String, Integer> compressed = new LinkedHashMap<>();
        final int directory;
        final int eocd;

        ZipBytes(Map<String, byte[]> entries) {
            this(entries, List.of(), -1);
        }

        ZipBytes(Map<String, byte[]> entries, List<String> deflate) {
            this(entries, deflate, -1);
        }

        /** With a ZIP64 end of central directory locator pointing at {@code zip64}. */
        ZipBytes(Map<String, byte[]> entries, long zip64) {
            this(entries, List.of(), zip64);
        }

        private ZipBytes(Map<String, byte[]> entries, List<String> deflate, long zip64) {
            ByteBuffer out = ByteBuffer.allocate(1 << 16).order(ByteOrder.LITTLE_ENDIAN);
            List<int[]> locals = new ArrayList<>();
            for (Map.Entry<String, byte[]> entry : entries.entrySet()) {
                byte[] name = bytes(entry.getKey());
                boolean deflated = deflate.contains(entry.getKey());
                byte[] stored = deflated ? deflate(entry.getValue()) : entry.getValue();
                int local = out.position();
                out.putInt(0x04034b50).putShort((short) 20).putShort((short) 0).putShort((short) (deflated ? 8 : 0))
                        .putShort((short) 0).putShort((short) 0).putInt(0).putInt(stored.length).putInt(entry.getValue().length)
                        .putShort((short) name.length).putShort((short) 0).put(name);
                data.put(entry.getKey(), out.position());
                compressed.put(entry.getKey(), stored.length);
                out.put(stored);
                locals.add(new int[] {local, deflated ? 8 : 0, stored.length, entry.getValue().length});
            }
            directory = out.position();
            int i = 0;
            for (String key : entries.keySet()) {
                int[] local = locals.get(i++);
                byte[] name = bytes(key);
                centrals.put(key, out.position());
                out.putInt(0x02014b50).putShort((short) 20).putShort((short) 20).putShort((short) 0).putShort((short) local[1])
                        .putShort((short) 0).putShort((short) 0).putInt(0).putInt(local[2]).putInt(local[3])
                        .putShort((short) name.length).putShort((short) 0).putShort((short) 0).putShort((short) 0)
                        .putShort((short) 0).putInt(0).putInt(local[0]).put(name);
            }
            int directorySize = out.position() - directory;
            if (zip64 >= 0) {
                out.putInt(0x07064b50).putInt(0).putLong(zip64).putInt(1);
            }
            eocd = out.position();
            out.putInt(0x06054b50).putShort((short) 0).putShort((short) 0).putShort((short) entries.size())
                    .putShort((short) entries.size()).putInt(directorySize).putInt(directory).putShort((short) 0);
            bytes = ByteBuffer.wrap(java.util.Arrays.copyOf(out.array(), out.position())).order(ByteOrder.LITTLE_ENDIAN);
        }

        private static byte[] deflate(byte[] in) {
            Deflater deflater = new Deflater(Deflater.DEFAULT_COMPRESSION, true);
            deflater.setInput(in);
            deflater.finish();
            byte[] out = new byte[in.length + 64];
            int n = deflater.deflate(out);
            deflater.end();
            return java.util.Arrays.copyOf(out, n);
        }

        /** Where the central directory record of an entry starts. */
        int central(String key) {
            return centrals.get(key);
        }

        /** Where an entry's bytes start. */
        int data(String key) {
            return data.get(key);
        }

        int compressedSize(String key) {
            return compressed.get(key);
        }

        long length() {
            return bytes.capacity();
        }

        /** Overwrites 4 bytes at {@code at} (an offset into the end of central directory record when below 22). */
        ZipBytes le32(int at, long value) {
            bytes.putInt(at < 22 ? eocd + at : at, (int) value);
            return this;
        }

        ZipBytes le16(int at, int value) {
            bytes.putShort(at < 22 ? eocd + at : at, (short) value);
            return this;
        }

        Path write(Path file) throws Exception {
            return Files.write(file, bytes.array());
        }
    }
}
