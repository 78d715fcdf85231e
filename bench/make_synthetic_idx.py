#!/usr/bin/env python3
"""Synthetic RGB images in the IDX layout both sides of the GPU benchmark
read (Fashion-MNIST's file names, uncompressed, images rank 4: N×3×S×S u8),
for throughput rows whose networks want 3-channel pictures (the
EfficientNet-Lite0 transfer template, MobileNetV2) on a machine with no
network and no image decoder.

The pixels are seeded uniform noise and the labels (10 classes) are drawn
independently of them: nothing can be learnt, so the test accuracy of a run
on this data means nothing. Only samples/s and memory are figures.

  python3 bench/make_synthetic_idx.py OUT_DIR [--side 224] [--train 6400]
      [--test 640] [--classes 10] [--seed 1]
Writes OUT_DIR/{train,t10k}-{images-idx3,labels-idx1}-ubyte; an existing
folder with the same parameters (OUT_DIR/synthetic.json) is left as it is.
"""
import argparse
import json
import os
import struct
import sys

import numpy as np


def write_idx(path, array):
    """One IDX file of unsigned bytes (magic 00 00 08 RANK, big-endian dims)."""
    a = np.ascontiguousarray(array, dtype=np.uint8)
    tmp = path + ".part"
    with open(tmp, "wb") as f:
        f.write(struct.pack(">BBBB", 0, 0, 8, a.ndim))
        f.write(struct.pack(">" + "I" * a.ndim, *a.shape))
        f.write(a.data)  # no copy of up to a gigabyte
    os.replace(tmp, path)


def make(out, side=224, train=6400, test=640, classes=10, seed=1):
    """Writes the four files into out unless it already holds this set; returns out."""
    params = {"side": side, "train": train, "test": test, "classes": classes, "seed": seed,
              "note": "uniform noise with random labels: a throughput set, accuracy means nothing"}
    stamp = os.path.join(out, "synthetic.json")
    try:
        with open(stamp) as f:
            if json.load(f) == params:
                return out
    except (OSError, ValueError):
        pass
    os.makedirs(out, exist_ok=True)
    rng = np.random.default_rng(seed)
    for split, n in (("train", train), ("t10k", test)):
        write_idx(os.path.join(out, f"{split}-images-idx3-ubyte"),
                  rng.integers(0, 256, size=(n, 3, side, side), dtype=np.uint8))
        # Every class present in both splits, so that both sides count the same classes.
        labels = np.arange(n) % classes
        rng.shuffle(labels)
        write_idx(os.path.join(out, f"{split}-labels-idx1-ubyte"), labels)
    with open(stamp, "w") as f:
        json.dump(params, f)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out")
    ap.add_argument("--side", type=int, default=224)
    ap.add_argument("--train", type=int, default=6400)
    ap.add_argument("--test", type=int, default=640)
    ap.add_argument("--classes", type=int, default=10)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    if not 2 <= a.classes <= 256 or a.train < a.classes or a.test < a.classes:
        sys.exit("need 2..256 classes and at least one image per class in each split")
    make(a.out, a.side, a.train, a.test, a.classes, a.seed)
    print(f"{a.out}: {a.train} training and {a.test} test images of 3x{a.side}x{a.side}, "
          f"{a.classes} classes (noise: accuracy on it means nothing)")


if __name__ == "__main__":
    main()
