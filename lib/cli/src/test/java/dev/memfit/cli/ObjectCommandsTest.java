package dev.memfit.cli;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.memfit.PythonPeer;
import dev.memfit.cloud.S3TestServer;
import dev.memfit.shard.ShardStore;
import dev.memfit.shard.ShardWriter;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@code memfit inspect|estimate|shard s3://...} as a user runs them: each in its own process with the endpoint,
 * credentials and cache folder from the environment only, against a real S3 server (S3Proxy on 127.0.0.1). The facts
 * and sums for an {@code .h5ad} written by anndata, the shard folder made from it and a STAR listing of mrcfile
 * stacks equal those of the local files; {@code shard} converts a bucket's {@code .h5ad} into the same shards as the
 * local file; a wrong bucket is one line naming it, and the secret key is never printed.
 */
class ObjectCommandsTest {

    private static S3TestServer server;

    @TempDir
    static Path inputs;

    @TempDir
    Path cache;

    @BeforeAll
    static void upload() throws Exception {
        assertEquals("ok", PythonPeer.run("""
                import sys, os, numpy as np, pandas as pd, scipy.sparse as sp, anndata as ad, mrcfile
                d = sys.argv[1]
                rng = np.random.default_rng(5)
                x = ((rng.random((300, 40)) < 0.3) * rng.integers(1, 20, (300, 40))).astype(np.float32)
                obs = pd.DataFrame({'cell_type': pd.Categorical(rng.choice(['B', 'T'], 300))},
                                   index=['c%d' % i for i in range(300)])
                atlas = ad.AnnData(sp.csr_matrix(x), obs=obs, var=pd.DataFrame(index=['g%d' % j for j in range(40)]))
                atlas.write_h5ad(d + '/atlas.h5ad')
                atlas.write_zarr(d + '/atlas.zarr')
                os.makedirs(d + '/particles/Particles', exist_ok=True)
                z, y, x = np.meshgrid(np.arange(7), np.arange(6), np.arange(6), indexing='ij')
                with mrcfile.new(d + '/particles/Particles/stack.mrcs', overwrite=True) as mrc:
                    mrc.set_data((z * 100 + y * 10 + x).astype(np.float32))
                    mrc.set_image_stack()
                print('ok')
                """, inputs));
        Files.writeString(inputs.resolve("particles/particles.star"), "data_particles\n\nloop_\n_rlnImageName #1\n"
                + "3@Particles/stack.mrcs\n1@Particles/stack.mrcs\n7@Particles/stack.mrcs\n");
        ShardWriter.builder().setInput(inputs.resolve("atlas.h5ad")).optShardSize(70).write(inputs.resolve("shards"));
        server = new S3TestServer();
        server.createBucket("lab");
        try (Stream<Path> files = Files.walk(inputs)) {
            for (Path file : files.filter(Files::isRegularFile).toList()) {
                server.put("lab", inputs.relativize(file).toString(), Files.readAllBytes(file));
            }
        }
    }

    @AfterAll
    static void stop() {
        if (server != null) {
            server.close();
        }
    }

