#!/usr/bin/python3
"""Two-conv CNN on Fashion-MNIST: DeepCanvas (deepcanvas-cli) against PyTorch
CPU on the same machine in one run, same batch (64), optimizer (Adam, lr 1e-3,
constant), samples, epochs and thread count. Each side runs in its own
process, --repeats times, alternating; bench/cpu_compare.py reports medians
and spreads and saves the raw runs under bench/results/.

  /usr/bin/python3 bench/cnn_vs_pytorch.py [--data DIR] [--epochs N] [--threads N]
                                           [--repeats N] [--compare-gemm]
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
    ap.add_argument("--compare-gemm", action="store_true",
                    help="also train DeepCanvas with OpenBLAS instead of oneDNN (DC_GEMM=openblas)")
    a = ap.parse_args()
    project = os.path.join(HERE, "two_conv_adam.dcproj")
    cmd = [a.cli, "train", project, "--data", a.data, "--epochs", str(a.epochs),
           "--threads", str(a.threads), "--json", "--quiet"]
    sides = [("DeepCanvas", cmd, None)]
    if a.compare_gemm:
        sides.append(("DC+OpenBLAS", cmd, dict(os.environ, DC_GEMM="openblas")))
    sides.append(("PyTorch", [sys.executable, os.path.join(HERE, "pytorch_cnn.py"),
                              "--data", a.data, "--epochs", str(a.epochs),
                              "--threads", str(a.threads)], None))
    compare("cnn", sides, a.repeats,
            f"threads {a.threads}; epochs {a.epochs}; batch 64; Adam lr 1e-3; two-conv CNN")


if __name__ == "__main__":
    main()
