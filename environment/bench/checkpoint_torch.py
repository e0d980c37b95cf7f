"""Baseline for `./memfit bench checkpoints`: torch.save of a state of the same shapes as memfit's checkpoint.

A dict of float32 tensors (model parameters and Adam's two moments, as an optimizer state_dict holds them) written
with torch.save to a temporary name, flushed with os.fsync and renamed, as memfit writes its checkpoints; then read
back with torch.load. The mean of REPEATS writes and reads.

usage: checkpoint_torch.py FOLDER REPEATS SHAPE [SHAPE...]   (a shape is e.g. 200000x20) -> one JSON line
"""
import json
import os
import sys
import time

import torch

folder, repeats = sys.argv[1], int(sys.argv[2])
shapes = [tuple(int(d) for d in s.split("x")) for s in sys.argv[3:]]
torch.manual_seed(0)
state = {f"array{i}": torch.rand(shape) for i, shape in enumerate(shapes)}
target = os.path.join(folder, "torch-checkpoint.pt")
writes, reads = [], []
for _ in range(repeats):
    start = time.perf_counter()
    temporary = target + ".partial"
    with open(temporary, "wb") as f:
        torch.save(state, f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(temporary, target)
    writes.append(time.perf_counter() - start)
    start = time.perf_counter()
    loaded = torch.load(target)
    reads.append(time.perf_counter() - start)
    del loaded
size = os.path.getsize(target)
os.remove(target)
print(json.dumps({"bytes": size, "write_seconds": sum(writes) / len(writes), "read_seconds": sum(reads) / len(reads)}))
