#!/usr/bin/env python3
"""Two-conv CNN on Fashion-MNIST on one GPU: DeepCanvas (deepcanvas-cli
--device cuda) against PyTorch eager and torch.compile in the same run, same
network, batch (128), optimizer (Adam, lr 1e-3), with the data resident on the
GPU for both, in float32 (no TF32 on either side) and in bf16: DeepCanvas
--precision bf16 against PyTorch eager under torch.autocast(bfloat16), both
keeping float32 master weights. Reports steady-state training samples/s and
the training time to reach 91 % test accuracy (evaluation not counted, first
epoch included, process start and cuDNN/compile warm-up excluded where said).

  python3 bench/gpu_cnn_vs_pytorch.py --cli build/bin/deepcanvas-cli --data DIR [--epochs N]
      [--precisions fp32,bf16] [--no-compile]
"""
import argparse
import json
import os
import subprocess
import sys
import time

from idx import find, read_idx, steady

HERE = os.path.dirname(os.path.abspath(__file__))
TARGET = 0.91


def time_to_target(history, n_train):
    """Cumulative training seconds at the first epoch whose test accuracy >= TARGET."""
    t = 0.0
    for h in history:
        t += n_train / h["train_samples_per_s"]
        if h["test_accuracy"] >= TARGET:
            return t, h["epoch"]
    return None, None


def run_deepcanvas(a, n_train, precision, graphs=True):
    cmd = [a.cli, "train", os.path.join(HERE, "two_conv_adam.dcproj"), "--data", a.data,
           "--device", "cuda", "--batch", "128", "--epochs", str(a.epochs), "--json", "--quiet",
           "--precision", precision]
    env = dict(os.environ)
    if not graphs:
        env["DC_CUDA_GRAPHS"] = "0"  # the training step without CUDA graph replay
    t0 = time.time()
    p = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if p.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed ({p.returncode}):\n{p.stderr}\n{p.stdout}")
    j = json.loads(p.stdout.strip().splitlines()[-1])
    j["wall_s"] = time.time() - t0
    j["cmd"] = ("" if graphs else "DC_CUDA_GRAPHS=0 ") + " ".join(cmd)
    hist = j["history"]
    # Steady state: epochs after the first (which includes cuDNN's algorithm search).
    j["steady_samples_per_s"] = steady(hist)
    j["time_to_target_s"], j["epoch_to_target"] = time_to_target(hist, n_train)
    return j


