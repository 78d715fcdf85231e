#!/usr/bin/python3
"""int8 accuracy and size (issue 34): for each project and checkpoint,
`deepcanvas-cli export --precision fp32|fp16|int8 --include-preprocessing`
writes the three ONNX models (uint8 pictures in, the project's
normalisation inside), the CLI prints its own fp32 and simulated int8
accuracy on the test set, and onnxruntime (the verification venv) runs all
three models on the same test set. Prints and writes JSON (sizes, the
engine's figures, onnxruntime's, the argmax agreement of onnxruntime's int8
with its fp32).

Fashion-MNIST projects read the test set from its IDX files; an image
folder's test split is listed by the CLI (`export --json` names nothing of
it), so image-folder projects are evaluated by the engine only.

  /usr/bin/python3 bench/int8_accuracy.py NAME=PROJECT:CHECKPOINT[:DATA] ...
      [--calibration percentile] [--python .venv-verify/bin/python] [--cli build/bin/deepcanvas-cli]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)

# onnxruntime's side, in the venv's interpreter: accuracy of each model on
# the uint8 test pictures, and the int8 model's argmax agreement with fp32.
ORT_CHILD = r"""
import json, sys
import numpy as np
import onnxruntime as ort
x = np.load(sys.argv[1]); y = np.load(sys.argv[2]); models = sys.argv[3:]
out, preds = {}, {}
for m in models:
    s = ort.InferenceSession(m, providers=["CPUExecutionProvider"])
    name = s.get_inputs()[0].name
    p = np.concatenate([s.run(None, {name: x[i:i + 256]})[0].argmax(1) for i in range(0, len(x), 256)])
    preds[m] = p
    out[m] = float((p == y).mean())
out["agreement_int8_fp32"] = float((preds[models[-1]] == preds[models[0]]).mean())
out["onnxruntime"] = ort.__version__
print(json.dumps(out))
"""


def fashion_mnist_test(data, shape):
    """The 10,000 test pictures as uint8 NCHW of the Input's shape, and labels."""
    import numpy as np
    from idx import find, read_idx
    x = read_idx(find(data, "t10k-images-idx3-ubyte"))
    y = read_idx(find(data, "t10k-labels-idx1-ubyte")).astype(np.int64)
    c, h, w = shape
    if (h, w) != x.shape[1:]:
        sys.exit(f"the project's Input is {shape}; this script feeds Fashion-MNIST at 28x28")
    x = np.repeat(x[:, None], c, axis=1)
    return np.ascontiguousarray(x), y


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("runs", nargs="+", help="NAME=PROJECT:CHECKPOINT[:DATA]")
    ap.add_argument("--calibration", default="percentile")
    ap.add_argument("--cli", default=os.path.join(ROOT, "build", "bin", "deepcanvas-cli"))
    ap.add_argument("--python", default=os.path.join(ROOT, ".venv-verify", "bin", "python"))
    a = ap.parse_args()
    import numpy as np
    results = {"cpu": open("/proc/cpuinfo").read().split("model name")[1].split("\n")[0].strip(": "),
               "calibration": a.calibration, "runs": {}}
    work = tempfile.mkdtemp(prefix="dc-int8-acc-")
    for spec in a.runs:
        name, rest = spec.split("=", 1)
        parts = rest.split(":")
        project, checkpoint = parts[0], parts[1]
        data = parts[2] if len(parts) > 2 else "/usr/share/datasets/fashion-mnist"
        r = {"project": project, "checkpoint": checkpoint, "data": data}
        files = {}
        for precision in ("fp32", "fp16", "int8"):
            path = os.path.join(work, f"{name}.{precision}.onnx")
            cmd = [a.cli, "export", project, "--checkpoint", checkpoint, "-o", path, "--format", "onnx",
                   "--precision", precision, "--include-preprocessing", "--json"]
            if precision == "int8":
                cmd += ["--data", data, "--calibration", a.calibration, "--max-drop", "100"]
            t0 = time.time()
            p = subprocess.run(cmd, capture_output=True, text=True)
            if p.returncode != 0:
                sys.exit(f"{' '.join(cmd)} failed:\n{p.stderr[-2000:]}")
            line = [l for l in p.stdout.splitlines() if l.startswith("{")]
            r[precision] = {"bytes": os.path.getsize(path), "export_s": round(time.time() - t0, 1)}
            if line and precision == "int8":
                r["engine"] = json.loads(line[-1])
            files[precision] = path
        r["int8_size_ratio"] = r["int8"]["bytes"] / r["fp32"]["bytes"]
        if "fashion-mnist" in data:
            summary = json.loads(subprocess.run([a.cli, "summary", project, "--json"], capture_output=True,
                                                text=True, check=True).stdout)
            shape = next(l["output"] for l in summary["layers"] if l["type"] == "Input")
            x, y = fashion_mnist_test(data, shape)
            xp, yp = os.path.join(work, "x.npy"), os.path.join(work, "y.npy")
            np.save(xp, x)
            np.save(yp, y)
            p = subprocess.run([a.python, "-c", ORT_CHILD, xp, yp, files["fp32"], files["fp16"], files["int8"]],
                               capture_output=True, text=True)
            if p.returncode != 0:
                sys.exit(f"onnxruntime failed:\n{p.stderr[-2000:]}")
            o = json.loads(p.stdout.splitlines()[-1])
            r["onnxruntime"] = {k: o[files[k]] for k in ("fp32", "fp16", "int8")}
            r["onnxruntime"]["agreement_int8_fp32"] = o["agreement_int8_fp32"]
            r["onnxruntime"]["version"] = o["onnxruntime"]
        results["runs"][name] = r
        print(json.dumps({name: r}), flush=True)
    os.makedirs(os.path.join(HERE, "results"), exist_ok=True)
    out = os.path.join(HERE, "results", time.strftime("int8-accuracy-%Y%m%d-%H%M.json"))
    with open(out, "w") as f:
        json.dump(results, f, indent=2)
    print("raw results:", out)


if __name__ == "__main__":
    main()
