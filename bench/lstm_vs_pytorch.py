#!/usr/bin/python3
"""LSTM row classifier on Fashion-MNIST (28 steps of 28 features, LSTM 128,
Dense 10; batch 64, Adam lr 1e-3 constant, normalised inputs): DeepCanvas
(deepcanvas-cli on bench/lstm_rows_adam.dcproj) against PyTorch CPU
(bench/pytorch_lstm.py) on the same machine in one run, same samples, epochs
and thread count. Each side runs in its own process, --repeats times,
alternating; bench/cpu_compare.py reports medians and spreads and saves the
raw runs under bench/results/.

  /usr/bin/python3 bench/lstm_vs_pytorch.py [--data DIR] [--epochs N] [--threads N]
                                            [--repeats N]
"""
import argparse
import os
import sys

from cpu_compare import HERE, ROOT, compare


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default="/usr/share/datasets/fashion-mnist")
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--cli", default=os.path.join(ROOT, "build", "bin", "deepcanvas-cli"))
    a = ap.parse_args()
    project = os.path.join(HERE, "lstm_rows_adam.dcproj")
    ours = [a.cli, "train", project, "--data", a.data, "--epochs", str(a.epochs),
            "--threads", str(a.threads), "--batch", "64", "--lr", "0.001", "--json", "--quiet"]
    peer = [sys.executable, os.path.join(HERE, "pytorch_lstm.py"), "--data", a.data,
            "--epochs", str(a.epochs), "--threads", str(a.threads)]
    compare("lstm", [("DeepCanvas", ours, None), ("PyTorch", peer, None)], a.repeats,
            f"threads {a.threads}; epochs {a.epochs}; batch 64; Adam lr 1e-3; "
            f"LSTM 128 over 28 rows")


if __name__ == "__main__":
    main()
