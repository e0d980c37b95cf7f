package dev.memfit.spark;

import dev.memfit.MemfitException;
import dev.memfit.ProgressListener;
import dev.memfit.PythonPeer;
import dev.memfit.io.npy.Npy;
import dev.memfit.io.npy.NpyArray;
import dev.memfit.shard.ShardLayout;
import dev.memfit.shard.ShardPlan;
import dev.memfit.shard.ShardStore;
import dev.memfit.shard.ShardWriter;
import org.apache.spark.sql.SparkSession;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The Spark conversion against the single-process writer, on files anndata wrote: the same folder byte for byte
 * (every file, name and checksum), cells equal to anndata's rows; a task that fails fails the job with memfit's
 * message and leaves no folder. One local[2] session for the class.
 */
class SparkShardsTest {

    @TempDir
    static Path dir;
    private static SparkSession spark;
    /** atlas-0..2.h5ad (anndata defaults: CSR X, chunked), atlas-gz-0..2.h5ad (compression="gzip"), and their rows. */
    private static List<Path> plain;
    private static List<Path> gzip;

    @BeforeAll
    static void setUp() {
        // three files of 70, 45 and 23 cells: the third's genes are a reordered subset, so the union is the vocabulary
        assertEquals("ok", PythonPeer.run("""
                import sys, numpy as np, pandas as pd, scipy.sparse as sp, anndata as ad
                folder = sys.argv[1]
                rng = np.random.default_rng(11)
                rows = []
                for i, (n, genes) in enumerate([(70, ['g%d' % j for j in range(40)]),
                                                (45, ['g%d' % j for j in range(40)]),
                                                (23, ['g%d' % j for j in range(45, 25, -1)])]):
                    x = ((rng.random((n, len(genes))) < 0.25) * rng.gamma(1.5, 3.0, (n, len(genes)))).astype(np.float32)
                    x[::9] = 0
                    obs = pd.DataFrame({'cell_type': pd.Categorical(rng.choice(['B', 'T', 'NK'], n)),
                                        'depth': rng.random(n)}, index=['f%d_c%d' % (i, k) for k in range(n)])
                    a = ad.AnnData(sp.csr_matrix(x), obs=obs, var=pd.DataFrame(index=genes))
                    a.write_h5ad('%s/atlas-%d.h5ad' % (folder, i))
                    a.write_h5ad('%s/atlas-gz-%d.h5ad' % (folder, i), compression='gzip')
                    a.write_zarr('%s/atlas-%d.zarr' % (folder, i))
                    back = ad.read_h5ad('%s/atlas-gz-%d.h5ad' % (folder, i))
                    np.save('%s/rows-%d.npy' % (folder, i), back.X.toarray())
                print('ok')
                """, dir));
        plain = List.of(dir.resolve("atlas-0.h5ad"), dir.resolve("atlas-1.h5ad"), dir.resolve("atlas-2.h5ad"));
        gzip = List.of(dir.resolve("atlas-gz-0.h5ad"), dir.resolve("atlas-gz-1.h5ad"), dir.resolve("atlas-gz-2.h5ad"));
        spark = SparkShards.start("local[2]", Map.of("spark.ui.enabled", "false"));
    }

    @AfterAll
    static void tearDown() {
        if (spark != null) {
            spark.stop();
        }
    }

    @Test
    void oneFileGivesTheSingleProcessFolderByteForByte() {
        for (List<Path> inputs : List.of(plain.subList(0, 1), gzip.subList(0, 1))) {
            String name = inputs.getFirst().getFileName().toString();
            Path single = dir.resolve("single-" + name);
            Path distributed = dir.resolve("spark-" + name);
            ShardWriter.Result expected = ShardWriter.builder().setInputs(inputs).optShardSize(16)
                    .optProgress(ProgressListener.silent()).write(single);
            SparkShards.Result result = SparkShards.builder().setInputs(inputs).optShardSize(16).optSession(spark)
                    .optProgress(ProgressListener.silent()).write(distributed);
            assertEquals(5, result.shards());   // 70 cells: 4 x 16 + 6
            assertEquals(expected.shards(), result.shards());
            assertEquals(ShardLayout.SPARSE, result.layout());
            assertSameFiles(single, distributed);
            ShardStore.validate(distributed);
            assertCellsAre(distributed, List.of(dir.resolve("rows-0.npy")));
        }
    }

