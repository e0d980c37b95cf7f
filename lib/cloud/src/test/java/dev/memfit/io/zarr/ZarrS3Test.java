package dev.memfit.io.zarr;

import dev.memfit.cloud.BlockCache;
import com.fasterxml.jackson.databind.JsonNode;
import dev.memfit.MemfitException;
import dev.memfit.PythonPeer;
import dev.memfit.io.cloud.ObjectCache;
import dev.memfit.io.cloud.ObjectUri;
import dev.memfit.cloud.S3TestServer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A zarr store in an S3 bucket (a loopback S3 server), read through the verified object cache as a
 * {@link dev.memfit.io.storage.Storage}: absent chunks (404) read as the fill value, a folder without consolidated
 * metadata cannot be listed (and says so), one with it can, and a {@code .zarr.zip} reads by ranges.
 */
class ZarrS3Test {

    private static final String BUCKET = "atlas";
    private static S3TestServer server;
    private static JsonNode expected;

    @TempDir
    static Path dir;
    @TempDir
    Path cacheFolder;

    @BeforeAll
    static void upload() throws Exception {
        String manifest = PythonPeer.run("""
                import sys, json, numpy as np, zarr, anndata, scipy.sparse as sp, pandas as pd
                d = sys.argv[1]
                X = sp.random(500, 60, density=0.1, format='csr', dtype=np.float32, random_state=2)
                obs = pd.DataFrame({'barcode': ['bc-%d' % k for k in range(500)]}, index=['c%d' % k for k in range(500)])
                a = anndata.AnnData(X=X, obs=obs)
                a.write_zarr(d + '/plain.zarr')
                a.write_zarr(d + '/consolidated.zarr')
                zarr.consolidate_metadata(d + '/consolidated.zarr')
                root = zarr.open_group(d + '/plain.zarr')
                z = root.create_dataset('holes', shape=(1000,), chunks=(100,), dtype='<f4', fill_value=-1.0)
                z[200:300] = 5
                with zarr.ZipStore(d + '/plain.zarr.zip', mode='w') as zs:
                    zarr.copy_store(zarr.DirectoryStore(d + '/plain.zarr'), zs)
                print(json.dumps({'row_sums': np.asarray(X.sum(axis=1)).ravel().tolist(), 'nnz': int(X.nnz)}))
                """, dir);
        expected = Zarr.JSON.readTree(manifest);
        server = new S3TestServer();
        server.createBucket(BUCKET);
        try (Stream<Path> files = Files.walk(dir)) {
            for (Path file : files.filter(Files::isRegularFile).toList()) {
                server.put(BUCKET, dir.relativize(file).toString().replace('\\', '/'), Files.readAllBytes(file));
            }
        }
    }

    @AfterAll
    static void stop() {
        server.close();
    }

    private ObjectCache cache() {
        return BlockCache.builder().setStore(server.store(server.endpoint()).build()).setFolder(cacheFolder)
                .optBlockBytes(64 * 1024).optLimitBytes(64L << 20).build();
    }

    private static Path object(String key) {
        return ObjectUri.parse("s3://" + BUCKET + "/" + key).toPath();
    }

    /** Row sums of X read from CSR arrays, compared with scipy's. */
    private static void checkX(Zarr zarr) {
        assertEquals("csr_matrix", zarr.attributes("X").encodingType().orElseThrow());
        long[] indptr = zarr.array("X/indptr").toLongArray();
        assertEquals(expected.get("nnz").asLong(), indptr[500]);
        float[] data = zarr.array("X/data").readFloats(0, (int) indptr[500]);
        for (int row = 0; row < 500; row++) {
            double sum = 0;
            for (long k = indptr[row]; k < indptr[row + 1]; k++) {
                sum += data[(int) k];
            }
            assertEquals(expected.get("row_sums").get(row).asDouble(), sum, 1e-4, "row " + row);
        }
        assertEquals("bc-499", zarr.array("obs/barcode").readStrings(499, 1)[0]);
    }

    @Test
    void aFolderInABucketReadsThroughTheObjectCache() {
        try (ObjectCache cache = cache(); Zarr zarr = Zarr.open(cache, object("plain.zarr"))) {
            checkX(zarr);
            assertFalse(cache.exists(object("plain.zarr/holes/0")), "chunk 0 was never written");
            float[] holes = zarr.array("holes").readFloats(150, 200);
            assertEquals(-1f, holes[0]);
            assertEquals(5f, holes[50]);
            assertEquals(5f, holes[149]);
            assertEquals(-1f, holes[150]);
            MemfitException list = assertThrows(MemfitException.class, () -> zarr.children("obs"));
            assertTrue(list.getMessage().contains("consolidated metadata"), list.getMessage());
        }
    }

    @Test
    void consolidatedMetadataListsGroupsInABucket() {
        try (ObjectCache cache = cache(); Zarr zarr = Zarr.open(cache, object("consolidated.zarr"))) {
            assertEquals(List.of("X", "layers", "obs", "obsm", "obsp", "uns", "var", "varm", "varp"), zarr.children(""));
            assertEquals(List.of("_index", "barcode"), zarr.children("obs"));
            checkX(zarr);
        }
    }

    @Test
    void aZipArchiveInABucketReadsByRanges() {
        try (ObjectCache cache = cache(); Zarr zarr = Zarr.open(cache, object("plain.zarr.zip"))) {
            checkX(zarr);
            assertArrayEquals(new String[] {"c0", "c1"}, zarr.array("obs/_index").readStrings(0, 2));
            assertEquals(List.of("_index", "barcode"), zarr.children("obs"));
            assertEquals(-1f, zarr.array("holes").readFloats(999, 1)[0]);
        }
    }
}
