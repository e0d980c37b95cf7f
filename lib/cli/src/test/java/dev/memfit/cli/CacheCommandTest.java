package dev.memfit.cli;

import dev.memfit.io.cloud.ObjectCache;
import dev.memfit.io.cloud.ObjectUri;
import dev.memfit.io.cloud.S3TestServer;
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
import java.util.Random;
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

    private ObjectCache cache() {
        return ObjectCache.builder().setStore(server.store(server.endpoint()).build()).setFolder(folder)
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
        try (ObjectCache cache = cache()) {
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
        try (ObjectCache cache = cache()) {
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
        try (ObjectCache cache = cache()) {
            assertArrayEquals(bytes, readAll(cache));
            assertEquals(1, cache.statistics().misses(), cache.statistics().toString());
        }

        CliRun clear = CliRun.of("cache", "clear", "--dir", folder.toString());
        assertEquals(0, clear.status(), clear.err());
        assertTrue(clear.out().contains("cleared, " + String.format("%.1f MiB", onDisk / 1048576.0)), clear.out());
        try (Stream<Path> left = Files.find(folder, 3, (p, a) -> a.isRegularFile() && !p.endsWith(".lock"))) {
            assertEquals(0, left.count());
        }
        CliRun empty = CliRun.of("cache", "ls", "--dir", folder.toString());
        assertTrue(empty.out().contains("0 objects"), empty.out());
    }
}
