#!/usr/bin/python3
"""The PyTorch peer for bench/lstm_vs_pytorch.py: Fashion-MNIST rows as a
28-step sequence of 28 features, nn.LSTM(28, 128) -> last step -> Linear(128,
10), Adam, the same data, batch and epochs as DeepCanvas's lstm_rows template.
Prints one JSON object with the same keys as `deepcanvas-cli train --json`."""
import argparse
import json
import resource
import time

import torch
import torch.nn as nn

from pytorch_cnn import load


class RowLstm(nn.Module):
    def __init__(self, hidden):
        super().__init__()
        self.lstm = nn.LSTM(28, hidden, batch_first=True)
        self.fc = nn.Linear(hidden, 10)

    def forward(self, x):
        out, _ = self.lstm(x)
        return self.fc(out[:, -1])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", required=True)
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--hidden", type=int, default=128)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--seed", type=int, default=42)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    xtr, ytr = load(a.data, "train")
    xte, yte = load(a.data, "t10k")
    mean, std = xtr.mean().item(), xtr.std().item()
    xtr = ((xtr - mean) / std).squeeze(1).contiguous()  # [N, 28 rows, 28 features]
    xte = ((xte - mean) / std).squeeze(1).contiguous()
    net = RowLstm(a.hidden)
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
            xb, yb = xtr[idx], ytr[idx]  # gathered outside the timed region, like our prefetcher
            t0 = time.perf_counter()
            opt.zero_grad(set_to_none=True)
            loss = lossf(net(xb), yb)
            loss.backward()
            opt.step()
            t_epoch += time.perf_counter() - t0
            s_epoch += xb.shape[0]
        train_time += t_epoch
        samples += s_epoch
        net.eval()
        correct = 0
        with torch.no_grad():
            for i in range(0, xte.shape[0], 256):
                correct += (net(xte[i : i + 256]).argmax(1) == yte[i : i + 256]).sum().item()
        history.append({"epoch": epoch + 1, "train_samples_per_s": s_epoch / t_epoch,
                        "test_accuracy": correct / xte.shape[0]})
    print(json.dumps({
        "test_accuracy": history[-1]["test_accuracy"],
        "train_samples_per_s": samples / train_time,
        "epochs": a.epochs,
        "train_seconds": train_time,
        "threads": torch.get_num_threads(),
        "torch": torch.__version__,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0,
        "history": history,
    }))


if __name__ == "__main__":
    main()
