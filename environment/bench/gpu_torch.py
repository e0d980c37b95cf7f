"""Baselines for `./memfit bench gpu`, in the torch of the Python DJL runs on (the same CUDA device):

  gpu_torch.py copy BYTES REPS
      host-to-device copies of BYTES: a pageable tensor and a pin_memory() tensor, .to('cuda') each, the median of
      REPS after two warm-ups -> {"pageable_gbps", "pinned_gbps"} (1e9 bytes per second)
  gpu_torch.py topics N M K BATCH EPOCHS
      tinytopics' model and fit loop (topics_torch.fit) on the GPU, counts of shape N x M in host memory, each batch
      moved to the device as tinytopics does -> {"epoch_seconds", "losses", "steps_per_epoch"}
"""
import json
import statistics
import sys
import time

import torch

from topics_torch import fit   # tinytopics' model and loop, as `bench topics` runs it on the CPU

if not torch.cuda.is_available():
    sys.exit("gpu_torch.py: torch sees no CUDA device")
cuda = torch.device("cuda")


def copy(nbytes, reps):
    values = nbytes // 4
    result = {}
    for name, tensor in (("pageable", torch.ones(values)), ("pinned", torch.ones(values).pin_memory())):
        rates = []
        for i in range(reps + 2):
            torch.cuda.synchronize()
            start = time.perf_counter()
            on_device = tensor.to(cuda)
            torch.cuda.synchronize()
            seconds = time.perf_counter() - start
            del on_device
            if i >= 2:
                rates.append(nbytes / seconds / 1e9)
        result[name + "_gbps"] = statistics.median(rates)
    return result


def topics(n, m, k, batch, epochs):
    torch.manual_seed(0)
    # a count matrix with the same shape as memfit's side: small integers, mostly zeros
    X = (torch.rand(n, m) < 0.05).float()
    return fit(X, k, batch, epochs, 0.05, cuda)


if __name__ == "__main__":
    mode = sys.argv[1]
    if mode == "copy":
        print(json.dumps(copy(int(sys.argv[2]), int(sys.argv[3]))))
    elif mode == "topics":
        n, m, k, batch, epochs = (int(a) for a in sys.argv[2:7])
        print(json.dumps(topics(n, m, k, batch, epochs)))
    else:
        sys.exit("usage: gpu_torch.py copy BYTES REPS | topics N M K BATCH EPOCHS")
