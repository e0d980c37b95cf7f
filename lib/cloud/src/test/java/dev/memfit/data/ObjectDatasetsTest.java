package dev.memfit.data;

import dev.memfit.cloud.BlockCache;
import dev.memfit.MemfitException;
import dev.memfit.PythonPeer;
import dev.memfit.io.Formats;
import dev.memfit.io.cloud.CacheStatistics;
import dev.memfit.io.cloud.ObjectCache;
import dev.memfit.io.cloud.ObjectChangedException;
import dev.memfit.io.cloud.ObjectUri;
import dev.memfit.cloud.S3TestServer;
import dev.memfit.shard.ObjectShardStore;
import dev.memfit.shard.ShardStore;
import dev.memfit.shard.ShardWriter;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Object addresses where paths are taken, against a real S3 server (S3Proxy on 127.0.0.1): an {@code .h5ad} written
 * by anndata's {@code write_h5ad()} with its defaults, the shard folder {@link ShardWriter} makes from it, and
 * mrcfile stacks with a RELION 3.1 STAR listing and a cryoSPARC job's two {@code .cs} files, each uploaded and read
 * through the object cache; values equal those read from the local files, a cache smaller than the shard folder
 * completes epochs downloading each shard about once per epoch, a shard replaced during an epoch is reported, and a
 * wrong bucket gets one line naming it.
 */
class ObjectDatasetsTest {

    private static final int BLOCK = 32 * 1024;
    private static final int CELLS = 2000;
    private static final int GENES = 200;
    private static final int SHARD_CELLS = 100;
    private static final String BUCKET = "lab";
    private static S3TestServer server;
    private static Path atlas;
    private static Path shards;
    private static Path star;
    private static long shardBytes;
    private static long largestShard;

    @TempDir
    static Path inputs;

    @TempDir
    Path folder;

