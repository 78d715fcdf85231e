#!/usr/bin/env python3
"""Training samples/s of two builds of deepcanvas-cli on the same templates,
each run in its own process, alternating which goes first, median and spread
of --repeats runs (docs/BENCHMARKS.md, "BatchNorm and Dropout kernels").

    /usr/bin/python3 bench/compare_builds.py --before OLD/bin/deepcanvas-cli \\
        --after build/bin/deepcanvas-cli --templates vgg_small,resnet_small
"""
import argparse
import json
import os
import statistics
import subprocess

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--before", required=True)
    ap.add_argument("--after", default=os.path.join(ROOT, "build/bin/deepcanvas-cli"))
    ap.add_argument("--templates", default="vgg_small,resnet_small")
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--steps", type=int, default=128, help="steps measured per run")
    ap.add_argument("--repeats", type=int, default=5)
    a = ap.parse_args()
    bins = [("before", a.before), ("after", a.after)]
    data = os.path.join(ROOT, "sample_data/fashion-mnist-subset")
    res = {}
    for t in a.templates.split(","):
        proj = os.path.join(ROOT, "resources/templates", t + ".dcproj")
        for r in range(a.repeats):
            for name, cli in (bins if r % 2 == 0 else bins[::-1]):
                out = subprocess.run(
                    [cli, "train", proj, "--data", data, "--epochs", "1", "--steps-per-epoch",
                     str(a.steps), "--batch", str(a.batch), "--json", "--quiet"],
                    capture_output=True, text=True, check=True).stdout
                res.setdefault((t, name), []).append(
                    json.loads(out.strip().splitlines()[-1])["train_samples_per_s"])
    print("| template | build | median samples/s | spread |")
    print("|---|---|---:|---|")
    for (t, name), v in res.items():
        print(f"| {t} | {name} | {statistics.median(v):,.0f} | {min(v):,.0f}..{max(v):,.0f} |")


if __name__ == "__main__":
    main()
