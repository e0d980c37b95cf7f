package dev.memfit.cli;

import dev.memfit.cloud.BlockCache;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.memfit.PythonPeer;
import dev.memfit.io.cloud.ObjectCache;
import dev.memfit.io.cloud.ObjectUri;
import dev.memfit.cloud.S3TestServer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.RandomAccessFile;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@code memfit cache ls|verify|clear} on a cache folder filled through the library from a real S3 server (S3Proxy
 * on 127.0.0.1): the listing names what was read, verify finds a block damaged on disk and removes it (the next read
 * fetches it again and returns the uploaded bytes), clear empties the folder.
 */
class CacheCommandTest {

    private static final int BLOCK = 32 * 1024;
    private static S3TestServer server;
    private static byte[] bytes;
    private static String etag;

    @TempDir
    Path folder;

    @BeforeAll
    static void start() throws Exception {
        server = new S3TestServer();
        server.createBucket("atlas");
        bytes = new byte[3 * BLOCK + 1000];
        new Random(14).nextBytes(bytes);
        etag = server.put("atlas", "cells/x.bin", bytes);
    }

    @AfterAll
    static void stop() {
        if (server != null) {
            server.close();
        }
    }

    private BlockCache cache() {
        return BlockCache.builder().setStore(server.store(server.endpoint()).build()).setFolder(folder)
                .optBlockBytes(BLOCK).optLimitBytes(1L << 20).build();
    }

