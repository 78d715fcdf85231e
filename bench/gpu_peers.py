#!/usr/bin/env python3
"""DeepCanvas on one GPU against PyTorch at its best (issue 16), each side in
its own process, alternating, repeated.

Networks: the two-conv CNN (bench/two_conv_adam.dcproj), the LSTM row
classifier (bench/lstm_rows_adam.dcproj), the VGG-BN and ResNet templates
on Fashion-MNIST (--data), and the ViT-tiny template there too (issue 33:
PyTorch's side is model.py's MultiheadAttention, F.multi_head_attention_forward
without attention weights, which PyTorch 2 runs through
scaled_dot_product_attention); the EfficientNet-Lite0 transfer template
(bench/lite0_transfer.dcproj, `deepcanvas-cli transfer`'s graph: frozen base,
new GlobalAvgPool2D + Dense head, 3x224x224, ImageNet's per-channel
normalisation; random initialisation, as weights do not change the cost)
and MobileNetV2 (bench/mobilenet_v2.dcproj, torchvision's imported through
ONNX, BatchNorms folded, 3x96x96, all layers trained) on seeded noise
(bench/make_synthetic_idx.py, made once into --synthetic-dir): their
accuracy means nothing, their samples/s and memory do.
The PyTorch network is the one `deepcanvas-cli export --format pytorch`
writes for the same project (model.py: same layers, same shapes), so both
sides train exactly the same graph; layers the project freezes stay frozen
there (model.py's FROZEN: no gradient, BatchNorm on its running statistics
in training too, as the engine's), and the optimizer gets only the
trainable parameters. Both sides: Adam lr 1e-3 constant,
softmax cross-entropy, the training images resident on the GPU as uint8 and
normalised per batch (one dataset mean/std, or the project's per-channel
dataset.preprocess mean/std), no TF32 in float32, bf16 with
float32 master weights.

PyTorch peers (each in a fresh process):
  eager    the model as is, Adam(fused=True)
  graph    the whole training step (forward, backward, fused capturable Adam)
           captured once into a torch.cuda.CUDAGraph and replayed
  compile  torch.compile(model, mode="reduce-overhead") (Inductor + CUDA
           graphs), Adam(fused=True)
  compile-max  torch.compile(mode="max-autotune") (slow to compile; not in
           the default list)
bf16 on the PyTorch side is torch.autocast(bfloat16), channels_last for the
convolutional networks. Batches are static: PyTorch drops the last partial
batch (CUDA graphs and reduce-overhead need one shape); DeepCanvas trains it
(eagerly, outside its graph), which costs it a little.

Warm-up is equal: epoch 1 (cuDNN autotuning, graph capture, compilation) is
excluded on both sides; steady state is the samples/s of the epochs after
it. Compile/capture seconds and peak GPU memory (torch.cuda.max_memory_allocated
against DeepCanvas's allocator peak, peak_device_bytes) are reported.

  python3 bench/gpu_peers.py --cli build-gpu/bin/deepcanvas-cli [--data DIR]
      [--configs cnn:fp32,cnn:bf16:2048,...]  (model:precision[:batch])
      [--peers eager,graph,compile] [--repeats 3] [--epochs 2] [--budget-s S]
      [--out DIR] [--synthetic-dir DIR]
  (--device cpu --peers eager with a small --synthetic-train: a check of the
  script's own logic on a machine without a GPU; its figures mean nothing)
Prints a table of medians [min..max]; writes every run's raw JSON to
OUT/gpu-peers-<time>-<commit>.json.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

PROCESS_T0 = time.perf_counter()  # as near the process start as Python gets

from idx import find, read_idx, steady

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
PROJECTS = {
    "cnn": os.path.join(HERE, "two_conv_adam.dcproj"),
    "lstm": os.path.join(HERE, "lstm_rows_adam.dcproj"),
    "vgg": os.path.join(ROOT, "resources", "templates", "vgg_small.dcproj"),
    "resnet": os.path.join(ROOT, "resources", "templates", "resnet_small.dcproj"),
    "lite0": os.path.join(HERE, "lite0_transfer.dcproj"),
    "mnv2": os.path.join(HERE, "mobilenet_v2.dcproj"),
    "vit": os.path.join(ROOT, "resources", "templates", "vit_tiny.dcproj"),
}
BATCH = {"cnn": 128, "lstm": 64, "vgg": 128, "resnet": 128, "lite0": 64, "mnv2": 128, "vit": 128}
# Networks on synthetic RGB data: (side, training images, test images). 100
# steps an epoch at the default batch; 0.96 GB (Lite0) and 0.35 GB (MNv2) of
# bytes, resident on the GPU on both sides.
SYNTHETIC = {"lite0": (224, 6400, 640), "mnv2": (96, 12800, 1280)}
DEFAULT_CONFIGS = "cnn:fp32,cnn:bf16,lstm:fp32,lstm:bf16,vgg:bf16,resnet:bf16"


# ---------------------------------------------------------------- DeepCanvas

def data_for(a, model):
    """--data, or the network's synthetic set (made on first use)."""
    if model not in SYNTHETIC:
        if not a.data:
            sys.exit(f"--data DIR (Fashion-MNIST) is needed for {model}")
        return a.data
    from make_synthetic_idx import make
    side, train, test = SYNTHETIC[model]
    train, test = a.synthetic_train or train, a.synthetic_test or test
    # The folder's name must not contain "fashion" (the engine would name
    # Fashion-MNIST's classes); its parameters are checked by make().
    return make(os.path.join(a.synthetic_dir or a.tmp, f"synthetic-rgb{side}-{train}"),
                side, train, test)


