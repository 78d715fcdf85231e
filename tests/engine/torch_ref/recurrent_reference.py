#!/usr/bin/python3
"""PyTorch reference for one DeepCanvas recurrent layer (torch_reference_rnn_test).

Same file format as layer_reference.py: inputs x0, parameters p.NAME, our
output y, output gradient R, our gradients dx0 and g.NAME; metadata "type"
and "attrs" (JSON). Builds torch.nn.RNN / LSTM / GRU (batch_first) or
F.embedding in float64, loads our parameters by their (PyTorch) names, runs
forward and backward and prints the normwise relative error of each tensor.
Learned initial states (h0/c0 per layer and direction) are passed as torch's
h_0/c_0, broadcast over the batch.
"""
import json
import sys

import torch
import torch.nn.functional as F

from layer_reference import load


def recurrent(t, a, x, p):
    hidden = a.get("hidden_size", 128)
    layers = a.get("num_layers", 1)
    bidir = a.get("bidirectional", False)
    dirs = 2 if bidir else 1
    kw = dict(input_size=x.shape[2], hidden_size=hidden, num_layers=layers,
              bias=a.get("bias", True), batch_first=True, dropout=0.0, bidirectional=bidir)
    if t == "LSTM":
        m = torch.nn.LSTM(**kw)
    elif t == "GRU":
        m = torch.nn.GRU(**kw)
    else:
        m = torch.nn.RNN(nonlinearity=a.get("nonlinearity", "tanh"), **kw)
    m = m.double()
    learned = {}
    for name, v in list(p.items()):
        if name.startswith("h0") or name.startswith("c0"):
            learned[name] = v
        else:
            param = torch.nn.Parameter(v.detach().clone())
            setattr(m, name, param)
            p[name] = param  # its .grad is the one to compare
    m.flatten_parameters()
    n = x.shape[0]
    init = None
    if learned:
        def stack(kind):
            rows = []
            for l in range(layers):
                for d in range(dirs):
                    rows.append(learned[f"{kind}_l{l}" + ("_reverse" if d else "")])
            return torch.stack(rows).unsqueeze(1).expand(layers * dirs, n, hidden)
        init = (stack("h0"), stack("c0")) if t == "LSTM" else stack("h0")
    out, hn = m(x, init)
    if t == "LSTM":
        hn = hn[0]
    if a.get("return_sequences", False):
        return out
    last = hn[-dirs:]  # final layer, each direction: [dirs, N, H]
    return last.permute(1, 0, 2).reshape(n, dirs * hidden)


def main():
    tensors, meta = load(sys.argv[1])
    t = meta["type"]
    a = json.loads(meta["attrs"])
    p = {k[2:]: v.clone().requires_grad_(True) for k, v in tensors.items() if k.startswith("p.")}
    x = tensors["x0"].clone()
    if t == "Embedding":
        pad = a.get("padding_idx", -1)
        y = F.embedding(x.long(), p["weight"], padding_idx=pad if pad >= 0 else None)
    else:
        x.requires_grad_(True)
        y = recurrent(t, a, x, p)
    y.backward(tensors["R"])

    def rel(ours, ref):
        ref = ref.detach()
        d = torch.linalg.norm((ours - ref).flatten())
        nrm = torch.linalg.norm(ref.flatten())
        return float(d / nrm) if nrm > 0 else float(d)

    res = {"y": rel(tensors["y"], y)}
    if t != "Embedding":
        res["dx0"] = rel(tensors["dx0"], x.grad)
    for name, v in p.items():
        res[f"g.{name}"] = rel(tensors[f"g.{name}"], v.grad)
    print(json.dumps(res))


if __name__ == "__main__":
    main()
