"""torch.optim.Adam's parameter after each step of DenseAdamTest's fixed gradient sequence.

Prints a Java array literal for DenseAdamTest.TORCH_TRACE, so that the test needs no torch at run time. Generated
with Debian 12's python3-torch (1.13.1); rerun and paste to regenerate.
"""
import torch

START = [[0.5, -1.0, 0.25], [1.5, 0.0, -0.75]]
GRADIENTS = [
    [[0.3, -0.2, 0.05], [-0.7, 0.4, 0.1]],
    [[0.5, -0.35, 0.2], [-0.15, 0.6, 0.45]],
    [[0.2, 0.1, -0.3], [-0.4, 0.8, 0.15]],
    [[1.5, -0.05, 0.3], [0.0, 0.0, 0.0]],
    [[-0.25, 0.3, -0.6], [0.9, -1.1, 0.2]],
    [[-0.5, 0.65, 0.7], [0.35, -0.45, 0.05]],
]

weight = torch.tensor(START, dtype=torch.float32, requires_grad=True)
adam = torch.optim.Adam([weight], lr=0.1, betas=(0.9, 0.999), eps=1e-8)
rows = []
for gradient in GRADIENTS:
    weight.grad = torch.tensor(gradient, dtype=torch.float32)
    adam.step()
    rows.append(weight.detach().numpy().copy())
print("{")
for step in rows:
    print("        {" + ", ".join("{" + ", ".join(str(v) + "f" for v in row) + "}" for row in step) + "},")
print("}")
