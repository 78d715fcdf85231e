#!/usr/bin/python3
"""Runs exported model.py files on the inputs DeepCanvas ran and compares.

Arguments: case folders, each holding an export (model.py, weights.safetensors)
plus x.npy (the input) and y.npy (DeepCanvas's CPU output, eval mode).
Prints one JSON object: {folder: max |torch - ours| / (1 + |ours|)}, or the
error text for a case that did not run.
"""
import importlib
import json
import sys

import numpy as np
import torch

torch.set_num_threads(1)
res = {}
for case in sys.argv[1:]:
    for mod in ("model", "dc_safetensors"):
        sys.modules.pop(mod, None)
    sys.path.insert(0, case)
    try:
        model = importlib.import_module("model")
        net = model.load_model(case + "/weights.safetensors")
        x = torch.from_numpy(np.load(case + "/x.npy"))
        if model.INPUT_IS_TOKENS:
            x = x.long()
        with torch.no_grad():
            y = net(x).numpy().astype(np.float64)
        ref = np.load(case + "/y.npy").astype(np.float64)
        if y.shape != ref.shape:
            res[case] = f"shape {y.shape} != {ref.shape}"
        else:
            res[case] = float(np.max(np.abs(y - ref) / (1.0 + np.abs(ref))))
    except Exception as e:  # reported per case, the others still run
        res[case] = f"{type(e).__name__}: {e}"
    sys.path.pop(0)
print(json.dumps(res))