    @BeforeAll
    static void upload() throws Exception {
        atlas = inputs.resolve("atlas.h5ad");
        // anndata's defaults: a CSR X, categorical obs; mrcfile stacks whose pixels say where they come from
        assertEquals("ok", PythonPeer.run("""
                import sys, os, numpy as np, pandas as pd, scipy.sparse as sp, anndata as ad, mrcfile
                d = sys.argv[1]
                rng = np.random.default_rng(14)
                x = ((rng.random((%d, %d)) < 0.2) * rng.integers(1, 50, (%d, %d))).astype(np.float32)
                obs = pd.DataFrame({'cell_type': pd.Categorical(rng.choice(['B', 'T', 'NK'], %d))},
                                   index=['c%%d' %% i for i in range(%d)])
                var = pd.DataFrame(index=['g%%d' %% j for j in range(%d)])
                ad.AnnData(sp.csr_matrix(x), obs=obs, var=var).write_h5ad(d + '/atlas.h5ad')
                os.makedirs(d + '/particles/Particles/my stacks', exist_ok=True)
                for s, (name, n) in enumerate([('Particles/stack_a.mrcs', 6), ('Particles/my stacks/stack b.mrcs', 5)]):
                    z, y, x = np.meshgrid(np.arange(n), np.arange(8), np.arange(8), indexing='ij')
                    with mrcfile.new(d + '/particles/' + name, overwrite=True) as mrc:
                        mrc.set_data((s * 1000 + z * 100 + y * 10 + x).astype(np.float32))
                        mrc.set_image_stack()
                # the same particles as a cryoSPARC job names them: blob fields in the passthrough file, from the project
                t = np.zeros(11, dtype=[('uid', '<u8'), ('blob/path', 'S40'), ('blob/idx', '<u4'), ('blob/shape', '<u4', (2,))])
                t['uid'] = np.arange(11) + 2**63
                t['blob/path'] = [b'Particles/stack_a.mrcs'] * 6 + [b'Particles/my stacks/stack b.mrcs'] * 5
                t['blob/idx'] = list(range(6)) + list(range(5))
                job = np.zeros(11, dtype=[('uid', '<u8'), ('alignments2D/class', '<u4')])
                job['uid'] = t['uid']
                os.makedirs(d + '/particles/J5')
                for name, rows in [('J5_passthrough_particles.cs', t), ('J5_particles.cs', job)]:
                    with open(d + '/particles/J5/' + name, 'wb') as out:
                        np.save(out, rows)
                print('ok')
                """.formatted(CELLS, GENES, CELLS, GENES, CELLS, CELLS, GENES), inputs));
        shards = inputs.resolve("shards");
        ShardWriter.builder().setInput(atlas).optShardSize(SHARD_CELLS).write(shards);
        ShardStore.validate(shards);
        star = inputs.resolve("particles/particles.star");
        StringBuilder rows = new StringBuilder();
        for (int i = 0; i < 11; i++) {
            // particle i: stack_a image i for i < 6, then stack b image i - 6 (1-based in the file)
            rows.append(i < 6 ? (i + 1) + "@Particles/stack_a.mrcs" : "\"" + (i - 5) + "@Particles/my stacks/stack b.mrcs\"")
                    .append(" 1\n");
        }
        Files.writeString(star, """
                # version 30001

                data_optics

                loop_
                _rlnOpticsGroup #1
                _rlnImageSize #2
                1 8

                # version 30001

                data_particles

                loop_
                _rlnImageName #1
                _rlnOpticsGroup #2
                """ + rows);

        server = new S3TestServer();
        server.createBucket(BUCKET);
        byte[] h5ad = Files.readAllBytes(atlas);
        server.put(BUCKET, "atlas.h5ad", h5ad);
        server.putMultipart(BUCKET, "multi/atlas.h5ad", h5ad, 5 << 20);
        try (Stream<Path> files = Files.list(shards)) {
            for (Path file : files.toList()) {
                server.put(BUCKET, "shards/" + file.getFileName(), Files.readAllBytes(file));
            }
        }
        try (ShardStore store = ShardStore.open(shards)) {
            shardBytes = store.storedBytes();
            long[] perShard = new long[store.shardSizes().length];
            List<Path> files = store.shardFiles();
            for (int f = 0; f < files.size(); f++) {
                perShard[f / 3] += Files.size(files.get(f));
            }
            largestShard = Arrays.stream(perShard).max().orElseThrow();
        }
        Path dense = inputs.resolve("dense");
        ShardWriter.builder().setInput(atlas).optShardSize(300).optLayout(dev.memfit.shard.ShardLayout.DENSE).write(dense);
        try (Stream<Path> files = Files.list(dense)) {
            for (Path file : files.toList()) {
                server.put(BUCKET, "dense/" + file.getFileName(), Files.readAllBytes(file));
            }
        }
        try (Stream<Path> files = Files.walk(inputs.resolve("particles"))) {
            for (Path file : files.filter(Files::isRegularFile).toList()) {
                server.put(BUCKET, "particles/" + inputs.resolve("particles").relativize(file), Files.readAllBytes(file));
            }
        }
    }

    @AfterAll
    static void stop() {
        if (server != null) {
            server.close();
        }
    }

    private ObjectCache cache(long limit) {
        return BlockCache.builder().setStore(server.store(server.endpoint()).build()).setFolder(folder)
                .optBlockBytes(BLOCK).optLimitBytes(limit).build();
    }

    /** Every batch of an epoch: its indices and values. */
    private static List<float[]> epoch(Loader loader, long epoch, List<long[]> indices) {
        List<float[]> values = new ArrayList<>();
        for (Batch batch : loader.epoch(epoch)) {
            values.add(batch.toFloatArray());
            indices.add(batch.indices());
        }
        return values;
    }

