"""Golden values for RowAdamTest: torch.optim.SparseAdam on a fixed sequence of row updates.

Not a benchmark: it prints the Java constants that lib/src/test/java/dev/memfit/train/RowAdamTest.java embeds, so the
test needs no torch at run time. Generated with Debian 12's python3-torch (1.13.1); rerun and paste to regenerate.

usage: /usr/bin/python3 sparse_adam_trace.py
"""
import numpy as np
import torch

torch.set_num_threads(1)
LR = 0.05
INITIAL = [[0.8, -1.2, 0.5], [-0.6, 1.1, -0.9], [1.3, 0.7, -1.4],
           [-1.0, -0.55, 0.95], [0.65, -0.75, 1.25], [-0.85, 1.05, -0.5]]
# (rows, their gradients) per step. Row 5 is never touched; row 4 is first touched at step 4, so its bias correction
# uses the global step; row 2 gets an all-zero gradient at step 3 (its moments decay and it still moves); rows come
# unsorted at steps 3 and 5.
STEPS = [
    ([0, 1, 2], [[0.3, -0.2, 0.05], [-0.7, 0.4, 0.1], [0.25, 0.0, -0.9]]),
    ([1, 3], [[0.5, -0.35, 0.2], [-0.15, 0.6, 0.45]]),
    ([3, 0, 2], [[0.2, 0.1, -0.3], [-0.4, 0.8, 0.15], [0.0, 0.0, 0.0]]),
    ([4], [[1.5, -0.05, 0.3]]),
    ([1, 4, 0], [[-0.25, 0.3, -0.6], [0.9, -1.1, 0.2], [0.35, -0.45, 0.05]]),
    ([2], [[-0.5, 0.65, 0.7]]),
    ([0, 1, 2, 3, 4], [[0.1, 0.2, -0.1], [0.05, -0.05, 0.3], [-0.2, 0.4, 0.0], [0.6, -0.3, 0.25], [-0.8, 0.15, 0.1]]),
]
TINY = 1e-9  # one step with this gradient shows where epsilon is added


def run(initial, steps):
    param = torch.nn.Parameter(torch.tensor(initial, dtype=torch.float32))
    opt = torch.optim.SparseAdam([param], lr=LR)
    trace = []
    for rows, grads in steps:
        param.grad = torch.sparse_coo_tensor(torch.tensor([rows]), torch.tensor(grads, dtype=torch.float32),
                                             param.shape)
        opt.step()
        trace.append(param.detach().numpy().copy())
    return trace


def f(x):
    return str(np.float32(x)) + "f"


def matrix(m, indent):
    return "{" + (",\n" + indent).join("{" + ", ".join(f(x) for x in row) + "}" for row in m) + "}"


print("    /** torch.optim.SparseAdam's parameter after each step (environment/bench/sparse_adam_trace.py). */")
print("    private static final float[][][] TORCH_TRACE = {")
print(",\n".join("            " + matrix(m, "             ") for m in run(INITIAL, STEPS)))
print("    };")
tiny = run([[0.0]], [([0], [[TINY]])])[0][0][0]
print("    /** SparseAdam's parameter after one step from 0 with gradient TINY. */")
print("    private static final float TORCH_TINY = " + f(tiny) + ";")
