#!/usr/bin/python3
"""PyTorch reference for one DeepCanvas layer (used by torch_reference_test).

Reads a safetensors file written by the test: the layer's inputs x0.., its
parameters p.NAME, our output y, the output gradient R, and our gradients
dx0.. and g.NAME; metadata "type" and "attrs" (JSON). Rebuilds the layer with
torch in float64, runs forward and backward with the same values and prints
one JSON object: for every compared tensor the normwise relative error
||ours - torch|| / ||torch||.
"""
import json
import struct
import sys

import numpy as np
import torch
import torch.nn.functional as F

DTYPES = {"F32": np.float32, "I32": np.int32, "U8": np.uint8}


def load(path):
    with open(path, "rb") as f:
        raw = f.read()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n])
    meta = header.pop("__metadata__", {})
    data = raw[8 + n:]
    out = {}
    for name, h in header.items():
        b, e = h["data_offsets"]
        a = np.frombuffer(data[b:e], dtype=DTYPES[h["dtype"]]).reshape(h["shape"])
        out[name] = torch.from_numpy(a.astype(np.float64))
    return out, meta


def pair(v):
    return tuple(v) if isinstance(v, list) else (v, v)


def conv(a, xs, p):
    x = xs[0]
    mode = a.get("padding_mode", "explicit")
    pad = pair(a.get("padding", [0, 0]))
    k = p["weight"].shape[2:]
    dil = pair(a.get("dilation", [1, 1]))
    if mode == "valid":
        pad = (0, 0)
    if mode == "same":
        # PyTorch's padding='same' pads the extra element at the end, as we do.
        return F.conv2d(x, p["weight"], p.get("bias"), pair(a.get("stride", [1, 1])), "same",
                        dil, a.get("groups", 1))
    return F.conv2d(x, p["weight"], p.get("bias"), pair(a.get("stride", [1, 1])), pad, dil,
                    a.get("groups", 1))


def batchnorm(a, xs, p, training):
    x = xs[0]
    rm, rv = p["running_mean"].clone(), p["running_var"].clone()
    y = F.batch_norm(x, rm, rv, p.get("weight"), p.get("bias"), training, a.get("momentum", 0.1),
                     a.get("eps", 1e-5))
    return y


def attention(a, xs, p):
    """torch.nn.MultiheadAttention(batch_first=True)'s arithmetic, on our parameters."""
    q = xs[0]
    kv = xs[1] if a.get("mode", "self") == "cross" else xs[0]
    T, S, E = q.shape[1], kv.shape[1], q.shape[2]
    mask = torch.triu(torch.ones(T, S, dtype=torch.bool), diagonal=1) if a.get("causal") else None
    y, _ = F.multi_head_attention_forward(
        q.transpose(0, 1), kv.transpose(0, 1), kv.transpose(0, 1), E, a.get("heads", 4),
        p["in_proj_weight"], p.get("in_proj_bias"), None, None, False, 0.0,
        p["out_proj_weight"], p.get("out_proj_bias"), training=False, need_weights=False,
        attn_mask=mask)
    return y.transpose(0, 1)


