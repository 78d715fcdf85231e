#!/usr/bin/python3
"""ONNX import fixtures: PyTorch models exported with torch.onnx.export.

Writes NAME.onnx, NAME.input.npy and NAME.output.npy (PyTorch's own output on
that input) for each model into OUT_DIR. Weights are random but seeded (no
downloads: torchvision weights=None). BatchNorm statistics are randomised so
that folding them into the convolution (or not) matters. Needs Debian's
python3-torch and python3-torchvision.

usage: make_import_fixtures.py OUT_DIR [NAME...]
"""
import math
import os
import sys
import warnings
import zlib

import numpy as np
import torch
import torch.nn as nn

warnings.filterwarnings("ignore")


def randomise_bn(model, seed):
    g = torch.Generator().manual_seed(seed)
    for m in model.modules():
        if isinstance(m, nn.BatchNorm2d):
            c = m.num_features
            m.running_mean.copy_(torch.randn(c, generator=g) * 0.1)
            m.running_var.copy_(torch.rand(c, generator=g) * 0.5 + 0.75)
            m.weight.data.copy_(torch.rand(c, generator=g) * 0.5 + 0.75)
            m.bias.data.copy_(torch.randn(c, generator=g) * 0.1)


def tf_same_pad(size, k, s):
    """TensorFlow's 'same' padding (before, after) for one dimension."""
    out = math.ceil(size / s)
    total = max((out - 1) * s + k - size, 0)
    return total // 2, total - total // 2


class ConvBnAct(nn.Module):
    """Conv (TF-'same' via an explicit ZeroPad2d when strided) + BN + ReLU6."""

    def __init__(self, cin, cout, k, s, size, groups=1, act=True):
        super().__init__()
        if s > 1:
            t, b = tf_same_pad(size, k, s)
            self.pad = nn.ZeroPad2d((t, b, t, b))
            p = 0
        else:
            self.pad = nn.Identity()
            p = k // 2
        self.conv = nn.Conv2d(cin, cout, k, s, p, groups=groups, bias=False)
        self.bn = nn.BatchNorm2d(cout)
        self.act = nn.ReLU6() if act else nn.Identity()

    def forward(self, x):
        return self.act(self.bn(self.conv(self.pad(x))))


class MBBlock(nn.Module):
    def __init__(self, cin, cout, k, s, expand, size):
        super().__init__()
        mid = cin * expand
        layers = []
        if expand != 1:
            layers.append(ConvBnAct(cin, mid, 1, 1, size))
        layers.append(ConvBnAct(mid, mid, k, s, size, groups=mid))
        layers.append(ConvBnAct(mid, cout, 1, 1, math.ceil(size / s), act=False))
        self.block = nn.Sequential(*layers)
        self.residual = s == 1 and cin == cout

    def forward(self, x):
        y = self.block(x)
        return x + y if self.residual else y


class EfficientNetLiteish(nn.Module):
    """The shape of EfficientNet-Lite0 (no squeeze-excite, ReLU6, TF 'same'
    padding), narrowed so the test stays quick."""

    def __init__(self, size=64, classes=10):
        super().__init__()
        self.stem = ConvBnAct(3, 16, 3, 2, size)
        size = math.ceil(size / 2)
        cfg = [(16, 8, 3, 1, 1), (8, 12, 3, 2, 6), (12, 12, 3, 1, 6), (12, 20, 5, 2, 6),
               (20, 20, 5, 1, 6), (20, 40, 3, 2, 6)]
        blocks = []
        for cin, cout, k, s, e in cfg:
            blocks.append(MBBlock(cin, cout, k, s, e, size))
            size = math.ceil(size / s)
        self.blocks = nn.Sequential(*blocks)
        self.head = ConvBnAct(40, 64, 1, 1, size)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.dropout = nn.Dropout(0.2)
        self.fc = nn.Linear(64, classes)

    def forward(self, x):
        x = self.pool(self.head(self.blocks(self.stem(x))))
        return self.fc(self.dropout(torch.flatten(x, 1)))


