package dev.memfit.cloud;

import dev.memfit.io.cloud.ObjectCache;
import dev.memfit.io.cloud.ObjectUri;
import dev.memfit.io.cloud.ObjectInfo;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;

/**
 * A process reading one object through a shared cache folder, started at a moment the test chooses: it pins the
 * object's version (HEAD), writes {@code BARRIER/ready-NAME}, waits for {@code BARRIER/go}, then reads, compares the
 * bytes with the object fetched directly (not through the cache's endpoint) and prints {@code ok BYTES_DOWNLOADED
 * CORRUPT_BLOCKS}, or the first mismatch (exit 1).
 *
 * <p>Arguments: cache endpoint, direct endpoint, cache folder, block bytes, limit bytes, object URI, barrier folder,
 * name, and what to read: {@code pass} (the whole object in file order, in runs of 40 000 bytes, each announced
 * ({@code willRead}) eight runs ahead, as a loader does) or {@code POSITION:LENGTH} (one read).
 */
public final class PassWorker {

    /** The bytes of one run of a pass. */
    static final int RUN = 40_000;
    /** How many runs ahead a pass announces. */
    static final int AHEAD = 8;

    private PassWorker() {
    }

    public static void main(String[] args) throws Exception {
        ObjectUri uri = ObjectUri.parse(args[5]);
        Path barrier = Path.of(args[6]);
        String what = args[8];
        try (Arena arena = Arena.ofShared();
             ObjectStore direct = store(URI.create(args[1]));
             ObjectCache cache = BlockCache.builder().setStore(store(URI.create(args[0]))).setFolder(Path.of(args[2]))
                     .optBlockBytes(Integer.parseInt(args[3])).optLimitBytes(Long.parseLong(args[4])).build()) {
            ObjectInfo info = direct.head(uri);
            MemorySegment expected = arena.allocate(info.size());
            direct.read(uri, info.etag(), 0, expected);
            cache.open(uri);
            Files.writeString(barrier.resolve("ready-" + args[7]), "");
            long deadline = System.nanoTime() + 120_000_000_000L;
            while (!Files.exists(barrier.resolve("go"))) {
                if (System.nanoTime() > deadline) {
                    System.out.println("no go after 120 s");
                    System.exit(2);
                }
                Thread.sleep(1);
            }
            long position = 0;
            long length = info.size();
            if (!what.equals("pass")) {
                position = Long.parseLong(what.split(":")[0]);
                length = Long.parseLong(what.split(":")[1]);
            }
            MemorySegment got = arena.allocate(length);
            if (what.equals("pass")) {
                pass(cache, uri, info.size(), got);
            } else {
                cache.read(uri, position, got);
            }
            long mismatch = got.mismatch(expected.asSlice(position, length));
            if (mismatch >= 0) {
                System.out.println("mismatch at " + (position + mismatch));
                System.exit(1);
            }
            System.out.println("ok " + cache.statistics().bytesDownloaded() + " " + cache.statistics().corruptBlocks());
        }
    }

    /** The whole object in runs of {@link #RUN} bytes, each announced {@link #AHEAD} runs before it is read. */
    static void pass(ObjectCache cache, ObjectUri uri, long size, MemorySegment into) {
        Path path = uri.toPath();
        long runs = (size + RUN - 1) / RUN;
        for (long r = 0; r < Math.min(AHEAD, runs); r++) {
            cache.willRead(path, r * RUN, Math.min(RUN, size - r * RUN));
        }
        for (long r = 0; r < runs; r++) {
            long next = r + AHEAD;
            if (next < runs) {
                cache.willRead(path, next * RUN, Math.min(RUN, size - next * RUN));
            }
            cache.read(path, r * RUN, into.asSlice(r * RUN, Math.min(RUN, size - r * RUN)));
        }
    }

    private static ObjectStore store(URI endpoint) {
        return ObjectStore.builder().optEnvironment(Map.of()).optEndpoint(endpoint)
                .optCredentials(S3TestServer.ACCESS_KEY, S3TestServer.SECRET_KEY).build();
    }
}