def forward(t, a, xs, p, training):
    if t == "Conv2D":
        return conv(a, xs, p)
    if t == "MaxPool2D":
        return F.max_pool2d(xs[0], pair(a.get("kernel", [2, 2])), pair(a.get("stride", a.get("kernel", [2, 2]))),
                            pair(a.get("padding", [0, 0])), ceil_mode=bool(a.get("ceil_mode", False)))
    if t == "AvgPool2D":
        return F.avg_pool2d(xs[0], pair(a.get("kernel", [2, 2])), pair(a.get("stride", a.get("kernel", [2, 2]))),
                            pair(a.get("padding", [0, 0])), count_include_pad=True)
    if t == "GlobalAvgPool2D":
        return xs[0].mean(dim=(2, 3))
    if t in ("BatchNorm1D", "BatchNorm2D"):
        return batchnorm(a, xs, p, training)
    if t == "ImageToTokens":
        return xs[0].flatten(2).transpose(1, 2)
    if t == "PositionalEmbedding":
        if a.get("kind", "learned") == "learned":
            return xs[0] + p["weight"]
        T, E = xs[0].shape[1], xs[0].shape[2]
        pos = torch.arange(T, dtype=torch.float64).unsqueeze(1)
        rate = torch.pow(10000.0, torch.arange(0, E, 2, dtype=torch.float64) / E)
        pe = torch.zeros(T, E, dtype=torch.float64)
        pe[:, 0::2] = torch.sin(pos / rate)
        pe[:, 1::2] = torch.cos(pos / rate[: E // 2])
        return xs[0] + pe.to(xs[0].dtype)
    if t == "ClassToken":
        n, e = xs[0].shape[0], xs[0].shape[2]
        return torch.cat([p["token"].view(1, 1, e).expand(n, 1, e), xs[0]], dim=1)
    if t == "TokenPooling":
        return xs[0][:, 0] if a.get("mode", "mean") == "first" else xs[0].mean(dim=1)
    if t == "MultiHeadAttention":
        return attention(a, xs, p)
    if t == "LayerNorm":
        return F.layer_norm(xs[0], (xs[0].shape[-1],), p.get("weight"), p.get("bias"), a.get("eps", 1e-5))
    if t == "Dense":
        return F.linear(xs[0], p["weight"], p.get("bias"))
    if t == "ReLU":
        return F.relu(xs[0])
    if t == "ReLU6":
        return F.relu6(xs[0])
    if t == "LeakyReLU":
        return F.leaky_relu(xs[0], a.get("slope", 0.01))
    if t == "Sigmoid":
        return torch.sigmoid(xs[0])
    if t == "Tanh":
        return torch.tanh(xs[0])
    if t == "GELU":
        return F.gelu(xs[0])
    if t == "Softmax":
        return F.softmax(xs[0], dim=-1)
    if t == "SiLU":
        return F.silu(xs[0])
    if t == "HardSwish":
        return F.hardswish(xs[0])
    if t == "HardSigmoid":
        return F.hardsigmoid(xs[0])
    if t == "ChannelScale":
        x, g = xs
        return x * g.reshape(x.shape[0], x.shape[1], *([1] * (x.dim() - 2)))
    if t == "ChannelShuffle":
        x, g = xs[0], a.get("groups", 2)
        n, c = x.shape[0], x.shape[1]
        return x.reshape(n, g, c // g, -1).transpose(1, 2).reshape(x.shape)
    if t == "ChannelSlice":
        s = a.get("start", 0)
        return xs[0][:, s:s + a.get("count", 1)]
    if t == "Add":
        return sum(xs)
    if t == "Concat":
        return torch.cat(xs, dim=a.get("axis", 0) + 1)
    raise SystemExit(f"layer_reference.py: no reference for {t}")


def main():
    tensors, meta = load(sys.argv[1])
    t = meta["type"]
    a = json.loads(meta["attrs"])
    training = meta.get("training", "1") == "1"
    xs = []
    i = 0
    while f"x{i}" in tensors:
        xs.append(tensors[f"x{i}"].clone().requires_grad_(True))
        i += 1
    p = {}
    for k, v in tensors.items():
        if k.startswith("p."):
            name = k[2:]
            p[name] = v.clone().requires_grad_(name not in ("running_mean", "running_var"))
    y = forward(t, a, xs, p, training)
    y.backward(tensors["R"])

    def rel(ours, ref):
        ref = ref.detach()
        d = torch.linalg.norm((ours - ref).flatten())
        n = torch.linalg.norm(ref.flatten())
        return float(d / n) if n > 0 else float(d)

    res = {"y": rel(tensors["y"], y)}
    for i, x in enumerate(xs):
        res[f"dx{i}"] = rel(tensors[f"dx{i}"], x.grad)
    for name, v in p.items():
        if v.requires_grad and f"g.{name}" in tensors:
            res[f"g.{name}"] = rel(tensors[f"g.{name}"], v.grad)
    print(json.dumps(res))


if __name__ == "__main__":
    main()