    @Test
    void anH5adInABucketStreamsTheSameBatchesAsTheLocalFile() {
        try (ObjectCache cache = cache(64L << 20);
             Loader local = Datasets.h5ad(atlas.toString()).optBlockShuffle(64, 4).optBatchSize(50).optShuffle(5).build();
             Loader remote = Datasets.h5ad("s3://" + BUCKET + "/atlas.h5ad").optCache(cache).optBlockShuffle(64, 4)
                     .optBatchSize(50).optShuffle(5).build()) {
            CacheStatistics staged = cache.statistics();
            // staged whole once, when the loader was built: every byte of the object, no more
            assertEquals(atlas.toFile().length(), staged.bytesDownloaded(), staged.toString());
            for (long e = 0; e < 2; e++) {
                List<long[]> localIndices = new ArrayList<>();
                List<long[]> remoteIndices = new ArrayList<>();
                List<float[]> expected = epoch(local, e, localIndices);
                List<float[]> got = epoch(remote, e, remoteIndices);
                assertEquals(expected.size(), got.size());
                long cells = 0;
                for (int b = 0; b < got.size(); b++) {
                    assertArrayEquals(localIndices.get(b), remoteIndices.get(b), "epoch " + e + " batch " + b);
                    assertArrayEquals(expected.get(b), got.get(b), "epoch " + e + " batch " + b);
                    cells += got.get(b).length / GENES;
                }
                assertEquals(CELLS, cells);
            }
            assertEquals(0, cache.statistics().minus(staged).bytesDownloaded(), "the epochs read the local copy");
            assertTrue(remote.describe().contains("s3://" + BUCKET + "/atlas.h5ad"), remote.describe());

            // a multipart upload (ETag "...-1", not an MD5) is staged too, checked block by block
            try (Loader multi = Datasets.h5ad("s3://" + BUCKET + "/multi/atlas.h5ad").optCache(cache).optBlockShuffle(64, 4)
                    .optBatchSize(50).optShuffle(5).build()) {
                List<long[]> indices = new ArrayList<>();
                List<float[]> got = epoch(multi, 1, indices);
                List<float[]> expected = epoch(local, 1, new ArrayList<>());
                for (int b = 0; b < got.size(); b++) {
                    assertArrayEquals(expected.get(b), got.get(b), "multipart batch " + b);
                }
            }

            Formats.DataFile described = Datasets.describe(ObjectUri.parse("s3://" + BUCKET + "/atlas.h5ad"), cache);
            Formats.DataFile localDescription = Datasets.describe(atlas);
            assertEquals(ObjectUri.parse("s3://" + BUCKET + "/atlas.h5ad").toPath(), described.path());
            assertEquals(Formats.Format.H5AD, described.format());
            assertEquals(localDescription.facts(), described.facts());
            assertEquals(localDescription.bytesOnDisk(), described.bytesOnDisk());
        }
    }

    /** Checks an epoch against the local shard store: every cell once, each row as the local store reads it. */
    private static int checkShardEpoch(Loader loader, long epoch, ShardStore local, Arena arena) {
        Set<Long> seen = new HashSet<>();
        MemorySegment row = arena.allocate((long) GENES * Float.BYTES);
        for (Batch batch : loader.epoch(epoch)) {
            float[] values = batch.toFloatArray();
            long[] indices = batch.indices();
            for (int i = 0; i < indices.length; i++) {
                assertTrue(seen.add(indices[i]), "cell " + indices[i] + " twice in epoch " + epoch);
                local.read(indices[i], row);
                assertArrayEquals(row.toArray(ValueLayout.JAVA_FLOAT),
                        Arrays.copyOfRange(values, i * GENES, (i + 1) * GENES), "cell " + indices[i]);
            }
        }
        return seen.size();
    }