def run_deepcanvas(a, model, precision, seed, tta=None, batch=None):
    cmd = [a.cli, "train", PROJECTS[model], "--data", data_for(a, model), "--device", a.device,
           "--batch", str(batch or BATCH[model]), "--epochs", str(tta["epochs"] if tta else a.epochs),
           "--precision", precision, "--optimizer", "adam", "--lr", "0.001", "--schedule",
           "constant", "--seed", str(seed), "--json", "--quiet"]
    if tta:
        cmd += ["--test-every", str(tta["every"])]
    t0 = time.time()
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        return {"error": f"exit {p.returncode}: {p.stderr.strip()[-600:]}", "cmd": " ".join(cmd)}
    j = json.loads(p.stdout.strip().splitlines()[-1])
    if tta:
        curve = [dict(c, process_seconds=j["setup_seconds"] + c["run_seconds"])
                 for c in j["test_curve"]]
        return {"cmd": " ".join(cmd), "test_curve": curve, "setup_seconds": j["setup_seconds"],
                "peak_gpu_bytes": j.get("peak_device_bytes")}
    return {"cmd": " ".join(cmd), "process_s": time.time() - t0,
            "steady_samples_per_s": steady(j["history"]),
            "test_accuracy": j["test_accuracy"],
            "peak_gpu_bytes": j.get("peak_device_bytes"),
            "history": j["history"]}


# ------------------------------------------------------------------- PyTorch

def input_normalisation(path):
    """The project's input normalisation: ("channel", mean, std) with its
    fixed per-channel values (dataset.preprocess, a pretrained base's),
    ("dataset", None, None) with the training set's, or ("none", ...)."""
    with open(path) as f:
        p = json.load(f)
    pre = p.get("dataset", {}).get("preprocess", {})
    if pre.get("mean"):
        return "channel", pre["mean"], pre["std"]
    return ("dataset" if p.get("training", {}).get("normalize", True) else "none"), None, None


