package dev.memfit.data;

import dev.memfit.cloud.BlockCache;
import dev.memfit.InvalidFileException;
import dev.memfit.MemfitException;
import dev.memfit.PythonPeer;
import dev.memfit.io.cloud.CacheStatistics;
import dev.memfit.io.cloud.ObjectCache;
import dev.memfit.io.cloud.ObjectUri;
import dev.memfit.cloud.S3TestServer;
import dev.memfit.io.npy.NpyRows;
import dev.memfit.source.LazySource;
import dev.memfit.source.Particles;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.HashSet;
import java.util.Set;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@code Datasets.npy("s3://...")} against a real S3 server (S3Proxy on 127.0.0.1): {@code .npy} files written by
 * numpy's {@code np.save} with its defaults and uploaded, read through the object cache in blocks smaller than the
 * file so that rows straddle blocks; values compared with numpy's, the second epoch served from the cache.
 */
class NpyObjectTest {

    private static final int BLOCK = 32 * 1024;
    private static final int ROWS = 3000;
    private static final int COLS = 37; // 148-byte float32 rows: many straddle a 32 KiB block boundary
    private static final String BUCKET = "atlas";
    private static S3TestServer server;
    private static float[] expected32;
    private static float[] expected64;
    private static long objectBytes;

    @TempDir
    static Path inputs;

    @TempDir
    Path folder;

    @BeforeAll
    static void upload() throws Exception {
        // numpy writes the files with its defaults, and its own values as raw little-endian float32 for comparison
        PythonPeer.run("""
                import sys, numpy as np
                d = sys.argv[1]
                a = np.random.default_rng(14).standard_normal((%d, %d)).astype(np.float32)
                np.save(d + '/f32.npy', a)
                a.astype('<f4').tofile(d + '/f32.raw')
                b = np.random.default_rng(15).standard_normal((%d, %d))
                np.save(d + '/f64.npy', b)
                b.astype('<f4').tofile(d + '/f64.raw')
                """.formatted(ROWS, COLS, ROWS / 2, COLS), inputs);
        expected32 = floats(inputs.resolve("f32.raw"));
        expected64 = floats(inputs.resolve("f64.raw"));
        server = new S3TestServer();
        server.createBucket(BUCKET);
        byte[] f32 = Files.readAllBytes(inputs.resolve("f32.npy"));
        objectBytes = f32.length;
        server.put(BUCKET, "cells/f32.npy", f32);
        server.put(BUCKET, "cells/f64.npy", Files.readAllBytes(inputs.resolve("f64.npy")));
        server.put(BUCKET, "cells/f32.raw", Files.readAllBytes(inputs.resolve("f32.raw")));
    }

    @AfterAll
    static void stop() {
        if (server != null) {
            server.close();
        }
    }

    private static float[] floats(Path raw) throws Exception {
        ByteBuffer bytes = ByteBuffer.wrap(Files.readAllBytes(raw)).order(ByteOrder.LITTLE_ENDIAN);
        float[] values = new float[bytes.remaining() / 4];
        bytes.asFloatBuffer().get(values);
        return values;
    }

    private ObjectCache cache() {
        return BlockCache.builder().setStore(server.store(server.endpoint()).build()).setFolder(folder)
                .optBlockBytes(BLOCK).optLimitBytes(64L << 20).build();
    }

    /** Checks every row of an epoch against numpy's values and returns how many rows it had. */
    private static int checkEpoch(Loader loader, long epoch, float[] expected, Set<Long> seen) {
        int rows = 0;
        for (Batch batch : loader.epoch(epoch)) {
            float[] values = batch.toFloatArray();
            long[] indices = batch.indices();
            for (int i = 0; i < indices.length; i++) {
                assertTrue(seen.add(indices[i]), "row " + indices[i] + " twice in epoch " + epoch);
                int row = (int) indices[i];
                assertArrayEquals(Arrays.copyOfRange(expected, row * COLS, (row + 1) * COLS),
                        Arrays.copyOfRange(values, i * COLS, (i + 1) * COLS), "row " + row + " of epoch " + epoch);
                rows++;
            }
        }
        return rows;
    }