    @Test
    void aShardFolderInABucketCompletesEpochsThroughACacheSmallerThanIt() {
        // room for the shards in use (the one before, the current one, one prefetched), the blocks of the one being
        // staged and the metadata: well under the folder
        long limit = 6 * largestShard + 2L * BLOCK;
        assertTrue(limit < shardBytes / 2, limit + " vs " + shardBytes);
        try (ObjectCache cache = cache(limit);
             ShardStore local = ShardStore.open(shards);
             Loader loader = Datasets.shards(ObjectShardStore.builder().setFolder(ObjectUri.parse("s3://" + BUCKET
                     + "/shards/")).setCache(cache).optPrefetchShards(1)).optBatchSize(64).optShuffle(3).optThreads(2)
                     .build();
             Arena arena = Arena.ofConfined()) {
            CacheStatistics opened = cache.statistics();
            CacheStatistics before = opened;
            for (long e = 0; e < 3; e++) {
                assertEquals(CELLS, checkShardEpoch(loader, e, local, arena));
                CacheStatistics epoch = cache.statistics().minus(before);
                before = cache.statistics();
                System.out.printf("shards through a cache of %d bytes (folder %d bytes), epoch %d: %s%n", limit,
                        shardBytes, e + 1, epoch);
                // each shard downloaded about once per epoch: a random order over all cells would stage shards over
                // and over (a shard's 3 files, about 3 blocks, per cell)
                assertTrue(epoch.bytesDownloaded() <= shardBytes + shardBytes / 10, "epoch " + e + ": " + epoch
                        + " for shards of " + shardBytes + " bytes");
                if (e == 0) {
                    assertTrue(epoch.bytesDownloaded() >= shardBytes, epoch.toString());
                }
                assertTrue(epoch.evictedBlocks() > 0, "the cache is smaller than the folder: " + epoch);
                assertTrue(cache.usedBytes() <= limit + 2 * largestShard, cache.usedBytes() + " bytes in a cache of " + limit);
            }
            assertTrue(loader.describe().contains("s3://" + BUCKET + "/shards/"), loader.describe());
        }
    }

    @Test
    void aShardFolderInACacheThatHoldsItIsDownloadedOnce() {
        try (ObjectCache cache = cache(64L << 20);
             ShardStore local = ShardStore.open(shards);
             Loader loader = Datasets.shards("s3://" + BUCKET + "/shards/", cache).optBatchSize(100).optShuffle(9).build();
             Arena arena = Arena.ofConfined()) {
            assertEquals(CELLS, checkShardEpoch(loader, 0, local, arena));
            CacheStatistics first = cache.statistics();
            assertEquals(CELLS, checkShardEpoch(loader, 1, local, arena));
            CacheStatistics second = cache.statistics().minus(first);
            assertEquals(0, second.bytesDownloaded(), second.toString());
            Formats.DataFile described = Datasets.describe(ObjectUri.parse("s3://" + BUCKET + "/shards/"), cache);
            Formats.DataFile localDescription = Datasets.describe(shards);
            assertEquals(Formats.Format.SHARDS, described.format());
            assertEquals(localDescription.samples(), described.samples());
            assertEquals(localDescription.facts().get("nnz"), described.facts().get("nnz"));
            assertEquals(localDescription.facts().get("stored_bytes"), described.facts().get("stored_bytes"));
            assertArrayEquals((long[]) localDescription.facts().get("shard_sizes"), (long[]) described.facts().get("shard_sizes"));
        }
        // a sampler of the caller's own (a uniform shuffle over all cells): no shard order to prefetch in, so shards
        // are staged as reads ask for them and the least recently used released; the values are still right
        try (ObjectCache cache = cache(64L << 20);
             ShardStore local = ShardStore.open(shards);
             Loader loader = Datasets.shards("s3://" + BUCKET + "/shards/", cache).optBatchSize(100)
                     .optSampler(new dev.memfit.sample.ShuffledSampler(CELLS, 6)).optThreads(2).build();
             Arena arena = Arena.ofConfined()) {
            assertEquals(CELLS, checkShardEpoch(loader, 0, local, arena));
        }
        // dense shards (one float32 .npy each), in file order without a shuffle
        try (ObjectCache cache = cache(64L << 20);
             ShardStore local = ShardStore.open(inputs.resolve("dense"));
             Loader loader = Datasets.shards("s3://" + BUCKET + "/dense/", cache).optBatchSize(128).build();
             Arena arena = Arena.ofConfined()) {
            assertEquals(CELLS, checkShardEpoch(loader, 0, local, arena));
        }
    }

