package dev.memfit;

import java.nio.file.Path;

/**
 * A float64 {@code .h5ad} of FPKM-like values written by Debian's anndata with its defaults (chunked {@code X/data}
 * of float64, {@code AnnData(X, dtype=X.dtype)}: anndata 0.8 would cast X to float32 otherwise), spanning many
 * magnitudes: genes of 10^-2 to 10^4, 30 genes of 10^-44 to 10^-38 (below float32's normal range: float32 keeps
 * only a few digits of them), 15 genes of 10^-300 to 10^-46 (below float32's smallest value: 0 in float32), and
 * every value rounding differently in float32. Every 53rd cell is empty.
 */
public final class Float64Atlas {

    /** The cells of the file. */
    public static final int CELLS = 400;
    /** The genes of the file. */
    public static final int GENES = 300;

    private Float64Atlas() {
    }

    /**
     * Writes the file.
     *
     * @param file the {@code .h5ad} to write
     * @param seed the random seed
     * @param format {@code csr}, {@code csc} or {@code dense}: how X is stored
     * @return the file
     */
    public static Path write(Path file, int seed, String format) {
        String done = PythonPeer.run("""
                import sys, numpy as np, pandas as pd, scipy.sparse as sp, anndata as ad
                rng = np.random.default_rng(int(sys.argv[2]))
                n, g = %d, %d
                scale = 10.0 ** rng.uniform(-2, 4, g)
                scale[:30] = 10.0 ** rng.uniform(-44, -38, 30)
                scale[30:45] = 10.0 ** rng.uniform(-300, -46, 15)
                x = scale * rng.lognormal(0, 2.5, (n, g)) * (rng.random((n, g)) < 0.4)
                x[::53] = 0
                assert (x[(x > 0)] < 1e-38).sum() > 1000 and (x[(x > 0)] < 1e-45).sum() > 500
                obs = pd.DataFrame({'cell_type': pd.Categorical(rng.choice(['B', 'T', 'NK'], n))},
                                   index=['c%%d' %% i for i in range(n)])
                var = pd.DataFrame(index=['g%%d' %% j for j in range(g)])
                matrix = {'csr': sp.csr_matrix, 'csc': sp.csc_matrix, 'dense': np.asarray}[sys.argv[3]](x)
                a = ad.AnnData(matrix, obs=obs, var=var, dtype=np.float64)
                a.write_h5ad(sys.argv[1])
                back = ad.read_h5ad(sys.argv[1])
                assert back.X.dtype == np.float64, back.X.dtype
                print('ok')
                """.formatted(CELLS, GENES), file, seed, format);
        if (!done.endsWith("ok")) {
            throw new AssertionError(done);
        }
        return file;
    }
}