    @Test
    void aShuffledEpochEqualsNumpyAndTheSecondIsServedFromTheCache() {
        try (ObjectCache cache = cache();
             Loader loader = Datasets.npy("s3://" + BUCKET + "/cells/f32.npy").optCache(cache).lazy(3)
                     .optBatchSize(64).optShuffle(7).build()) {
            // building the loader read the header (its first blocks); the statistics count from the cache's start
            assertEquals(ROWS, checkEpoch(loader, 0, expected32, new HashSet<>()));
            CacheStatistics first = cache.statistics();
            assertTrue(first.misses() > 0, first.toString());
            // every block fetched once: no more bytes than the object, and all of them (the header's block included)
            assertEquals(objectBytes, first.bytesDownloaded(), first.toString());

            assertEquals(ROWS, checkEpoch(loader, 1, expected32, new HashSet<>()));
            CacheStatistics second = cache.statistics().minus(first);
            assertEquals(0, second.bytesDownloaded(), second.toString());
            assertEquals(0, second.misses(), second.toString());
            assertTrue(second.hits() > 0, second.toString());
        }
    }

    @Test
    void anEpochInFileOrderThroughACacheOfAFewBlocksDownloadsEachBlockOnce() {
        // 14 blocks of 32 KiB through a cache that holds 2 or 3: the loader's announcements (two batches prefetched)
        // must neither evict blocks fetched ahead and not yet read, nor the block being read
        long blockOnDisk = BLOCK + 4L * (BLOCK / BlockCache.PIECE) + 12;
        for (int blocks : new int[] {2, 3}) {
            for (int threads : new int[] {1, 3}) {
                long limit = blocks * blockOnDisk;
                try (ObjectCache cache = BlockCache.builder().setStore(server.store(server.endpoint()).build())
                        .setFolder(folder.resolve(blocks + "-blocks-" + threads + "-threads")).optBlockBytes(BLOCK)
                        .optLimitBytes(limit).build();
                     Loader loader = Datasets.npy("s3://" + BUCKET + "/cells/f32.npy").optCache(cache).lazy(threads)
                             .optBatchSize(64).build()) {
                    assertEquals(ROWS, checkEpoch(loader, 0, expected32, new HashSet<>()));
                    CacheStatistics statistics = cache.statistics();
                    assertEquals(objectBytes, statistics.bytesDownloaded(), blocks + " blocks, " + threads
                            + " threads: " + statistics);
                    assertTrue(cache.usedBytes() <= limit, cache.usedBytes() + " bytes cached");
                }
            }
        }
    }

    @Test
    void aShuffledEpochThroughACacheOfAFewBlocksReadsRightAndEndsUnderTheLimit() {
        // random rows over 14 blocks through a cache of 3: blocks are downloaded again (the limit cannot hold what
        // later batches need), but the values are numpy's and the folder is back under its limit once reads are done
        long blockOnDisk = BLOCK + 4L * (BLOCK / BlockCache.PIECE) + 12;
        long limit = 3 * blockOnDisk;
        try (ObjectCache cache = BlockCache.builder().setStore(server.store(server.endpoint()).build())
                .setFolder(folder).optBlockBytes(BLOCK).optLimitBytes(limit).build();
             Loader loader = Datasets.npy("s3://" + BUCKET + "/cells/f32.npy").optCache(cache).lazy(4)
                     .optBatchSize(64).optShuffle(5).build()) {
            for (int epoch = 0; epoch < 2; epoch++) {
                assertEquals(ROWS, checkEpoch(loader, epoch, expected32, new HashSet<>()));
                assertTrue(cache.usedBytes() <= limit, cache.usedBytes() + " bytes cached, limit " + limit);
            }
            assertTrue(cache.statistics().bytesDownloaded() > objectBytes, cache.statistics().toString());
        }
    }

