# SPDX-License-Identifier: GPL-3.0-or-later
# `renaissance-cli onnx import` against PyTorch: models PyTorch exports are imported, and our logits on the same images match PyTorch's.
"""Exports models from PyTorch (Debian's python3-torch 1.13 and
python3-torchvision) to ONNX, imports each with `renaissance-cli onnx import`,
classifies the same PNG images with `renaissance-cli predict --json --logits`
and with PyTorch, and compares the logits:

  max |ours - PyTorch| / max |PyTorch| <= 1e-4 for every model.

The models: the three Fashion-MNIST networks (bench/pytorch_models.py, layer
for layer the projects' twins), lenet exported in PyTorch's default
inference form (BatchNorm folded into the convolutions) and the others with
their BatchNormalization nodes kept; torchvision's ResNet-18 at 224x224; the
tiny ViT of vit-tiny-fashion and torchvision's ViT-B/16 (vit_b_16: its
attention as nn.MultiheadAttention writes it, its class token, position
embedding and LayerNorms); and
a model with the operators the others lack (SiLU, GELU, LeakyReLU, ReLU6,
Tanh, Sigmoid, average pooling, Concat, Dropout, a mean over height and
width, a reshape and a MatMul with its bias added apart). The batch-norm
statistics and scales are drawn at random, so that they matter.

  /usr/bin/python3 tests/onnx/check_import.py --cli build/bin/renaissance-cli \
      --work /tmp/onnx-import [--models lenet,resnet18]

Exits 77 (CTest: skipped) when torch, torchvision or PIL is missing.
"""
import argparse
import json
import os
import subprocess
import sys
import warnings

try:
    import numpy as np
    import torch
    import torchvision
    from PIL import Image
    from torch import nn
except ImportError as e:
    print("SKIP: %s (install python3-torch python3-torchvision)" % e)
    sys.exit(77)

# PyTorch warns about constant folding with TrainingMode.PRESERVE; the model is in eval mode.
warnings.filterwarnings("ignore", category=UserWarning)

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "bench"))
import pytorch_models  # noqa: E402  (the projects' PyTorch twins)

TOLERANCE = 1e-4


