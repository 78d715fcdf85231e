#!/usr/bin/env python3
"""Predicted vs measured training memory and samples/s for every template.

For each template and batch: `deepcanvas-cli advise --json` (the prediction,
using this machine's cached bench-device result) and a short
`deepcanvas-cli train --json` (the measurement: peak_tensor_bytes and
train_samples_per_s). Prints a Markdown table for docs/BENCHMARKS.md.

    /usr/bin/python3 bench/advisor_accuracy.py [--cli build/bin/deepcanvas-cli]

On a GPU machine, `--device cuda --gpu "NVIDIA H100 SXM" --data DIR` compares
the catalog row's prediction (memory: training_bytes; speed) with
`train --device cuda` (peak_device_bytes, the plugin allocator's peak).
"""
import argparse
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TEMPLATES = ["two_conv_cnn", "lenet5", "vgg_small", "resnet_small",
             "lstm_rows", "gru_rows", "stacked_lstm", "char_lstm",
             "vit_tiny", "lstm_attention", "char_transformer"]
# Trained on their own dataset entry (the bundled corpus), not --data.
OWN_DATA = {"char_lstm", "char_transformer"}


def last_json(out):
    return json.loads(out.strip().splitlines()[-1])


def run(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"failed: {' '.join(cmd)}\n{r.stdout}\n{r.stderr.strip()[-400:]}")
    return last_json(r.stdout)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cli", default=os.path.join(ROOT, "build/bin/deepcanvas-cli"))
    ap.add_argument("--batches", default="32,64,256")
    # Long enough that the first steps (page faults, oneDNN compiling its
    # kernels for new shapes) do not dominate: with 1024 samples LeNet-5
    # measured 18k samples/s against 31-33k after 100 steps.
    ap.add_argument("--samples", type=int, default=8192,
                    help="training samples measured per run (at least 16 steps)")
    ap.add_argument("--templates", default=",".join(TEMPLATES))
    ap.add_argument("--raw", help="also write every prediction and measurement here (JSON lines)")
    ap.add_argument("--no-refresh", action="store_true",
                    help="reuse the cached bench-device result instead of re-measuring it "
                         "before each template (re-measuring keeps the benchmark and the "
                         "runs under the same load on a shared machine)")
    ap.add_argument("--device", default="cpu", help="cpu, or cuda (GPU rows)")
    ap.add_argument("--gpu", default="NVIDIA H100 SXM",
                    help="--device cuda: the catalog row, or 'measured' for the row advise "
                         "makes from this machine's bench-device figures (every row goes "
                         "into --raw either way)")
    ap.add_argument("--data", default=os.path.join(ROOT, "sample_data/fashion-mnist-subset"),
                    help="image dataset of the measured runs")
    a = ap.parse_args()
    subset = a.data
    cuda = a.device.startswith("cuda")
    print("| template | batch | predicted memory | measured peak | error | "
          "predicted samples/s | measured samples/s | error |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    raw = open(a.raw, "w") if a.raw else None
    for t in a.templates.split(","):
        proj = os.path.join(ROOT, "resources/templates", t + ".dcproj")
        bench = None if cuda else run([a.cli, "bench-device", "--json"] +
                                      ([] if a.no_refresh else ["--refresh"]))
        data = [] if t in OWN_DATA else ["--data", subset]
        for b in [int(x) for x in a.batches.split(",")]:
            steps = max(16, a.samples // b)
            try:
                adv, tr = measure(a, proj, data, b, steps, cuda)
            except RuntimeError as e:
                print(f"| {t} | {b} | {str(e).splitlines()[-1][:200]} |||||||", flush=True)
                continue
            if raw:
                raw.write(json.dumps({"template": t, "batch": b, "bench": bench,
                                      "advise": adv, "train": tr}) + "\n")
                raw.flush()
            pm, mm = adv["training_bytes"], tr["peak_tensor_bytes"]
            ps, ms = adv["predicted_samples_per_s"], tr["train_samples_per_s"]
            print(f"| {t} | {b} | {pm / 2**20:.1f} MiB | {mm / 2**20:.1f} MiB | "
                  f"{100 * (pm - mm) / mm:+.1f} % | {ps:.0f} | {ms:.0f} | "
                  f"{100 * (ps - ms) / ms:+.0f} % |", flush=True)


def measure(a, proj, data, b, steps, cuda):
    # On a GPU the dataset stays on the device: advise reads the same one.
    adv = run([a.cli, "advise", proj, "--batch", str(b), "--samples", "1000",
               "--precision", "fp32", "--json"] + (data if cuda else []))
    if cuda:
        # "measured": the row advise makes from this machine's own
        # bench-device figures (cached where XDG_CACHE_HOME points).
        want = (lambda g: g["name"].endswith("(measured here)")) if a.gpu == "measured" \
            else (lambda g: g["name"] == a.gpu)
        rows = [g for g in adv["gpus"] if want(g)]
        if not rows:
            sys.exit(f"no advise row for {a.gpu!r} (has bench-device run here?)")
        adv = dict(rows[0], training_bytes=rows[0]["allocator_bytes"], all_rows=adv["gpus"])
    else:
        adv = adv["this_machine"]
    # A GPU epoch's first steps carry cuDNN's algorithm search and the
    # CUDA graph capture: two epochs, the second measured.
    tr = run([a.cli, "train", proj, *data, "--epochs", "2" if cuda else "1",
              "--steps-per-epoch", str(steps), "--batch", str(b), "--device", a.device,
              "--precision", "fp32", "--json", "--quiet"])
    if cuda:
        tr["peak_tensor_bytes"] = tr["peak_device_bytes"]
        tr["train_samples_per_s"] = tr["history"][-1]["train_samples_per_s"]
    return adv, tr


if __name__ == "__main__":
    main()