def run_torch(a, compiled, precision):
    import torch
    import torch.nn as nn
    dev = torch.device("cuda")
    torch.backends.cudnn.benchmark = True
    # float32 as DeepCanvas computes it (no TF32 on either side).
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.manual_seed(1)
    xtr = torch.from_numpy(read_idx(find(a.data, "train-images-idx3-ubyte")).copy())
    ytr = torch.from_numpy(read_idx(find(a.data, "train-labels-idx1-ubyte")).astype("int64"))
    xte = torch.from_numpy(read_idx(find(a.data, "t10k-images-idx3-ubyte")).copy())
    yte = torch.from_numpy(read_idx(find(a.data, "t10k-labels-idx1-ubyte")).astype("int64"))
    xtr = xtr.to(dev).float().div_(255).unsqueeze(1)
    xte = xte.to(dev).float().div_(255).unsqueeze(1)
    mean, std = xtr.mean(), xtr.std()
    xtr = (xtr - mean) / std
    xte = (xte - mean) / std
    ytr, yte = ytr.to(dev), yte.to(dev)
    net = nn.Sequential(
        nn.Conv2d(1, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(64 * 7 * 7, 128), nn.ReLU(), nn.Linear(128, 10)).to(dev)
    opt = torch.optim.Adam(net.parameters(), lr=1e-3)
    lossf = nn.CrossEntropyLoss()

    autocast = precision == "bf16"

    def step(xb, yb):
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=autocast):
            loss = lossf(net(xb), yb)
        loss.backward()
        opt.step()
        return loss

    fstep = torch.compile(step) if compiled else step
    n, B = xtr.shape[0], 128
    warm_s = 0.0
    if compiled:
        # Compilation (full and last partial batch) happens here, outside the
        # timed epochs; these 3 warm-up steps also train, a negligible head start.
        t0 = time.perf_counter()
        fstep(xtr[:B], ytr[:B])
        fstep(xtr[B:2 * B], ytr[B:2 * B])
        fstep(xtr[:n % B or B], ytr[:n % B or B])
        torch.cuda.synchronize()
        warm_s = time.perf_counter() - t0
    history = []
    for epoch in range(1, a.epochs + 1):
        net.train()
        perm = torch.randperm(n, device=dev)
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for i in range(0, n, B):
            idx = perm[i:i + B]
            fstep(xtr[idx], ytr[idx])
        torch.cuda.synchronize()
        dt = time.perf_counter() - t0
        net.eval()
        with torch.no_grad(), torch.autocast("cuda", dtype=torch.bfloat16, enabled=autocast):
            correct = sum((net(xte[i:i + 1000]).argmax(1) == yte[i:i + 1000]).sum().item()
                          for i in range(0, xte.shape[0], 1000))
        history.append({"epoch": epoch, "train_samples_per_s": n / dt,
                        "test_accuracy": correct / xte.shape[0]})
    r = {"history": history, "torch": torch.__version__, "warmup_s": warm_s,
         "steady_samples_per_s": steady(history),
         "test_accuracy": history[-1]["test_accuracy"]}
    r["time_to_target_s"], r["epoch_to_target"] = time_to_target(history, n)
    return r


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default="/usr/share/datasets/fashion-mnist")
    ap.add_argument("--cli", default=os.path.join(os.path.dirname(HERE), "build", "bin",
                                                  "deepcanvas-cli"))
    ap.add_argument("--epochs", type=int, default=8)
    ap.add_argument("--no-compile", action="store_true")
    ap.add_argument("--precisions", default="fp32,bf16",
                    help="comma-separated: fp32 (with torch.compile) and/or bf16 (autocast eager)")
    ap.add_argument("--json-out", default="")
    a = ap.parse_args()
    import torch
    gpu = torch.cuda.get_device_name(0)
    n_train = len(read_idx(find(a.data, "train-labels-idx1-ubyte")))
    rows = {}  # name -> (precision, result)
    precs = [p for p in a.precisions.split(",") if p]
    for prec in precs:
        rows[f"DeepCanvas (cuda) {prec}"] = (prec, run_deepcanvas(a, n_train, prec))
        if prec == "fp32":
            rows["DeepCanvas, no graphs fp32"] = (prec, run_deepcanvas(a, n_train, prec, False))
        rows[f"PyTorch eager {prec}"] = (prec, run_torch(a, False, prec))
    # Last: torch.compile leaves compile workers in this process, and the
    # host-bound runs measured after them were slower and noisier.
    if "fp32" in precs and not a.no_compile:
        try:
            rows["torch.compile fp32"] = ("fp32", run_torch(a, True, "fp32"))
        except Exception as e:  # report, do not fail the benchmark
            print(f"torch.compile failed: {type(e).__name__}: {e}", file=sys.stderr)
    if a.json_out:
        with open(a.json_out, "w") as f:
            json.dump({"gpu": gpu, "rows": {k: r for k, (_, r) in rows.items()}}, f, indent=1)
    print(f"\nGPU: {gpu}; data {a.data} ({n_train} train); batch 128; Adam 1e-3; "
          f"{a.epochs} epochs; torch {torch.__version__}; 'vs eager': against PyTorch eager "
          f"in the same precision (bf16: torch.autocast)")
    print(f"{'':26} {'samples/s':>10} {'vs eager':>8} {'final acc':>9} {'to 91%':>14}")
    for name, (prec, r) in rows.items():
        eager = rows[f"PyTorch eager {prec}"][1]["steady_samples_per_s"]
        t = r["time_to_target_s"]
        tt = f"{t:6.2f} s (ep {r['epoch_to_target']})" if t else "not reached"
        print(f"{name:26} {r['steady_samples_per_s']:10.0f} "
              f"{r['steady_samples_per_s'] / eager:7.2f}x {100 * r['test_accuracy']:8.2f}% "
              f"{tt:>14}")

if __name__ == "__main__":
    main()
