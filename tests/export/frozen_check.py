#!/usr/bin/python3
"""Checks an exported model.py keeps DeepCanvas's frozen layers frozen.

Argument: a case folder (model.py, weights.safetensors, x.npy, and
y_train.npy: DeepCanvas's CPU output for x in a training-mode forward).
Prints one JSON object with what it found; the C++ test judges it.
"""
import importlib
import json
import sys

import numpy as np
import torch

torch.set_num_threads(1)
case = sys.argv[1]
sys.path.insert(0, case)
model = importlib.import_module("model")
net = model.load_model(case + "/weights.safetensors").train()
x = torch.from_numpy(np.load(case + "/x.npy"))
before = {k: v.clone() for k, v in net.state_dict().items()}
y = net(x)
y.sum().backward()
ref = np.load(case + "/y_train.npy").astype(np.float64)
after = net.state_dict()
print(json.dumps({
    "frozen": list(model.FROZEN),
    "training_forward_err": float(np.max(np.abs(y.detach().numpy() - ref) / (1.0 + np.abs(ref)))),
    "no_grad": sorted(n for n, p in net.named_parameters() if not p.requires_grad),
    "with_grad": sorted(n for n, p in net.named_parameters() if p.grad is not None),
    "changed_buffers": sorted(k for k, v in after.items()
                              if not k.endswith("num_batches_tracked") and not torch.equal(v, before[k])),
    "in_eval": sorted(n for n, m in net.named_children() if not m.training),
}))
