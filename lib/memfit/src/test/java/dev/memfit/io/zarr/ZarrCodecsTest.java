package dev.memfit.io.zarr;

import com.fasterxml.jackson.databind.JsonNode;
import dev.memfit.InvalidFileException;
import dev.memfit.PythonPeer;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.Iterator;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Every compressor numcodecs 0.11 writes, decoded in Java and compared with what zarr-python reads from the same
 * arrays: Blosc with each inner codec (blosclz, lz4, lz4hc, snappy, zlib, zstd), each shuffle (none, byte, bit),
 * automatic and small block sizes (many blocks, a shorter last block, blocks too small to split), type sizes 1, 2, 4
 * and 8, incompressible data (memcpyed frames), and numcodecs' own zlib, gzip, zstd and lz4 compressors.
 */
class ZarrCodecsTest {

    @TempDir
    static Path dir;
    static JsonNode expected;

    /** Writes one store with an array per codec setting and lists each array's SHA-256 (little-endian C order) and sum. */
    @BeforeAll
    static void write() throws Exception {
        String manifest = PythonPeer.run("""
                import sys, json, hashlib, numpy as np, zarr, numcodecs
                from numcodecs import Blosc, Zlib, GZip, Zstd, LZ4
                root = zarr.open_group(sys.argv[1] + '/codecs.zarr', mode='w')
                n = 50_003                         # chunks of 12,000: four full chunks and an edge chunk of 2,003
                i = np.arange(n)
                data = {
                    'f4': (np.round(np.sin(i * 0.01) * 100, 1)).astype('<f4'),
                    'i8': ((i * 7919) % 100_000 - 50_000).astype('<i8'),
                    'u1': (i % 251).astype('|u1'),
                    'i2': ((i % 1000) - 500).astype('<i2'),
                }
                rng = np.random.default_rng(3)
                data['noise'] = rng.integers(0, 2**32, n, dtype='<u4')   # incompressible: memcpyed frames
                out = {}
                def add(name, values, compressor):
                    z = root.create_dataset(name, data=values, chunks=(12_000,), compressor=compressor)
                    back = z[:]
                    assert np.array_equal(back, values)
                    out[name] = {'sha': hashlib.sha256(np.ascontiguousarray(back).astype(back.dtype.newbyteorder('<')).tobytes()).hexdigest(),
                                 'sum': float(back.astype('f8').sum()), 'n': int(back.size), 'dtype': back.dtype.str}
                shuffles = {'noshuffle': Blosc.NOSHUFFLE, 'shuffle': Blosc.SHUFFLE, 'bitshuffle': Blosc.BITSHUFFLE}
                for cname in numcodecs.blosc.list_compressors():
                    for sname, shuffle in shuffles.items():
                        for dtype in ('f4', 'i8', 'u1', 'i2'):
                            for blocksize in (0, 4096):
                                add(f'blosc_{cname}_{sname}_{dtype}_{blocksize}', data[dtype],
                                    Blosc(cname=cname, clevel=5, shuffle=shuffle, blocksize=blocksize))
                    add(f'blosc_{cname}_noise', data['noise'], Blosc(cname=cname, clevel=5, shuffle=Blosc.SHUFFLE))
                    # chunks of 1-2 MB: several blocks per frame, and a shorter last block whose element count is not a
                    # multiple of 8 (left as it is by bit shuffle)
                    big = np.arange(300_001)
                    for sname, shuffle in shuffles.items():
                        for dtype, values in (('f4', np.round(np.sin(big * 0.01) * 100, 1).astype('<f4')),
                                              ('i8', ((big * 7919) % 100_000 - 50_000).astype('<i8')),
                                              ('i2', ((big % 1000) - 500).astype('<i2'))):
                            z = root.create_dataset(f'big_{cname}_{sname}_{dtype}', data=values, chunks=(250_003,),
                                                    compressor=Blosc(cname=cname, clevel=5, shuffle=shuffle))
                            back = z[:]
                            assert np.array_equal(back, values)
                            out[z.basename] = {'sha': hashlib.sha256(back.astype(back.dtype.newbyteorder('<')).tobytes()).hexdigest(),
                                               'sum': float(back.astype('f8').sum()), 'n': int(back.size), 'dtype': back.dtype.str}
                add('blosc_clevel0', data['f4'], Blosc(cname='lz4', clevel=0))
                for name, codec in (('zlib', Zlib(level=6)), ('gzip', GZip(level=6)), ('zstd', Zstd(level=3)),
                                    ('lz4', LZ4()), ('none', None)):
                    for dtype in ('f4', 'i8'):
                        add(f'{name}_{dtype}', data[dtype], codec)
                print(json.dumps(out))
                """, dir);
        expected = Zarr.JSON.readTree(manifest);
    }

