#!/usr/bin/python3
"""The PyTorch peer for bench/cnn_vs_pytorch.py: the same two-conv CNN, data,
batch, optimizer and epochs as DeepCanvas's bench project. Prints one JSON
object with the same keys as `deepcanvas-cli train --json`."""
import argparse
import json
import resource
import time

import numpy as np
import torch
import torch.nn as nn

from idx import find, read_idx


def load(folder, split):
    # Kept as bytes, like DeepCanvas's dataset: each batch is converted to
    # float when it is drawn (outside the timed step), so the peer's memory is
    # not inflated by a float copy of the whole set.
    x = read_idx(find(folder, f"{split}-images-idx3-ubyte"))
    y = read_idx(find(folder, f"{split}-labels-idx1-ubyte")).astype(np.int64)
    return torch.from_numpy(x.copy()).unsqueeze(1), torch.from_numpy(y)


def model():
    return nn.Sequential(
        nn.Conv2d(1, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(64 * 7 * 7, 128), nn.ReLU(), nn.Linear(128, 10))


def peer_args(**extra):
    """The options both PyTorch peers take; extra: name=default for more."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", required=True)
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--seed", type=int, default=42)
    for name, default in extra.items():
        ap.add_argument("--" + name, type=type(default), default=default)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    return a


def timed_step(net, opt, lossf, xb, yb):
    """One optimizer step; returns (seconds, loss). Only this is timed."""
    t0 = time.perf_counter()
    opt.zero_grad(set_to_none=True)
    loss = lossf(net(xb), yb)
    loss.backward()
    opt.step()
    return time.perf_counter() - t0, loss


def train_and_report(make_net, a, shape=lambda x: x):
    """Trains make_net() with Adam on normalised Fashion-MNIST (images
    [N, 1, 28, 28], passed through shape), timing only the steps, tests after
    every epoch, and prints one JSON object with the keys of
    `deepcanvas-cli train --json`."""
    xtr, ytr = load(a.data, "train")
    xte, yte = load(a.data, "t10k")
    # The training set's mean and std in [0, 1] units, in float64 over the
    # bytes (no float copy of the set).
    mean = xtr.double().mean().item() / 255.0
    std = xtr.double().std().item() / 255.0

    def prep(xb):
        return shape((xb.float() * (1.0 / 255.0) - mean) / std)

    net = make_net()
    opt = torch.optim.Adam(net.parameters(), lr=a.lr)
    lossf = nn.CrossEntropyLoss()
    n = xtr.shape[0]
    train_time, samples = 0.0, 0
    history = []
    for epoch in range(a.epochs):
        net.train()
        perm = torch.randperm(n)
        t_epoch, s_epoch = 0.0, 0
        for i in range(0, n, a.batch):
            idx = perm[i : i + a.batch]
            xb, yb = prep(xtr[idx]), ytr[idx]  # drawn outside the timed step, like our prefetcher
            t_epoch += timed_step(net, opt, lossf, xb, yb)[0]
            s_epoch += xb.shape[0]
        train_time += t_epoch
        samples += s_epoch
        net.eval()
        correct = 0
        with torch.no_grad():
            for i in range(0, xte.shape[0], 256):
                correct += (net(prep(xte[i : i + 256])).argmax(1) == yte[i : i + 256]).sum().item()
        history.append({"epoch": epoch + 1, "train_samples_per_s": s_epoch / t_epoch,
                        "test_accuracy": correct / xte.shape[0]})
    print(json.dumps({
        "test_accuracy": history[-1]["test_accuracy"],
        "train_samples_per_s": samples / train_time,
        "epochs": a.epochs,
        "train_seconds": train_time,
        "threads": torch.get_num_threads(),
        "torch": torch.__version__,
        "torch_config": torch.__config__.show(),
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0,
        "history": history,
    }))


def main():
    train_and_report(model, peer_args())


if __name__ == "__main__":
    main()
