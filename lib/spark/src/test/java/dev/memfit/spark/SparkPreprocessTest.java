package dev.memfit.spark;

import dev.memfit.MemfitException;
import dev.memfit.ProgressListener;
import dev.memfit.PythonPeer;
import dev.memfit.prep.Preprocess;
import org.apache.spark.sql.SparkSession;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Preprocessing on Spark against the single-process run, on files anndata wrote (defaults and gzip): the same
 * statistics to the last bit, the same genes, the same output file byte for byte (anndata reads both back equal); a truncated
 * or damaged input fails with memfit's message naming it and leaves no output. One local[2] session for the class.
 */
class SparkPreprocessTest {

    @TempDir
    static Path dir;
    private static SparkSession spark;
    private static Path plain;
    private static Path gzip;

    @BeforeAll
    static void setUp() {
        // 500 cells x 80 genes of counts, every 37th cell empty, genes of very different means (so the bins differ)
        assertEquals("ok", PythonPeer.run("""
                import sys, numpy as np, pandas as pd, scipy.sparse as sp, anndata as ad
                folder = sys.argv[1]
                rng = np.random.default_rng(5)
                n, g = 500, 80
                rate = rng.gamma(0.6, 2.0, g) * rng.choice([0.1, 1, 10], g)
                x = rng.poisson(rate * rng.gamma(2.0, 0.5, (n, 1))).astype(np.float32)
                x[::37] = 0
                obs = pd.DataFrame({'cell_type': pd.Categorical(rng.choice(['B', 'T', 'NK'], n))},
                                   index=['c%d' % k for k in range(n)])
                a = ad.AnnData(sp.csr_matrix(x), obs=obs, var=pd.DataFrame(index=['gene%d' % j for j in range(g)]))
                a.write_h5ad(folder + '/raw.h5ad')
                a.write_h5ad(folder + '/raw-gz.h5ad', compression='gzip')
                a.write_zarr(folder + '/raw.zarr')
                print('ok')
                """, dir));
        plain = dir.resolve("raw.h5ad");
        gzip = dir.resolve("raw-gz.h5ad");
        spark = SparkShards.start("local[2]", Map.of("spark.ui.enabled", "false"));
    }

    @AfterAll
    static void tearDown() {
        if (spark != null) {
            spark.stop();
        }
    }

    @Test
    void sameGenesAndValuesAsOneProcess() {
        // 32-row blocks: 16 blocks, 8 tasks of 2; 24-row blocks: 21 blocks, 6 tasks of 4, the last of 1; 0: the
        // default (one block here)
        List<String> outputs = new java.util.ArrayList<>();
        for (Path input : List.of(plain, gzip)) {
            for (long blockRows : new long[]{32, 24, 0}) {
                String name = input.getFileName() + "-" + blockRows;
                Path single = dir.resolve("single-" + name);
                Path distributed = dir.resolve("spark-" + name);
                Preprocess.Builder one = Preprocess.builder().setInput(input).optHighlyVariable(20)
                        .optProgress(ProgressListener.silent());
                SparkPreprocess.Builder many = SparkPreprocess.builder().setInput(input).optHighlyVariable(20)
                        .optSession(spark).optProgress(ProgressListener.silent());
                if (blockRows > 0) {
                    one.optBlockRows(blockRows);
                    many.optBlockRows(blockRows);
                }
                Preprocess.Result expected = one.run(single);
                Preprocess.Result result = many.run(distributed);
                assertEquals(500, result.cells());
                assertEquals(expected.genes(), result.genes());
                Preprocess.GeneStatistics want = expected.statistics();
                Preprocess.GeneStatistics got = result.statistics();
                // bit for bit (NaN equal to NaN): the sums are combined in the same tree
                assertArrayEquals(want.means(), got.means(), name);
                assertArrayEquals(want.dispersions(), got.dispersions(), name);
                assertArrayEquals(want.normalizedDispersions(), got.normalizedDispersions(), name);
                assertArrayEquals(want.selected(), got.selected(), name);
                assertArrayEquals(want.genes(), got.genes(), name);
                assertEquals(-1L, mismatch(single, distributed), name + ": the same file, byte for byte");
                outputs.add(single.toString());
                outputs.add(distributed.toString());
            }
        }
        // every pair read back by anndata (one interpreter for all): the same genes, cells, values and tables
        assertEquals("ok", PythonPeer.run("""
                import sys, numpy as np, anndata as ad
                raw = ad.read_h5ad(sys.argv[1])
                totals = np.asarray(raw.X.sum(axis=1)).ravel()
                paths = sys.argv[2:]
                for single, distributed in zip(paths[::2], paths[1::2]):
                    a, b = ad.read_h5ad(single), ad.read_h5ad(distributed)
                    assert list(a.var_names) == list(b.var_names) and len(a.var_names) >= 20, (single, a.var_names, b.var_names)
                    assert list(a.obs_names) == list(b.obs_names)
                    assert a.X.dtype == b.X.dtype == np.float32
                    assert np.array_equal(a.X.toarray(), b.X.toarray()), single
                    assert (a.X != b.X).nnz == 0 and a.X.nnz == b.X.nnz
                    for column in ['means', 'dispersions', 'dispersions_norm']:
                        assert np.array_equal(a.var[column].values, b.var[column].values, equal_nan=True), column
                    assert np.array_equal(a.obs['n_counts_raw'].values, b.obs['n_counts_raw'].values)
                    assert list(a.obs['cell_type']) == list(b.obs['cell_type'])
                    assert np.allclose(b.obs['n_counts_raw'].values, totals)
                print('ok')
                """, Stream.concat(Stream.of(plain.toString()), outputs.stream()).toArray()));
        assertEquals(List.of(), leftovers(), "no staging folder or part file left");
    }

