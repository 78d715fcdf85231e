#!/usr/bin/python3
"""The PyTorch peer for bench/cpu_templates_vs_pytorch.py: the network a
DeepCanvas project exports (`deepcanvas-cli export --format pytorch`, its
model.py), trained on Fashion-MNIST with the same batch, optimizer (Adam,
lr 1e-3, constant), thread count and number of steps as DeepCanvas's run.
Each epoch is --steps steps; only the steps are timed (batches are drawn
outside the timed region, as DeepCanvas's prefetcher does). Prints one JSON
object with the keys of `deepcanvas-cli train --json` (history per epoch)."""
import importlib.util
import json
import os
import resource
import sys

import torch
import torch.nn as nn

from pytorch_cnn import load, peer_args, timed_step


def main():
    # --random_classes K: random images of the network's input shape and
    # labels below K instead of Fashion-MNIST (--data is then unused).
    # --channels_last 1: the network and its inputs channels last (oneDNN's
    # layout; PyTorch's fastest CPU form for some networks).
    a = peer_args(export="", steps=50, random_classes=0, channels_last=0)
    sys.path.insert(0, a.export)
    spec = importlib.util.spec_from_file_location("model", os.path.join(a.export, "model.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    shape = tuple(mod.INPUT_SHAPE)
    if a.random_classes:
        xtr = torch.randint(0, 256, (max(600, a.batch), *shape), dtype=torch.uint8)
        ytr = torch.randint(0, a.random_classes, (xtr.shape[0],))
        mean, std = 0.5, 0.25
    else:
        xtr, ytr = load(a.data, "train")
        mean = xtr.double().mean().item() / 255.0
        std = xtr.double().std().item() / 255.0
    net = mod.Model()
    fmt = torch.channels_last if a.channels_last else torch.contiguous_format
    if a.channels_last:
        net = net.to(memory_format=fmt)
    opt = torch.optim.Adam(net.parameters(), lr=a.lr)
    lossf = nn.CrossEntropyLoss()
    n = xtr.shape[0]
    history = []
    for epoch in range(a.epochs):
        net.train()
        perm = torch.randperm(n)
        t_epoch, s_epoch = 0.0, 0
        for step in range(a.steps):
            idx = perm[(step * a.batch) % n:][: a.batch]
            xb = ((xtr[idx].float() * (1.0 / 255.0) - mean) / std).view(idx.shape[0], *shape)
            if a.channels_last:
                xb = xb.contiguous(memory_format=fmt)
            yb = ytr[idx]
            seconds, loss = timed_step(net, opt, lossf, xb, yb)
            t_epoch += seconds
            s_epoch += xb.shape[0]
        history.append({"epoch": epoch + 1, "train_samples_per_s": s_epoch / t_epoch,
                        "train_loss": float(loss)})
    print(json.dumps({
        "train_samples_per_s": history[-1]["train_samples_per_s"],
        "epochs": a.epochs,
        "threads": torch.get_num_threads(),
        "torch": torch.__version__,
        "torch_config": torch.__config__.show(),
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0,
        "history": history,
    }))


if __name__ == "__main__":
    main()