    @Test
    void everyCodecReadsAsZarrPythonReadsIt() throws Exception {
        List<String> names = new ArrayList<>();
        expected.fieldNames().forEachRemaining(names::add);
        // 6 inner codecs x (3 shuffles x 4 types x 2 block sizes, 1 incompressible, 3 shuffles x 3 types in large
        // chunks), clevel 0, 5 numcodecs x 2 types
        assertTrue(names.size() >= 6 * (24 + 1 + 9) + 1 + 10, "arrays written: " + names.size());
        try (Zarr zarr = Zarr.open(dir.resolve("codecs.zarr")); Arena arena = Arena.ofConfined()) {
            assertEquals(names.stream().sorted().toList(), zarr.children(""));
            for (Iterator<Map.Entry<String, JsonNode>> it = expected.fields(); it.hasNext(); ) {
                Map.Entry<String, JsonNode> entry = it.next();
                ZarrArray array = zarr.array(entry.getKey());
                long n = entry.getValue().get("n").asLong();
                assertEquals(n, array.length(), entry.getKey());
                MemorySegment all = arena.allocate(array.rowBytes() * n);
                array.readRows(0, n, all);
                assertEquals(entry.getValue().get("sha").asText(), sha256(all), entry.getKey() + " " + array);
                double sum = 0;
                for (double v : array.toDoubleArray()) {
                    sum += v;
                }
                assertEquals(entry.getValue().get("sum").asDouble(), sum, 1e-9 * Math.max(1, Math.abs(sum)), entry.getKey());
            }
        }
    }

    @Test
    void valuesAreTheFormulasThatWroteThem() {
        try (Zarr zarr = Zarr.open(dir.resolve("codecs.zarr"))) {
            // element checks across the chunk boundary at 12,000 and inside the edge chunk
            long[] positions = {0, 1, 11_999, 12_000, 12_001, 47_999, 48_000, 50_002};
            for (String cname : List.of("blosclz", "lz4", "lz4hc", "snappy", "zlib", "zstd")) {
                for (String shuffle : List.of("noshuffle", "shuffle", "bitshuffle")) {
                    ZarrArray ints = zarr.array("blosc_" + cname + "_" + shuffle + "_i8_4096");
                    ZarrArray bytes = zarr.array("blosc_" + cname + "_" + shuffle + "_u1_0");
                    ZarrArray shorts = zarr.array("blosc_" + cname + "_" + shuffle + "_i2_4096");
                    ZarrArray floats = zarr.array("blosc_" + cname + "_" + shuffle + "_f4_0");
                    for (long i : positions) {
                        assertEquals((i * 7919) % 100_000 - 50_000, ints.readLongs(i, 1)[0], ints + " at " + i);
                        assertEquals(i % 251, bytes.readLongs(i, 1)[0], bytes + " at " + i);
                        assertEquals(i % 1000 - 500, shorts.readLongs(i, 1)[0], shorts + " at " + i);
                        float value = (float) (Math.round(Math.sin(i * 0.01) * 1000) / 10.0);
                        assertEquals(value, floats.readFloats(i, 1)[0], 0.051f, floats + " at " + i);
                    }
                }
            }
            assertEquals("blosc(zstd, bitshuffle)", zarr.array("blosc_zstd_bitshuffle_f4_0").compressor());
            assertEquals("gzip", zarr.array("gzip_f4").compressor());
            assertEquals("none", zarr.array("none_i8").compressor());
        }
    }