    @Test
    void aZarrStoreGivesTheH5adsFileByteForByte() {
        Path single = dir.resolve("single-from-h5ad.h5ad");
        Path distributed = dir.resolve("spark-from-zarr.h5ad");
        Preprocess.builder().setInput(plain).optHighlyVariable(20).optBlockRows(32).optProgress(ProgressListener.silent())
                .run(single);
        Preprocess.Result result = SparkPreprocess.builder().setInput(dir.resolve("raw.zarr")).optHighlyVariable(20)
                .optBlockRows(32).optSession(spark).optProgress(ProgressListener.silent()).run(distributed);
        assertEquals(500, result.cells());
        assertEquals(-1L, mismatch(single, distributed), "the same file, byte for byte");
    }

    @Test
    void aFloat64FileGivesTheSingleProcessFileByteForByte() {
        // FPKM values spanning many magnitudes, computed and written in float64 by both
        Path fpkm = dev.memfit.Float64Atlas.write(dir.resolve("fpkm.h5ad"), 3, "csr");
        for (long blockRows : new long[]{32, 0}) {
            Path single = dir.resolve("single-fpkm-" + blockRows + ".h5ad");
            Path distributed = dir.resolve("spark-fpkm-" + blockRows + ".h5ad");
            Preprocess.Builder one = Preprocess.builder().setInput(fpkm).optHighlyVariable(40)
                    .optProgress(ProgressListener.silent());
            SparkPreprocess.Builder many = SparkPreprocess.builder().setInput(fpkm).optHighlyVariable(40)
                    .optSession(spark).optProgress(ProgressListener.silent());
            if (blockRows > 0) {
                one.optBlockRows(blockRows);
                many.optBlockRows(blockRows);
            }
            Preprocess.Result expected = one.run(single);
            Preprocess.Result result = many.run(distributed);
            assertEquals(dev.memfit.DType.FLOAT64, expected.valueType());
            assertEquals(dev.memfit.DType.FLOAT64, result.valueType());
            assertArrayEquals(expected.statistics().normalizedDispersions(), result.statistics().normalizedDispersions());
            assertArrayEquals(expected.statistics().selected(), result.statistics().selected());
            assertEquals(-1L, mismatch(single, distributed), blockRows + ": the same file, byte for byte");
            assertEquals("ok", PythonPeer.run("""
                    import sys, numpy as np, anndata as ad
                    a, b = ad.read_h5ad(sys.argv[1]), ad.read_h5ad(sys.argv[2])
                    assert a.X.dtype == b.X.dtype == np.float64
                    assert np.array_equal(a.X.toarray(), b.X.toarray())
                    assert a.obs['n_counts_raw'].dtype == np.float64
                    print('ok')
                    """, single, distributed));
        }
        assertEquals(List.of(), leftovers(), "no staging folder or part file left");
    }