    @Test
    void threeFilesGiveTheSingleProcessFolderByteForByte() {
        for (List<Path> inputs : List.of(plain, gzip)) {
            String name = inputs.getFirst().getFileName().toString();
            Path single = dir.resolve("single3-" + name);
            Path distributed = dir.resolve("spark3-" + name);
            ShardWriter.builder().setInputs(inputs).optShardSize(20).optProgress(ProgressListener.silent()).write(single);
            SparkShards.Result result = SparkShards.builder().setInputs(inputs).optShardSize(20).optSession(spark)
                    .optProgress(ProgressListener.silent()).write(distributed);
            // shards restart at each file: 70 -> 4, 45 -> 3, 23 -> 2
            assertEquals(9, result.shards());
            assertEquals(138, result.cells());
            assertEquals(46, result.genes());   // g0..g39, then g45..g40 of the third file
            assertSameFiles(single, distributed);
            ShardStore.validate(distributed);
            try (ShardStore store = ShardStore.open(distributed)) {
                assertArrayEquals(new long[]{20, 20, 20, 10, 20, 20, 5, 20, 3}, store.shardSizes());
                assertEquals("g45", store.vocabulary().genes().get(40));
            }
            assertCellsAre(distributed, List.of(dir.resolve("rows-0.npy"), dir.resolve("rows-1.npy"),
                    dir.resolve("rows-2.npy")));
            // two tasks per core of local[2]: shares by cells (70, 45, 23 of 138) -> 2, 1, 1
            assertEquals(4, result.tasks());
            // one task for all (one per file at least), and one per shard: the same bytes
            for (int tasks : new int[]{1, 50}) {
                Path other = dir.resolve("spark3-" + tasks + "-" + name);
                SparkShards.Result grouped = SparkShards.builder().setInputs(inputs).optShardSize(20).optTasks(tasks)
                        .optSession(spark).optProgress(ProgressListener.silent()).write(other);
                assertEquals(tasks == 1 ? 3 : 9, grouped.tasks());
                assertSameFiles(single, other);
            }
        }
    }

    @Test
    void zarrStoresGiveTheSingleProcessFolderAndTheH5adsShardsByteForByte() {
        List<Path> stores = List.of(dir.resolve("atlas-0.zarr"), dir.resolve("atlas-1.zarr"), dir.resolve("atlas-2.zarr"));
        Path single = dir.resolve("single-zarr");
        Path distributed = dir.resolve("spark-zarr");
        ShardWriter.builder().setInputs(stores).optShardSize(20).optProgress(ProgressListener.silent()).write(single);
        SparkShards.Result result = SparkShards.builder().setInputs(stores).optShardSize(20).optSession(spark)
                .optProgress(ProgressListener.silent()).write(distributed);
        assertEquals(9, result.shards());
        assertSameFiles(single, distributed);
        ShardStore.validate(distributed);
        // and the shards of the same AnnData written as .h5ad (the metadata names other sources)
        Path fromH5ad = dir.resolve("single-zarr-twins-h5ad");
        ShardWriter.builder().setInputs(plain).optShardSize(20).optProgress(ProgressListener.silent()).write(fromH5ad);
        Map<String, byte[]> want = files(fromH5ad);
        Map<String, byte[]> got = files(distributed);
        want.remove(ShardWriter.METADATA);
        got.remove(ShardWriter.METADATA);
        assertEquals(want.keySet(), got.keySet());
        want.forEach((name, bytes) -> assertArrayEquals(bytes, got.get(name), name));
    }

