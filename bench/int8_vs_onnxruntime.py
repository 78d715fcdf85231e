"""int8 inference on the CPU (issue 34): the engine's fp32 and int8
(`deepcanvas-cli run` without and with --int8) against onnxruntime's fp32
and int8 (the fp32 ONNX export and the QDQ model `export --precision int8`
writes), each side in its own process, alternating which goes first.

Two measurements per side:
  latency     batch 1 on one thread: seconds per sample (the median of the
              passes over --samples inputs, the first pass excluded);
  throughput  batch --batch on every core: samples/s, likewise.
Each is run --repeats times per side; the JSON gives the median and
min..max over those runs, with the CPU, its flags, the ISA oneDNN
dispatched to and the oneDNN implementation of each int8 op (from the
engine's int8 run), and onnxruntime's version. The inputs are seeded
Gaussian noise of the network's input shape: the kernels' speed does not
depend on the values.

Usage (after building; nothing else may run during a measurement):
  /usr/bin/python3 bench/int8_vs_onnxruntime.py [--project P.dcproj]
      [--checkpoint CK] [--data DIR] [--samples 256] [--batch 64]
      [--passes 5] [--repeats 3] [--build build]
      [--python .venv-verify/bin/python]

Without --checkpoint the project is trained briefly (1 epoch of 100 steps)
into the work folder first. DNNL_MAX_CPU_ISA=AVX2 in the environment shows
the engine's int8 without VNNI (onnxruntime ignores that variable).
"""
import argparse
import datetime
import json
import os
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cpu_compare  # noqa: E402

ROOT = cpu_compare.ROOT

# The onnxruntime side, run by --python in its own process.
ORT_CHILD = r"""
import json, sys, time
import numpy as np
import onnxruntime as ort
model, x_path, batch, threads, passes = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
o = ort.SessionOptions()
o.intra_op_num_threads = threads  # 0: onnxruntime's default, every core
o.inter_op_num_threads = 1
o.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
s = ort.InferenceSession(model, o, providers=["CPUExecutionProvider"])
name = s.get_inputs()[0].name
x = np.load(x_path)
n = x.shape[0]
chunks = [np.ascontiguousarray(x[i:i + batch]) for i in range(0, n, batch)]
seconds = []
for _ in range(passes):
    t0 = time.perf_counter()
    for c in chunks:
        s.run(None, {name: c})
    seconds.append(time.perf_counter() - t0)
print(json.dumps({"pass_seconds": seconds, "samples": n, "onnxruntime": ort.__version__}))
"""