    @Test
    void aCorruptChunkNamesTheStoreTheKeyAndTheCodec() throws Exception {
        Path copy = dir.resolve("corrupt.zarr");
        Files.createDirectories(copy.resolve("a"));
        Path source = dir.resolve("codecs.zarr");
        Files.copy(source.resolve(".zgroup"), copy.resolve(".zgroup"));
        Files.copy(source.resolve("blosc_lz4_shuffle_f4_0/.zarray"), copy.resolve("a/.zarray"));
        byte[] chunk = Files.readAllBytes(source.resolve("blosc_lz4_shuffle_f4_0/1"));
        Files.write(copy.resolve("a/1"), java.util.Arrays.copyOf(chunk, chunk.length / 2)); // truncated
        Files.copy(source.resolve("blosc_lz4_shuffle_f4_0/0"), copy.resolve("a/0"));
        try (Zarr zarr = Zarr.open(copy)) {
            ZarrArray array = zarr.array("a");
            assertEquals(12_000, array.readFloats(0, 12_000).length);
            InvalidFileException e = assertThrows(InvalidFileException.class, () -> array.readFloats(12_000, 10));
            assertTrue(e.getMessage().contains(copy.resolve("a/1").toString()), e.getMessage());
            assertTrue(e.getMessage().contains("blosc(lz4, shuffle)"), e.getMessage());
        }
    }

    @Test
    void sizesNothingInTheStoreBacksAreNeverAllocated() throws Exception {
        com.sun.management.ThreadMXBean threads = (com.sun.management.ThreadMXBean) java.lang.management.ManagementFactory
                .getThreadMXBean();
        // a 1 GB chunk claimed for a zlib stream of a few bytes: refused before a buffer of that size
        Path claim = Files.createDirectories(dir.resolve("claim.zarr"));
        Files.writeString(claim.resolve(".zarray"), "{\"zarr_format\":2,\"shape\":[1000000000],\"chunks\":[1000000000],"
                + "\"dtype\":\"|u1\",\"compressor\":{\"id\":\"zlib\",\"level\":1},\"fill_value\":0,\"filters\":null,\"order\":\"C\"}");
        java.util.zip.Deflater deflater = new java.util.zip.Deflater();
        deflater.setInput(new byte[100]);
        deflater.finish();
        byte[] stream = new byte[64];
        Files.write(claim.resolve("0"), java.util.Arrays.copyOf(stream, deflater.deflate(stream)));
        try (Zarr zarr = Zarr.open(claim); Arena arena = Arena.ofConfined()) {
            long before = threads.getCurrentThreadAllocatedBytes();
            InvalidFileException e = assertThrows(InvalidFileException.class, () -> zarr.array("").readRows(0, 10, arena.allocate(10)));
            assertTrue(threads.getCurrentThreadAllocatedBytes() - before < 1 << 20, "allocated by the claim");
            assertTrue(e.getMessage().contains("expected a chunk zlib can decode from its "), e.getMessage());
            assertTrue(e.getMessage().endsWith("found chunks of 1000000000 bytes ([1000000000] of |u1)"), e.getMessage());
        }
        // chunks the store lacks read as the fill value, written in place: no chunk-sized buffer
        Path holes = Files.createDirectories(dir.resolve("holes.zarr"));
        Files.writeString(holes.resolve(".zarray"), "{\"zarr_format\":2,\"shape\":[2000000000],\"chunks\":[1000000000],"
                + "\"dtype\":\"<i2\",\"compressor\":null,\"fill_value\":7,\"filters\":null,\"order\":\"C\"}");
        try (Zarr zarr = Zarr.open(holes); Arena arena = Arena.ofConfined()) {
            MemorySegment into = arena.allocate(20);
            long before = threads.getCurrentThreadAllocatedBytes();
            zarr.array("").readRows(999_999_995, 10, into);
            assertTrue(threads.getCurrentThreadAllocatedBytes() - before < 1 << 20, "allocated a fill chunk");
            for (int i = 0; i < 10; i++) {
                assertEquals(7, into.getAtIndex(java.lang.foreign.ValueLayout.JAVA_SHORT, i));
            }
            assertEquals(7, zarr.array("").readLongs(1_999_999_999, 1)[0]);
        }
    }

    static String sha256(MemorySegment segment) throws Exception {
        MessageDigest digest = MessageDigest.getInstance("SHA-256");
        digest.update(segment.asByteBuffer());
        return HexFormat.of().formatHex(digest.digest());
    }
}