    @Test
    void aFloat64FileWithNumpyDefaultsReadsAsNumpysFloat32Cast() {
        try (ObjectCache cache = cache();
             Loader loader = Datasets.npy("s3://" + BUCKET + "/cells/f64.npy").optCache(cache).lazy(2)
                     .optBatchSize(100).optShuffle(3).build()) {
            assertEquals(ROWS / 2, checkEpoch(loader, 0, expected64, new HashSet<>()));
        }
    }

    @Test
    void aGsObjectReadsThroughTheGcsEndpointWithHmacKeys() {
        // gs:// goes through GCS's S3-compatible XML API: here S3Proxy stands in for storage.googleapis.com
        try (ObjectCache cache = BlockCache.builder()
                .setStore(server.store(java.net.URI.create("http://127.0.0.1:9/unused"))
                        .optGcsEndpoint(server.endpoint())
                        .optGcsCredentials(S3TestServer.ACCESS_KEY, S3TestServer.SECRET_KEY).build())
                .setFolder(folder).optBlockBytes(BLOCK).optLimitBytes(64L << 20).build();
             Loader loader = Datasets.npy("gs://" + BUCKET + "/cells/f32.npy").optCache(cache).lazy(2)
                     .optBatchSize(128).optShuffle(11).build()) {
            assertEquals(ROWS, checkEpoch(loader, 0, expected32, new HashSet<>()));
        }
    }

    @Test
    void theCacheSettingsComeFromTheEnvironment() {
        assertEquals(Path.of("/scratch/c"), BlockCache.defaultFolder(java.util.Map.of("MEMFIT_CACHE_DIR", "/scratch/c",
                "XDG_CACHE_HOME", "/x")));
        assertEquals(Path.of("/x/memfit/objects"), BlockCache.defaultFolder(java.util.Map.of("XDG_CACHE_HOME", "/x")));
        assertEquals(Path.of(System.getProperty("user.home"), ".cache", "memfit", "objects"),
                BlockCache.defaultFolder(java.util.Map.of()));
        assertEquals(50L << 30, BlockCache.defaultLimit(java.util.Map.of("MEMFIT_CACHE_LIMIT", "50G")));
        assertEquals(512L << 20, BlockCache.defaultLimit(java.util.Map.of("MEMFIT_CACHE_LIMIT", "512MiB")));
        assertEquals(1_000_000L, BlockCache.defaultLimit(java.util.Map.of("MEMFIT_CACHE_LIMIT", "1000000")));
        assertEquals(10L << 30, BlockCache.defaultLimit(java.util.Map.of()));
        MemfitException bad = assertThrows(MemfitException.class,
                () -> BlockCache.defaultLimit(java.util.Map.of("MEMFIT_CACHE_LIMIT", "lots")));
        assertTrue(bad.getMessage().contains("MEMFIT_CACHE_LIMIT=lots"), bad.getMessage());
    }

