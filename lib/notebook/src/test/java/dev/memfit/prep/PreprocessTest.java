package dev.memfit.prep;

import dev.memfit.MemfitException;
import dev.memfit.ProgressListener;
import dev.memfit.PythonPeer;
import dev.memfit.RecordingProgress;
import dev.memfit.synthetic.SyntheticAtlas;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Preprocessing checked against scanpy's Seurat-flavour algorithm re-stated in numpy/pandas (scanpy is not packaged). */
class PreprocessTest {

    @TempDir
    Path dir;

    @Test
    void matchesTheSeuratFlavourComputedInPandas() {
        Path raw = dir.resolve("raw.h5ad");
        SyntheticAtlas.builder().setCells(1500).setGenes(300).optSeed(11).write(raw);
        Path processed = dir.resolve("processed.h5ad");
        Preprocess.Result result = Preprocess.builder().setInput(raw).optHighlyVariable(60).optTargetSum(1e4).run(processed);
        assertEquals(1500, result.cells());
        assertTrue(result.genes() >= 60 && result.genes() <= 62, "ties aside, the requested number: " + result.genes());
        assertEquals("ok", PythonPeer.run("""
                import sys, numpy as np, pandas as pd, anndata as ad
                raw = ad.read_h5ad(sys.argv[1])
                out = ad.read_h5ad(sys.argv[2])
                x = raw.X.toarray().astype(np.float64)
                totals = x.sum(axis=1, keepdims=True)
                norm = np.divide(x * 1e4, totals, out=np.zeros_like(x), where=totals > 0)
                logged = np.log1p(norm).astype(np.float32)
                # scanpy highly_variable_genes(flavor='seurat', n_top_genes=60), step by step
                e = np.expm1(logged.astype(np.float64))
                mean = e.mean(axis=0)
                var = (np.mean(e ** 2, axis=0) - mean ** 2) * (e.shape[0] / (e.shape[0] - 1))
                mean[mean == 0] = 1e-12
                disp = var / mean
                disp[disp == 0] = np.nan
                disp = np.log(disp)
                mean = np.log1p(mean)
                df = pd.DataFrame({'means': mean, 'dispersions': disp})
                df['mean_bin'] = pd.cut(df['means'], bins=20)
                grouped = df.groupby('mean_bin')['dispersions']
                bin_mean = grouped.mean()
                bin_std = grouped.std(ddof=1)
                one = bin_std.isnull().values & df.groupby('mean_bin').size().eq(1).values
                bin_std[one] = bin_mean[one].values
                bin_mean[one] = 0
                df['norm'] = ((df['dispersions'].values - bin_mean[df['mean_bin'].values].values)
                              / bin_std[df['mean_bin'].values].values)
                d = df['norm'].values
                d = np.sort(d[~np.isnan(d)])[::-1]
                cut = d[60 - 1]
                expected = list(raw.var_names[np.nan_to_num(df['norm'].values) >= cut])
                assert list(out.var_names) == expected, (len(out.var_names), len(expected))
                keep = [raw.var_names.get_loc(g) for g in out.var_names]
                assert np.allclose(out.X.toarray(), logged[:, keep], rtol=1e-6, atol=1e-6)
                assert np.allclose(out.var['dispersions_norm'].values, df['norm'].values[keep], rtol=1e-4, atol=1e-6)
                assert np.allclose(out.var['means'].values, df['means'].values[keep], rtol=1e-6)
                assert out.var['highly_variable'].all()
                assert list(out.obs['cell_type']) == list(raw.obs['cell_type'])
                assert list(out.obs_names) == list(raw.obs_names)
                assert np.allclose(out.obs['n_counts_raw'].values, totals[:, 0])
                print('ok')
                """, raw, processed));
    }