def torch_worker(spec):
    """One PyTorch configuration, in this (fresh) process."""
    import importlib.util
    import torch
    import torch.nn as nn
    model_name, precision, peer, data, epochs, seed, export_dir = (
        spec["model"], spec["precision"], spec["peer"], spec["data"], spec["epochs"],
        spec["seed"], spec["export_dir"])
    t_start = PROCESS_T0
    dev = torch.device(spec.get("device", "cuda"))
    cuda = dev.type == "cuda"
    sync = torch.cuda.synchronize if cuda else (lambda: None)
    torch.backends.cudnn.benchmark = True
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.manual_seed(seed)
    sys.path.insert(0, export_dir)
    ms = importlib.util.spec_from_file_location("model", os.path.join(export_dir, "model.py"))
    mod = importlib.util.module_from_spec(ms)
    ms.loader.exec_module(mod)
    shape = tuple(mod.INPUT_SHAPE)

    xtr = torch.from_numpy(read_idx(find(data, "train-images-idx3-ubyte")).copy()).to(dev)
    ytr = torch.from_numpy(read_idx(find(data, "train-labels-idx1-ubyte")).astype("int64")).to(dev)
    xte = torch.from_numpy(read_idx(find(data, "t10k-images-idx3-ubyte")).copy()).to(dev)
    yte = torch.from_numpy(read_idx(find(data, "t10k-labels-idx1-ubyte")).astype("int64")).to(dev)
    norm, ch_mean, ch_std = input_normalisation(spec["project"])
    conv = len(shape) == 3
    if norm == "channel":
        view = (1, len(ch_mean)) + (1,) * (len(shape) - 1)
        mean = torch.tensor(ch_mean, device=dev).view(view)
        std = torch.tensor(ch_std, device=dev).view(view)
    elif norm == "dataset":
        # In chunks: a float copy of 0.96 GB of 224 px bytes would be 3.9 GB.
        s1 = s2 = 0.0
        for i in range(0, xtr.shape[0], 1024):
            c = xtr[i:i + 1024].double()
            s1, s2 = s1 + c.sum().item(), s2 + c.square().sum().item()
        cnt = xtr.numel()
        var = max(s2 / cnt - (s1 / cnt) ** 2, 0.0) * cnt / max(cnt - 1, 1)
        mean, std = s1 / cnt / 255, var ** 0.5 / 255
    else:
        mean, std = 0.0, 1.0
    bf16 = precision == "bf16"
    fmt = torch.channels_last if (conv and bf16) else torch.contiguous_format

    def batch(src, idx):
        # Shaped first, so that per-channel statistics broadcast over [N, C, H, W].
        x = src[idx].view(idx.shape[0], *shape).float().div_(255).sub_(mean).div_(std)
        return x.contiguous(memory_format=fmt) if conv else x

    if cuda:
        torch.cuda.reset_peak_memory_stats()
    net = mod.Model().to(dev)
    if conv and bf16:
        net = net.to(memory_format=torch.channels_last)
    # model.py freezes the project's frozen layers itself (FROZEN: no
    # gradient; its train() keeps their BatchNorms on running statistics);
    # Adam gets no state for them, as the engine keeps none.
    frozen = getattr(mod, "FROZEN", None)
    if frozen is None:
        sys.exit(f"{export_dir}/model.py has no FROZEN: an export older than the CLI's")
    net.train()
    capturable = peer == "graph"
    params = [p for p in net.parameters() if p.requires_grad]
    opt = torch.optim.Adam(params, lr=1e-3, fused=cuda, capturable=capturable)
    lossf = nn.CrossEntropyLoss()
    fwd = net
    if peer == "compile":
        fwd = torch.compile(net, mode="reduce-overhead")
    elif peer == "compile-max":
        fwd = torch.compile(net, mode="max-autotune")

    def step(idx):
        x, y = batch(xtr, idx), ytr[idx]
        with torch.autocast(dev.type, dtype=torch.bfloat16, enabled=bf16):
            loss = lossf(fwd(x), y)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=not capturable)
        return loss

    n, B = xtr.shape[0], spec["batch"]
    steps = n // B  # static batches: the last partial one is dropped
    static_idx = torch.zeros(B, dtype=torch.int64, device=dev)
    warm_s = 0.0
    run = step
    if peer == "graph":
        # PyTorch's whole-network capture recipe: warm up on a side stream,
        # then capture forward, backward and the optimizer step once.
        t0 = time.perf_counter()
        static_idx.copy_(torch.randperm(n, device=dev)[:B])
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            for _ in range(3):
                step(static_idx)
        torch.cuda.current_stream().wait_stream(s)
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            step(static_idx)
        sync()
        warm_s = time.perf_counter() - t0

        def run(idx):
            static_idx.copy_(idx)
            g.replay()
    elif peer.startswith("compile"):
        t0 = time.perf_counter()
        for _ in range(3):
            static_idx.copy_(torch.randperm(n, device=dev)[:B])
            step(static_idx)
        sync()
        warm_s = time.perf_counter() - t0

    def test_accuracy():
        net.eval()
        with torch.no_grad(), torch.autocast(dev.type, dtype=torch.bfloat16, enabled=bf16):
            correct = 0
            # In training batches, as the engine evaluates: larger ones would
            # set PyTorch's peak memory (10x the training peak of the frozen
            # Lite0, whose training step is a forward pass too).
            for i in range(0, xte.shape[0], B):
                idx = torch.arange(i, min(i + B, xte.shape[0]), device=dev)
                correct += (net(batch(xte, idx)).argmax(1) == yte[idx]).sum().item()
        net.train()
        return correct / xte.shape[0]

    tta = spec.get("tta")
    if tta:
        # Time to accuracy: the test set every `every` steps, its time counted
        # in neither figure; stop at the target.
        train_s = eval_s = 0.0
        curve, done, k = [], False, 0
        net.train()
        for epoch in range(1, epochs + 1):
            perm = torch.randperm(n, device=dev)
            sync()
            t0 = time.perf_counter()
            for i in range(steps):
                run(perm[i * B:(i + 1) * B])
                k += 1
                if k % tta["every"]:
                    continue
                sync()
                t1 = time.perf_counter()
                train_s += t1 - t0
                acc = test_accuracy()
                curve.append({"step": k, "train_seconds": train_s,
                              "process_seconds": t1 - t_start - eval_s, "test_accuracy": acc})
                eval_s += time.perf_counter() - t1
                if acc >= tta["target"]:
                    done = True
                    break
                t0 = time.perf_counter()
            if done:
                break
            sync()
            train_s += time.perf_counter() - t0
        return {"test_curve": curve, "warmup_s": warm_s, "torch": torch.__version__,
                "peak_gpu_bytes": torch.cuda.max_memory_allocated() if cuda else None}

    history = []
    for epoch in range(1, epochs + 1):
        net.train()
        perm = torch.randperm(n, device=dev)
        sync()
        t0 = time.perf_counter()
        for i in range(steps):
            run(perm[i * B:(i + 1) * B])
        sync()
        dt = time.perf_counter() - t0
        history.append({"epoch": epoch, "train_samples_per_s": steps * B / dt,
                        "test_accuracy": test_accuracy()})
    return {"steady_samples_per_s": steady(history), "test_accuracy": history[-1]["test_accuracy"],
            "trainable_parameters": sum(p.numel() for p in params),
            "frozen_modules": len(frozen),
            "warmup_s": warm_s,
            "peak_gpu_bytes": torch.cuda.max_memory_allocated() if cuda else None,
            "process_s": time.perf_counter() - t_start, "history": history,
            "torch": torch.__version__}