    /**
     * A staged shard damaged on disk after it was checked (a later run finds it in the cache) fails the CRC its
     * metadata records: it is set aside and staged again from its blocks, and the epoch's values stay right.
     */
    @Test
    void aStagedShardDamagedOnDiskIsStagedAgain() throws Exception {
        try (ObjectCache cache = cache(64L << 20);
             ShardStore local = ShardStore.open(shards);
             Loader loader = Datasets.shards("s3://" + BUCKET + "/shards/", cache).optBatchSize(100).build();
             Arena arena = Arena.ofConfined()) {
            assertEquals(CELLS, checkShardEpoch(loader, 0, local, arena));
        }
        List<Path> staged;
        try (Stream<Path> files = Files.walk(folder)) {
            staged = files.filter(file -> file.getFileName().toString().equals("object")).sorted().toList();
        }
        assertTrue(staged.size() >= 3, "staged shard files: " + staged);
        for (Path file : staged) {
            try (java.io.RandomAccessFile raf = new java.io.RandomAccessFile(file.toFile(), "rw")) {
                raf.seek(raf.length() - 1);
                int last = raf.read();
                raf.seek(raf.length() - 1);
                raf.write(last ^ 0x01);
            }
        }
        try (ObjectCache cache = cache(64L << 20);
             ShardStore local = ShardStore.open(shards);
             Loader loader = Datasets.shards("s3://" + BUCKET + "/shards/", cache).optBatchSize(100).build();
             Arena arena = Arena.ofConfined()) {
            assertEquals(CELLS, checkShardEpoch(loader, 0, local, arena));
            assertTrue(cache.statistics().corruptBlocks() >= staged.size(), cache.statistics().toString());
        }
    }

    @Test
    void aShardReplacedDuringAnEpochIsReported() throws Exception {
        String bucket = "changing";
        server.createBucket(bucket);
        try (Stream<Path> files = Files.list(shards)) {
            for (Path file : files.toList()) {
                server.put(bucket, "shards/" + file.getFileName(), Files.readAllBytes(file));
            }
        }
        try (ObjectCache cache = cache(64L << 20);
             Loader loader = Datasets.shards(ObjectShardStore.builder().setFolder(ObjectUri.parse("s3://" + bucket
                     + "/shards/")).setCache(cache).optPrefetchShards(1)).optBatchSize(SHARD_CELLS).optShuffle(4).build()) {
            int[] order = dev.memfit.sample.ShardShuffleSampler.builder().setShardSizes(shardSizes()).optSeed(4).build()
                    .shardOrder(0);
            var batches = loader.epoch(0).iterator();
            batches.next();
            // the last shard of the epoch's order, replaced by another shard's bytes after the store pinned its version
            String victim = String.format("shard_%06d.data.npy", order[order.length - 1]);
            String donor = String.format("shard_%06d.data.npy", order[0]);
            server.put(bucket, "shards/" + victim, Files.readAllBytes(shards.resolve(donor)));
            ObjectChangedException changed = assertThrows(ObjectChangedException.class, () -> {
                while (batches.hasNext()) {
                    batches.next();
                }
            });
            assertTrue(changed.getMessage().contains("s3://" + bucket + "/shards/" + victim), changed.getMessage());
        }
    }

    private static long[] shardSizes() {
        try (ShardStore store = ShardStore.open(shards)) {
            return store.shardSizes();
        }
    }

