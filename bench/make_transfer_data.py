#!/usr/bin/env python3
"""Data for bench/transfer_vs_scratch.sh, made offline and reproducibly:

  fashion-mnist-100/  IDX folder: the first 100 training images of each class
                      of Debian's Fashion-MNIST (1000), and its full 10k test set.
  shapes/             an image folder (one subfolder per class, PNG) of
                      64x64 RGB pictures of 6 shapes (circle, square, triangle,
                      cross, ring, star) in random colours, sizes, positions
                      and rotations on noisy random backgrounds; train/ has
                      30 per class, test/ 200 per class. Seeded: every run
                      writes the same pictures.
  shapes-idx/         the same pictures as IDX (N x 3 x 64 x 64), which
                      deepcanvas-cli reads (the app reads the folder itself).

Usage: make_transfer_data.py OUT_DIR  (Debian's python3-numpy, python3-pil)."""
import gzip
import math
import os
import struct
import sys

import numpy as np
from PIL import Image, ImageDraw

from idx import read_idx

FASHION = "/usr/share/datasets/fashion-mnist"
SHAPES = ["circle", "square", "triangle", "cross", "ring", "star"]


def write_idx(path, arr):
    arr = np.ascontiguousarray(arr, dtype=np.uint8)
    header = bytes([0, 0, 0x08, arr.ndim]) + struct.pack(">" + "I" * arr.ndim, *arr.shape)
    with gzip.open(path, "wb") as f:
        f.write(header + arr.tobytes())


def write_split(folder, prefix, images, labels):
    write_idx(os.path.join(folder, prefix + "-images-idx3-ubyte.gz"), images)
    write_idx(os.path.join(folder, prefix + "-labels-idx1-ubyte.gz"), labels)


def fashion_100(out):
    folder = os.path.join(out, "fashion-mnist-100")
    os.makedirs(folder, exist_ok=True)
    x = read_idx(os.path.join(FASHION, "train-images-idx3-ubyte.gz"))
    y = read_idx(os.path.join(FASHION, "train-labels-idx1-ubyte.gz"))
    keep = np.sort(np.concatenate([np.flatnonzero(y == c)[:100] for c in range(10)]))
    write_split(folder, "train", x[keep], y[keep])
    write_split(folder, "t10k", read_idx(os.path.join(FASHION, "t10k-images-idx3-ubyte.gz")),
                read_idx(os.path.join(FASHION, "t10k-labels-idx1-ubyte.gz")))
    print(f"{folder}: {len(keep)} training images, 10000 test", file=sys.stderr)


def polygon(cx, cy, r, n, rot, inner=None):
    pts = []
    for i in range(n * (2 if inner else 1)):
        a = rot + math.pi * 2 * i / (n * (2 if inner else 1))
        rr = r if not inner or i % 2 == 0 else r * inner
        pts.append((cx + rr * math.cos(a), cy + rr * math.sin(a)))
    return pts


def shape_image(kind, rng, size=64):
    bg = rng.integers(0, 256, 3)
    noise = rng.normal(0, 18, (size, size, 3))
    img = Image.fromarray(np.clip(bg + noise, 0, 255).astype(np.uint8))
    d = ImageDraw.Draw(img)
    fg = tuple(int(v) for v in rng.integers(0, 256, 3))
    while sum(abs(a - int(b)) for a, b in zip(fg, bg)) < 150:  # keep it visible
        fg = tuple(int(v) for v in rng.integers(0, 256, 3))
    r = rng.uniform(10, 22)
    cx, cy = rng.uniform(r + 2, size - r - 2, 2)
    rot = rng.uniform(0, 2 * math.pi)
    if kind == "circle":
        d.ellipse([cx - r, cy - r, cx + r, cy + r], fill=fg)
    elif kind == "ring":
        d.ellipse([cx - r, cy - r, cx + r, cy + r], outline=fg, width=max(2, int(r / 3)))
    elif kind == "square":
        d.polygon(polygon(cx, cy, r * 1.2, 4, rot), fill=fg)
    elif kind == "triangle":
        d.polygon(polygon(cx, cy, r * 1.2, 3, rot), fill=fg)
    elif kind == "star":
        d.polygon(polygon(cx, cy, r * 1.2, 5, rot, inner=0.45), fill=fg)
    elif kind == "cross":
        w = r / 3
        arm = [(-r, -w), (r, -w), (r, w), (-r, w)]
        for q in (0, math.pi / 2):
            a = rot + q
            d.polygon([(cx + x * math.cos(a) - y * math.sin(a), cy + x * math.sin(a) + y * math.cos(a))
                       for x, y in arm], fill=fg)
    return img


def shapes(out, per_train=30, per_test=200):
    rng = np.random.default_rng(12345)
    folder, idx = os.path.join(out, "shapes"), os.path.join(out, "shapes-idx")
    os.makedirs(idx, exist_ok=True)
    for split, per in (("train", per_train), ("test", per_test)):
        xs, ys = [], []
        for c, kind in enumerate(SHAPES):
            os.makedirs(os.path.join(folder, split, kind), exist_ok=True)
            for i in range(per):
                img = shape_image(kind, rng)
                img.save(os.path.join(folder, split, kind, f"{i:04d}.png"))
                xs.append(np.asarray(img).transpose(2, 0, 1))
                ys.append(c)
        write_split(idx, "train" if split == "train" else "t10k", np.stack(xs),
                    np.array(ys, np.uint8))
    print(f"{folder}: {len(SHAPES)} classes, {per_train} training and {per_test} test images "
          f"each", file=sys.stderr)


if __name__ == "__main__":
    out = sys.argv[1] if len(sys.argv) > 1 else "transfer-data"
    fashion_100(out)
    shapes(out)
