package dev.memfit.io.codec;

import dev.memfit.PythonPeer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Random;
import java.util.zip.DataFormatException;
import java.util.zip.Deflater;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * zlib streams through libdeflate (where the system has it, as Debian's libdeflate0) and through the JDK's inflater
 * ({@code memfit.zlib=jdk}): every case runs through both, the same bytes and the same refusals.
 */
class ZlibTest {

    @TempDir
    Path dir;

    /** Runs a case through each decoder this machine has. */
    private static void bothDecoders(ThrowingRunnable check) throws Exception {
        for (String mode : new String[]{"default", "jdk"}) {
            withMode(mode, check);
        }
    }

    /** Runs a case with {@code memfit.zlib} set to a mode, then puts the property back as it was. */
    private static void withMode(String mode, ThrowingRunnable check) throws Exception {
        String before = System.getProperty("memfit.zlib");
        try {
            if (mode == null) {
                System.clearProperty("memfit.zlib");
            } else {
                System.setProperty("memfit.zlib", mode);
            }
            check.run();
        } finally {
            if (before == null) {
                System.clearProperty("memfit.zlib");
            } else {
                System.setProperty("memfit.zlib", before);
            }
        }
    }

    private interface ThrowingRunnable {
        void run() throws Exception;
    }

    @Test
    void libdeflateIsUsedWhereTheSystemHasIt() throws Exception {
        boolean installed = Files.exists(Path.of("/usr/lib/x86_64-linux-gnu/libdeflate.so.0"))
                || Files.exists(Path.of("/usr/lib/aarch64-linux-gnu/libdeflate.so.0"));
        org.junit.jupiter.api.Assumptions.assumeTrue(installed, "no libdeflate0 on this machine");
        withMode(null, () -> assertEquals("libdeflate", Zlib.implementation(), "bound to the system's libdeflate"));
        withMode("jdk", () -> assertEquals("java.util.zip", Zlib.implementation()));
    }

    @Test
    void decodesWhatZlibWroteAtEveryLevel() throws Exception {
        byte[] data = mixed(1 << 20);
        bothDecoders(() -> {
            for (int level : new int[]{0, 1, 6, 9}) {
                byte[] stream = deflate(data, level);
                assertArrayEquals(data, Zlib.inflate(MemorySegment.ofArray(stream), data.length), "level " + level);
                // from native memory, as a mapped HDF5 chunk is
                try (java.lang.foreign.Arena arena = java.lang.foreign.Arena.ofConfined()) {
                    MemorySegment mapped = arena.allocate(stream.length);
                    mapped.copyFrom(MemorySegment.ofArray(stream));
                    assertArrayEquals(data, Zlib.inflate(mapped, data.length), "level " + level + ", native input, "
                            + Zlib.implementation());
                }
            }
        });
    }

    @Test
    void decodesWhatPythonsZlibWrote() throws Exception {
        Path file = dir.resolve("stream.z");
        assertEquals("ok", PythonPeer.run("""
                import sys, zlib, numpy as np
                data = np.random.default_rng(3).poisson(2.0, 300_000).astype(np.float32).tobytes()
                open(sys.argv[1], 'wb').write(zlib.compress(data, 4))
                open(sys.argv[1] + '.raw', 'wb').write(data)
                print('ok')
                """, file));
        byte[] raw = Files.readAllBytes(Path.of(file + ".raw"));
        bothDecoders(() -> assertArrayEquals(raw, Zlib.inflate(MemorySegment.ofArray(Files.readAllBytes(file)), raw.length)));
    }

    @Test
    void refusesDamagedShortLongAndImpossibleStreams() throws Exception {
        bothDecoders(ZlibTest::refusals);
    }

    private static void refusals() {
        byte[] data = mixed(100_000);
        byte[] stream = deflate(data, 6);
        byte[] damaged = stream.clone();
        for (int i = 10; i < 60; i++) {
            damaged[i] ^= (byte) 0x5a;
        }
        assertThrows(DataFormatException.class, () -> Zlib.inflate(MemorySegment.ofArray(damaged), data.length), "damaged");
        byte[] cut = java.util.Arrays.copyOf(stream, stream.length / 2);
        assertThrows(DataFormatException.class, () -> Zlib.inflate(MemorySegment.ofArray(cut), data.length), "cut short");
        assertThrows(DataFormatException.class, () -> Zlib.inflate(MemorySegment.ofArray(stream), data.length - 1),
                "decodes to more than the container says");
        assertThrows(DataFormatException.class, () -> Zlib.inflate(MemorySegment.ofArray(stream), data.length + 1),
                "decodes to less than the container says");
        DataFormatException claim = assertThrows(DataFormatException.class,
                () -> Zlib.inflate(MemorySegment.ofArray(new byte[16]), 1 << 30));
        assertTrue(claim.getMessage().contains("cannot decode to"), claim.getMessage());
    }

    @Test
    void manyThreadsDecodeAtOnce() throws Exception {
        byte[] data = mixed(200_000);
        byte[] stream = deflate(data, 6);
        bothDecoders(() -> {
            java.util.List<java.util.concurrent.Future<Boolean>> done = new java.util.ArrayList<>();
            try (var pool = java.util.concurrent.Executors.newFixedThreadPool(8)) {
                for (int t = 0; t < 64; t++) {
                    done.add(pool.submit(() -> java.util.Arrays.equals(data, Zlib.inflate(MemorySegment.ofArray(stream), data.length))));
                }
                for (var f : done) {
                    assertTrue(f.get(), Zlib.implementation());
                }
            }
        });
    }

    /** Bytes with runs and noise, as float32 counts are: compressible, not trivially. */
    static byte[] mixed(int size) {
        byte[] data = new byte[size];
        Random random = new Random(5);
        for (int i = 0; i < size; i++) {
            data[i] = (byte) (i % 7 == 0 ? random.nextInt(256) : (i / 4096) & 0x3);
        }
        return data;
    }

    static byte[] deflate(byte[] data, int level) {
        Deflater deflater = new Deflater(level);
        deflater.setInput(data);
        deflater.finish();
        byte[] out = new byte[data.length + data.length / 100 + 1024];
        int n = deflater.deflate(out);
        deflater.end();
        return java.util.Arrays.copyOf(out, n);
    }
}
