#!/usr/bin/env python3
"""LSTM row classifier on Fashion-MNIST on one GPU: DeepCanvas
(deepcanvas-cli --device cuda, cuDNN's RNN) against torch.nn.LSTM (cuDNN) in
the same run. Each image is a sequence of 28 rows of 28 pixels; LSTM hidden
128, one layer, the last state into Dense(10); batch 64, Adam lr 1e-3,
float32 without TF32 on both sides, data resident on the GPU for both.
Reports steady-state training samples/s (epochs after the first), the ratio
and the final test accuracy.

  python3 bench/gpu_lstm_vs_pytorch.py --cli build/bin/deepcanvas-cli --data DIR [--epochs N]
"""
import argparse
import json
import os
import subprocess
import sys
import time

from idx import find, read_idx, steady

HERE = os.path.dirname(os.path.abspath(__file__))
# Adam 1e-3 constant, as the PyTorch side (the template itself uses one-cycle).
PROJECT = os.path.join(HERE, "lstm_rows_adam.dcproj")
BATCH = 64


def run_deepcanvas(a):
    cmd = [a.cli, "train", PROJECT, "--data", a.data, "--device", "cuda", "--batch", str(BATCH),
           "--epochs", str(a.epochs), "--json", "--quiet"]
    if a.precision != "fp32":
        cmd += ["--precision", a.precision]
    t0 = time.time()
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed ({p.returncode}):\n{p.stderr}\n{p.stdout}")
    j = json.loads(p.stdout.strip().splitlines()[-1])
    j["wall_s"] = time.time() - t0
    j["cmd"] = " ".join(cmd)
    j["steady_samples_per_s"] = steady(j["history"])
    j["test_accuracy"] = j["history"][-1]["test_accuracy"]
    return j


def run_torch(a):
    import torch
    import torch.nn as nn
    dev = torch.device("cuda")
    torch.backends.cudnn.benchmark = True
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.manual_seed(1)
    xtr = torch.from_numpy(read_idx(find(a.data, "train-images-idx3-ubyte")).copy())
    ytr = torch.from_numpy(read_idx(find(a.data, "train-labels-idx1-ubyte")).astype("int64"))
    xte = torch.from_numpy(read_idx(find(a.data, "t10k-images-idx3-ubyte")).copy())
    yte = torch.from_numpy(read_idx(find(a.data, "t10k-labels-idx1-ubyte")).astype("int64"))
    xtr = xtr.to(dev).float().div_(255)  # [N, 28, 28]: 28 steps of 28 features
    xte = xte.to(dev).float().div_(255)
    mean, std = xtr.mean(), xtr.std()
    xtr = ((xtr - mean) / std).contiguous()
    xte = ((xte - mean) / std).contiguous()
    ytr, yte = ytr.to(dev), yte.to(dev)

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.lstm = nn.LSTM(28, 128, batch_first=True)
            self.fc = nn.Linear(128, 10)

        def forward(self, x):
            _, (h, _) = self.lstm(x)
            return self.fc(h[-1])

    net = Net().to(dev)
    opt = torch.optim.Adam(net.parameters(), lr=1e-3)
    lossf = nn.CrossEntropyLoss()
    autocast = a.precision != "fp32"
    dtype = torch.bfloat16 if a.precision == "bf16" else torch.float16
    scaler = torch.amp.GradScaler("cuda", enabled=a.precision == "fp16")

    def step(xb, yb):
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=dtype, enabled=autocast):
            loss = lossf(net(xb), yb)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()

    n = xtr.shape[0]
    history = []
    for epoch in range(1, a.epochs + 1):
        net.train()
        perm = torch.randperm(n, device=dev)
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for i in range(0, n, BATCH):
            idx = perm[i:i + BATCH]
            step(xtr[idx], ytr[idx])
        torch.cuda.synchronize()
        dt = time.perf_counter() - t0
        net.eval()
        with torch.no_grad(), torch.autocast("cuda", dtype=dtype, enabled=autocast):
            correct = sum((net(xte[i:i + 1000]).argmax(1) == yte[i:i + 1000]).sum().item()
                          for i in range(0, xte.shape[0], 1000))
        history.append({"epoch": epoch, "train_samples_per_s": n / dt,
                        "test_accuracy": correct / xte.shape[0]})
    return {"history": history, "torch": torch.__version__,
            "cudnn": torch.backends.cudnn.version(),
            "steady_samples_per_s": steady(history), "test_accuracy": history[-1]["test_accuracy"]}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default="/usr/share/datasets/fashion-mnist")
    ap.add_argument("--cli", default=os.path.join(os.path.dirname(HERE), "build", "bin",
                                                  "deepcanvas-cli"))
    ap.add_argument("--epochs", type=int, default=5)
    ap.add_argument("--precision", choices=["fp32", "bf16", "fp16"], default="fp32")
    ap.add_argument("--json-out", default="")
    a = ap.parse_args()
    import torch
    gpu = torch.cuda.get_device_name(0)
    n_train = len(read_idx(find(a.data, "train-labels-idx1-ubyte")))
    rows = {"DeepCanvas (cuda)": run_deepcanvas(a), "PyTorch nn.LSTM": run_torch(a)}
    if a.json_out:
        with open(a.json_out, "w") as f:
            json.dump({"gpu": gpu, "precision": a.precision, "rows": rows}, f, indent=1)
    peer = rows["PyTorch nn.LSTM"]["steady_samples_per_s"]
    print(f"\nGPU: {gpu}; LSTM rows (28x28, hidden 128, 1 layer); data {a.data} ({n_train} train); "
          f"batch {BATCH}; Adam 1e-3; {a.precision}; {a.epochs} epochs; torch {torch.__version__}")
    print(f"{'':20} {'samples/s':>10} {'vs torch':>8} {'final acc':>9}")
    for name, r in rows.items():
        print(f"{name:20} {r['steady_samples_per_s']:10.0f} "
              f"{r['steady_samples_per_s'] / peer:7.2f}x {100 * r['test_accuracy']:8.2f}%")


if __name__ == "__main__":
    main()
