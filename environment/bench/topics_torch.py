"""Baseline for `./memfit bench topics`: tinytopics' model and fit loop, in plain torch.

The same model as tinytopics (nn.Embedding document logits, topic logits, row softmax, Poisson loss summed per batch,
Adam, a shuffled DataLoader over document indices), so memfit's trainer can be timed against it side by side.

usage: topics_torch.py FILE K BATCH EPOCHS THREADS LR  -> one JSON line with the seconds of each epoch
"""
import json
import sys
import time

import numpy as np
import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset


def fit(X, k, batch, epochs, lr, device=None):
    """tinytopics' fit loop on counts X (documents x terms, in host memory): each batch moved to `device` when given
    (as tinytopics does on a GPU). Seed torch before calling: the model's start and the shuffles draw from it.
    Returns {"epoch_seconds", "losses" (per document), "steps_per_epoch"}."""
    n, m = X.shape

    class IndexTrackingDataset(Dataset):
        def __len__(self):
            return n

        def __getitem__(self, idx):
            return X[idx], idx

    class NeuralPoissonNMF(nn.Module):
        def __init__(self):
            super().__init__()
            self.L = nn.Embedding(n, k)
            nn.init.uniform_(self.L.weight, -0.1, 0.1)
            self.F = nn.Parameter(torch.empty(k, m))
            nn.init.uniform_(self.F, -0.1, 0.1)

        def forward(self, doc_indices):
            return torch.softmax(self.L(doc_indices), dim=1) @ torch.softmax(self.F, dim=1)

    model = NeuralPoissonNMF() if device is None else NeuralPoissonNMF().to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    loader = DataLoader(IndexTrackingDataset(), batch_size=batch, shuffle=True)
    cuda = device is not None and torch.device(device).type == "cuda"
    seconds, losses = [], []
    for _ in range(epochs):
        if cuda:
            torch.cuda.synchronize()
        start = time.perf_counter()
        total = 0.0
        for xb, idx in loader:
            if device is not None:
                xb, idx = xb.to(device), idx.to(device)
            optimizer.zero_grad()
            rec = model(idx) + 1e-10
            loss = (-xb * torch.log(rec) + rec).sum()
            loss.backward()
            optimizer.step()
            total += loss.item()
        if cuda:
            torch.cuda.synchronize()
        seconds.append(time.perf_counter() - start)
        losses.append(total / n)
    return {"epoch_seconds": seconds, "losses": losses, "steps_per_epoch": len(loader)}


if __name__ == "__main__":
    path, k, batch, epochs, threads, lr = (sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]),
                                          int(sys.argv[5]), float(sys.argv[6]))
    torch.set_num_threads(threads)
    torch.manual_seed(0)
    print(json.dumps(fit(torch.from_numpy(np.load(path)).float(), k, batch, epochs, lr)))
