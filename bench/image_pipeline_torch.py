#!/usr/bin/python3
"""The PyTorch side of the input-pipeline benchmark (issue 31).

torchvision's ImageFolder with RandomResizedCrop(SIZE), RandomHorizontalFlip,
ToTensor and Normalize, batched by a DataLoader with --workers processes,
shuffled; the batches are only consumed (no model), so this measures
decoding, resizing and augmentation. Prints one JSON line per epoch:
images/s, and at the end the process's peak resident set (VmHWM, the
DataLoader's worker processes are measured separately: RUSAGE_CHILDREN).

    /usr/bin/python3 bench/image_pipeline_torch.py FOLDER --size 224 --workers 2
"""
import argparse
import json
import resource
import time

import torch
import torchvision
from torchvision import transforms


def vm_hwm_kb():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("folder")
    ap.add_argument("--size", type=int, default=224)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--limit", type=int, default=0, help="first N images only (0 = all)")
    a = ap.parse_args()
    torch.set_num_threads(1)
    tf = transforms.Compose([
        transforms.RandomResizedCrop(a.size),
        transforms.RandomHorizontalFlip(),
        transforms.ToTensor(),
        transforms.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225]),
    ])
    t0 = time.perf_counter()
    ds = torchvision.datasets.ImageFolder(a.folder, transform=tf)
    if a.limit:
        ds = torch.utils.data.Subset(ds, range(min(a.limit, len(ds))))
    listed = time.perf_counter() - t0
    dl = torch.utils.data.DataLoader(ds, batch_size=a.batch, shuffle=True, num_workers=a.workers,
                                     persistent_workers=a.workers > 0)
    for epoch in range(a.epochs):
        n = 0
        t0 = time.perf_counter()
        for x, y in dl:
            n += x.shape[0]
        dt = time.perf_counter() - t0
        print(json.dumps({"side": "pytorch", "epoch": epoch, "images": n, "seconds": dt,
                          "images_per_s": n / dt, "list_seconds": listed}), flush=True)
    del dl
    children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    print(json.dumps({"side": "pytorch", "vm_hwm_mb": vm_hwm_kb() / 1024,
                      "worker_max_rss_mb": children / 1024, "torch": torch.__version__,
                      "torchvision": torchvision.__version__}), flush=True)


if __name__ == "__main__":
    main()
