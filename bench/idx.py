"""What the benchmark scripts share for Fashion-MNIST's IDX files (gzipped
or not) and for the per-epoch history `deepcanvas-cli train --json` prints.
Imported by the scripts beside it (their own folder is on sys.path)."""
import gzip
import os
import struct
import sys


def read_idx(path):
    """An IDX file (8-bit data) as a numpy array of its dimensions."""
    import numpy as np
    with (gzip.open if path.endswith(".gz") else open)(path, "rb") as f:
        data = f.read()
    ndim = struct.unpack(">I", data[:4])[0] & 0xFF
    dims = struct.unpack(">" + "I" * ndim, data[4:4 + 4 * ndim])
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * ndim).reshape(dims)


def find(folder, stem):
    """folder/stem.gz, else folder/stem; exits naming the file when neither exists."""
    for ext in (".gz", ""):
        if os.path.exists(f"{folder}/{stem}{ext}"):
            return f"{folder}/{stem}{ext}"
    sys.exit(f"missing {stem} in {folder}")


def steady(history):
    """Mean samples/s of the epochs after the first (which carries warm-up)."""
    later = history[1:] or history
    return sum(h["train_samples_per_s"] for h in later) / len(later)
