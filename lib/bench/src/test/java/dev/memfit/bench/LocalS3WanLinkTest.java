package dev.memfit.bench;

import dev.memfit.cloud.BlockCache;
import dev.memfit.PythonPeer;
import dev.memfit.data.Batch;
import dev.memfit.data.Datasets;
import dev.memfit.data.Loader;
import dev.memfit.io.cloud.CacheStatistics;
import dev.memfit.io.cloud.ObjectCache;
import dev.memfit.io.cloud.ObjectInfo;
import dev.memfit.cloud.ObjectStore;
import dev.memfit.io.cloud.ObjectUri;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The local S3 server holds what numpy wrote, with S3's ETags, and the simulated link really adds its round trip to
 * each request and really caps the bandwidth of all connections together. The timing checks only bound the time from
 * below (a loaded machine only makes it longer): they prove the simulation slows transfers down as labelled, not how
 * fast memfit is.
 */
class LocalS3WanLinkTest {

    private static final String BUCKET = "data";
    @TempDir
    static Path folder;
    private static LocalS3 s3;
    private static Path npy;
    private static byte[] bytes;

    @BeforeAll
    static void start() throws Exception {
        npy = folder.resolve("rows.npy");
        // 3000 x 700 float32 (8.0 MiB): np.save with its defaults, values i * 700 + j
        PythonPeer.run("import sys, numpy as np\n"
                + "np.save(sys.argv[1], np.arange(3000 * 700, dtype=np.float32).reshape(3000, 700))", npy);
        bytes = Files.readAllBytes(npy);
        s3 = LocalS3.inFolder(folder.resolve("server"));
        s3.createBucket(BUCKET);
        s3.createBucket(BUCKET); // a second time: no error
    }

    @AfterAll
    static void stop() {
        s3.close();
    }

    @Test
    void uploadsGiveS3sEtagsAndReadBackAsNumpyWroteThem() throws Exception {
        ObjectUri single = s3.upload(npy, BUCKET, "single.npy");
        ObjectUri multi = s3.uploadMultipart(npy, BUCKET, "multi.npy", 5L << 20);
        try (ObjectStore store = s3.store().build()) {
            ObjectInfo one = store.head(single);
            assertEquals(bytes.length, one.size());
            assertEquals(HexFormat.of().formatHex(MessageDigest.getInstance("MD5").digest(bytes)), one.etag());
            ObjectInfo parts = store.head(multi);
            assertEquals(bytes.length, parts.size());
            assertTrue(parts.etag().endsWith("-2"), "two parts of 5 MiB and 3 MiB: " + parts.etag());
        }
        try (ObjectCache cache = BlockCache.builder().setStore(s3.store().build()).setFolder(folder.resolve("cache"))
                .optBlockBytes(1 << 20).build();
             Arena arena = Arena.ofConfined()) {
            MemorySegment all = arena.allocate(bytes.length);
            cache.read(multi, 0, all);
            assertArrayEquals(bytes, all.toArray(ValueLayout.JAVA_BYTE));
            // rows through the loader: each value is its index, as numpy wrote it
            try (Loader loader = Datasets.npy(single.toString()).optCache(cache).lazy(4).optBatchSize(64)
                    .optShuffle(3).build()) {
                long rows = 0;
                for (Batch batch : loader.epoch(0)) {
                    for (int r = 0; r < batch.size(); r++) {
                        long index = batch.indices()[r];
                        for (int c : new int[]{0, 1, 699}) {
                            assertEquals(index * 700 + c, batch.data().getAtIndex(ValueLayout.JAVA_FLOAT, r * 700L + c));
                        }
                    }
                    rows += batch.size();
                }
                assertEquals(3000, rows);
            }
        }
    }