    @Test
    void shardsAreGroupedIntoRunsOfOneFileSharedByCells() {
        ShardPlan plan = ShardPlan.builder().setInputs(plain).optShardSize(20).plan();   // 4 + 3 + 2 shards
        assertEquals(List.of(new SparkShards.ShardRange(0, 0, 2, 40), new SparkShards.ShardRange(0, 2, 2, 30),
                new SparkShards.ShardRange(1, 4, 3, 45), new SparkShards.ShardRange(2, 7, 2, 23)), SparkShards.ranges(plan, 4));
        // 7 tasks: 3.55 -> 4 (one per shard), 2.28 -> 2, 1.17 -> 1
        assertEquals(List.of(new SparkShards.ShardRange(0, 0, 1, 20), new SparkShards.ShardRange(0, 1, 1, 20),
                new SparkShards.ShardRange(0, 2, 1, 20), new SparkShards.ShardRange(0, 3, 1, 10),
                new SparkShards.ShardRange(1, 4, 2, 40), new SparkShards.ShardRange(1, 6, 1, 5),
                new SparkShards.ShardRange(2, 7, 2, 23)), SparkShards.ranges(plan, 7));
        assertEquals(3, SparkShards.ranges(plan, 1).size());
        assertEquals(9, SparkShards.ranges(plan, 100).size());
        assertThrows(MemfitException.class, () -> SparkShards.builder().setInputs(plain).optTasks(0)
                .optSession(spark).write(dir.resolve("never")));
        assertFalse(Files.exists(dir.resolve("never")));
    }

    @Test
    void aFailingTaskFailsTheJobWithMemfitsMessageAndLeavesNoFolder() throws IOException {
        // the second file's first gzip chunk of X/data overwritten: the file opens (the plan is made), its task fails
        Path broken = dir.resolve("broken.h5ad");
        Files.copy(gzip.get(1), broken);
        assertEquals("ok", PythonPeer.run("""
                import sys, h5py
                with h5py.File(sys.argv[1], 'r') as f:
                    info = f['X/data'].id.get_chunk_info(0)
                with open(sys.argv[1], 'r+b') as out:
                    out.seek(info.byte_offset + 16)
                    out.write(b'\\xff' * 64)
                print('ok')
                """, broken));
        Path out = dir.resolve("spark-broken");
        MemfitException failure = assertThrows(MemfitException.class, () -> SparkShards.builder()
                .setInputs(List.of(gzip.get(0), broken)).optShardSize(20).optSession(spark)
                .optProgress(ProgressListener.silent()).write(out));
        assertTrue(failure.getMessage().contains(broken.toString()), failure.getMessage());
        assertFalse(failure.getMessage().contains("\tat "), "memfit's message, not a stack trace: " + failure.getMessage());
        assertFalse(Files.exists(out), "no half-written folder");

        // a truncated file is refused when the job is planned, naming it: nothing is written either
        Path truncated = dir.resolve("truncated.h5ad");
        byte[] bytes = Files.readAllBytes(plain.get(2));
        Files.write(truncated, java.util.Arrays.copyOf(bytes, bytes.length / 2));
        MemfitException refused = assertThrows(MemfitException.class, () -> SparkShards.builder()
                .setInputs(List.of(plain.get(0), truncated)).optSession(spark)
                .optProgress(ProgressListener.silent()).write(out));
        assertTrue(refused.getMessage().contains(truncated.toString()), refused.getMessage());
        assertFalse(Files.exists(out), () -> refused.getMessage() + " left " + files(out).keySet());
    }

