"""The small AnnData both seed scripts start from (make_seeds.py writes it as .h5ad, make_zarr_seeds.py as zarr):
6 cells x 5 genes, CSR float32 X with values 1..nnz, a categorical, a float and a bool obs column, a string var column."""
import anndata
import numpy as np
import pandas as pd
import scipy.sparse as sp


def small_adata(n_obs=6, n_vars=5):
    x = sp.random(n_obs, n_vars, density=0.5, format="csr", dtype=np.float32, random_state=3)
    x.data[:] = np.arange(1, x.nnz + 1, dtype=np.float32)
    obs = pd.DataFrame({"cell_type": pd.Categorical(["T", "B", "T", "NK", "B", "T"][:n_obs]),
                        "n_counts": np.arange(n_obs, dtype=np.float64),
                        "ok": np.arange(n_obs) % 2 == 0},
                       index=[f"cell{i}" for i in range(n_obs)])
    var = pd.DataFrame({"gene_ids": [f"ENSG{i:05d}" for i in range(n_vars)]},
                       index=[f"gene{i}" for i in range(n_vars)])
    return anndata.AnnData(X=x, obs=obs, var=var)
