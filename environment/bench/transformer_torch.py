"""Baseline for `./memfit bench transformer`: memfit's gene-token transformer, in plain torch.

The same model as dev.memfit.train.GeneTransformer: token and position embeddings, pre-norm
nn.TransformerEncoderLayer(norm_first=True, activation="gelu", dropout=0, dim_feedforward=4 d), a final layer norm,
a masked-gene head on the masked positions and a cell-type head on each cell's mean-pooled gene tokens; the two
cross-entropies summed; Adam. It starts from the weights memfit wrote (same names, loaded strictly) and trains on the
batches memfit wrote (masked ids, lengths, positions, targets, labels), so both sides see one input.

usage: transformer_torch.py EXCHANGE_DIR THREADS LR  -> one JSON line: torch version, epoch seconds, step losses
"""
import glob
import json
import os
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn


class GeneTransformer(nn.Module):
    def __init__(self, weights, heads):
        super().__init__()
        vocabulary, d = weights["token_embedding"].shape
        length = weights["position_embedding"].shape[0]
        layers = len({name.split(".")[1] for name in weights if name.startswith("layers.")})
        self.token_embedding = nn.Parameter(torch.empty(vocabulary, d))
        self.position_embedding = nn.Parameter(torch.empty(length, d))
        self.layers = nn.ModuleList(nn.TransformerEncoderLayer(d, heads, dim_feedforward=4 * d, dropout=0.0,
                                                               activation="gelu", batch_first=True, norm_first=True)
                                    for _ in range(layers))
        self.norm = nn.LayerNorm(d)
        self.masked_gene_head = nn.Linear(d, vocabulary)
        classes = weights["cell_type_head.weight"].shape[0]
        self.cell_type_head = nn.Linear(d, classes)

    def forward(self, ids, lengths, positions):
        b, t = ids.shape
        x = self.token_embedding[ids] + self.position_embedding
        # as memfit: a cell's padding is masked from its keys, except in a cell without genes, which attends to all of
        # its (padding) tokens evenly and is pooled over all of them (no row of all -inf, no NaN)
        padding = (torch.arange(t).unsqueeze(0) >= lengths.unsqueeze(1)) & (lengths > 0).unsqueeze(1)
        for layer in self.layers:
            x = layer(x, src_key_padding_mask=padding)
        hidden = self.norm(x)
        genes = self.masked_gene_head(hidden.reshape(-1, hidden.shape[-1])[positions])
        counted = torch.where(lengths > 0, lengths, torch.full_like(lengths, t))
        share = (~padding).float() / counted.unsqueeze(1).float()
        pooled = (hidden * share.unsqueeze(2)).sum(1)
        return genes, self.cell_type_head(pooled)


def main():
    folder, threads, lr = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
    torch.set_num_threads(threads)
    torch.set_num_interop_threads(1)
    with open(os.path.join(folder, "settings.json")) as f:
        settings = json.load(f)
    weights = {os.path.basename(path)[:-4]: torch.from_numpy(np.load(path))
               for path in glob.glob(os.path.join(folder, "weights", "*.npy"))}
    model = GeneTransformer(weights, settings["heads"])
    model.load_state_dict(weights, strict=True)
    model.train()
    ids = torch.from_numpy(np.load(os.path.join(folder, "ids.npy")))
    lengths = torch.from_numpy(np.load(os.path.join(folder, "lengths.npy")))
    labels = torch.from_numpy(np.load(os.path.join(folder, "labels.npy")))
    offsets = np.load(os.path.join(folder, "offsets.npy"))
    positions = torch.from_numpy(np.load(os.path.join(folder, "positions.npy")))
    targets = torch.from_numpy(np.load(os.path.join(folder, "targets.npy")))
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    steps = ids.shape[0]
    per_epoch = settings["steps_per_epoch"]
    epoch_seconds, losses = [], []
    start = time.perf_counter()
    for step in range(steps):
        at = slice(int(offsets[step]), int(offsets[step + 1]))
        optimizer.zero_grad(set_to_none=False)
        genes, types = model(ids[step], lengths[step], positions[at])
        loss = F.cross_entropy(genes, targets[at]) + F.cross_entropy(types, labels[step])
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
        if (step + 1) % per_epoch == 0:
            now = time.perf_counter()
            epoch_seconds.append(now - start)
            start = now
    print(json.dumps({"torch": torch.__version__, "threads": torch.get_num_threads(),
                      "epoch_seconds": epoch_seconds, "step_losses": losses}))


if __name__ == "__main__":
    main()