    private static byte[] readAll(ObjectCache cache) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment into = arena.allocate(bytes.length);
            cache.read(ObjectUri.parse("s3://atlas/cells/x.bin"), 0, into);
            return into.toArray(ValueLayout.JAVA_BYTE);
        }
    }

    @Test
    void lsListsVerifyRemovesADamagedBlockAndClearEmpties() throws Exception {
        try (BlockCache cache = cache()) {
            assertArrayEquals(bytes, readAll(cache));
        }
        CliRun ls = CliRun.of("cache", "ls", "--dir", folder.toString());
        assertEquals(0, ls.status(), ls.err());
        assertTrue(ls.out().contains("1 objects"), ls.out());
        String row = ls.out().lines().filter(line -> line.startsWith("s3://atlas/cells/x.bin")).findFirst().orElseThrow();
        String[] columns = row.trim().split("\\s+");
        assertEquals(etag, columns[1], row);
        assertEquals(bytes.length, Long.parseLong(columns[2]), row);
        long onDisk;
        try (Stream<Path> files = Files.find(folder, 3, (p, a) -> p.toString().endsWith(".block"))) {
            onDisk = files.mapToLong(p -> p.toFile().length()).sum();
        }
        assertEquals(onDisk, Long.parseLong(columns[3]), row);
        assertEquals("4", columns[4], row);

        CliRun clean = CliRun.of("cache", "verify", "--dir", folder.toString());
        assertEquals(0, clean.status(), clean.err());
        assertTrue(clean.out().contains("4 blocks and 0 staged objects checked") && clean.out().contains(", 0 bad"),
                clean.out());

        Path damaged;
        try (BlockCache cache = cache()) {
            damaged = cache.blockFile(ObjectUri.parse("s3://atlas/cells/x.bin"), 2);
        }
        try (RandomAccessFile file = new RandomAccessFile(damaged.toFile(), "rw")) {
            file.seek(5000);
            int b = file.read();
            file.seek(5000);
            file.write(b ^ 0x40);
        }
        CliRun report = CliRun.of("cache", "verify", "--report-only", "--dir", folder.toString());
        assertEquals(1, report.status(), report.out());
        assertTrue(report.out().contains("BAD " + damaged) && report.out().contains("fail their CRC32C"), report.out());
        assertTrue(Files.exists(damaged));
        CliRun repair = CliRun.of("cache", "verify", "--dir", folder.toString());
        assertEquals(0, repair.status(), repair.err());
        assertTrue(repair.out().contains("1 bad (removed"), repair.out());
        assertFalse(Files.exists(damaged));
        try (BlockCache cache = cache()) {
            assertArrayEquals(bytes, readAll(cache));
            assertEquals(1, cache.statistics().misses(), cache.statistics().toString());
        }

        CliRun clear = CliRun.of("cache", "clear", "--dir", folder.toString());
        assertEquals(0, clear.status(), clear.err());
        assertTrue(clear.out().contains("cleared, " + String.format("%.1f MiB", onDisk / 1048576.0)), clear.out());
        // the lock files stay (.lock for insertions, .fetch.lock for downloads): processes may be waiting on them
        try (Stream<Path> left = Files.find(folder, 3, (p, a) -> a.isRegularFile()
                && !p.getFileName().toString().endsWith(".lock"))) {
            assertEquals(0, left.count());
        }
        CliRun empty = CliRun.of("cache", "ls", "--dir", folder.toString());
        assertTrue(empty.out().contains("0 objects"), empty.out());
    }

    /**
     * {@code memfit inspect s3://...} as a user runs it: its own process, the endpoint, credentials and cache folder
     * from the environment only; the facts and the sum are numpy's for a file numpy wrote, and the object lands in
     * the cache ({@code cache ls}).
     */
    @Test
    void inspectReadsANpyObjectThroughTheCacheOfTheEnvironment(@TempDir Path dir) throws Exception {
        Path file = dir.resolve("x.npy");
        double numpySum = Double.parseDouble(PythonPeer.run("""
                import sys, numpy as np
                a = np.random.default_rng(3).standard_normal((5000, 11))
                np.save(sys.argv[1], a)
                print(repr(float(a.sum(dtype=np.float64))))
                """, file));
        server.put("atlas", "cells/x.npy", Files.readAllBytes(file));
        List<String> command = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "--enable-native-access=ALL-UNNAMED", "-cp", System.getProperty("java.class.path"),
                Main.class.getName(), "inspect", "s3://atlas/cells/x.npy", "--json"));
        ProcessBuilder builder = new ProcessBuilder(command).redirectError(dir.resolve("err.txt").toFile());
        Map<String, String> environment = builder.environment();
        environment.keySet().removeIf(name -> name.startsWith("AWS_") || name.startsWith("MEMFIT_CACHE"));
        environment.put("AWS_ENDPOINT_URL", server.endpoint().toString());
        environment.put("AWS_ACCESS_KEY_ID", S3TestServer.ACCESS_KEY);
        environment.put("AWS_SECRET_ACCESS_KEY", S3TestServer.SECRET_KEY);
        environment.put("MEMFIT_CACHE_DIR", folder.toString());
        Process process = builder.start();
        String out = new String(process.getInputStream().readAllBytes(), java.nio.charset.StandardCharsets.UTF_8);
        assertTrue(process.waitFor(2, TimeUnit.MINUTES));
        String err = Files.readString(dir.resolve("err.txt"));
        assertEquals(0, process.exitValue(), err);
        assertFalse(err.contains(S3TestServer.SECRET_KEY) || out.contains(S3TestServer.SECRET_KEY));
        JsonNode json = new ObjectMapper().readTree(out);
        assertEquals("s3://atlas/cells/x.npy", json.get("file").asText());
        assertEquals("[5000,11]", json.get("shape").toString());
        assertEquals("float64 (<f8)", json.get("dtype").asText());
        assertEquals(Files.size(file), json.get("size_on_disk").asLong());
        assertEquals(numpySum, json.get("sum").asDouble(), 1e-9 * Math.max(1, Math.abs(numpySum)));

        long size = Files.size(file);
        CliRun ls = CliRun.of("cache", "ls", "--dir", folder.toString());
        assertTrue(ls.out().lines().anyMatch(line -> line.startsWith("s3://atlas/cells/x.npy ")
                && line.contains(" " + size + " ")), ls.out());
    }
}
