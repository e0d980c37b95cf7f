package dev.memfit.prep;

import dev.memfit.Float64Atlas;
import dev.memfit.ProgressListener;
import dev.memfit.PythonPeer;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * Preprocessing of a float64 X (FPKM values spanning many magnitudes, some below float32's range) against scanpy's
 * Seurat flavour computed in float64 in numpy: the same genes, and the output X in float64 with the reference's
 * values. Computed in float32, 10 to 30% of the genes differ and thousands of values become 0.
 */
class Float64PreprocessTest {

    /**
     * scanpy's normalize_total (sparse: each row scaled by 1 / (total / target)), log1p and
     * highly_variable_genes(flavor='seurat') in float64, step by step, against memfit's output; prints the
     * comparison, and fails on the first difference.
     */
    static final String REFERENCE = """
            import sys, numpy as np, pandas as pd, anndata as ad
            raw = ad.read_h5ad(sys.argv[1])
            out = ad.read_h5ad(sys.argv[2])
            n_top = int(sys.argv[3])
            assert raw.X.dtype == np.float64, raw.X.dtype
            x = raw.X.toarray() if hasattr(raw.X, 'toarray') else np.asarray(raw.X)
            # each cell's total summed in gene order (memfit's order; numpy's sum is pairwise)
            totals = np.cumsum(x, axis=1)[:, -1]
            counts = totals + (totals == 0)
            logged = np.log1p(x * (1 / (counts / 1e4))[:, None])
            e = np.expm1(logged)
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
            cut = d[n_top - 1]
            expected = list(raw.var_names[np.nan_to_num(df['norm'].values) >= cut])
            picked = list(out.var_names)
            common = len(set(picked) & set(expected))
            keep = [raw.var_names.get_loc(g) for g in picked]
            got = out.X.toarray()
            want = logged[:, keep]
            pattern = int(((got != 0) != (want != 0)).sum())
            worst = float(np.abs(got - want).max())
            spread = float(np.nanmax(np.abs(out.var['dispersions_norm'].values - df['norm'].values[keep])))
            report = ('X %s; genes picked %d, reference %d, in common %d; values %d, non-zero pattern differs in %d, '
                      'max abs difference %.3g; normalized dispersions differ by up to %.3g'
                      % (out.X.dtype, len(picked), len(expected), common, got.size, pattern, worst, spread))
            assert picked == expected, report
            assert out.X.dtype == np.float64, report
            assert pattern == 0, report
            # log1p is Java's (fdlibm) against glibc's, each within one unit in the last place of the exact value:
            # they differ by up to 2 on about 1% of inputs (float32 would differ by 2^29 units)
            ulps = np.abs(got - want) / np.spacing(np.abs(want) + (want == 0))
            assert ulps.max() <= 2, report + '; %g ulp' % ulps.max()
            same = int((got == want).sum())
            assert np.allclose(out.var['means'].values, df['means'].values[keep], rtol=1e-12, atol=0)
            assert np.allclose(out.var['dispersions'].values, df['dispersions'].values[keep], rtol=1e-9, atol=0)
            assert np.allclose(out.var['dispersions_norm'].values, df['norm'].values[keep], rtol=1e-9, atol=1e-12)
            assert out.obs['n_counts_raw'].dtype == np.float64, out.obs['n_counts_raw'].dtype
            assert (out.obs['n_counts_raw'].values == totals).all()
            assert list(out.obs['cell_type']) == list(raw.obs['cell_type'])
            print('ok: %s; %d of %d values bit for bit' % (report, same, got.size))
            """;

    @TempDir
    static Path dir;
    static Path csr;

    @BeforeAll
    static void write() {
        csr = Float64Atlas.write(dir.resolve("fpkm.h5ad"), 7, "csr");
    }

    @Test
    void aFloat64MatrixIsPreprocessedInFloat64() {
        Path out = dir.resolve("fpkm-hvg.h5ad");
        Preprocess.Result result = Preprocess.builder().setInput(csr).optHighlyVariable(60)
                .optProgress(ProgressListener.silent()).run(out);
        String report = PythonPeer.run(REFERENCE, csr, out, 60);
        System.out.println("float64 CSR: " + report);
        assertEquals(Float64Atlas.CELLS, result.cells());
    }

    @Test
    void cscAndDenseFloat64GiveTheSameFile() throws Exception {
        Path csc = Float64Atlas.write(dir.resolve("fpkm-csc.h5ad"), 7, "csc");
        Path dense = Float64Atlas.write(dir.resolve("fpkm-dense.h5ad"), 7, "dense");
        Path fromCsr = dir.resolve("from-csr.h5ad");
        Preprocess.builder().setInput(csr).optHighlyVariable(60).optProgress(ProgressListener.silent()).run(fromCsr);
        for (Path input : new Path[]{csc, dense}) {
            Path out = dir.resolve("from-" + input.getFileName());
            Preprocess.builder().setInput(input).optHighlyVariable(60).optProgress(ProgressListener.silent()).run(out);
            System.out.println(input.getFileName() + ": " + PythonPeer.run(REFERENCE, input, out, 60));
            assertEquals("ok", PythonPeer.run("""
                    import sys, numpy as np, anndata as ad
                    a, b = ad.read_h5ad(sys.argv[1]), ad.read_h5ad(sys.argv[2])
                    assert list(a.var_names) == list(b.var_names)
                    assert a.X.dtype == b.X.dtype == np.float64
                    assert np.array_equal(a.X.toarray(), b.X.toarray())
                    print('ok')
                    """, fromCsr, out));
        }
    }
}
