package dev.memfit.shard;

import dev.memfit.cloud.BlockCache;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.memfit.DType;
import dev.memfit.Float64Atlas;
import dev.memfit.InvalidFileException;
import dev.memfit.ProgressListener;
import dev.memfit.PythonPeer;
import dev.memfit.data.Batch;
import dev.memfit.data.Datasets;
import dev.memfit.data.Loader;
import dev.memfit.io.cloud.ObjectCache;
import dev.memfit.cloud.S3TestServer;
import dev.memfit.train.CellClassifier;
import dev.memfit.train.FitResult;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Shards of a float64 X (FPKM values spanning many magnitudes, some below float32's range) keep its values: compared in
 * numpy with what anndata reads from the source, dense and CSR, from CSR, CSC and dense files; a cast to float32 is
 * asked for, said and recorded; folders written before still open and resume; the loaders read them in float64, and
 * the trainers name the conversion they need.
 */
class Float64ShardsTest {

    /** The shard folder's values, assembled in numpy, against the source as anndata reads it. */
    private static final String COMPARE = """
            import sys, json, numpy as np, scipy.sparse as sp, anndata as ad
            x = ad.read_h5ad(sys.argv[1]).X
            x = x.toarray() if hasattr(x, 'toarray') else np.asarray(x)
            d, dtype, cast = sys.argv[2], sys.argv[3], sys.argv[4]
            m = json.load(open(d + '/shard_metadata.json'))
            assert m['dtype'] == dtype, m['dtype']
            assert m.get('cast_from', 'none') == cast, m.get('cast_from')
            rows = []
            for s in m['shards']:
                files = {f['role']: d + '/' + f['file'] for f in s['files']}
                if 'x' in files:
                    rows.append(np.load(files['x']))
                else:
                    data = np.load(files['data'])
                    assert data.dtype == np.dtype(dtype), data.dtype
                    rows.append(sp.csr_matrix((data, np.load(files['indices']), np.load(files['indptr'])),
                                              shape=(s['cells'], len(m['vocabulary']))).toarray())
            y = np.vstack(rows)
            assert y.dtype == np.dtype(dtype), y.dtype
            want = x if dtype == 'float64' else x.astype(np.float32)
            lost = int(((x != 0) & (y == 0)).sum())
            report = ('%s: max abs difference from the source %.3g, %d of %d non-zero values 0'
                      % (dtype, float(np.abs(y.astype(np.float64) - x).max()), lost, int((x != 0).sum())))
            assert y.shape == x.shape and np.array_equal(y, want), report
            if dtype == 'float64':
                assert (y.view(np.int64) == x.astype(np.float64).view(np.int64)).all(), report
                assert lost == 0, report
            print('ok ' + report)
            """;

    @TempDir
    static Path dir;
    static Path csr;
    static Path csc;
    static Path dense;

    @BeforeAll
    static void write() {
        csr = Float64Atlas.write(dir.resolve("fpkm.h5ad"), 7, "csr");
        csc = Float64Atlas.write(dir.resolve("fpkm-csc.h5ad"), 7, "csc");
        dense = Float64Atlas.write(dir.resolve("fpkm-dense.h5ad"), 7, "dense");
    }

    private static ShardWriter.Builder writer(Path input) {
        return ShardWriter.builder().setInput(input).optShardSize(130).optProgress(ProgressListener.silent());
    }

    @Test
    void shardsKeepTheFloat64ValuesExactly() {
        Object[][] cases = {{csr, null, "csr-default"}, {csr, ShardLayout.DENSE, "csr-dense"},
                {csc, null, "csc-default"}, {dense, null, "dense-default"}, {dense, ShardLayout.SPARSE, "dense-sparse"}};
        for (Object[] c : cases) {
            Path folder = dir.resolve((String) c[2]);
            ShardWriter.Result result = writer((Path) c[0]).optLayout((ShardLayout) c[1]).write(folder);
            assertEquals(DType.FLOAT64, result.dtype(), folder.toString());
            assertNull(result.castFrom());
            String report = PythonPeer.run(COMPARE, c[0], folder, "float64", "none");
            System.out.println(c[2] + ": " + report);
            ShardStore.validate(folder);
            try (ShardStore store = ShardStore.open(folder)) {
                assertEquals(DType.FLOAT64, store.dtype());
                assertEquals(Float64Atlas.GENES * Double.BYTES, store.sampleBytes());
                assertTrue(store.describe().contains("of float64"), store.describe());
            }
            assertEquals("float64", Datasets.describe(folder).facts().get("dtype"));
            assertEquals(DType.FLOAT64, Datasets.describe(folder).dtype());
        }
    }

    @Test
    void aCastToFloat32IsAskedForAndRecorded() {
        for (ShardLayout layout : ShardLayout.values()) {
            Path folder = dir.resolve("cast-" + layout.key());
            ShardWriter.Result result = writer(csr).optLayout(layout).optDType(DType.FLOAT32).write(folder);
            assertEquals(DType.FLOAT32, result.dtype());
            assertEquals(DType.FLOAT64, result.castFrom());
            System.out.println("cast, " + layout.key() + ": " + PythonPeer.run(COMPARE, csr, folder, "float32", "float64"));
            ShardStore.validate(folder);
            try (ShardStore store = ShardStore.open(folder)) {
                assertEquals(DType.FLOAT32, store.dtype());
                assertEquals(DType.FLOAT64, store.castFrom());
            }
            assertEquals("float32 (cast from float64)", Datasets.describe(folder).facts().get("dtype"));
        }
        // float32 sources are not cast: no record, and FLOAT64 widens them exactly
        Path counts = dir.resolve("counts32.h5ad");
        assertEquals("ok", PythonPeer.run("""
                import sys, numpy as np, scipy.sparse as sp, anndata as ad
                rng = np.random.default_rng(2)
                x = ((rng.random((90, 20)) < 0.3) * rng.gamma(1.5, 3.0, (90, 20))).astype(np.float32)
                ad.AnnData(sp.csr_matrix(x)).write_h5ad(sys.argv[1])
                print('ok')
                """, counts));
        ShardWriter.Result plain = writer(counts).write(dir.resolve("counts32"));
        assertEquals(DType.FLOAT32, plain.dtype());
        assertNull(plain.castFrom());
        assertTrue(PythonPeer.run(COMPARE, counts, dir.resolve("counts32"), "float32", "none").startsWith("ok"));
        writer(counts).optDType(DType.FLOAT64).write(dir.resolve("counts64"));
        assertTrue(PythonPeer.run(COMPARE, counts, dir.resolve("counts64"), "float64", "none").startsWith("ok"));
        assertThrows(dev.memfit.MemfitException.class, () -> writer(counts).optDType(DType.INT32).write(dir.resolve("int")));
    }

    @Test
    void foldersWrittenBeforeStillOpenAndResume() throws IOException {
        // a float64 source sharded before dtypes were kept: float32 values, dtype float32, no cast recorded
        Path before = dir.resolve("before");
        writer(csr).optDType(DType.FLOAT32).write(before);
        ObjectNode metadata = (ObjectNode) ShardWriter.JSON.readTree(before.resolve(ShardWriter.METADATA).toFile());
        metadata.remove(ShardPlan.CAST_FROM);
        Files.writeString(before.resolve(ShardWriter.METADATA), ShardWriter.JSON.writeValueAsString(metadata));
        ShardStore.validate(before);
        try (ShardStore store = ShardStore.open(before)) {
            assertEquals(DType.FLOAT32, store.dtype());
        }
        // the same float32 shards asked for: every shard kept
        ShardWriter.Result kept = writer(csr).optDType(DType.FLOAT32).write(before);
        assertEquals(0, kept.written());
        assertNull(kept.startedOver());
        // the default now keeps float64: the float32 shards are named and written again
        ShardWriter.Result again = writer(csr).write(before);
        assertEquals(again.shards(), again.written());
        assertTrue(again.startedOver().contains("dtype \"float64\", was \"float32\""), again.startedOver());
        assertTrue(PythonPeer.run(COMPARE, csr, before, "float64", "none").startsWith("ok"));
        // an interrupted float64 run resumes
        Files.delete(before.resolve("shard_000001.data.npy"));
        ShardWriter.Result resumed = writer(csr).write(before);
        assertEquals(1, resumed.written());
        ShardStore.validate(before);
        // metadata without a dtype (format version 1 had none) reads as float32
        Path old = dir.resolve("old");
        writer(csr).optDType(DType.FLOAT32).optLayout(ShardLayout.DENSE).write(old);
        ObjectNode untyped = (ObjectNode) ShardWriter.JSON.readTree(old.resolve(ShardWriter.METADATA).toFile());
        untyped.remove("dtype");
        untyped.remove(ShardPlan.CAST_FROM);
        Files.writeString(old.resolve(ShardWriter.METADATA), ShardWriter.JSON.writeValueAsString(untyped));
        ShardStore.validate(old);
        try (ShardStore store = ShardStore.open(old)) {
            assertEquals(DType.FLOAT32, store.dtype());
        }
    }

    @Test
    void aTypeTheFilesDoNotHoldIsNamed() throws IOException {
        Path folder = dir.resolve("mislabelled");
        writer(csr).write(folder);
        ObjectNode metadata = (ObjectNode) ShardWriter.JSON.readTree(folder.resolve(ShardWriter.METADATA).toFile());
        metadata.put("dtype", "float32");
        Files.writeString(folder.resolve(ShardWriter.METADATA), ShardWriter.JSON.writeValueAsString(metadata));
        InvalidFileException wrong = assertThrows(InvalidFileException.class, () -> ShardStore.validate(folder));
        assertTrue(wrong.getMessage().contains("f4") && wrong.getMessage().contains("f8"), wrong.getMessage());
        metadata.put("dtype", "int8");
        Files.writeString(folder.resolve(ShardWriter.METADATA), ShardWriter.JSON.writeValueAsString(metadata));
        InvalidFileException unknown = assertThrows(InvalidFileException.class, () -> ShardStore.open(folder));
        assertTrue(unknown.getMessage().contains("dtype float32 or float64"), unknown.getMessage());
    }

    @Test
    void loadersReadFloat64AndTrainersNameTheConversion() {
        Path folder = dir.resolve("train");
        writer(csr).write(folder);
        int[] labels = new int[Float64Atlas.CELLS];
        for (int i = 0; i < labels.length; i++) {
            labels[i] = i % 3;
        }
        try (ShardStore store = ShardStore.open(folder); Arena arena = Arena.ofConfined();
             Loader loader = Datasets.shards(folder).optBatchSize(64).optShuffle(5).build()) {
            assertEquals(DType.FLOAT64, loader.outputType());
            MemorySegment row = arena.allocate(store.sampleBytes());
            long cells = 0;
            for (Batch batch : loader.epoch(0)) {
                assertEquals(DType.FLOAT64, batch.dtype());
                for (int i = 0; i < batch.size(); i++) {
                    store.read(batch.indices()[i], row);
                    assertEquals(-1, row.mismatch(batch.data().asSlice(i * store.sampleBytes(), store.sampleBytes())));
                }
                cells += batch.size();
            }
            assertEquals(Float64Atlas.CELLS, cells);
            try (CellClassifier classifier = CellClassifier.builder().setClasses(3).setLabels(labels).optEpochs(1)
                    .optProgress(ProgressListener.silent()).build()) {
                IllegalArgumentException refused = assertThrows(IllegalArgumentException.class, () -> classifier.fit(loader));
                assertTrue(refused.getMessage().contains("optConvertTo(DType.FLOAT32)")
                        && refused.getMessage().contains("float64"), refused.getMessage());
            }
        }
        try (CellClassifier classifier = CellClassifier.builder().setClasses(3).setLabels(labels).optEpochs(1)
                .optProgress(ProgressListener.silent()).build();
             Loader converted = Datasets.shards(folder).optBatchSize(64).optShuffle(5).optConvertTo(DType.FLOAT32).build()) {
            assertEquals(DType.FLOAT32, converted.outputType());
            assertTrue(converted.describe().contains("converted from float64 to float32"), converted.describe());
            FitResult fit = classifier.fit(converted);
            assertTrue(Double.isFinite(fit.history().getLast().loss()), fit.history().toString());
        }
        // the cells of the .h5ad itself come in X's float64, or float32 when asked, and the loader says so
        try (Loader cells = Datasets.h5ad(csr).optBatchSize(64).build();
             Loader narrowed = Datasets.h5ad(csr).optBatchSize(64).optConvertTo(DType.FLOAT32).build()) {
            assertEquals(DType.FLOAT64, cells.outputType());
            assertTrue(cells.describe().contains("float64"), cells.describe());
            assertEquals(DType.FLOAT32, narrowed.outputType());
            assertTrue(narrowed.describe().contains("converted from float64 to float32"), narrowed.describe());
        }
    }

    @Test
    void aFloat64FolderInABucketReadsAsTheLocalOne() throws Exception {
        Path folder = dir.resolve("bucket");
        writer(csr).write(folder);
        try (S3TestServer server = new S3TestServer()) {
            server.createBucket("lab");
            try (Stream<Path> files = Files.list(folder)) {
                for (Path file : files.toList()) {
                    server.put("lab", "f64/" + file.getFileName(), Files.readAllBytes(file));
                }
            }
            try (ObjectCache cache = BlockCache.builder().setStore(server.store(server.endpoint()).build())
                         .setFolder(dir.resolve("cache")).build();
                 ShardStore local = ShardStore.open(folder);
                 Loader loader = Datasets.shards("s3://lab/f64/", cache).optBatchSize(50).optShuffle(1).build();
                 Arena arena = Arena.ofConfined()) {
                assertEquals(DType.FLOAT64, loader.outputType());
                MemorySegment row = arena.allocate(local.sampleBytes());
                double sum = 0;
                for (Batch batch : loader.epoch(0)) {
                    for (int i = 0; i < batch.size(); i++) {
                        local.read(batch.indices()[i], row);
                        MemorySegment got = batch.data().asSlice(i * local.sampleBytes(), local.sampleBytes());
                        assertEquals(-1, row.mismatch(got), "cell " + batch.indices()[i]);
                        sum += got.getAtIndex(ValueLayout.JAVA_DOUBLE, 0);
                    }
                }
                assertTrue(sum >= 0);
                assertEquals("float64", Datasets.describe(dev.memfit.io.cloud.ObjectUri.parse("s3://lab/f64/"), cache)
                        .facts().get("dtype"));
            }
        }
    }
}