class Zoo(nn.Module):
    """Every operator the Fashion-MNIST twins and ResNet-18 leave out."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1)
        self.bn1 = nn.BatchNorm2d(8)
        self.silu = nn.SiLU()
        self.conv2 = nn.Conv2d(8, 8, 3, padding=1, groups=2, bias=False)
        self.gelu = nn.GELU()
        self.avg = nn.AvgPool2d(3, stride=1, padding=1)
        self.max = nn.MaxPool2d(3, stride=2, padding=1)
        self.conv3 = nn.Conv2d(16, 12, (3, 1), stride=(2, 1), padding=(1, 0))
        self.leaky = nn.LeakyReLU(0.2)
        self.relu6 = nn.ReLU6()
        self.drop = nn.Dropout(0.3)
        self.fc1 = nn.Linear(12 * 4 * 8, 20)
        self.norm = nn.LayerNorm(32, eps=1e-6)  # ReduceMean, Sub, Pow, ..., over the features
        self.w2 = nn.Parameter(torch.randn(32, 7) * 0.3)
        self.b2 = nn.Parameter(torch.randn(7) * 0.1)

    def forward(self, x):
        y = self.silu(self.bn1(self.conv1(x)))
        y = self.gelu(self.conv2(y))
        y = self.max(torch.cat([self.avg(y), y], 1))
        y = self.relu6(self.leaky(self.conv3(y)))
        flat = torch.tanh(y).reshape(y.shape[0], -1)  # a Reshape to [1, -1]
        gap = torch.sigmoid(y).mean(dim=(2, 3))  # ReduceMean, keepdims 0
        z = self.norm(torch.cat([self.fc1(self.drop(flat)), gap], 1))
        return torch.matmul(z, self.w2) + self.b2  # MatMul, then Add


# name -> (model, input C, H, W, export form, normalisation given to the importer or None)
def models():
    return {
        "lenet": (lambda: pytorch_models.build("lenet"), (1, 28, 28), "eval", None),
        "cnn-bn": (lambda: pytorch_models.build("cnn-bn"), (1, 28, 28), "preserve",
                   ([0.3], [0.4])),
        "resnet8": (lambda: pytorch_models.build("resnet8"), (1, 28, 28), "preserve",
                    ([0.25], [0.3])),
        "resnet18": (lambda: torchvision.models.resnet18(weights=None), (3, 224, 224), "eval",
                     ([0.485, 0.456, 0.406], [0.229, 0.224, 0.225])),
        "zoo": (Zoo, (3, 16, 16), "preserve", ([0.5, 0.4, 0.3], [0.25, 0.3, 0.35])),
        # Vision transformers: nn.MultiheadAttention, a class token expanded over the batch, a
        # position embedding, decomposed LayerNorms and GELUs, the first token pooled.
        "vit-tiny": (lambda: pytorch_models.build("vit-tiny"), (1, 28, 28), "eval",
                     ([0.286], [0.353])),
        "vit-b16": (lambda: torchvision.models.vit_b_16(weights=None), (3, 224, 224), "eval",
                    ([0.485, 0.456, 0.406], [0.229, 0.224, 0.225])),
    }


def randomise_norms(model, gen):
    for m in model.modules():
        if isinstance(m, nn.BatchNorm2d):
            c = m.num_features
            m.running_mean.copy_(torch.randn(c, generator=gen) * 0.2)
            m.running_var.copy_(torch.rand(c, generator=gen) * 1.5 + 0.5)
            with torch.no_grad():
                m.weight.copy_(torch.rand(c, generator=gen) + 0.5)
                m.bias.copy_(torch.randn(c, generator=gen) * 0.2)
        if isinstance(m, nn.Linear) and not m.weight.any():  # vit_b_16's head starts at zero
            with torch.no_grad():
                m.weight.copy_(torch.randn(m.weight.shape, generator=gen) * 0.05)
                m.bias.copy_(torch.randn(m.bias.shape, generator=gen) * 0.1)
        if isinstance(m, nn.LayerNorm):  # away from the ones and zeros it starts at
            with torch.no_grad():
                m.weight.copy_(torch.rand(m.weight.shape, generator=gen) + 0.5)
                m.bias.copy_(torch.randn(m.bias.shape, generator=gen) * 0.2)


def run(cmd):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if p.returncode != 0:
        print("FAILED: %s\n%s" % (" ".join(cmd), p.stdout))
        sys.exit(1)
    return p.stdout


def check(name, args, work, gen):
    make, (c, h, w), form, norm = models()[name]
    torch.manual_seed(1)
    model = make()
    randomise_norms(model, gen)
    model.eval()
    onnx_path = os.path.join(work, name + ".onnx")
    training = (torch.onnx.TrainingMode.EVAL if form == "eval" else
                torch.onnx.TrainingMode.PRESERVE)
    torch.onnx.export(model, torch.zeros(1, c, h, w), onnx_path, training=training,
                      input_names=["image"], output_names=["logits"], opset_version=13)
    project = os.path.join(work, name + ".json")
    ckpt = os.path.join(work, name + ".ckpt")
    cmd = [args.cli, "onnx", "import", onnx_path, "-o", project, "--checkpoint-out", ckpt]
    if norm:
        cmd += ["--mean", ",".join(map(str, norm[0])), "--std", ",".join(map(str, norm[1]))]
    print(run(cmd).rstrip())
    # The normalisation the project ended with (the usual figures when none was given).
    with open(project) as f:
        imported = json.load(f)
    dataset = imported["dataset"]
    # Each nn.MultiheadAttention is one layer, as in the designer's palette.
    modules = sum(isinstance(m, nn.MultiheadAttention) for m in model.modules())
    types = [n["type"] for n in imported["model"]["nodes"]]
    if types.count("MultiHeadSelfAttention") != modules or "SelfAttention" in types:
        print("FAILED: %s: %d nn.MultiheadAttention modules became %d MultiHeadSelfAttention "
              "and %d SelfAttention layers" % (name, modules, types.count("MultiHeadSelfAttention"),
                                               types.count("SelfAttention")))
        return False
    mean = np.array(dataset["mean"], dtype=np.float64).reshape(1, c, 1, 1)
    std = np.array(dataset["std"], dtype=np.float64).reshape(1, c, 1, 1)

    images = []
    pixels = np.random.default_rng(7).integers(0, 256, size=(args.images, h, w, c), dtype=np.uint8)
    for i in range(args.images):
        path = os.path.join(work, "%s-%d.png" % (name, i))
        Image.fromarray(pixels[i, :, :, 0] if c == 1 else pixels[i]).save(path)
        images.append(path)
    out = json.loads(run([args.cli, "predict", project, "--checkpoint", ckpt, "--json",
                          "--logits"] + images))
    ours = np.array([o["logits"] for o in out], dtype=np.float64)

    x = (pixels.transpose(0, 3, 1, 2).astype(np.float64) / 255.0 - mean) / std
    with torch.no_grad():
        theirs = model(torch.from_numpy(x.astype(np.float32))).double().numpy()
    if ours.shape != theirs.shape:
        print("FAILED: %s: our logits are %s, PyTorch's %s" % (name, ours.shape, theirs.shape))
        return False
    error = np.abs(ours - theirs).max() / np.abs(theirs).max()
    same_top1 = int((ours.argmax(1) == theirs.argmax(1)).sum())
    ok = error <= TOLERANCE
    print("%s %s: %d images, logits max |ours - PyTorch| / max |PyTorch| = %.2e (limit %.0e), "
          "top-1 agrees on %d/%d" % ("ok" if ok else "FAILED", name, args.images, error,
                                     TOLERANCE, same_top1, args.images))
    return ok


def vit_refusals(args):
    """Variants of the tiny ViT's file the importer must refuse, each with the file, the node
    and what would fit: attention that is not nn.MultiheadAttention's (a Softmax over another
    axis, scores not divided by the square root of the head size), and a position embedding
    for another number of tokens. Returns whether each was refused as expected."""
    import onnx
    from onnx import numpy_helper
    src = os.path.join(args.work, "vit-tiny.onnx")
    if not os.path.exists(src):
        return True  # vit-tiny was not among the models checked

    def first(model, op):
        return next(n for n in model.graph.node if n.op_type == op)

    def softmax_axis(m):
        first(m, "Softmax").attribute[0].i = 1

    def scale(m):
        # The queries' Div by sqrt(16) = 4 (the other Divs compute the slices' bounds).
        for n in m.graph.node:
            if (n.op_type == "Constant" and n.attribute[0].t.data_type == onnx.TensorProto.FLOAT
                    and numpy_helper.to_array(n.attribute[0].t).tolist() == 4.0):
                n.attribute[0].t.CopyFrom(numpy_helper.from_array(np.array(3.0, np.float32)))

    def positions(m):
        pos = next(t for t in m.graph.initializer if t.name == "pos.weight")
        table = numpy_helper.to_array(pos)[:, :36, :]
        pos.CopyFrom(numpy_helper.from_array(np.ascontiguousarray(table), "pos.weight"))

    cases = [
        ("softmax over the queries", softmax_axis,
         "(Softmax)", "normalises over axis 1; attention's softmax is over the keys (the last "
                      "axis, -1)"),
        ("scores scaled by 3", scale,
         "(Div)", "divides the queries by 3.000000; attention divides them by the square root "
                  "of the head size (4 for heads of 16)"),
        ("position embedding of 36 tokens", positions,
         "(Add)", "adds a position embedding [1, 36, 64] to 49 tokens of 64 features; it "
                  "needs [1, 49, 64]"),
    ]
    ok = True
    for what, edit, node, message in cases:
        m = onnx.load(src)
        edit(m)
        path = os.path.join(args.work, "vit-tiny-refused.onnx")
        onnx.save(m, path)
        p = subprocess.run([args.cli, "onnx", "import", path, "-o",
                            os.path.join(args.work, "refused.json")],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        good = p.returncode != 0 and path in p.stdout and node in p.stdout and message in p.stdout
        print("%s refused: %s%s" % ("ok," if good else "FAILED, not", what,
                                    "" if good else "\n" + p.stdout))
        ok = ok and good
    return ok


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cli", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--models", default=",".join(models()))
    ap.add_argument("--images", type=int, default=4)
    args = ap.parse_args()
    os.makedirs(args.work, exist_ok=True)
    torch.set_num_threads(2)
    gen = torch.Generator().manual_seed(3)
    results = [check(name, args, args.work, gen) for name in args.models.split(",")]
    results.append(vit_refusals(args))
    sys.exit(0 if all(results) else 1)


if __name__ == "__main__":
    main()
