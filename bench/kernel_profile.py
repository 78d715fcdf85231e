#!/usr/bin/env python3
"""Where a DeepCanvas training step spends its GPU time, kernel by kernel.

Runs `deepcanvas-cli train` under Nsight Compute with one metric (each
kernel's duration, gpu__time_duration.sum; clocks left alone), skipping the
first kernels (cuDNN's autotuning, the graph capture, the first steps) and
recording the next --count, then groups the kernels by name and prints each
group's share of the recorded GPU time. CUDA graphs are off while it
records (DC_CUDA_GRAPHS=0; --graphs keeps them): the step launches the same
kernels either way, and without graphs --launch-skip counts plain launches,
so the default skip lands about 200 steps into the epoch (VGG-BN, batch
128). On an H100 the profiles with graphs on and off named the same
kernels. The recorded durations are several times those of a running
step (VGG-BN: about 7.5 ms of kernels per step recorded against 1 ms per
step measured; Nsight Compute runs each recorded kernel on its own, the
GPU idle in between, which may lower its clocks): read the shares, not the
microseconds. Launch gaps and host time are not in them (for the step as
a whole, bench/gpu_peers.py).

  python3 bench/kernel_profile.py --cli build-gpu/bin/deepcanvas-cli --data DIR
      [--config vgg:bf16[:batch]] [--skip 20000] [--count 300] [--json OUT.json]
"""
import argparse
import csv
import io
import json
import os
import shutil
import subprocess
import sys
from collections import defaultdict

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from gpu_peers import BATCH, PROJECTS, data_for  # noqa: E402


def short(name):
    """A kernel's name without its parameter list and namespaces, keeping its
    template arguments (which tell DeepCanvas's channel-sum kernels apart)."""
    s = name.replace("(anonymous namespace)::", "")
    depth = 0
    for i, ch in enumerate(s):
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth -= 1
        elif ch == "(" and depth == 0:
            s = s[:i]
            break
    if s.startswith("void "):
        s = s[5:]
    head, lt, tail = s.partition("<")
    return head.split("::")[-1] + lt + tail.replace("dc::cuda::", "")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cli", required=True)
    ap.add_argument("--data", required=True)
    ap.add_argument("--config", default="vgg:bf16")
    ap.add_argument("--skip", type=int, default=20000)
    ap.add_argument("--count", type=int, default=300)
    ap.add_argument("--ncu", default=shutil.which("ncu") or "/usr/local/cuda/bin/ncu")
    ap.add_argument("--json")
    ap.add_argument("--graphs", action="store_true", help="keep CUDA graphs on")
    # What gpu_peers.data_for reads: the synthetic sets' folder and sizes.
    ap.set_defaults(synthetic_dir=os.environ.get("DC_SYNTHETIC_DIR", ""), synthetic_train=0,
                    synthetic_test=0, tmp="/tmp/dc-gpu-peers")
    a = ap.parse_args()
    parts = a.config.split(":")
    model, precision = parts[0], parts[1]
    batch = int(parts[2]) if len(parts) > 2 else BATCH[model]
    cmd = [a.ncu, "--clock-control", "none", "--metrics", "gpu__time_duration.sum", "--csv",
           "--print-units", "base", "--graph-profiling", "node", "--launch-skip", str(a.skip),
           "--launch-count", str(a.count), a.cli, "train", PROJECTS[model], "--data", data_for(a, model),
           "--device", "cuda", "--batch", str(batch), "--epochs", "1", "--precision", precision,
           "--optimizer", "adam", "--lr", "0.001", "--schedule", "constant", "--quiet"]
    env = dict(os.environ)
    if not a.graphs:
        env["DC_CUDA_GRAPHS"] = "0"
    p = subprocess.run(cmd, capture_output=True, text=True, env=env)
    text = p.stdout
    start = text.find('"ID"')
    if start < 0:
        sys.exit(f"ncu gave no table (exit {p.returncode}):\n{p.stdout[-1500:]}\n{p.stderr[-1500:]}")
    by = defaultdict(lambda: [0, 0.0])
    for row in csv.DictReader(io.StringIO(text[start:])):
        if row.get("Metric Name") != "gpu__time_duration.sum":
            continue
        try:
            ns = float(row["Metric Value"].replace(",", ""))
        except ValueError:
            continue
        g = by[short(row["Kernel Name"])]
        g[0] += 1
        g[1] += ns
    total = sum(v[1] for v in by.values())
    rows = sorted(by.items(), key=lambda kv: -kv[1][1])
    print(f"{a.config} batch {batch}, CUDA graphs {'on' if a.graphs else 'off'}: {sum(v[0] for v in by.values())} kernels after skipping "
          f"{a.skip}, {total / 1e3:.1f} us of kernel time")
    print(f"{'kernel':58} {'launches':>8} {'us':>10} {'share':>7}")
    for name, (n, ns) in rows[:30]:
        print(f"{name[:58]:58} {n:8d} {ns / 1e3:10.1f} {100 * ns / total:6.1f}%")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"config": a.config, "batch": batch, "skip": a.skip, "count": a.count,
                       "command": " ".join(cmd),
                       "kernels": [{"name": k, "launches": n, "ns": ns} for k, (n, ns) in rows]},
                      f, indent=1)


if __name__ == "__main__":
    main()
