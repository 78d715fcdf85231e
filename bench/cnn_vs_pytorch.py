#!/usr/bin/python3
"""Two-conv CNN on Fashion-MNIST: DeepCanvas (deepcanvas-cli) against PyTorch
CPU on the same machine in one run, same batch (64), optimizer (Adam, lr 1e-3,
constant), samples and epochs. Each runs as its own process and reports its
own peak resident set (VmHWM / ru_maxrss).

  /usr/bin/python3 bench/cnn_vs_pytorch.py [--data DIR] [--epochs N] [--threads N]
                                           [--compare-gemm]
"""
import argparse
import json
import os
import platform
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def run(cmd, env=None):
    t0 = time.time()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         env=env)
    out, err = p.communicate()
    if p.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed ({p.returncode}):\n{err}\n{out}")
    j = json.loads(out.strip().splitlines()[-1])
    j["wall_s"] = time.time() - t0
    return j


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default="/usr/share/datasets/fashion-mnist")
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--cli", default=os.path.join(ROOT, "build", "bin", "deepcanvas-cli"))
    ap.add_argument("--compare-gemm", action="store_true",
                    help="also train DeepCanvas with OpenBLAS instead of oneDNN (DC_GEMM=openblas)")
    a = ap.parse_args()
    project = os.path.join(HERE, "two_conv_adam.dcproj")
    cmd = [a.cli, "train", project, "--data", a.data, "--epochs", str(a.epochs),
           "--threads", str(a.threads), "--json", "--quiet"]
    ours = run(cmd)
    rows = [("DeepCanvas", ours)]
    if a.compare_gemm:
        rows.append(("DC+OpenBLAS", run(cmd, dict(os.environ, DC_GEMM="openblas"))))
    peer = run([sys.executable, os.path.join(HERE, "pytorch_cnn.py"), "--data", a.data,
                "--epochs", str(a.epochs), "--threads", str(a.threads)])
    ratio = ours["train_samples_per_s"] / peer["train_samples_per_s"]
    print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
          f"threads {a.threads}; data {a.data}; epochs {a.epochs}; batch 64; Adam lr 1e-3")
    print(f"{'':12} {'samples/s':>10} {'test acc':>9} {'peak RSS':>10} {'train s':>8}")
    for name, r in rows + [(f"PyTorch {peer['torch']}", peer)]:
        print(f"{name:12} {r['train_samples_per_s']:10.0f} {100 * r['test_accuracy']:8.2f}% "
              f"{r['peak_rss_mb']:8.0f} MB {r['train_seconds']:8.1f}")
    print(f"throughput ratio (DeepCanvas / PyTorch): {ratio:.2f}x")
    result = {"deepcanvas": ours, "pytorch": peer, "ratio": ratio}
    if a.compare_gemm:
        result["deepcanvas_openblas"] = rows[1][1]
    print(json.dumps(result))


if __name__ == "__main__":
    main()
