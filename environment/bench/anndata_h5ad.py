"""Baseline for `./memfit bench h5ad`: anndata (Debian's python3-anndata) in backed mode on the same .h5ad.

usage: anndata_h5ad.py FILE stream CHUNK            -> JSON: cells/s of one pass over chunked_X(CHUNK), densified
       anndata_h5ad.py FILE random BATCH BATCHES SEED -> JSON: cells/s of random batches X[sorted idx], densified
"""
import json
import sys
import time

import anndata as ad
import numpy as np

path, mode = sys.argv[1], sys.argv[2]
a = ad.read_h5ad(path, backed="r")
n = a.n_obs
if mode == "stream":
    chunk = int(sys.argv[3])
    start = time.perf_counter()
    cells = 0
    checksum = 0.0
    for x, first, last in a.chunked_X(chunk):
        dense = x.toarray() if hasattr(x, "toarray") else np.asarray(x)
        checksum += float(dense[0, 0])
        cells += last - first
    seconds = time.perf_counter() - start
    print(json.dumps({"cells": cells, "seconds": seconds, "cells_per_s": cells / seconds, "checksum": checksum}))
elif mode == "random":
    batch, batches, seed = int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
    rng = np.random.default_rng(seed)
    start = time.perf_counter()
    for _ in range(batches):
        idx = np.sort(rng.choice(n, batch, replace=False))
        x = a.X[idx]
        dense = x.toarray() if hasattr(x, "toarray") else np.asarray(x)
    seconds = time.perf_counter() - start
    print(json.dumps({"cells": batch * batches, "seconds": seconds, "cells_per_s": batch * batches / seconds}))
else:
    sys.exit("mode must be stream or random")