    @Test
    void randomRowsAcrossBlockBoundariesEqualNumpy() {
        ObjectUri uri = ObjectUri.parse("s3://" + BUCKET + "/cells/f32.npy");
        try (ObjectCache cache = cache()) {
            NpyRows rows = NpyRows.open(cache, uri.toPath());
            assertEquals(ROWS, rows.size());
            assertArrayEquals(new long[]{COLS}, rows.sampleShape());
            long rowBytes = COLS * 4L;
            long[] straddling = java.util.stream.LongStream.range(0, ROWS)
                    .filter(r -> rows.offsetOf(r) / BLOCK != (rows.offsetOf(r) + rowBytes - 1) / BLOCK)
                    .toArray();
            assertTrue(straddling.length > 5, "rows across block boundaries: " + straddling.length);
            // the source owns (and closes) its storage: give it a second cache on the same folder
            try (LazySource source = Particles.builder().setRecords(rows).optStorage(cache()).optThreads(2).lazy();
                 Arena arena = Arena.ofConfined()) {
                long[] picks = {straddling[straddling.length - 1], 0, straddling[0], ROWS - 1, straddling[straddling.length / 2]};
                MemorySegment batch = arena.allocate(picks.length * rowBytes);
                source.readBatch(picks, batch);
                float[] values = batch.toArray(ValueLayout.JAVA_FLOAT);
                for (int i = 0; i < picks.length; i++) {
                    int row = (int) picks[i];
                    assertArrayEquals(Arrays.copyOfRange(expected32, row * COLS, (row + 1) * COLS),
                            Arrays.copyOfRange(values, i * COLS, (i + 1) * COLS), "row " + row);
                }
            }
        }
    }

    @Test
    void aMappedObjectIsStagedOnceAndReadsAsNumpy() {
        String uri = "s3://" + BUCKET + "/cells/f32.npy";
        try (ObjectCache cache = cache()) {
            try (Loader loader = Datasets.npy(uri).optCache(cache).mapped().optBatchSize(64).optShuffle(7).build()) {
                assertEquals(ROWS, checkEpoch(loader, 0, expected32, new HashSet<>()));
                // the object once, in blocks, joined into the staged copy that the loader maps
                assertEquals(objectBytes, cache.statistics().bytesDownloaded(), cache.statistics().toString());
                assertTrue(loader.describe().contains(uri), loader.describe());
            }
            CacheStatistics first = cache.statistics();
            try (Loader again = Datasets.npy(uri).optCache(cache).mapped().optBatchSize(100).optShuffle(8).build();
                 Loader local = Datasets.npy(inputs.resolve("f32.npy")).mapped().optBatchSize(100).build()) {
                assertEquals(ROWS, checkEpoch(again, 0, expected32, new HashSet<>()));
                assertEquals(0, cache.statistics().minus(first).bytesDownloaded(), "the staged copy is a hit");
                // the same bytes under the same name: a checkpoint of one resumes on the other
                assertEquals(local.state().source(), again.state().source());
            }
        }
    }

    @Test
    void aMappedObjectLargerThanTheCacheSaysSoAndAMissingOneIsNamed() {
        try (ObjectCache small = BlockCache.builder().setStore(server.store(server.endpoint()).build())
                .setFolder(folder).optBlockBytes(BLOCK).optLimitBytes(objectBytes / 2).build()) {
            RuntimeException tooLarge = assertThrows(RuntimeException.class,
                    () -> Datasets.npy("s3://" + BUCKET + "/cells/f32.npy").optCache(small).mapped().build());
            assertTrue(tooLarge.getMessage().contains("optLimitBytes") && tooLarge.getMessage().contains("lazy"),
                    tooLarge.getMessage());
            // refused from the object's size alone: nothing downloaded, nothing of the cache evicted for it
            assertEquals(0, small.statistics().bytesDownloaded(), small.statistics().toString());
        }
        try (ObjectCache cache = cache()) {
            // numpy's raw floats, not a .npy: named by its address
            InvalidFileException notNpy = assertThrows(InvalidFileException.class,
                    () -> Datasets.npy("s3://" + BUCKET + "/cells/f32.raw").optCache(cache).mapped().build());
            assertTrue(notNpy.getMessage().startsWith("s3://" + BUCKET + "/cells/f32.raw"), notNpy.getMessage());
        }
        try (ObjectCache cache = cache()) {
            RuntimeException missing = assertThrows(RuntimeException.class,
                    () -> Datasets.npy("s3://" + BUCKET + "/cells/none.npy").optCache(cache).lazy(2).build());
            assertTrue(missing.getMessage().contains("none.npy"), missing.getMessage());
        }
    }
}