    @Test
    void obsColumnsKeepTheirTypesFromAnAnndataFile(@org.junit.jupiter.api.io.TempDir Path other) {
        // anndata stores a bool column as an HDF5 enum; it must come out bool, not as the strings "TRUE"/"FALSE"
        Path raw = other.resolve("raw.h5ad");
        assertEquals("ok", PythonPeer.run("""
                import sys, numpy as np, pandas as pd, scipy.sparse as sp, anndata as ad
                rng = np.random.default_rng(4)
                x = rng.poisson(2.0, (200, 40)).astype(np.float32)
                obs = pd.DataFrame({'is_doublet': rng.random(200) < 0.3, 'batch': rng.choice(['a', 'b'], 200),
                                    'score': rng.random(200)}, index=[f'c{i}' for i in range(200)])
                ad.AnnData(sp.csr_matrix(x), obs=obs).write_h5ad(sys.argv[1])
                print('ok')
                """, raw));
        Path processed = other.resolve("processed.h5ad");
        Preprocess.builder().setInput(raw).optHighlyVariable(10).run(processed);
        assertEquals("ok", PythonPeer.run("""
                import sys, numpy as np, anndata as ad
                raw = ad.read_h5ad(sys.argv[1])
                out = ad.read_h5ad(sys.argv[2])
                assert out.obs['is_doublet'].dtype == bool, out.obs['is_doublet'].dtype
                assert (out.obs['is_doublet'].values == raw.obs['is_doublet'].values).all()
                assert list(out.obs['batch']) == list(raw.obs['batch'])
                assert np.allclose(out.obs['score'].values, raw.obs['score'].values)
                print('ok')
                """, raw, processed));
        assertEquals(java.util.List.of("False", "True"), dev.memfit.data.Datasets.labels(raw, "is_doublet").names());
    }

    @Test
    void badRequestsAreRefusedBeforeAnythingIsWritten() {
        Path raw = dir.resolve("raw.h5ad");
        SyntheticAtlas.builder().setCells(50).setGenes(40).optSeed(1).write(raw);
        Path out = dir.resolve("out.h5ad");
        MemfitException zero = assertThrows(MemfitException.class, () -> Preprocess.builder().setInput(raw)
                .optHighlyVariable(0).optTargetSum(1e4).run(out));
        assertTrue(zero.getMessage().contains("optHighlyVariable(n) needs n >= 1 (--hvg on the command line)"), zero.getMessage());
        MemfitException same = assertThrows(MemfitException.class, () -> Preprocess.builder().setInput(raw)
                .optHighlyVariable(10).optTargetSum(1e4).run(raw));
        assertTrue(same.getMessage().contains("would replace the input"), same.getMessage());
        assertFalse(Files.exists(out));
        Path notH5ad = dir.resolve("counts.h5ad");
        dev.memfit.io.npy.Npy.write(dir.resolve("counts.h5ad"), new float[][]{{1f}});
        MemfitException invalid = assertThrows(MemfitException.class, () -> Preprocess.builder().setInput(notH5ad)
                .optHighlyVariable(10).optTargetSum(1e4).run(out));
        assertTrue(invalid.getMessage().contains("counts.h5ad"), invalid.getMessage());
        assertFalse(Files.exists(out));
    }

    @Test
    void bothPassesReportToTheListenerAndStatisticsAloneIsPassOne() {
        Path raw = dir.resolve("small.h5ad");
        SyntheticAtlas.builder().setCells(300).setGenes(50).optSeed(4).optProgress(ProgressListener.silent()).write(raw);
        RecordingProgress progress = new RecordingProgress();
        Preprocess.Result result = Preprocess.builder().setInput(raw).optHighlyVariable(10).optProgress(progress)
                .run(dir.resolve("small-processed.h5ad"));
        assertEquals(List.of("pass 1/2: gene statistics", "pass 2/2: writing small-processed.h5ad"),
                progress.tasks().stream().map(RecordingProgress.Seen::name).toList());
        for (RecordingProgress.Seen pass : progress.tasks()) {
            assertEquals(300, pass.total());
            assertEquals("cells", pass.unit());
            assertEquals(300, pass.steps().get(), pass.name());
            assertTrue(pass.closed().get(), pass.name());
        }
        RecordingProgress statisticsOnly = new RecordingProgress();
        Preprocess.GeneStatistics statistics = Preprocess.builder().setInput(raw).optHighlyVariable(10)
                .optProgress(statisticsOnly).statistics();
        assertArrayEquals(result.statistics().selected(), statistics.selected(), "pass one alone selects the same genes");
        assertEquals("pass 1/2: gene statistics", statisticsOnly.only().name());
        MemfitException noInput = assertThrows(MemfitException.class, () -> Preprocess.builder().statistics());
        assertTrue(noInput.getMessage().startsWith("setInput(file) is required"), noInput.getMessage());
        MemfitException target = assertThrows(MemfitException.class,
                () -> Preprocess.builder().setInput(raw).optTargetSum(0).run(dir.resolve("never.h5ad")));
        assertTrue(target.getMessage().contains("optTargetSum(counts) needs a positive, finite sum"), target.getMessage());
    }
}
