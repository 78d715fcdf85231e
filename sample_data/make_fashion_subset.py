#!/usr/bin/python3
"""Builds the bundled Fashion-MNIST subset from the full data set.

Writes a class-balanced subset (1,000 training and 200 test images per class)
in the standard IDX format, gzip-compressed, to fashion-mnist-subset/ next to
this script. Standard library only, fixed seed and gzip mtime=0, so running it
again gives byte-identical files.

Usage: /usr/bin/python3 make_fashion_subset.py [SOURCE_DIR] [OUTPUT_DIR]
"""
import gzip
import os
import random
import struct
import sys

SOURCE = "/usr/share/datasets/fashion-mnist"
OUTPUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fashion-mnist-subset")
SEED = 20240601
NUM_CLASSES = 10
PER_CLASS = {"train": 1000, "t10k": 200}


def read_idx(path):
    """Returns (dims, payload bytes) of a gzip or raw IDX file."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    zero, dtype, rank = struct.unpack(">HBB", data[:4])
    if zero != 0 or dtype != 0x08:
        sys.exit(f"{path}: not an unsigned-byte IDX file")
    dims = struct.unpack(f">{rank}I", data[4:4 + 4 * rank])
    payload = data[4 + 4 * rank:]
    expected = 1
    for d in dims:
        expected *= d
    if len(payload) != expected:
        sys.exit(f"{path}: header says {expected} bytes of data, file has {len(payload)}")
    return dims, payload


def find(folder, stem):
    for name in (stem + ".gz", stem):
        path = os.path.join(folder, name)
        if os.path.exists(path):
            return path
    sys.exit(f"{folder}: missing {stem}[.gz]")


def write_idx_gz(path, dims, payload):
    header = struct.pack(">HBB", 0, 0x08, len(dims)) + struct.pack(f">{len(dims)}I", *dims)
    # mtime=0 and no file name in the gzip header keep the output byte-identical.
    blob = gzip.compress(header + payload, compresslevel=9, mtime=0)
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(blob)
    os.replace(tmp, path)


def subset(split, src, out, rng):
    img_dims, images = read_idx(find(src, f"{split}-images-idx3-ubyte"))
    lab_dims, labels = read_idx(find(src, f"{split}-labels-idx1-ubyte"))
    n = img_dims[0]
    if lab_dims[0] != n:
        sys.exit(f"{split}: {n} images but {lab_dims[0]} labels")
    by_class = [[] for _ in range(NUM_CLASSES)]
    for i, c in enumerate(labels):
        by_class[c].append(i)
    chosen = []
    for c in range(NUM_CLASSES):
        chosen += rng.sample(by_class[c], PER_CLASS[split])
    # Original order keeps the classes interleaved as in the full set.
    chosen.sort()
    size = img_dims[1] * img_dims[2]
    out_images = b"".join(images[i * size:(i + 1) * size] for i in chosen)
    out_labels = bytes(labels[i] for i in chosen)
    k = len(chosen)
    write_idx_gz(os.path.join(out, f"{split}-images-idx3-ubyte.gz"),
                 (k, img_dims[1], img_dims[2]), out_images)
    write_idx_gz(os.path.join(out, f"{split}-labels-idx1-ubyte.gz"), (k,), out_labels)
    print(f"{split}: {k} samples ({PER_CLASS[split]} per class) from {n}")


def main():
    src = sys.argv[1] if len(sys.argv) > 1 else SOURCE
    out = sys.argv[2] if len(sys.argv) > 2 else OUTPUT
    os.makedirs(out, exist_ok=True)
    rng = random.Random(SEED)
    for split in ("train", "t10k"):
        subset(split, src, out, rng)


if __name__ == "__main__":
    main()
