package dev.memfit.data;

import dev.memfit.cloud.BlockCache;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.memfit.AnnDataTwins;
import dev.memfit.ProgressListener;
import dev.memfit.PythonPeer;
import dev.memfit.io.AnnDataFiles;
import dev.memfit.io.Formats;
import dev.memfit.io.anndata.AnnData;
import dev.memfit.io.cloud.CacheStatistics;
import dev.memfit.io.cloud.ObjectCache;
import dev.memfit.io.cloud.ObjectUri;
import dev.memfit.cloud.S3TestServer;
import dev.memfit.prep.Preprocess;
import dev.memfit.shard.ShardLayout;
import dev.memfit.shard.ShardWriter;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The pipelines on AnnData in zarr give what they give on the same AnnData in an {@code .h5ad}
 * ({@link AnnDataTwins}): {@code shard} the same shard files byte for byte (the metadata differs only in naming its
 * source), {@code preprocess} the same output (compared in anndata, and byte for byte), the stream the same batches for
 * the same seed; and so does a zarr store in a bucket (a loopback S3 server), read chunk by chunk through the object
 * cache, never staged whole, with sums bit-identical to the local store's. anndata's archive {@code .zarr.zip} files
 * shard and preprocess as their {@code .h5ad} twins.
 */
class ZarrPipelinesTest {

    private static final String BUCKET = "atlas";
    private static final ObjectMapper JSON = new ObjectMapper();

    @TempDir
    static Path dir;
    @TempDir
    Path work;

    private static S3TestServer server;

    @BeforeAll
    static void write() throws Exception {
        AnnDataTwins.write(dir);
        server = new S3TestServer();
        server.createBucket(BUCKET);
        for (String name : List.of("csr32.zarr", "csc.zarr", "dense.zarr", "csr32.zarr.zip")) {
            Path store = dir.resolve(name);
            try (Stream<Path> files = Files.walk(store)) {
                for (Path file : files.filter(Files::isRegularFile).toList()) {
                    String key = Files.isDirectory(store) ? name + "/" + store.relativize(file).toString().replace('\\', '/') : name;
                    server.put(BUCKET, key, Files.readAllBytes(file));
                }
            }
        }
    }

    @AfterAll
    static void stop() {
        if (server != null) {
            server.close();
        }
    }

    private ObjectCache cache() {
        return BlockCache.builder().setStore(server.store(server.endpoint()).build()).setFolder(work.resolve("cache"))
                .optBlockBytes(64 * 1024).optLimitBytes(256L << 20).build();
    }

    private static Path object(String key) {
        return ObjectUri.parse("s3://" + BUCKET + "/" + key).toPath();
    }

    // ---- shards

    private ShardWriter.Builder shard(Path input) {
        return ShardWriter.builder().setInput(input).optShardSize(256).optProgress(ProgressListener.silent());
    }