    /** Runs memfit in its own process with the server's endpoint and keys in the environment only. */
    private CliRun run(String... args) throws Exception {
        List<String> command = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "--enable-native-access=ALL-UNNAMED", "-cp", System.getProperty("java.class.path"), Main.class.getName()));
        command.addAll(List.of(args));
        Path err = Files.createTempFile(cache.getParent(), "err", ".txt");
        ProcessBuilder builder = new ProcessBuilder(command).redirectError(err.toFile());
        Map<String, String> environment = builder.environment();
        environment.keySet().removeIf(name -> name.startsWith("AWS_") || name.startsWith("MEMFIT_CACHE"));
        environment.put("AWS_ENDPOINT_URL", server.endpoint().toString());
        environment.put("AWS_ACCESS_KEY_ID", S3TestServer.ACCESS_KEY);
        environment.put("AWS_SECRET_ACCESS_KEY", S3TestServer.SECRET_KEY);
        environment.put("MEMFIT_CACHE_DIR", cache.toString());
        Process process = builder.start();
        String out = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(process.waitFor(2, TimeUnit.MINUTES));
        String errors = Files.readString(err);
        assertFalse(out.contains(S3TestServer.SECRET_KEY) || errors.contains(S3TestServer.SECRET_KEY), "the secret printed");
        return new CliRun(process.exitValue(), out, errors);
    }

    /** The facts of inspect --json without the file name, which differs between the object and the local file. */
    private static JsonNode facts(String json) throws Exception {
        ObjectNode node = (ObjectNode) new ObjectMapper().readTree(json);
        node.remove("file");
        return node;
    }

    @Test
    void inspectGivesTheLocalFilesFactsForAnH5adAShardFolderAndAStarListing() throws Exception {
        for (String key : List.of("atlas.h5ad", "shards/", "particles/particles.star")) {
            CliRun remote = run("inspect", "s3://lab/" + key, "--json");
            assertEquals(0, remote.status(), key + ": " + remote.err());
            CliRun local = CliRun.of("inspect", inputs.resolve(key).toString(), "--json");
            assertEquals(0, local.status(), local.err());
            JsonNode got = facts(remote.out());
            JsonNode expected = facts(local.out());
            assertEquals(expected.get("sum").asDouble(), got.get("sum").asDouble(), 1e-9 * Math.abs(expected.get("sum").asDouble()), key);
            ((ObjectNode) got).remove(List.of("sum"));
            ((ObjectNode) expected).remove(List.of("sum"));
            if (key.equals("particles/particles.star")) {
                // the local listing's extra facts are about the local file system (byte order of the header read)
                expected.fieldNames().forEachRemaining(name -> {
                    if (got.has(name)) {
                        assertEquals(expected.get(name), got.get(name), key + " " + name);
                    }
                });
                assertEquals(3, got.get("images").asLong());
            } else {
                assertEquals(expected, got, key);
            }
        }
        // numpy's sum of the images the listing names: (2 + 0 + 6) * 100 * 36 + 36 * (sum of y * 10 + x)
        CliRun star = run("inspect", "s3://lab/particles/particles.star", "--json");
        double pixels = 0;
        for (int y = 0; y < 6; y++) {
            for (int x = 0; x < 6; x++) {
                pixels += y * 10 + x;
            }
        }
        assertEquals(800 * 36 + 3 * pixels, new ObjectMapper().readTree(star.out()).get("sum").asDouble(), 1e-6);
    }

    @Test
    void aZarrStoreInABucketInspectsAndShardsAsTheLocalOne(@TempDir Path out) throws Exception {
        CliRun remote = run("inspect", "s3://lab/atlas.zarr", "--json");
        assertEquals(0, remote.status(), remote.err());
        CliRun local = CliRun.of("inspect", inputs.resolve("atlas.zarr").toString(), "--json");
        assertEquals(0, local.status(), local.err());
        JsonNode got = facts(remote.out());
        JsonNode expected = facts(local.out());
        // the same values read chunk by chunk through the cache: the same sum to the last bit
        assertEquals(expected.get("sum").asDouble(), got.get("sum").asDouble(), 0);
        assertTrue(got.get("matrices").asText().contains("layers/*: not listed"), got.toString());
        for (JsonNode node : List.of(got, expected)) {
            // a folder in a bucket is not listed: its size is X's chunks, its layers are read by name
            ((ObjectNode) node).remove(List.of("size_on_disk", "matrices"));
        }
        assertEquals(expected, got);

        CliRun shard = run("shard", "s3://lab/atlas.zarr", "--output-dir", out.resolve("remote").toString(),
                "--shard-size", "70");
        assertEquals(0, shard.status(), shard.err());
        assertTrue(shard.out().contains("reading s3://lab/atlas.zarr"), shard.out());
        CliRun fromH5ad = CliRun.of("shard", inputs.resolve("atlas.h5ad").toString(), "--output-dir",
                out.resolve("local").toString(), "--shard-size", "70");
        assertEquals(0, fromH5ad.status(), fromH5ad.err());
        try (Stream<Path> files = Files.list(out.resolve("local"))) {
            for (Path file : files.toList()) {
                String name = file.getFileName().toString();
                if (!name.equals("shard_metadata.json") && !name.startsWith(".")) {
                    assertEquals(-1, java.util.Arrays.mismatch(Files.readAllBytes(file),
                            Files.readAllBytes(out.resolve("remote").resolve(name))), name);
                }
            }
        }
        CliRun again = run("shard", "s3://lab/atlas.zarr", "--output-dir", out.resolve("remote").toString(),
                "--shard-size", "70");
        assertEquals(0, again.status(), again.err());
        assertTrue(again.out().contains("(0 written now)"), again.out());
    }

    @Test
    void aDamagedStagedCopyIsFetchedAgainAndTheSumStaysRight() throws Exception {
        // the same atlas gzip-compressed as well: a damaged staged copy of it failed with the cache file's name before
        Path gzip = inputs.resolve("atlas-gzip.h5ad");
        PythonPeer.run("""
                import sys, anndata as ad
                ad.read_h5ad(sys.argv[1]).write_h5ad(sys.argv[2], compression='gzip')
                """, inputs.resolve("atlas.h5ad"), gzip);
        server.put("lab", "atlas-gzip.h5ad", Files.readAllBytes(gzip));
        double expected = new ObjectMapper().readTree(CliRun.of("inspect", inputs.resolve("atlas.h5ad").toString(), "--json")
                .out()).get("sum").asDouble();
        for (String key : List.of("atlas.h5ad", "atlas-gzip.h5ad")) {
            CliRun first = run("inspect", "s3://lab/" + key, "--json");
            assertEquals(0, first.status(), first.err());
            Path staged;
            try (Stream<Path> files = Files.walk(cache)) {
                staged = files.filter(f -> f.getFileName().toString().equals("object")).filter(f -> {
                    try {
                        return Files.size(f) == Files.size(inputs.resolve(key));
                    } catch (java.io.IOException e) {
                        throw new java.io.UncheckedIOException(e);
                    }
                }).findFirst().orElseThrow();
            }
            // one byte inside X's values (the first chunk of X/data, as h5py locates it): a wrong value with no error in
            // the uncompressed file, a broken chunk in the gzip one
            long offset = Long.parseLong(PythonPeer.run("""
                    import sys, h5py
                    d = h5py.File(sys.argv[1], 'r')['X/data']
                    info = d.id.get_chunk_info(0) if d.chunks else None
                    print((info.byte_offset + info.size // 2) if info else d.id.get_offset() + 100)
                    """, inputs.resolve(key)));
            byte[] bytes = Files.readAllBytes(staged);
            bytes[(int) offset] ^= 0x20;
            Files.write(staged, bytes);
            CliRun again = run("inspect", "s3://lab/" + key, "--json");
            assertEquals(0, again.status(), key + ": " + again.err());
            assertEquals(expected, new ObjectMapper().readTree(again.out()).get("sum").asDouble(), 0, key);
            assertEquals(-1, java.util.Arrays.mismatch(Files.readAllBytes(inputs.resolve(key)), Files.readAllBytes(staged)),
                    key + ": the copy in the cache is repaired");
        }
        CliRun verify = run("cache", "verify");
        assertEquals(0, verify.status(), verify.out() + verify.err());

        // damaged in the bucket itself: the error names the object, not the cache's file for it
        byte[] broken = Files.readAllBytes(gzip);
        long offset = Long.parseLong(PythonPeer.run("""
                import sys, h5py
                info = h5py.File(sys.argv[1], 'r')['X/data'].id.get_chunk_info(0)
                print(info.byte_offset + info.size // 2)
                """, gzip));
        broken[(int) offset] ^= 0x20;
        server.put("lab", "broken-gzip.h5ad", broken);
        CliRun failed = run("inspect", "s3://lab/broken-gzip.h5ad");
        assertEquals(1, failed.status(), failed.out());
        assertTrue(failed.err().startsWith("memfit inspect: s3://lab/broken-gzip.h5ad"), failed.err());
        assertFalse(failed.err().contains(cache.toString()), failed.err());
        assertTrue(failed.err().contains("in the object itself"), failed.err());
    }

    @Test
    void estimateAndShardReadAnH5adFromTheBucket() throws Exception {
        CliRun estimate = run("estimate", "s3://lab/atlas.h5ad", "--model-params", "1000");
        assertEquals(0, estimate.status(), estimate.err());
        assertTrue(estimate.out().startsWith("s3://lab/atlas.h5ad: 300 samples of 160 bytes"), estimate.out());

        Path out = cache.getParent().resolve("from-bucket");
        CliRun shard = run("shard", "s3://lab/atlas.h5ad", "--output-dir", out.toString(), "--shard-size", "70");
        assertEquals(0, shard.status(), shard.err());
        assertTrue(shard.out().contains("staged s3://lab/atlas.h5ad") && shard.out().contains("MD5 matches the ETag"),
                shard.out());
        ShardStore.validate(out);
        // the same shards, byte for byte, as from the local file
        try (ShardStore fromBucket = ShardStore.open(out); ShardStore fromFile = ShardStore.open(inputs.resolve("shards"))) {
            assertEquals(fromFile.shardFiles().size(), fromBucket.shardFiles().size());
            for (int f = 0; f < fromFile.shardFiles().size(); f++) {
                assertEquals(-1, Files.mismatch(fromFile.shardFiles().get(f), fromBucket.shardFiles().get(f)),
                        fromBucket.shardFiles().get(f).toString());
            }
        }
    }

    @Test
    void aFloat64NpySumsToTheSameBitsLocallyAndFromTheBucket() throws Exception {
        // values of very different magnitudes, where summation order shows in the last digits
        Path file = inputs.resolve("wide.npy");
        String[] reference = PythonPeer.run("""
                import sys, math, numpy as np
                rng = np.random.default_rng(8)
                a = (rng.standard_normal((3000, 70)) * 10.0 ** rng.integers(-6, 9, (3000, 70))).astype(np.float64)
                np.save(sys.argv[1], a)
                print(repr(float(a.sum())), repr(math.fsum(a.ravel())))
                """, file).split(" ");
        server.put("lab", "wide.npy", Files.readAllBytes(file));
        double local = new ObjectMapper().readTree(CliRun.of("inspect", file.toString(), "--json").out()).get("sum").asDouble();
        CliRun remote = run("inspect", "s3://lab/wide.npy", "--json");
        assertEquals(0, remote.status(), remote.err());
        assertEquals(Double.doubleToLongBits(local), Double.doubleToLongBits(new ObjectMapper().readTree(remote.out())
                .get("sum").asDouble()), "the same bits from the file and from the bucket");
        double numpy = Double.parseDouble(reference[0]);
        double exact = Double.parseDouble(reference[1]);   // math.fsum: the correctly rounded sum
        assertTrue(Math.abs(local - exact) <= Math.abs(numpy - exact) + Math.ulp(exact),
                "memfit " + local + " vs exact " + exact + " (numpy " + numpy + ")");
    }

    @Test
    void shardingABucketsObjectResumesAndNamesAChangedObject() throws Exception {
        server.put("lab", "resumed.h5ad", Files.readAllBytes(inputs.resolve("atlas.h5ad")));
        Path out = cache.getParent().resolve("resumed-shards");
        CliRun first = run("shard", "s3://lab/resumed.h5ad", "--output-dir", out.toString(), "--shard-size", "70");
        assertEquals(0, first.status(), first.err());
        assertTrue(first.out().contains("(5 written now)"), first.out());
        String metadata = Files.readString(out.resolve("shard_metadata.json")).replaceAll("\\s", "");
        assertTrue(metadata.contains("\"source\":\"s3://lab/resumed.h5ad\"") && metadata.contains("\"source_etag\":"), metadata);

        CliRun again = run("shard", "s3://lab/resumed.h5ad", "--output-dir", out.toString(), "--shard-size", "70");
        assertEquals(0, again.status(), again.err());
        assertTrue(again.out().contains("(0 written now)"), again.out());
        // another cache (another machine, or a cleared one): the copy is elsewhere, the object the same
        Files.walk(cache).sorted(java.util.Comparator.reverseOrder()).forEach(f -> f.toFile().delete());
        CliRun elsewhere = run("shard", "s3://lab/resumed.h5ad", "--output-dir", out.toString(), "--shard-size", "70");
        assertEquals(0, elsewhere.status(), elsewhere.err());
        assertTrue(elsewhere.out().contains("(0 written now)"), elsewhere.out());

        // the object replaced by other bytes: named, and converted again
        PythonPeer.run("""
                import sys, anndata as ad
                a = ad.read_h5ad(sys.argv[1])
                a.X = a.X * 2
                a.write_h5ad(sys.argv[2])
                """, inputs.resolve("atlas.h5ad"), inputs.resolve("doubled.h5ad"));
        server.put("lab", "resumed.h5ad", Files.readAllBytes(inputs.resolve("doubled.h5ad")));
        CliRun changed = run("shard", "s3://lab/resumed.h5ad", "--output-dir", out.toString(), "--shard-size", "70");
        assertEquals(0, changed.status(), changed.err());
        assertTrue(changed.out().contains("were not kept: s3://lab/resumed.h5ad changed: etag"), changed.out());
        assertTrue(changed.out().contains("(5 written now)"), changed.out());
    }

    @Test
    void aWrongBucketIsOneLineNamingIt() throws Exception {
        for (String[] args : List.of(new String[]{"inspect", "s3://no-such-lab/atlas.h5ad"},
                new String[]{"estimate", "s3://no-such-lab/particles.star"},
                new String[]{"inspect", "s3://no-such-lab/shards/"})) {
            CliRun failed = run(args);
            assertTrue(failed.status() != 0, String.join(" ", args));
            List<String> lines = failed.err().lines().filter(line -> !line.isBlank()).toList();
            assertEquals(1, lines.size(), failed.err());
            assertTrue(lines.getFirst().contains("no such bucket \"no-such-lab\""), failed.err());
        }
    }
}
