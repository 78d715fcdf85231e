"""Reads and writes safetensors files, the format DeepCanvas checkpoints use.

A small reader/writer of the format itself (an 8-byte little-endian header
length, a JSON header with dtype, shape and byte offsets per tensor, then the
raw little-endian bytes), so the export runs with only torch and numpy:
Debian's python3-torch comes without the `safetensors` package. Files written
here load with `safetensors.torch.load_file` too, and the other way round.
"""
import json
import os
import struct

import numpy as np
import torch

_DTYPES = {
    "F32": np.float32, "F64": np.float64, "F16": np.float16, "I64": np.int64,
    "I32": np.int32, "I16": np.int16, "I8": np.int8, "U8": np.uint8, "BOOL": np.bool_,
}
_NAMES = {np.dtype(v): k for k, v in _DTYPES.items()}


def load_file(path):
    """Returns ({name: torch.Tensor}, {metadata key: str})."""
    with open(path, "rb") as f:
        raw = f.read()
    if len(raw) < 8:
        raise ValueError(f"{path}: not a safetensors file (shorter than its header)")
    (n,) = struct.unpack("<Q", raw[:8])
    if n > len(raw) - 8:
        raise ValueError(f"{path}: header length {n} is past the end of the file")
    header = json.loads(raw[8:8 + n].decode("utf-8"))
    meta = header.pop("__metadata__", None) or {}
    data = memoryview(raw)[8 + n:]
    out = {}
    for name, h in header.items():
        if h["dtype"] not in _DTYPES:
            raise ValueError(f"{path}: tensor {name} has dtype {h['dtype']}, which this reader does not know")
        b, e = h["data_offsets"]
        a = np.frombuffer(data[b:e], dtype=np.dtype(_DTYPES[h["dtype"]]).newbyteorder("<"))
        out[name] = torch.from_numpy(a.reshape(h["shape"]).copy())
    return out, meta


def save_file(tensors, path, metadata=None):
    """Writes {name: tensor} atomically (a temporary file, then a rename)."""
    header = {}
    blobs = []
    offset = 0
    for name in sorted(tensors):
        a = tensors[name].detach().cpu().contiguous().numpy()
        a = a.astype(a.dtype.newbyteorder("<"), copy=False)
        b = a.tobytes()
        header[name] = {"dtype": _NAMES[np.dtype(a.dtype.newbyteorder("="))],
                        "shape": list(a.shape), "data_offsets": [offset, offset + len(b)]}
        blobs.append(b)
        offset += len(b)
    if metadata:
        header["__metadata__"] = {str(k): str(v) for k, v in metadata.items()}
    h = json.dumps(header, separators=(",", ":")).encode("utf-8")
    h += b" " * (-len(h) % 8)  # the format aligns the data to 8 bytes
    tmp = f"{path}.tmp{os.getpid()}"
    with open(tmp, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for b in blobs:
            f.write(b)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