def run_torch(a, model, precision, peer, seed, export_dir, tta=None, batch=None):
    spec = {"model": model, "precision": precision, "peer": peer, "data": data_for(a, model),
            "project": PROJECTS[model], "device": a.device,
            "epochs": tta["epochs"] if tta else a.epochs, "seed": seed,
            "export_dir": export_dir, "batch": batch or BATCH[model], "tta": tta}
    t0 = time.time()
    p = subprocess.run([sys.executable, os.path.abspath(__file__), "--worker", json.dumps(spec)],
                       capture_output=True, text=True)
    if p.returncode != 0:
        return {"error": f"exit {p.returncode}: {p.stderr.strip()[-800:]}"}
    r = json.loads(p.stdout.strip().splitlines()[-1])
    r["wall_s"] = time.time() - t0
    return r


def export_model(a, model, tmp):
    out = os.path.join(tmp, f"export-{model}")
    if not os.path.exists(os.path.join(out, "model.py")):
        subprocess.run([a.cli, "export", PROJECTS[model], "--format", "pytorch", "-o", out,
                        "--force"], check=True, capture_output=True)
    return out


def commit_of():
    if os.environ.get("DC_COMMIT"):  # a copy of the tree without .git (the lent GPU machine)
        return os.environ["DC_COMMIT"]
    return subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"],
                          capture_output=True, text=True).stdout.strip() or "unknown"


def first_at(curve, target, key):
    for c in curve:
        if c["test_accuracy"] >= target:
            return c[key], c["step"]
    return None, None


