#!/usr/bin/python3
"""LSTM row classifier on Fashion-MNIST (28 steps of 28 features, LSTM 128,
Dense 10; batch 64, Adam lr 1e-3 constant, normalised inputs): DeepCanvas
(deepcanvas-cli on bench/lstm_rows_adam.dcproj) against PyTorch CPU
(bench/pytorch_lstm.py) on the same machine in one run, same samples and
epochs. Each runs as its own process and reports its own peak resident set.

  /usr/bin/python3 bench/lstm_vs_pytorch.py [--data DIR] [--epochs N] [--threads N]
"""
import argparse
import json
import os
import platform
import sys

from cnn_vs_pytorch import HERE, ROOT, run


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default="/usr/share/datasets/fashion-mnist")
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--cli", default=os.path.join(ROOT, "build", "bin", "deepcanvas-cli"))
    a = ap.parse_args()
    project = os.path.join(HERE, "lstm_rows_adam.dcproj")
    ours = run([a.cli, "train", project, "--data", a.data, "--epochs", str(a.epochs),
                "--threads", str(a.threads), "--batch", "64", "--lr", "0.001", "--json", "--quiet"])
    peer = run([sys.executable, os.path.join(HERE, "pytorch_lstm.py"), "--data", a.data,
                "--epochs", str(a.epochs), "--threads", str(a.threads)])
    ratio = ours["train_samples_per_s"] / peer["train_samples_per_s"]
    print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
          f"threads {a.threads}; data {a.data}; epochs {a.epochs}; batch 64; Adam lr 1e-3; "
          f"LSTM 128 over 28 rows")
    print(f"{'':14} {'samples/s':>10} {'test acc':>9} {'peak RSS':>10} {'train s':>8}")
    for name, r in [("DeepCanvas", ours), (f"PyTorch {peer['torch']}", peer)]:
        print(f"{name:14} {r['train_samples_per_s']:10.0f} {100 * r['test_accuracy']:8.2f}% "
              f"{r['peak_rss_mb']:8.0f} MB {r['train_seconds']:8.1f}")
    print(f"throughput ratio (DeepCanvas / PyTorch): {ratio:.2f}x")
    print(json.dumps({"deepcanvas": ours, "pytorch": peer, "ratio": ratio}))


if __name__ == "__main__":
    main()