    @Test
    void aFloat64FileGivesTheSingleProcessFolderByteForByte() {
        // FPKM values spanning many magnitudes: float64 shards by default, float32 when asked, both as one process
        Path fpkm = dev.memfit.Float64Atlas.write(dir.resolve("fpkm.h5ad"), 3, "csr");
        for (dev.memfit.DType dtype : new dev.memfit.DType[]{null, dev.memfit.DType.FLOAT32}) {
            for (ShardLayout layout : ShardLayout.values()) {
                String name = layout.key() + "-" + (dtype == null ? "source" : "float32");
                Path single = dir.resolve("single-fpkm-" + name);
                Path distributed = dir.resolve("spark-fpkm-" + name);
                ShardWriter.Result expected = ShardWriter.builder().setInput(fpkm).optShardSize(64).optLayout(layout)
                        .optDType(dtype).optProgress(ProgressListener.silent()).write(single);
                SparkShards.Result result = SparkShards.builder().setInputs(List.of(fpkm)).optShardSize(64)
                        .optLayout(layout).optDType(dtype).optSession(spark).optProgress(ProgressListener.silent())
                        .write(distributed);
                assertEquals(expected.dtype(), result.dtype(), name);
                assertEquals(expected.castFrom(), result.castFrom(), name);
                assertEquals(dtype == null ? dev.memfit.DType.FLOAT64 : dev.memfit.DType.FLOAT32, result.dtype(), name);
                assertSameFiles(single, distributed);
                ShardStore.validate(distributed);
            }
        }
        // the values are the source's, as numpy reads both
        assertEquals("ok", PythonPeer.run("""
                import sys, json, numpy as np, scipy.sparse as sp, anndata as ad
                x = ad.read_h5ad(sys.argv[1]).X.toarray()
                m = json.load(open(sys.argv[2] + '/shard_metadata.json'))
                assert m['dtype'] == 'float64' and 'cast_from' not in m, m
                y = np.vstack([sp.csr_matrix((np.load(sys.argv[2] + '/' + s['files'][0]['file']),
                                              np.load(sys.argv[2] + '/' + s['files'][1]['file']),
                                              np.load(sys.argv[2] + '/' + s['files'][2]['file'])),
                                             shape=(s['cells'], x.shape[1])).toarray() for s in m['shards']])
                assert y.dtype == np.float64 and np.array_equal(y, x)
                print('ok')
                """, fpkm, dir.resolve("spark-fpkm-sparse-source")));
    }

    /** Every file of two folders (but the lock), same names, same bytes. */
    private static void assertSameFiles(Path expected, Path actual) {
        Map<String, byte[]> want = files(expected);
        Map<String, byte[]> got = files(actual);
        assertEquals(want.keySet(), got.keySet());
        want.forEach((name, bytes) -> assertArrayEquals(bytes, got.get(name), name));
    }

    private static Map<String, byte[]> files(Path folder) {
        Map<String, byte[]> files = new TreeMap<>();
        try (Stream<Path> list = Files.list(folder)) {
            for (Path file : list.toList()) {
                if (!file.getFileName().toString().equals(".memfit.lock")) {
                    files.put(file.getFileName().toString(), Files.readAllBytes(file));
                }
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return files;
    }

    /**
     * Every cell of the store against anndata's rows of the files in order; with several files, each file's genes
     * are found by name in the store's vocabulary (absent genes 0).
     */
    private static void assertCellsAre(Path folder, List<Path> rowFiles) {
        List<List<String>> fileGenes = List.of(genes(0, 40), genes(0, 40), genesDown(45, 25));
        try (ShardStore store = ShardStore.open(folder); Arena arena = Arena.ofConfined()) {
            List<String> storeGenes = store.vocabulary().genes();
            MemorySegment cell = arena.allocate(store.sampleBytes());
            long index = 0;
            for (int f = 0; f < rowFiles.size(); f++) {
                try (NpyArray rows = Npy.map(rowFiles.get(f))) {
                    long genes = rows.rowElements();
                    for (long r = 0; r < rows.rows(); r++, index++) {
                        store.read(index, cell);
                        float[] expected = new float[storeGenes.size()];
                        for (int g = 0; g < genes; g++) {
                            int at = storeGenes.indexOf(fileGenes.get(f).get(g));
                            expected[at] = rows.data().getAtIndex(ValueLayout.JAVA_FLOAT_UNALIGNED, r * genes + g);
                        }
                        assertArrayEquals(expected, cell.toArray(ValueLayout.JAVA_FLOAT), "cell " + index);
                    }
                }
            }
            assertEquals(index, store.size());
        }
    }

    private static List<String> genes(int from, int to) {
        return java.util.stream.IntStream.range(from, to).mapToObj(j -> "g" + j).toList();
    }

    private static List<String> genesDown(int from, int to) {
        return java.util.stream.IntStream.iterate(from, j -> j > to, j -> j - 1).mapToObj(j -> "g" + j).toList();
    }
}
