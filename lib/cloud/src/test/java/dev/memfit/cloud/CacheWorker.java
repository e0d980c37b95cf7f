package dev.memfit.cloud;

import dev.memfit.io.cloud.ObjectCache;
import dev.memfit.io.cloud.ObjectUri;
import dev.memfit.io.cloud.ObjectInfo;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.URI;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Random;

/**
 * A second process reading through a shared cache folder: random reads of one object, each compared with the
 * object's bytes fetched directly (without the cache). Prints {@code ok N} or the first mismatch, and exits 0 or 1.
 *
 * <p>Arguments: endpoint, cache folder, block bytes, limit bytes, object URI, seed, reads.
 */
public final class CacheWorker {

    private CacheWorker() {
    }

    public static void main(String[] args) {
        URI endpoint = URI.create(args[0]);
        ObjectUri uri = ObjectUri.parse(args[4]);
        Random random = new Random(Long.parseLong(args[5]));
        int reads = Integer.parseInt(args[6]);
        try (Arena arena = Arena.ofShared();
             ObjectStore direct = ObjectStore.builder().optEnvironment(java.util.Map.of()).optEndpoint(endpoint)
                     .optCredentials(S3TestServer.ACCESS_KEY, S3TestServer.SECRET_KEY).build();
             ObjectCache cache = BlockCache.builder().setStore(ObjectStore.builder().optEnvironment(java.util.Map.of())
                             .optEndpoint(endpoint).optCredentials(S3TestServer.ACCESS_KEY, S3TestServer.SECRET_KEY).build())
                     .setFolder(Path.of(args[1])).optBlockBytes(Integer.parseInt(args[2]))
                     .optLimitBytes(Long.parseLong(args[3])).build()) {
            ObjectInfo info = direct.head(uri);
            MemorySegment whole = arena.allocate(info.size());
            direct.read(uri, info.etag(), 0, whole);
            byte[] expected = whole.toArray(ValueLayout.JAVA_BYTE);
            for (int i = 0; i < reads; i++) {
                int length = 1 + random.nextInt(Integer.parseInt(args[2]) * 3 / 2);
                long position = random.nextLong(expected.length - length);
                MemorySegment into = arena.allocate(length);
                cache.read(uri, position, into);
                if (!Arrays.equals(into.toArray(ValueLayout.JAVA_BYTE),
                        Arrays.copyOfRange(expected, (int) position, (int) position + length))) {
                    System.out.println("mismatch at " + position + " (" + length + " bytes)");
                    System.exit(1);
                }
            }
            System.out.println("ok " + reads + " " + cache.statistics().corruptBlocks());
        }
    }
}