def time_to_accuracy(a, gpu):
    """Issue 16 item 2: per side, the median over seeds of (a) training
    seconds and (b) seconds from process start to the first test-set
    measurement at the target (measurements every --tta-every steps, their
    own time excluded from both)."""
    import torch
    tta = {"every": a.tta_every, "epochs": a.tta_epochs, "target": a.target}
    sides = [s for s in a.tta_sides.split(",") if s]
    export = export_model(a, "cnn", a.tmp)
    runs, t_begin = [], time.time()
    plan = [(seed, side) for seed in range(1, a.tta_seeds + 1)
            for side in sides[seed % len(sides):] + sides[:seed % len(sides)]]
    for seed, side in plan:
        if a.budget_s and time.time() - t_begin > a.budget_s:
            print(f"budget of {a.budget_s:.0f} s spent: stopped at seed {seed}", flush=True)
            break
        if side == "deepcanvas":
            r = run_deepcanvas(a, "cnn", "fp32", seed, tta)
        else:
            r = run_torch(a, "cnn", "fp32", side, seed, export, tta)
        r.update({"side": side, "seed": seed})
        if "error" not in r:
            r["train_to_target_s"], r["step"] = first_at(r["test_curve"], a.target,
                                                         "train_seconds")
            r["process_to_target_s"], _ = first_at(r["test_curve"], a.target,
                                                   "process_seconds")
        runs.append(r)
        msg = r.get("error") or (f"train {r['train_to_target_s']} s, end to end "
                                 f"{r['process_to_target_s']} s (step {r['step']})")
        print(f"[{time.time() - t_begin:6.0f} s] tta seed {seed} {side:12} {msg}", flush=True)
    commit = commit_of()
    stamp = time.strftime("%Y%m%d-%H%M", time.gmtime())
    path = os.path.join(a.out, f"gpu-tta-{stamp}-{commit}.json")
    with open(path, "w") as f:
        json.dump({"gpu": gpu, "torch": torch.__version__, "commit": commit, "tta": tta,
                   "runs": runs}, f, indent=1)
    print(f"\nTime to {100 * a.target:.0f} % test accuracy, two-conv CNN fp32, batch 128, Adam 1e-3; "
          f"test set every {a.tta_every} steps; medians [min..max] over {a.tta_seeds} seeds; "
          f"GPU {gpu}; raw: {path}")
    print(f"{'side':12} {'reached':>7} {'training s':>22} {'end to end s':>22}")
    for side in sides:
        ok = [r for r in runs if r["side"] == side and r.get("train_to_target_s") is not None]
        if not ok:
            print(f"{side:12} none reached")
            continue
        tr = [r["train_to_target_s"] for r in ok]
        pr = [r["process_to_target_s"] for r in ok]
        n = sum(r["side"] == side for r in runs)
        print(f"{side:12} {len(ok):3}/{n:<3} {statistics.median(tr):8.2f} [{min(tr):5.2f}..{max(tr):5.2f}]"
              f" {statistics.median(pr):8.2f} [{min(pr):5.2f}..{max(pr):5.2f}]")


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--worker":
        print(json.dumps(torch_worker(json.loads(sys.argv[2]))))
        return
    ap = argparse.ArgumentParser()
    ap.add_argument("--cli", required=True)
    ap.add_argument("--data", default="", help="Fashion-MNIST's folder (all but lite0, mnv2)")
    ap.add_argument("--configs", default=DEFAULT_CONFIGS, help="model:precision[:batch],... (batch: the network's default)")
    ap.add_argument("--peers", default="eager,graph,compile")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--epochs", type=int, default=2, help="epoch 1 is warm-up on both sides")
    ap.add_argument("--budget-s", type=float, default=0,
                    help="start no new process after this many seconds (0: no limit)")
    ap.add_argument("--tta-sides", default="",
                    help="time to accuracy instead: the two-conv CNN fp32 on these sides "
                         "(e.g. deepcanvas,graph,compile)")
    ap.add_argument("--tta-seeds", type=int, default=5)
    ap.add_argument("--tta-every", type=int, default=50, help="test-set measurement every N steps")
    ap.add_argument("--tta-epochs", type=int, default=8)
    ap.add_argument("--target", type=float, default=0.91)
    ap.add_argument("--out", default=os.path.join(HERE, "results"))
    ap.add_argument("--tmp", default="/tmp/dc-gpu-peers")
    ap.add_argument("--synthetic-dir", default=os.environ.get("DC_SYNTHETIC_DIR", ""),
                    help="where the synthetic sets of lite0 and mnv2 are made (default: "
                         "$DC_SYNTHETIC_DIR, else --tmp; bench/gpu_conv_paths.sh uses the same)")
    ap.add_argument("--synthetic-train", type=int, default=0,
                    help="training images of the synthetic sets (default: SYNTHETIC's)")
    ap.add_argument("--synthetic-test", type=int, default=0)
    ap.add_argument("--device", default="cuda",
                    help="cpu: checks this script's logic without a GPU (eager peer only)")
    a = ap.parse_args()
    import torch
    gpu = torch.cuda.get_device_name(0) if a.device == "cuda" else a.device
    os.makedirs(a.tmp, exist_ok=True)
    os.makedirs(a.out, exist_ok=True)
    if a.tta_sides:
        return time_to_accuracy(a, gpu)
    # model:precision[:batch]; the batch defaults to the network's (BATCH).
    configs = []
    for c in a.configs.split(","):
        if c:
            f = c.split(":")
            configs.append((f[0], f[1], int(f[2]) if len(f) > 2 else BATCH[f[0]]))
    peers = [p for p in a.peers.split(",") if p]
    exports = {m: export_model(a, m, a.tmp) for m, _, _ in configs}
    for m in {m for m, _, _ in configs if m in SYNTHETIC}:  # made before the clock starts
        t0 = time.time()
        print(f"{m}: synthetic data in {data_for(a, m)} ({time.time() - t0:.1f} s; noise, "
              f"its accuracy means nothing)", flush=True)
    commit = commit_of()
    runs = []
    t_begin = time.time()
    sides = ["deepcanvas"] + peers
    out_of_time = False
    for rep in range(a.repeats):
        for model, prec, bs in configs:
            # Rotate who goes first, so that no side always runs on a cold or warm GPU.
            order = sides[rep % len(sides):] + sides[:rep % len(sides)]
            for side in order:
                if a.budget_s and time.time() - t_begin > a.budget_s:
                    out_of_time = True
                    break
                seed = 1 + rep
                if side == "deepcanvas":
                    r = run_deepcanvas(a, model, prec, seed, batch=bs)
                else:
                    r = run_torch(a, model, prec, side, seed, exports[model], batch=bs)
                r.update({"model": model, "precision": prec, "batch": bs, "side": side,
                          "repeat": rep})
                runs.append(r)
                msg = r.get("error") or (f"{r['steady_samples_per_s']:10.0f} samples/s, "
                                         f"acc {100 * r['test_accuracy']:.2f} %, "
                                         f"peak {(r.get('peak_gpu_bytes') or 0) / 2**20:.0f} MiB")
                print(f"[{time.time() - t_begin:6.0f} s] {model:6} {prec:4} {bs:5} {side:12} "
                      f"{msg}", flush=True)
    if out_of_time:
        print(f"budget of {a.budget_s:.0f} s spent: stopped in repetition {rep + 1}", flush=True)
    stamp = time.strftime("%Y%m%d-%H%M", time.gmtime())
    path = os.path.join(a.out, f"gpu-peers-{stamp}-{commit}.json")
    with open(path, "w") as f:
        json.dump({"gpu": gpu, "torch": torch.__version__, "commit": commit,
                   "epochs": a.epochs, "runs": runs}, f, indent=1)
    print(f"\nGPU {gpu}; torch {torch.__version__}; commit {commit}; {a.epochs} epochs per run "
          f"(epoch 1 warm-up); medians [min..max] over repetitions; raw: {path}")
    print(f"{'model':6} {'prec':4} {'batch':>5} {'side':11} {'n':>2} {'samples/s':>22} "
          f"{'vs best peer':>12} {'acc':>7} {'peak MiB':>9} {'warm-up s':>9}")
    for model, prec, bs in configs:
        key = (model, prec, bs)
        stats = {}
        for side in sides:
            ok = [r for r in runs if (r["model"], r["precision"], r["batch"]) == key
                  and r["side"] == side and "error" not in r]
            if ok:
                v = [r["steady_samples_per_s"] for r in ok]
                stats[side] = (statistics.median(v), min(v), max(v), ok)
        best = max((s[0] for k, s in stats.items() if k != "deepcanvas"), default=0)
        for side in sides:
            if side not in stats:
                errs = [r["error"] for r in runs if (r["model"], r["precision"], r["batch"]) == key
                        and r["side"] == side and "error" in r]
                print(f"{model:6} {prec:4} {bs:5} {side:11} failed: "
                      f"{errs[0][-160:] if errs else 'not run'}")
                continue
            med, lo, hi, ok = stats[side]
            acc = statistics.median(r["test_accuracy"] for r in ok)
            peak = statistics.median((r.get("peak_gpu_bytes") or 0) for r in ok) / 2**20
            warm = statistics.median(r.get("warmup_s", 0) for r in ok)
            ratio = f"{med / best:11.2f}x" if best else ""
            print(f"{model:6} {prec:4} {bs:5} {side:11} {len(ok):2} {med:9.0f} [{lo:5.0f}..{hi:5.0f}] "
                  f"{ratio:>12} {100 * acc:6.2f}% {peak:9.0f} {warm:9.1f}")
    synth = sorted({m for m, _, _ in configs if m in SYNTHETIC})
    if synth:
        print(f"{', '.join(synth)}: trained on noise (bench/make_synthetic_idx.py); their accuracy "
              f"means nothing, only samples/s and memory do")


if __name__ == "__main__":
    main()