class RecurrentClassifier(nn.Module):
    def __init__(self, cell, features=8, hidden=16, classes=5):
        super().__init__()
        self.rnn = cell(features, hidden, num_layers=2, batch_first=True, bidirectional=True)
        self.fc = nn.Linear(2 * hidden, classes)

    def forward(self, x):
        y, _ = self.rnn(x)
        return self.fc(y[:, -1])


class LayerNormMlp(nn.Module):
    """Linear -> LayerNorm (scale and shift away from 1 and 0) -> ReLU -> Linear."""

    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(12, 16)
        self.norm = nn.LayerNorm(16, eps=1e-3)
        with torch.no_grad():
            self.norm.weight.uniform_(0.5, 1.5)
            self.norm.bias.uniform_(-0.5, 0.5)
        self.fc2 = nn.Linear(16, 4)

    def forward(self, x):
        return self.fc2(torch.relu(self.norm(self.fc1(x))))


class TokenClassifier(nn.Module):
    """nn.Embedding on int64 token ids -> LSTM -> the last step -> Linear."""

    def __init__(self, vocab=20):
        super().__init__()
        self.embed = nn.Embedding(vocab, 8)
        self.rnn = nn.LSTM(8, 16, batch_first=True)
        self.fc = nn.Linear(16, 4)

    def forward(self, ids):
        return self.fc(self.rnn(self.embed(ids))[0][:, -1])


class TinyViT(nn.Module):
    """A ViT as people write it: patches by a strided Conv, flatten(2) and
    transpose(1, 2), a class token expanded over the batch and concatenated
    first, learned positions added, a pre-norm encoder layer, the class
    token's output, Linear."""

    def __init__(self, dim=16):
        super().__init__()
        self.patch = nn.Conv2d(1, dim, 4, stride=4)
        self.cls = nn.Parameter(torch.randn(1, 1, dim) * 0.5)
        self.pos = nn.Parameter(torch.randn(1, 17, dim) * 0.5)
        self.block = nn.TransformerEncoderLayer(dim, 4, 32, dropout=0.0, activation="gelu",
                                                batch_first=True, norm_first=True)
        self.norm = nn.LayerNorm(dim)
        self.fc = nn.Linear(dim, 3)

    def forward(self, x):
        t = self.patch(x).flatten(2).transpose(1, 2)
        t = torch.cat((self.cls.expand(x.shape[0], -1, -1), t), dim=1) + self.pos
        return self.fc(self.norm(self.block(t))[:, 0])


def torchvision_vit():
    """torchvision's VisionTransformer (vit_b_16's code) at a small size; its
    head starts at zero, so it and the class token are drawn at random."""
    from torchvision.models.vision_transformer import VisionTransformer

    m = VisionTransformer(image_size=32, patch_size=8, num_layers=2, num_heads=4, hidden_dim=64,
                          mlp_dim=128, num_classes=10)
    with torch.no_grad():
        m.class_token.normal_(0, 0.5)
        m.heads.head.weight.normal_(0, 0.2)
        m.heads.head.bias.normal_(0, 0.2)
    return m