    @Test
    void aWrongBucketGetsOneLineNamingIt() {
        try (ObjectCache cache = cache(64L << 20)) {
            MemfitException shardsMissing = assertThrows(MemfitException.class,
                    () -> Datasets.shards("s3://no-such-lab/shards/", cache).build());
            MemfitException h5adMissing = assertThrows(MemfitException.class,
                    () -> Datasets.h5ad("s3://no-such-lab/atlas.h5ad").optCache(cache).build());
            MemfitException starMissing = assertThrows(MemfitException.class,
                    () -> Datasets.particles("s3://no-such-lab/particles.star").optCache(cache).lazy(2).build());
            for (MemfitException e : List.of(shardsMissing, h5adMissing, starMissing)) {
                assertTrue(e.getMessage().contains("no such bucket \"no-such-lab\""), e.getMessage());
                assertEquals(1, e.getMessage().lines().count(), e.getMessage());
                assertFalse(e.getMessage().contains(S3TestServer.SECRET_KEY));
            }
        }
    }

    @Test
    void theOneDoorOpensEveryFormatInABucketAsTheLocalFile() throws Exception {
        Path rows = inputs.resolve("door-rows.npy");
        assertEquals("ok", dev.memfit.PythonPeer.run("""
                import sys, numpy as np
                np.save(sys.argv[1], np.arange(600, dtype=np.float32).reshape(150, 4))
                print('ok')
                """, rows));
        server.put(BUCKET, "door/rows.npy", Files.readAllBytes(rows));
        java.util.Map<String, Path> pairs = new java.util.LinkedHashMap<>();
        pairs.put("s3://" + BUCKET + "/door/rows.npy", rows);
        pairs.put("s3://" + BUCKET + "/atlas.h5ad", atlas);
        pairs.put("s3://" + BUCKET + "/shards/", shards);
        pairs.put("s3://" + BUCKET + "/particles/particles.star", star);
        try (ObjectCache cache = cache(64L << 20)) {
            for (var pair : pairs.entrySet()) {
                List<float[]> expected;
                List<long[]> expectedIndices = new ArrayList<>();
                // in file order: a shard folder in a bucket is shuffled shard by shard, a local one cell by cell
                try (Loader local = Datasets.open(pair.getValue().toString()).optBatchSize(7).build()) {
                    expected = epoch(local, 0, expectedIndices);
                }
                List<Access> accesses = pair.getKey().endsWith(".npy")
                        ? List.of(Access.lazy(2), Access.staged(), Access.inMemory()) : List.of(Access.lazy(2));
                for (Access access : accesses) {
                    if (!pair.getKey().endsWith(".npy") && !pair.getKey().endsWith(".star")) {
                        access = null;   // AnnData and shards in a bucket are read one way
                    }
                    LoaderBuilder door = Datasets.open(pair.getKey()).optCache(cache).optBatchSize(7);
                    if (access != null) {
                        door.optAccess(access);
                    }
                    try (Loader remote = door.build()) {
                        List<long[]> indices = new ArrayList<>();
                        List<float[]> got = epoch(remote, 0, indices);
                        assertEquals(expected.size(), got.size(), pair.getKey());
                        for (int b = 0; b < got.size(); b++) {
                            assertArrayEquals(expectedIndices.get(b), indices.get(b), pair.getKey() + " " + access + " batch " + b);
                            assertArrayEquals(expected.get(b), got.get(b), pair.getKey() + " " + access + " batch " + b);
                        }
                    }
                }
            }
            dev.memfit.MemfitException shardsOneWay = assertThrows(dev.memfit.MemfitException.class,
                    () -> Datasets.open("s3://" + BUCKET + "/shards/").optCache(cache).optAccess(Access.inMemory()).build());
            assertTrue(shardsOneWay.getMessage().contains("read one way"), shardsOneWay.getMessage());
            dev.memfit.MemfitException stagedStacks = assertThrows(dev.memfit.MemfitException.class,
                    () -> Datasets.open("s3://" + BUCKET + "/particles/particles.star").optCache(cache)
                            .optAccess(Access.staged()).build());
            assertTrue(stagedStacks.getMessage().contains("particles.star"), stagedStacks.getMessage());
        }
    }