def steady_seconds(res):
    later = res["pass_seconds"][1:] or res["pass_seconds"]
    return statistics.median(later)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--project", default=os.path.join(ROOT, "sample_data", "sample_project.dcproj"))
    ap.add_argument("--checkpoint", default="")
    ap.add_argument("--data", default="")
    ap.add_argument("--samples", type=int, default=256)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--passes", type=int, default=5)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--calibrate", type=int, default=256)
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--python", default=os.path.join(ROOT, ".venv-verify", "bin", "python"))
    ap.add_argument("--work", default="", help="folder for the models (default: a temporary one)")
    ap.add_argument("--no-save", action="store_true", help="do not write bench/results/")
    a = ap.parse_args()
    cli = os.path.join(a.build, "bin", "deepcanvas-cli")
    work = a.work or tempfile.mkdtemp(prefix="dc-int8-bench-")
    os.makedirs(work, exist_ok=True)
    data = ["--data", a.data] if a.data else []

    def sh(argv):
        p = subprocess.run(argv, capture_output=True, text=True)
        if p.returncode != 0:
            sys.exit(f"{' '.join(argv)} failed ({p.returncode}):\n{p.stderr}\n{p.stdout}")
        return p.stdout

    ck = a.checkpoint
    if not ck:
        ck = os.path.join(work, "trained.safetensors")
        print(f"training {a.project} briefly into {ck} ...", file=sys.stderr, flush=True)
        sh([cli, "train", a.project, "--epochs", "1", "--steps-per-epoch", "100", "--quiet",
            "--checkpoint", ck] + data)
    fp32_onnx, int8_onnx = os.path.join(work, "fp32.onnx"), os.path.join(work, "int8.onnx")
    sh([cli, "export", a.project, "--checkpoint", ck, "-o", fp32_onnx, "--quiet"])
    exported = json.loads(sh([cli, "export", a.project, "--checkpoint", ck, "-o", int8_onnx,
                              "--precision", "int8", "--calibrate", str(a.calibrate),
                              "--max-drop", "100", "--json"] + data).strip().splitlines()[-1])
    int8_file = exported["int8_file"]

    # The input shape from the exported model (the engine's Input, batch first).
    shape = json.loads(sh([a.python, "-c",
                           "import onnx, json, sys; m = onnx.load(sys.argv[1]); "
                           "d = m.graph.input[0].type.tensor_type.shape.dim; "
                           "print(json.dumps([x.dim_value for x in d][1:]))", fp32_onnx]))
    x_path = os.path.join(work, "x.npy")
    sh([a.python, "-c", "import numpy as np, sys; np.save(sys.argv[1], np.random.default_rng(1)"
        ".normal(size=[int(sys.argv[2])] + [int(v) for v in sys.argv[3:]]).astype(np.float32))",
        x_path, str(a.samples)] + [str(v) for v in shape])

    def engine(int8, batch, threads):
        argv = [cli, "run", a.project, "--checkpoint", ck, "--input", x_path,
                "--output", os.path.join(work, "y.npy"), "--batch", str(batch),
                "--threads", str(threads), "--repeat", str(a.passes), "--json", "--quiet"]
        return argv + (["--int8", int8_file] if int8 else [])

    def ort_side(model, batch, threads):
        return [a.python, "-c", ORT_CHILD, model, x_path, str(batch), str(threads), str(a.passes)]

    cases = {"latency_batch1_1thread": (1, 1), f"throughput_batch{a.batch}_all_cores": (a.batch, 0)}
    result = {"benchmark": "int8_vs_onnxruntime", "commit": cpu_compare.commit(),
              "utc": datetime.datetime.utcnow().strftime("%Y-%m-%d %H:%M"),
              "cpu": cpu_compare.cpu_model(), "cpu_flags": cpu_compare.cpu_flags(),
              "cpus": os.cpu_count(), "project": a.project, "checkpoint": ck,
              "samples": a.samples, "passes": a.passes, "repeats": a.repeats,
              "dnnl_max_cpu_isa": os.environ.get("DNNL_MAX_CPU_ISA", ""),
              "export": {k: exported.get(k) for k in ("fp32_accuracy", "int8_accuracy", "bytes",
                                                      "fp32_bytes", "calibration")},
              "cases": {}}
    for case, (batch, threads) in cases.items():
        sides = [("engine_fp32", engine(False, batch, threads)),
                 ("engine_int8", engine(True, batch, threads)),
                 ("onnxruntime_fp32", ort_side(fp32_onnx, batch, threads)),
                 ("onnxruntime_int8", ort_side(int8_onnx, batch, threads))]
        runs = {label: [] for label, _ in sides}
        for r in range(a.repeats):
            # Rotate the order each round so no side always runs first.
            order = sides[r % len(sides):] + sides[:r % len(sides)]
            if r % 2 == 1:
                order = list(reversed(order))
            for label, argv in order:
                res = cpu_compare.run(argv)
                runs[label].append(res)
                s = steady_seconds(res)
                v = s / a.samples if batch == 1 else a.samples / s
                print(f"  {case} round {r + 1}: {label:17} "
                      f"{v * 1e3:9.4f} ms/sample" if batch == 1 else
                      f"  {case} round {r + 1}: {label:17} {v:9.1f} samples/s",
                      file=sys.stderr, flush=True)
        summary = {}
        for label, rs in runs.items():
            if batch == 1:
                vals = [steady_seconds(x) / a.samples * 1e3 for x in rs]
                unit = "ms_per_sample"
            else:
                vals = [a.samples / steady_seconds(x) for x in rs]
                unit = "samples_per_s"
            summary[label] = {f"median_{unit}": statistics.median(vals),
                              f"min_{unit}": min(vals), f"max_{unit}": max(vals)}
        result["cases"][case] = {"batch": batch, "threads": threads or os.cpu_count(),
                                 "summary": summary, "runs": runs}
        int8_run = runs["engine_int8"][0]
        result["engine_int8_kernels"] = int8_run.get("int8_kernels", [])
        result["engine_cpu_isa"] = int8_run.get("cpu_isa", "")
        result["onnxruntime"] = runs["onnxruntime_int8"][0].get("onnxruntime", "")
    if not a.no_save:
        os.makedirs(os.path.join(cpu_compare.HERE, "results"), exist_ok=True)
        stamp = datetime.datetime.utcnow().strftime("%Y%m%d-%H%M")
        path = os.path.join(cpu_compare.HERE, "results",
                            f"cpu-int8_vs_onnxruntime-{stamp}-{result['commit']}.json")
        with open(path, "w") as f:
            json.dump(result, f, indent=1)
        print(f"raw results: {os.path.relpath(path, ROOT)}", file=sys.stderr)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
