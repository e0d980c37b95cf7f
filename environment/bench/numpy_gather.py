"""Baseline for `./memfit bench loader`: numpy memmap fancy indexing of random batches of rows.

usage: numpy_gather.py FILE BATCH EPOCHS SEED   -> one JSON line: first-epoch and steady-state GB/s
"""
import json
import sys
import time

import numpy as np

path, batch, epochs, seed = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
a = np.load(path, mmap_mode="r")
rows = a.shape[0]
batches = rows // batch
row_bytes = a[0].nbytes
first = steady = 0.0
for epoch in range(epochs):
    order = np.random.default_rng(seed + epoch).permutation(rows)
    start = time.perf_counter()
    for b in range(batches):
        x = a[order[b * batch:(b + 1) * batch]]
    seconds = time.perf_counter() - start
    if epoch == 0:
        first = seconds
    else:
        steady += seconds
total = batches * batch * row_bytes
print(json.dumps({"first_gbps": total / first / 1e9,
                  "steady_gbps": total * (epochs - 1) / steady / 1e9 if epochs > 1 else 0.0}))