    @Test
    void aStarListingInABucketReadsItsStacksFromTheSameBucket() {
        try (ObjectCache cache = cache(64L << 20);
             Loader remote = Datasets.particles("s3://" + BUCKET + "/particles/particles.star").optCache(cache).lazy(3)
                     .optBatchSize(4).optShuffle(2).build();
             Loader local = Datasets.particles(star).lazy(2).optBatchSize(4).optShuffle(2).build()) {
            List<long[]> indices = new ArrayList<>();
            List<float[]> got = epoch(remote, 1, indices);
            List<float[]> expected = epoch(local, 1, new ArrayList<>());
            assertEquals(expected.size(), got.size());
            int images = 0;
            for (int b = 0; b < got.size(); b++) {
                assertArrayEquals(expected.get(b), got.get(b), "batch " + b);
                for (int i = 0; i < indices.get(b).length; i++) {
                    int particle = (int) indices.get(b)[i];
                    int stack = particle < 6 ? 0 : 1;
                    int image = particle < 6 ? particle : particle - 6;
                    for (int p = 0; p < 64; p++) {
                        assertEquals(stack * 1000 + image * 100 + (p / 8) * 10 + p % 8, got.get(b)[i * 64 + p],
                                "particle " + particle + " pixel " + p);
                    }
                    images++;
                }
            }
            assertEquals(11, images);
            Formats.DataFile described = Datasets.describe(ObjectUri.parse("s3://" + BUCKET + "/particles/particles.star"), cache);
            assertEquals(11, described.samples());
            assertEquals(Formats.Format.STAR, described.format());
            assertEquals(Datasets.describe(star).bytesOnDisk(), described.bytesOnDisk());
        }
    }

    @Test
    void aStarInAJobFolderOfTheBucketFindsItsStacksAboveItAndNeverLeavesTheBucket() throws Exception {
        // RELION's layout in a bucket: particles/Job/job004/run.star names its stacks from particles/ (the project)
        server.put(BUCKET, "particles/Job/job004/run.star", Files.readAllBytes(star));
        server.put(BUCKET, "particles/Job/job004/escape.star",
                "data_\nloop_\n_rlnImageName #1\n1@../../../../other-bucket/stack_a.mrcs\n".getBytes(StandardCharsets.UTF_8));
        try (ObjectCache cache = cache(64L << 20)) {
            Formats.DataFile described = Datasets.describe(ObjectUri.parse("s3://" + BUCKET + "/particles/Job/job004/run.star"), cache);
            assertEquals(11, described.samples());
            assertEquals(Datasets.describe(star).bytesOnDisk(), described.bytesOnDisk());
            MemfitException e = assertThrows(MemfitException.class, () -> Datasets.describe(
                    ObjectUri.parse("s3://" + BUCKET + "/particles/Job/job004/escape.star"), cache));
            assertTrue(e.getMessage().contains("line 4: expected a stack name inside the listing's bucket, found "
                    + "'../../../../other-bucket/stack_a.mrcs'"), e.getMessage());
        }
    }

    @Test
    void aCryoSparcJobInABucketReadsItsPassthroughFileAndStacksFromTheSameBucket() {
        String cs = "s3://" + BUCKET + "/particles/J5/J5_particles.cs";
        try (ObjectCache cache = cache(64L << 20);
             Loader remote = Datasets.particles(cs).optCache(cache).lazy(3).optBatchSize(4).optShuffle(2).build();
             Loader local = Datasets.particles(star).lazy(2).optBatchSize(4).optShuffle(2).build()) {
            List<float[]> got = epoch(remote, 1, new ArrayList<>());
            List<float[]> expected = epoch(local, 1, new ArrayList<>());
            assertEquals(expected.size(), got.size());
            for (int b = 0; b < got.size(); b++) {
                assertArrayEquals(expected.get(b), got.get(b), "batch " + b);
            }
            Formats.DataFile described = Datasets.describe(ObjectUri.parse(cs), cache);
            assertEquals(Formats.Format.CRYOSPARC, described.format());
            assertEquals(11, described.samples());
            assertEquals(Datasets.describe(star).bytesOnDisk(), described.bytesOnDisk());
        }
    }
}
