"""Baseline for `./memfit bench h5ad --formats zarr`: zarr-python and anndata (Debian's python3-zarr 2.13 and
python3-anndata 0.8) reading the same AnnData .zarr store memfit streams.

usage: anndata_zarr.py STORE zarr CHUNK     -> JSON: cells/s of one pass with zarr-python alone: X/indptr read once,
                                               then X/data and X/indices in row blocks of CHUNK cells (a dense X:
                                               X[first:last]), each block densified (scipy csr_matrix.toarray)
       anndata_zarr.py STORE anndata CHUNK  -> JSON: cells/s of anndata.read_zarr (anndata 0.8 has no backed mode for
                                               zarr: X is read whole into memory, counted) and the same row blocks
                                               of the in-memory X, densified
"""
import json
import sys
import time

import anndata as ad
import numpy as np
import scipy.sparse as sp
import zarr

path, mode, chunk = sys.argv[1], sys.argv[2], int(sys.argv[3])
start = time.perf_counter()
cells = 0
checksum = 0.0
if mode == "zarr":
    root = zarr.open_group(path, mode="r")
    x = root["X"]
    if isinstance(x, zarr.Array):
        n = x.shape[0]
        for first in range(0, n, chunk):
            dense = np.asarray(x[first:min(n, first + chunk)])
            checksum += float(dense[0, 0])
            cells += dense.shape[0]
    else:
        n, m = x.attrs["shape"]
        if x.attrs.get("encoding-type") != "csr_matrix":
            sys.exit("the zarr baseline reads a CSR or dense X, not " + str(x.attrs.get("encoding-type")))
        indptr = x["indptr"][:]
        data, indices = x["data"], x["indices"]
        for first in range(0, n, chunk):
            last = min(n, first + chunk)
            a, b = int(indptr[first]), int(indptr[last])
            block = sp.csr_matrix((data[a:b], indices[a:b], indptr[first:last + 1] - a), shape=(last - first, m))
            dense = block.toarray()
            checksum += float(dense[0, 0])
            cells += last - first
elif mode == "anndata":
    a = ad.read_zarr(path)
    n = a.n_obs
    for first in range(0, n, chunk):
        x = a.X[first:min(n, first + chunk)]
        dense = x.toarray() if hasattr(x, "toarray") else np.asarray(x)
        checksum += float(dense[0, 0])
        cells += dense.shape[0]
else:
    sys.exit("mode must be zarr or anndata")
seconds = time.perf_counter() - start
print(json.dumps({"cells": cells, "seconds": seconds, "cells_per_s": cells / seconds, "checksum": checksum}))