    /** Every file of a shard folder but its metadata, by name. */
    private static Map<String, byte[]> shardFiles(Path folder) {
        Map<String, byte[]> files = new TreeMap<>();
        try (Stream<Path> list = Files.list(folder)) {
            for (Path file : list.toList()) {
                String name = file.getFileName().toString();
                if (!name.equals(ShardWriter.METADATA) && !name.startsWith(".")) {
                    files.put(name, Files.readAllBytes(file));
                }
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return files;
    }

    /** The metadata without what names the source (its path, bytes and version). */
    private static JsonNode metadataBesidesSource(Path folder) {
        try {
            ObjectNode metadata = (ObjectNode) JSON.readTree(folder.resolve(ShardWriter.METADATA).toFile());
            metadata.remove(List.of("source", "source_bytes", "source_modified", "source_etag"));
            return metadata;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private static void assertSameShards(Path expected, Path found, String what) {
        Map<String, byte[]> a = shardFiles(expected);
        Map<String, byte[]> b = shardFiles(found);
        assertEquals(a.keySet(), b.keySet(), what);
        assertTrue(a.size() > 2, what + ": " + a.keySet());
        a.forEach((name, bytes) -> assertArrayEquals(bytes, b.get(name), what + ": " + name));
        assertEquals(metadataBesidesSource(expected), metadataBesidesSource(found), what);
    }

    @Test
    void shardsFromZarrAreTheH5adsByteForByte() {
        for (String variant : AnnDataTwins.VARIANTS) {
            Path fromH5ad = work.resolve(variant + "-h5ad");
            shard(dir.resolve(variant + ".h5ad")).write(fromH5ad);
            for (String store : List.of(".zarr", ".zarr.zip")) {
                Path fromZarr = work.resolve(variant + store.replace('.', '-'));
                ShardWriter.Result result = shard(dir.resolve(variant + store)).write(fromZarr);
                assertEquals(0, result.repaired().size());
                assertSameShards(fromH5ad, fromZarr, variant + store);
                // a second run resumes: every shard is kept
                assertEquals(0, shard(dir.resolve(variant + store)).write(fromZarr).written(), variant + store);
            }
        }
        // another matrix and the other layout
        shard(dir.resolve("csr32.h5ad")).optLayer("raw/X").optLayout(ShardLayout.DENSE).write(work.resolve("raw-h5ad"));
        shard(dir.resolve("csr32.zarr")).optLayer("raw/X").optLayout(ShardLayout.DENSE).write(work.resolve("raw-zarr"));
        assertSameShards(work.resolve("raw-h5ad"), work.resolve("raw-zarr"), "raw/X dense");
        for (String version : List.of("v0.7.0", "v0.7.8")) {
            Path archive = AnnDataTwins.ARCHIVES.resolve(version);
            shard(archive.resolve("adata.h5ad")).optShardSize(7).write(work.resolve(version + "-h5ad"));
            shard(archive.resolve("adata.zarr.zip")).optShardSize(7).write(work.resolve(version + "-zarr"));
            assertSameShards(work.resolve(version + "-h5ad"), work.resolve(version + "-zarr"), version);
        }
    }

    // ---- preprocess

    @Test
    void preprocessingZarrWritesWhatPreprocessingTheH5adWrites() throws IOException {
        List<String> pairs = new ArrayList<>();
        for (String variant : AnnDataTwins.VARIANTS) {
            Path fromH5ad = work.resolve(variant + "-from-h5ad.h5ad");
            Preprocess.builder().setInput(dir.resolve(variant + ".h5ad")).optHighlyVariable(20)
                    .optProgress(ProgressListener.silent()).run(fromH5ad);
            for (String store : List.of(".zarr", ".zarr.zip")) {
                Path fromZarr = work.resolve(variant + "-from" + store.replace('.', '-') + ".h5ad");
                Preprocess.Result result = Preprocess.builder().setInput(dir.resolve(variant + store))
                        .optHighlyVariable(20).optProgress(ProgressListener.silent()).run(fromZarr);
                assertTrue(result.genes() >= 20);
                assertArrayEquals(Files.readAllBytes(fromH5ad), Files.readAllBytes(fromZarr), variant + store);
                pairs.add(fromH5ad + "," + fromZarr);
            }
        }
        for (String version : List.of("v0.7.0", "v0.7.8")) {
            Path archive = AnnDataTwins.ARCHIVES.resolve(version);
            Path fromH5ad = work.resolve(version + "-from-h5ad.h5ad");
            Path fromZarr = work.resolve(version + "-from-zarr.h5ad");
            Preprocess.builder().setInput(archive.resolve("adata.h5ad")).optHighlyVariable(5)
                    .optProgress(ProgressListener.silent()).run(fromH5ad);
            Preprocess.builder().setInput(archive.resolve("adata.zarr.zip")).optHighlyVariable(5)
                    .optProgress(ProgressListener.silent()).run(fromZarr);
            pairs.add(fromH5ad + "," + fromZarr);
        }
        // and in anndata: the same X (values and type), obs and var (columns, dtypes, categories and their order)
        assertEquals("ok " + pairs.size(), PythonPeer.run("""
                import sys, warnings, numpy as np, scipy.sparse as sp, anndata
                warnings.simplefilter('ignore')
                for pair in sys.argv[1:]:
                    a, b = (anndata.read_h5ad(p) for p in pair.split(','))
                    x, y = (m.X.toarray() if sp.issparse(m.X) else m.X for m in (a, b))
                    assert x.dtype == y.dtype and np.array_equal(x, y), pair
                    for f in ('obs', 'var'):
                        p, q = getattr(a, f), getattr(b, f)
                        assert list(p.columns) == list(q.columns) and (p.dtypes == q.dtypes).all(), (pair, f)
                        assert p.equals(q) and (p.index == q.index).all(), (pair, f)
                print('ok', len(sys.argv) - 1)
                """, pairs.toArray()));
    }

    // ---- the stream

    /** The values and cell indices of every batch of two epochs. */
    private static List<Object> batches(Loader loader) {
        List<Object> all = new ArrayList<>();
        for (long epoch = 0; epoch < 2; epoch++) {
            for (Batch batch : loader.epoch(epoch)) {
                all.add(batch.indices());
                all.add(batch.toFloatArray());
            }
        }
        return all;
    }

    private static void assertSameBatches(List<Object> expected, List<Object> found, String what) {
        assertEquals(expected.size(), found.size(), what);
        for (int i = 0; i < expected.size(); i++) {
            assertTrue(java.util.Objects.deepEquals(expected.get(i), found.get(i)), what + ": batch " + i / 2);
        }
    }

    private static LoaderBuilder stream(LoaderBuilder builder) {
        return builder.optBlockShuffle(64, 5).optBatchSize(50).optThreads(2).optShuffle(7);
    }

    @Test
    void theStreamGivesTheSameBatchesForTheSameSeed() {
        for (String variant : AnnDataTwins.VARIANTS) {
            List<Object> expected;
            try (Loader h5ad = stream(Datasets.h5ad(dir.resolve(variant + ".h5ad"))).build()) {
                expected = batches(h5ad);
            }
            for (String store : List.of(".zarr", ".zarr.zip")) {
                try (Loader zarr = stream(Datasets.h5ad(dir.resolve(variant + store))).build()) {
                    assertSameBatches(expected, batches(zarr), variant + store);
                    assertTrue(zarr.describe().contains(variant + store), zarr.describe());
                }
            }
        }
        try (Loader h5ad = stream(Datasets.h5ad(dir.resolve("csr32.h5ad")).optLayer("counts")).build();
             Loader zarr = stream(Datasets.h5ad(dir.resolve("csr32.zarr.zip").toString()).optLayer("counts")).build()) {
            assertSameBatches(batches(h5ad), batches(zarr), "layers/counts");
        }
    }

    @Test
    void labelsAndColumnsReadFromAStoreAsFromTheH5ad() {
        for (String store : List.of("csr32.zarr", "dense.zarr.zip")) {
            dev.memfit.sample.Labels expected = Datasets.labels(dir.resolve("csr32.h5ad"), "cell_type");
            dev.memfit.sample.Labels found = Datasets.labels(dir.resolve(store), "cell_type");
            assertEquals(expected.names(), found.names(), store);
            assertArrayEquals(expected.codes(), found.codes(), store);
            Map<String, Object> columns = Datasets.columns(dir.resolve(store).toString(), "var");
            Map<String, Object> h5adColumns = Datasets.columns(dir.resolve("csr32.h5ad"), "var");
            assertEquals(h5adColumns.keySet(), columns.keySet());
            h5adColumns.forEach((name, values) -> assertTrue(java.util.Objects.deepEquals(values, columns.get(name)), name));
        }
        assertEquals(Formats.Format.ANNDATA_ZARR, Datasets.describe(dir.resolve("csc.zarr")).format());
        // a store opens as its cells, like an .h5ad: the same cells in the same order as the .h5ad of the same X
        try (Loader store = Datasets.open(dir.resolve("csc.zarr")).optBatchSize(50).build();
             Loader h5ad = Datasets.open(dir.resolve("csc.h5ad")).optBatchSize(50).build()) {
            assertSameBatches(batches(h5ad), batches(store), "csc.zarr opened at random");
        }
    }

    // ---- from a bucket

    @Test
    void aZarrStoreInABucketReadsChunkByChunkAsTheLocalOne() {
        try (ObjectCache cache = cache()) {
            for (String name : List.of("csr32.zarr", "csc.zarr", "dense.zarr", "csr32.zarr.zip")) {
                Path local = dir.resolve(name);
                ObjectUri uri = ObjectUri.parse("s3://" + BUCKET + "/" + name);
                // inspect's facts and sum: the same, the sum bit for bit
                Formats.DataFile described = Datasets.describe(uri, cache);
                assertEquals(Formats.Format.ANNDATA_ZARR, described.format(), name);
                Map<String, Object> facts = new java.util.HashMap<>(Formats.open(local).facts());
                if (name.endsWith(".zarr")) {
                    // a folder in a bucket is read by anndata's layout, not listed: its layers are named, not listed
                    facts.put("matrices", ((String) facts.get("matrices")).replaceAll("; layers/counts: [^;]*",
                            "; layers/*: not listed (a folder in a bucket without consolidated metadata); read one by name, "
                                    + "--layer NAME"));
                }
                assertEquals(facts, described.facts(), name);
                try (AnnData remote = AnnDataFiles.builder().setFile(object(name)).optStorage(cache).open();
                     AnnData here = AnnDataFiles.open(local)) {
                    assertEquals(here.totals(), remote.totals(), name);
                    assertEquals(Double.doubleToLongBits(here.sum()), Double.doubleToLongBits(remote.sum()), name);
                    assertArrayEquals(here.columnSums(), remote.columnSums(), name);
                    assertEquals(here.frameColumns("obs").keySet(), remote.frameColumns("obs").keySet(), name);
                }
            }
        }
        // the stream: the same batches, without staging the store (raw/X and the layer are never fetched)
        try (ObjectCache cache = cache()) {
            List<Object> expected;
            try (Loader local = stream(Datasets.h5ad(dir.resolve("csr32.zarr"))).build()) {
                expected = batches(local);
            }
            try (Loader remote = stream(Datasets.h5ad("s3://" + BUCKET + "/csr32.zarr").optCache(cache)).build()) {
                assertSameBatches(expected, batches(remote), "s3 csr32.zarr");
                assertTrue(remote.describe().contains("s3://" + BUCKET + "/csr32.zarr"), remote.describe());
            }
            CacheStatistics read = cache.statistics();
            long folder = folderBytes(dir.resolve("csr32.zarr"));
            assertTrue(read.bytesDownloaded() < folder / 2, "downloaded " + read.bytesDownloaded() + " of a "
                    + folder + "-byte store: it was read chunk by chunk, not staged");
            try (Loader remote = stream(Datasets.h5ad("s3://" + BUCKET + "/csr32.zarr.zip").optCache(cache)).build()) {
                assertSameBatches(expected, batches(remote), "s3 csr32.zarr.zip");
            }
        }
        // shards from the bucket: the same files as from the local store
        try (ObjectCache cache = cache()) {
            ObjectUri uri = ObjectUri.parse("s3://" + BUCKET + "/csc.zarr");
            AnnDataFiles.Version version = AnnDataFiles.version(cache, uri);
            assertEquals(folderBytes(dir.resolve("csc.zarr")), version.bytes());
            shard(dir.resolve("csc.zarr")).write(work.resolve("local"));
            ShardWriter.Result result = shard(uri.toPath()).optStorage(cache)
                    .optSource(uri.toPath(), uri.toString(), version.modified(), version.bytes()).write(work.resolve("remote"));
            assertTrue(result.written() > 2);
            assertSameShards(work.resolve("local"), work.resolve("remote"), "s3 csc.zarr");
            assertEquals(0, shard(uri.toPath()).optStorage(cache).optSource(uri.toPath(), uri.toString(),
                    version.modified(), version.bytes()).write(work.resolve("remote")).written(), "resumed");
        }
    }

    private static long folderBytes(Path folder) {
        try (Stream<Path> files = Files.walk(folder)) {
            long total = 0;
            for (Path file : files.filter(Files::isRegularFile).toList()) {
                total += Files.size(file);
            }
            return total;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