class Unsupported(nn.Module):
    """Ops DeepCanvas has no layer for (an Erf and a Sin), for the error test."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        return self.fc(torch.sin(torch.erf(x)))


def models():
    import torchvision.models as tv

    image = (1, 3, 64, 64)
    return {
        "resnet18": (lambda: tv.resnet18(weights=None), image, {}),
        # BatchNorm kept as its own op (not folded into the Conv by the exporter).
        "resnet18_bn": (lambda: tv.resnet18(weights=None), image,
                        {"training": torch.onnx.TrainingMode.PRESERVE,
                         "do_constant_folding": False}),
        "mobilenet_v2": (lambda: tv.mobilenet_v2(weights=None), image, {}),
        "squeezenet1_1": (lambda: tv.squeezenet1_1(weights=None), (1, 3, 66, 66), {}),
        "efficientnet_lite": (lambda: EfficientNetLiteish(), image, {}),
        "lstm": (lambda: RecurrentClassifier(nn.LSTM), (2, 10, 8), {}),
        "gru": (lambda: RecurrentClassifier(nn.GRU), (2, 10, 8), {}),
        "unsupported": (lambda: Unsupported(), (1, 4), {}),
        # int64 token ids into nn.Embedding ("ids": the vocabulary they are drawn from).
        "token_lstm": (lambda: TokenClassifier(), (2, 10), {"ids": 20}),
        "tiny_vit": (lambda: TinyViT(), (2, 1, 16, 16), {"opset_version": 17}),
        "torchvision_vit": (torchvision_vit, (2, 3, 32, 32), {"opset_version": 17}),
        # LayerNorm before LayerNormalization: ReduceMean, Sub, Pow, Sqrt, Div.
        "layernorm_mlp_opset13": (lambda: LayerNormMlp(), (3, 12), {}),
        # LayerNormalization exists from opset 17.
        "layernorm_mlp": (lambda: LayerNormMlp(), (3, 12), {"opset_version": 17}),
        # Other opsets: Clip, Pad, Squeeze and Unsqueeze changed form at 11 and 13.
        "gru_opset11": (lambda: RecurrentClassifier(nn.GRU), (2, 10, 8), {"opset_version": 11}),
        "efficientnet_lite_opset11": (lambda: EfficientNetLiteish(), image,
                                      {"opset_version": 11}),
        "efficientnet_lite_opset17": (lambda: EfficientNetLiteish(), image,
                                      {"opset_version": 17}),
        # Today's mobile bases: SiLU and squeeze-and-excitation (EfficientNet),
        # HardSwish/HardSigmoid gates (MobileNetV3; HardSwish an op of its
        # own from opset 14), channel split, shuffle and concat (ShuffleNetV2).
        "efficientnet_b0": (lambda: tv.efficientnet_b0(weights=None), (2, 3, 64, 64), {}),
        "mobilenet_v3_small": (lambda: tv.mobilenet_v3_small(weights=None), (2, 3, 64, 64), {}),
        "mobilenet_v3_small_opset14": (lambda: tv.mobilenet_v3_small(weights=None),
                                       (2, 3, 64, 64), {"opset_version": 14}),
        "shufflenet_v2_x0_5": (lambda: tv.shufflenet_v2_x0_5(weights=None), (2, 3, 64, 64), {}),
    }


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    table = models()
    names = sys.argv[2:] or list(table)
    for name in names:
        # Seeds from the name alone: a model is the same whichever others are
        # made with it (tests make the ones they need, possibly concurrently).
        i = zlib.crc32(name.encode()) % 1000
        make, shape, extra = table[name]
        torch.manual_seed(1000 + i)
        model = make()
        randomise_bn(model, 2000 + i)
        model.eval()
        extra = dict(extra)
        vocab = extra.pop("ids", 0)
        g = torch.Generator().manual_seed(3000 + i)
        x = torch.randint(vocab, shape, generator=g) if vocab else torch.randn(*shape, generator=g)
        with torch.no_grad():
            y = model(x)
        options = {"opset_version": 13, **extra}
        torch.onnx.export(model, x, os.path.join(out, name + ".onnx"), input_names=["input"],
                          output_names=["output"],
                          dynamic_axes={"input": {0: "N"}, "output": {0: "N"}}, **options)
        np.save(os.path.join(out, name + ".input.npy"), x.numpy().astype(np.float32))
        np.save(os.path.join(out, name + ".output.npy"), y.numpy().astype(np.float32))
    print("wrote", ", ".join(names), "to", out)


if __name__ == "__main__":
    main()