    @Test
    void theCommandLineWritesWhatPreprocessWrites() {
        Path single = dir.resolve("cli-single.h5ad");
        Path distributed = dir.resolve("cli-spark.h5ad");
        Preprocess.builder().setInput(gzip).optHighlyVariable(15).optTargetSum(1e3).optProgress(ProgressListener.silent())
                .run(single);
        // ./memfit preprocess --engine spark runs this command (the launcher strips --engine); the session is this class's
        int status = new picocli.CommandLine(SparkMain.class).execute("preprocess", "--input", gzip.toString(),
                "--output", distributed.toString(), "--hvg", "15", "--target-sum", "1000", "--master", "local[2]");
        assertEquals(0, status);
        assertEquals("ok", PythonPeer.run("""
                import sys, numpy as np, anndata as ad
                a, b = ad.read_h5ad(sys.argv[1]), ad.read_h5ad(sys.argv[2])
                assert list(a.var_names) == list(b.var_names) and len(a.var_names) >= 15
                assert np.array_equal(a.X.toarray(), b.X.toarray())
                assert np.array_equal(a.var['dispersions_norm'].values, b.var['dispersions_norm'].values, equal_nan=True)
                print('ok')
                """, single, distributed));
    }

    @Test
    void aTruncatedOrDamagedInputFailsNamingItAndLeavesNoOutput() throws IOException {
        Path truncated = dir.resolve("truncated.h5ad");
        byte[] bytes = Files.readAllBytes(plain);
        Files.write(truncated, Arrays.copyOf(bytes, bytes.length / 2));
        Path out = dir.resolve("out-truncated.h5ad");
        MemfitException refused = assertThrows(MemfitException.class, () -> SparkPreprocess.builder().setInput(truncated)
                .optHighlyVariable(20).optSession(spark).optProgress(ProgressListener.silent()).run(out));
        assertTrue(refused.getMessage().contains(truncated.toString()), refused.getMessage());
        assertFalse(Files.exists(out), "no output");

        // a gzip chunk of X/data overwritten: the file opens on the driver, a task fails reading it
        Path damaged = dir.resolve("damaged.h5ad");
        Files.copy(gzip, damaged);
        assertEquals("ok", PythonPeer.run("""
                import sys, h5py
                with h5py.File(sys.argv[1], 'r') as f:
                    info = f['X/data'].id.get_chunk_info(0)
                with open(sys.argv[1], 'r+b') as out:
                    out.seek(info.byte_offset + 16)
                    out.write(b'\\xff' * 64)
                print('ok')
                """, damaged));
        Path out2 = dir.resolve("out-damaged.h5ad");
        MemfitException failed = assertThrows(MemfitException.class, () -> SparkPreprocess.builder().setInput(damaged)
                .optHighlyVariable(20).optBlockRows(50).optSession(spark).optProgress(ProgressListener.silent()).run(out2));
        assertTrue(failed.getMessage().contains(damaged.toString()), failed.getMessage());
        assertFalse(failed.getMessage().contains("\tat "), "memfit's message, not a stack trace: " + failed.getMessage());
        assertFalse(Files.exists(out2), "no output");
        assertEquals(List.of(), leftovers(), "no staging folder, temporary or part file left");
    }

    private static long mismatch(Path a, Path b) {
        try {
            return Files.mismatch(a, b);
        } catch (IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }

    /** Files of the test folder that neither the inputs nor a finished output explain. */
    private static List<String> leftovers() {
        try (Stream<Path> files = Files.list(dir)) {
            return files.map(f -> f.getFileName().toString())
                    .filter(n -> n.startsWith(".") || n.contains("staging") || n.contains("part-") || n.contains("tmp"))
                    .filter(n -> !n.endsWith(".lock")).sorted().toList();
        } catch (IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }
}
