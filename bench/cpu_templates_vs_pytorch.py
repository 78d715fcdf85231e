#!/usr/bin/python3
"""Training on the CPU: DeepCanvas (deepcanvas-cli train) against PyTorch
running the same network, the model.py that `deepcanvas-cli export --format
pytorch` writes for the project, same batch, Adam lr 1e-3 constant, thread
count and steps. vgg_small and resnet_small are the bundled templates on
Fashion-MNIST. mobilenet_v2 is torchvision's MobileNetV2 (10 classes, seeded
weights) exported to ONNX at 3x96x96 and imported (the exporter folds its
BatchNorms into the convolutions, so both sides train it without them), on
a seeded 10-class folder of 600 JPEGs (bench/make_image_folder.py) that
DeepCanvas decodes and resizes once at load; the PyTorch side draws random
images of the same shape (the values do not change the arithmetic's cost).
Each side runs two epochs of --steps steps in its own process; the second
epoch's samples/s is the measurement (the first is warm-up on both sides).
PyTorch runs twice per round: NCHW and channels last.
--repeats processes per side, alternating (bench/cpu_compare.py: medians,
spreads, raw JSON in bench/results/ with the CPU named).

  /usr/bin/python3 bench/cpu_templates_vs_pytorch.py [--models vgg_small,resnet_small]
      [--steps 40] [--batch 64] [--threads 2] [--repeats 3] [--data DIR] [--work DIR]
"""
import argparse
import os
import subprocess
import sys
import tempfile

from cpu_compare import HERE, ROOT, compare


def mobilenet_v2(cli, work):
    """The imported MobileNetV2 project and its image folder, made once in work."""
    project, images = os.path.join(work, "mobilenet_v2.dcproj"), os.path.join(work, "images")
    if not os.path.exists(images):
        subprocess.run([sys.executable, os.path.join(HERE, "make_image_folder.py"), images,
                        "--count", "600", "--seed", "1", "--jobs", "2"], check=True)
    if not os.path.exists(project):
        import torch
        import torchvision
        torch.manual_seed(0)
        m = torchvision.models.mobilenet_v2(num_classes=10).eval()
        onnx_path = os.path.join(work, "mobilenet_v2.onnx")
        torch.onnx.export(m, torch.zeros(1, 3, 96, 96), onnx_path, opset_version=13,
                          input_names=["input"], output_names=["logits"],
                          dynamic_axes={"input": {0: "batch"}, "logits": {0: "batch"}})
        subprocess.run([cli, "import", onnx_path, "-o", project, "--quiet"], check=True)
    return project, images


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default="/usr/share/datasets/fashion-mnist")
    ap.add_argument("--models", default="vgg_small,resnet_small")
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--cli", default=os.path.join(ROOT, "build", "bin", "deepcanvas-cli"))
    ap.add_argument("--work", default=None, help="where the MobileNetV2 project and images go")
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="dc-cpu-templates-")
    for m in a.models.split(","):
        data, peer_data = a.data, ["--data", a.data]
        if m == "mobilenet_v2":
            project, data = mobilenet_v2(a.cli, a.work or os.path.join(tmp, "mnv2"))
            peer_data = ["--data", "", "--random_classes", "10"]
        else:
            project = os.path.join(ROOT, "resources", "templates", m + ".dcproj")
        export = os.path.join(tmp, m)
        subprocess.run([a.cli, "export", project, "--format", "pytorch", "-o", export, "--force"],
                       check=True, capture_output=True)
        common = ["--epochs", "2", "--batch", str(a.batch), "--threads", str(a.threads)]
        ours = [a.cli, "train", project, "--data", data, "--steps-per-epoch", str(a.steps),
                "--optimizer", "adam", "--lr", "0.001", "--schedule", "constant", "--json",
                "--quiet"] + common
        peer = [sys.executable, os.path.join(HERE, "pytorch_template.py"), *peer_data,
                "--export", export, "--steps", str(a.steps)] + common
        # PyTorch both ways: its default layout and channels last (oneDNN's
        # own, faster for some networks on some CPUs); the ratio that counts
        # is against the faster.
        res = compare(f"train-{m}", [("DeepCanvas", ours, None),
                                     ("PyTorch CL", peer + ["--channels_last", "1"], None),
                                     ("PyTorch", peer, None)], a.repeats,
                      f"{m}; threads {a.threads}; batch {a.batch}; Adam lr 1e-3; 2 epochs of "
                      f"{a.steps} steps, the second measured",
                      metric=lambda res: res["history"][-1]["train_samples_per_s"])
        sm = res["summary"]
        best = max(sm["PyTorch"]["median_samples_per_s"], sm["PyTorch CL"]["median_samples_per_s"])
        print(f"{m}: DeepCanvas / faster PyTorch = "
              f"{sm['DeepCanvas']['median_samples_per_s'] / best:.2f}x", flush=True)

if __name__ == "__main__":
    main()