    @Test
    void theLinkAddsItsRoundTripToEveryRequest() throws Exception {
        ObjectUri uri = s3.upload(npy, BUCKET, "latency.npy");
        Duration roundTrip = Duration.ofMillis(150);
        try (WanLink link = WanLink.start(s3.endpoint(), roundTrip, 0);
             ObjectStore store = s3.store(link.endpoint()).build();
             Arena arena = Arena.ofConfined()) {
            assertEquals("simulated link: 150 ms round trip, no bandwidth cap", link.describe());
            store.head(uri); // the client's first connection and class loading, outside the measurement
            long before = link.requests();
            long start = System.nanoTime();
            for (int i = 0; i < 4; i++) {
                store.head(uri);
                store.read(uri, store.head(uri).etag(), 1000L * i, arena.allocate(100));
            }
            double seconds = (System.nanoTime() - start) / 1e9;
            assertEquals(12, link.requests() - before, "each HEAD and GET is one request through the link");
            assertTrue(seconds >= 12 * 0.150, "12 requests of at least 150 ms each took " + seconds + " s");
        }
    }

    @Test
    void theBandwidthCapIsSharedByAllConnections() throws Exception {
        ObjectUri uri = s3.upload(npy, BUCKET, "bandwidth.npy");
        long cap = 4L << 20;
        try (WanLink link = WanLink.start(s3.endpoint(), Duration.ZERO, cap);
             ObjectStore store = s3.store(link.endpoint()).build();
             Arena arena = Arena.ofShared();
             ExecutorService threads = Executors.newFixedThreadPool(4)) {
            assertEquals("simulated link: 0 ms round trip, 4 MiB/s shared", link.describe());
            String etag = store.head(uri).etag();
            MemorySegment into = arena.allocate(bytes.length);
            long quarter = bytes.length / 4;
            long start = System.nanoTime();
            List<Future<?>> parts = new ArrayList<>();
            for (int i = 0; i < 4; i++) {
                long from = i * quarter;
                long length = i == 3 ? bytes.length - from : quarter;
                parts.add(threads.submit(() -> {
                    store.read(uri, etag, from, into.asSlice(from, length));
                    return null;
                }));
            }
            for (Future<?> part : parts) {
                part.get();
            }
            double seconds = (System.nanoTime() - start) / 1e9;
            assertArrayEquals(bytes, into.toArray(ValueLayout.JAVA_BYTE), "the bytes relayed unchanged");
            // four connections at once, 8 MiB: at most the cap together (plus the 5 ms burst and one 64 KiB chunk each)
            double rate = bytes.length / seconds;
            assertTrue(rate <= cap * 1.1, String.format("%.2f MiB/s through a link capped at 4 MiB/s", rate / 1048576));
            assertTrue(link.bytesDown() >= bytes.length, "the bodies went through the link");
        }
    }

    @Test
    void aCacheReadingThroughTheLinkCountsWhatCameOverIt(@TempDir Path cacheFolder) throws Exception {
        ObjectUri uri = s3.upload(npy, BUCKET, "counted.npy");
        try (WanLink link = WanLink.start(s3.endpoint(), Duration.ofMillis(5), 64L << 20);
             ObjectCache cache = BlockCache.builder().setStore(s3.store(link.endpoint()).build()).setFolder(cacheFolder)
                     .optBlockBytes(1 << 20).optParallelRequests(4).build();
             Arena arena = Arena.ofConfined()) {
            CacheStatistics before = cache.statistics();
            long linkBefore = link.bytesDown();
            MemorySegment all = arena.allocate(bytes.length);
            cache.read(uri, 0, all);
            CacheStatistics cold = cache.statistics().minus(before);
            assertEquals(bytes.length, cold.bytesDownloaded());
            assertTrue(link.bytesDown() - linkBefore >= bytes.length, "the blocks came over the link");
            long requests = link.requests();
            cache.read(uri, 0, all);
            assertEquals(requests, link.requests(), "a warm read sends nothing over the link");
            assertArrayEquals(bytes, all.toArray(ValueLayout.JAVA_BYTE));
            assertTrue(cache.statistics().minus(before).hits() > 0, "the second read came from the cache");
        }
    }
}
