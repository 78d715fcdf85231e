#!/usr/bin/env python3
"""Issue 31's GPU figure: the photo-folder path feeding a GPU, DeepCanvas
against PyTorch's DataLoader on the same GPU, each side in its own process,
alternating, --repeats times.

Both train the EfficientNet-Lite0 transfer project (bench/lite0_transfer.dcproj:
frozen base, new head, 3x224x224, ImageNet's per-channel normalisation;
random weights, which do not change the cost) at batch 64 in bf16 with Adam,
for --epochs epochs on a folder of JPEGs (bench/make_jpeg_folder, or
bench/make_image_folder.py), with RandomResizedCrop(224) and a horizontal
flip drawn from the whole picture:

  deepcanvas  `deepcanvas-cli train` on a copy of the project whose dataset
              is the folder, streamed (dataset.loading "stream") with the
              picture cache in a fresh folder: epoch 1 decodes the JPEGs,
              later epochs read the cache. Reports each epoch's images/s
              and the run's diagnosis (is it input-bound: the share of the
              step spent waiting for the loader, and the verdicts).
  pytorch     the same graph (model.py of `deepcanvas-cli export --format
              pytorch`) fed by torchvision's ImageFolder + DataLoader
              (num_workers = --workers, pin_memory, persistent workers,
              RandomResizedCrop(224), RandomHorizontalFlip, ToTensor,
              Normalize), Adam(fused), bf16 autocast, channels_last. Needs
              torchvision and Pillow; without them it is reported as missing,
              not measured.

    python3 bench/gpu_image_folder.py --cli build-gpu/bin/deepcanvas-cli \\
        --folder /tmp/jpegs20k [--epochs 2] [--repeats 3] [--workers 16]
  (--device cpu with --steps 5 and a small folder: a check of the script's
  own logic on a machine without a GPU; its figures mean nothing)
Prints a JSON summary last (median [min..max] per side and epoch).
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
PROJECT = os.path.join(HERE, "lite0_transfer.dcproj")
BATCH = 64


def project_on(folder, tmp):
    with open(PROJECT) as f:
        p = json.load(f)
    d = p["dataset"]
    d.update({"kind": "image_folder", "path": os.path.abspath(folder), "loading": "stream",
              "cache": os.path.join(tmp, "cache"), "crop_fraction": 0.875})
    path = os.path.join(tmp, "lite0_folder.dcproj")
    with open(path, "w") as f:
        json.dump(p, f, indent=2)
    return path


def run_deepcanvas(a, tmp, seed):
    shutil.rmtree(os.path.join(tmp, "cache"), ignore_errors=True)
    cmd = [a.cli, "train", project_on(a.folder, tmp), "--device", a.device, "--batch", str(BATCH),
           "--epochs", str(a.epochs), "--precision", a.precision, "--optimizer", "adam", "--lr",
           "0.001", "--schedule", "constant", "--seed", str(seed), "--augment-resized-crop",
           "--augment-flip", "--json", "--quiet"]
    if a.steps:
        cmd += ["--steps-per-epoch", str(a.steps)]
    t0 = time.time()
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        return {"error": f"exit {p.returncode}: {p.stderr.strip()[-800:]}", "cmd": " ".join(cmd)}
    j = json.loads(p.stdout.strip().splitlines()[-1])
    d = j.get("diagnosis") or {}
    return {"cmd": " ".join(cmd), "process_s": time.time() - t0,
            "epoch_images_per_s": [h["train_samples_per_s"] for h in j["history"]],
            "loader_wait_share": d.get("loader_wait_share"),
            "gpu_utilization_pct": d.get("gpu_utilization_pct"),
            "verdicts": [v.get("kind") for v in d.get("verdicts", [])],
            "peak_gpu_bytes": j.get("peak_device_bytes")}


def torch_worker(spec):
    """The PyTorch side, in this (fresh) process."""
    import importlib.util
    import torch
    import torch.nn as nn
    import torchvision.transforms as T
    from torchvision.datasets import ImageFolder
    dev = torch.device(spec["device"])
    cuda = dev.type == "cuda"
    torch.backends.cudnn.benchmark = True
    torch.manual_seed(spec["seed"])
    sys.path.insert(0, spec["export"])
    ms = importlib.util.spec_from_file_location("model", os.path.join(spec["export"], "model.py"))
    mod = importlib.util.module_from_spec(ms)
    ms.loader.exec_module(mod)
    with open(PROJECT) as f:
        pre = json.load(f)["dataset"]["preprocess"]
    tf = T.Compose([T.RandomResizedCrop(224), T.RandomHorizontalFlip(), T.ToTensor(),
                    T.Normalize(pre["mean"], pre["std"])])
    ds = ImageFolder(spec["folder"], transform=tf)
    dl = torch.utils.data.DataLoader(ds, batch_size=BATCH, shuffle=True, drop_last=True,
                                     num_workers=spec["workers"], pin_memory=cuda,
                                     persistent_workers=spec["workers"] > 0)
    bf16 = spec["precision"] == "bf16"
    net = mod.Model().to(dev)
    if bf16:
        net = net.to(memory_format=torch.channels_last)
    net.train()
    opt = torch.optim.Adam([p for p in net.parameters() if p.requires_grad], lr=1e-3, fused=cuda)
    lossf = nn.CrossEntropyLoss()
    rates = []
    for _ in range(spec["epochs"]):
        n, t0 = 0, time.perf_counter()
        for i, (x, y) in enumerate(dl):
            if spec["steps"] and i >= spec["steps"]:
                break
            x = x.to(dev, non_blocking=True)
            if bf16:
                x = x.contiguous(memory_format=torch.channels_last)
            y = y.to(dev, non_blocking=True)
            with torch.autocast(dev.type, dtype=torch.bfloat16, enabled=bf16):
                loss = lossf(net(x), y)
            loss.backward()
            opt.step()
            opt.zero_grad(set_to_none=True)
            n += x.shape[0]
        if cuda:
            torch.cuda.synchronize()
        rates.append(n / (time.perf_counter() - t0))
    print(json.dumps({"epoch_images_per_s": rates, "workers": spec["workers"],
                      "peak_gpu_bytes": torch.cuda.max_memory_allocated() if cuda else None}))


def run_torch(a, export, seed):
    spec = {"device": a.device, "seed": seed, "export": export, "folder": os.path.abspath(a.folder),
            "workers": a.workers, "precision": a.precision, "epochs": a.epochs, "steps": a.steps}
    p = subprocess.run([sys.executable, os.path.abspath(__file__), "--worker", json.dumps(spec)],
                       capture_output=True, text=True)
    if p.returncode != 0:
        return {"error": f"exit {p.returncode}: {p.stderr.strip()[-800:]}"}
    return json.loads(p.stdout.strip().splitlines()[-1])


def spread(values):
    values = [v for v in values if v is not None]
    if not values:
        return None
    return {"median": statistics.median(values), "min": min(values), "max": max(values)}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cli", required=True)
    ap.add_argument("--folder", required=True)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--precision", default="bf16")
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--steps", type=int, default=0, help="steps per epoch (0: all)")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--workers", type=int, default=os.cpu_count())
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--out", default="")
    ap.add_argument("--budget-s", type=float, default=0,
                    help="start no new process after this many seconds (0: no limit)")
    a = ap.parse_args()
    t_start = time.time()
    try:
        import PIL  # noqa: F401
        import torchvision  # noqa: F401
        peer_missing = ""
    except ImportError as e:
        peer_missing = f"PyTorch's side not measured: {e}"
        print(peer_missing, flush=True)
    tmp = tempfile.mkdtemp(prefix="dc-gpu-folder-")
    export = os.path.join(tmp, "export")
    subprocess.run([a.cli, "export", PROJECT, "--format", "pytorch", "-o", export, "--force"],
                   check=True, capture_output=True)
    runs = {"deepcanvas": [], "pytorch": []}
    out_of_time = False
    for r in range(a.repeats):
        order = ["deepcanvas", "pytorch"] if r % 2 == 0 else ["pytorch", "deepcanvas"]
        for side in order:
            if side == "pytorch" and peer_missing:
                continue
            if a.budget_s and time.time() - t_start > a.budget_s:
                out_of_time = True
                break
            res = run_deepcanvas(a, tmp, a.seed) if side == "deepcanvas" else run_torch(a, export, a.seed)
            runs[side].append(res)
            print(side, json.dumps(res), flush=True)
    summary = {"folder": a.folder, "device": a.device, "precision": a.precision, "batch": BATCH,
               "workers_pytorch": a.workers, "cpu_count": os.cpu_count(), "repeats": a.repeats,
               "pytorch_missing": peer_missing or None,
               "stopped_by_budget": out_of_time}
    for side, rs in runs.items():
        ok = [x for x in rs if "error" not in x]
        summary[side] = {
            "errors": [x["error"] for x in rs if "error" in x],
            "epoch_images_per_s": [spread([x["epoch_images_per_s"][e] for x in ok
                                           if e < len(x["epoch_images_per_s"])])
                                   for e in range(a.epochs)]}
        if side == "deepcanvas":
            summary[side]["loader_wait_share"] = spread([x["loader_wait_share"] for x in ok])
            summary[side]["verdicts"] = [x["verdicts"] for x in ok]
    shutil.rmtree(tmp, ignore_errors=True)
    if a.out:
        os.makedirs(a.out, exist_ok=True)
        with open(os.path.join(a.out, f"gpu-image-folder-{time.strftime('%Y%m%d-%H%M')}.json"),
                  "w") as f:
            json.dump({"summary": summary, "runs": runs}, f, indent=1)
    print(json.dumps(summary))
    # Failed runs, or a side (not missing) without one good run, fail the step.
    failed = any(summary[s]["errors"] for s in runs) or any(
        not [x for x in runs[s] if "error" not in x]
        for s in runs if not (s == "pytorch" and peer_missing))
    return 1 if failed else 0


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--worker":
        sys.exit(torch_worker(json.loads(sys.argv[2])))
    sys.exit(main())
