#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""(Re)generates the ready-made projects in projects/ so that the
architectures stay exact and readable.

The model graphs (LeNet-5, a small BatchNorm CNN, ResNet-8, ResNet-20 and
ResNet-50) are built here in code rather than edited by hand, so a block is
written once and repeated exactly. A small NHWC shape/parameter calculator
(out = floor((in + 2p - k) / s) + 1) checks every graph and asserts the
expected parameter total of each project before anything is written.

Usage:
  python3 scripts/gen_projects.py          write projects/*.json
  python3 scripts/gen_projects.py --check  only verify the files are current
                                           (exit status 1 when not)

Edit this script, not the JSON, to change a ready-made project; the format is
described in docs/project-format.md.
"""

import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PROJECTS_DIR = os.path.join(ROOT, "projects")

X_MAIN = 0      # designer column of the main path
X_BRANCH = 260  # designer column of residual projection branches
DY = 90         # designer row pitch


# --------------------------------------------------------------------------
# Graph builder
# --------------------------------------------------------------------------

class Graph:
    """Collects nodes and edges in file order; nodes of the main path are
    stacked top-to-bottom, branch nodes sit in a column to the right."""

    def __init__(self):
        self.nodes = []
        self.edges = []
        self.row = 0
        self.ids = set()

    def node(self, nid, ntype, params=None, src=None, x=X_MAIN, y=None,
             to_port=None):
        """Adds a node; `src` (an id) gets an edge into it. Without `y` the
        node takes the next row of the main column."""
        assert nid not in self.ids, "duplicate node id " + nid
        self.ids.add(nid)
        if y is None:
            y = self.row * DY
            self.row += 1
        n = {"id": nid, "type": ntype}
        if params:
            n["params"] = params
        n["pos"] = [x, y]
        self.nodes.append(n)
        if src is not None:
            self.edge(src, nid, to_port)
        return nid

    def edge(self, src, dst, to_port=None):
        e = {"from": src, "to": dst}
        if to_port is not None:
            e["to_port"] = to_port
        self.edges.append(e)

    def next_y(self):
        return self.row * DY

    def model(self):
        return {"nodes": self.nodes, "edges": self.edges}


def conv(out_channels, kernel, stride=1, padding=0, bias=True):
    return {"out_channels": out_channels, "kernel": kernel, "stride": stride,
            "padding": padding, "bias": bias}


def pool(kernel, stride=None, padding=0):
    return {"kernel": kernel, "stride": kernel if stride is None else stride,
            "padding": padding}


def linear(out_features, bias=True):
    return {"out_features": out_features, "bias": bias}


def conv_bn(g, prefix, src, out_channels, kernel, stride, padding, x=X_MAIN,
            y=None, relu=False, conv_name="conv", bn_name="bn", relu_name="relu"):
    """Conv2d (no bias) - BatchNorm2d [- ReLU]; returns the last id."""
    c = g.node(prefix + conv_name, "Conv2d",
               conv(out_channels, kernel, stride, padding, bias=False), src, x=x, y=y)
    b = g.node(prefix + bn_name, "BatchNorm2d", None, c, x=x,
               y=None if y is None else y + DY)
    if relu:
        b = g.node(prefix + relu_name, "ReLU", None, b, x=x,
                   y=None if y is None else y + 2 * DY)
    return b


def residual_tail(g, prefix, main, shortcut):
    """Add (main path on port 0, shortcut on port 1) then ReLU."""
    a = g.node(prefix + "add", "Add", None, main, to_port=0)
    g.edge(shortcut, a, to_port=1)
    return g.node(prefix + "relu", "ReLU", None, a)


def basic_block(g, prefix, src, channels, stride, project):
    """conv3x3(s)-BN-ReLU-conv3x3-BN, + shortcut, ReLU (ResNet v1)."""
    y0 = g.next_y()
    h = conv_bn(g, prefix, src, channels, 3, stride, 1, relu=True,
                conv_name="conv1", bn_name="bn1", relu_name="relu1")
    h = conv_bn(g, prefix, h, channels, 3, 1, 1, conv_name="conv2", bn_name="bn2")
    shortcut = src
    if project:
        shortcut = conv_bn(g, prefix, src, channels, 1, stride, 0, x=X_BRANCH, y=y0,
                           conv_name="sc_conv", bn_name="sc_bn")
    return residual_tail(g, prefix, h, shortcut)


def bottleneck(g, prefix, src, width, stride, project, expansion=4):
    """conv1x1-BN-ReLU-conv3x3(s)-BN-ReLU-conv1x1(4w)-BN, + shortcut, ReLU
    (ResNet v1.5: the stride sits on the 3x3 conv)."""
    y0 = g.next_y()
    h = conv_bn(g, prefix, src, width, 1, 1, 0, relu=True,
                conv_name="conv1", bn_name="bn1", relu_name="relu1")
    h = conv_bn(g, prefix, h, width, 3, stride, 1, relu=True,
                conv_name="conv2", bn_name="bn2", relu_name="relu2")
    h = conv_bn(g, prefix, h, width * expansion, 1, 1, 0,
                conv_name="conv3", bn_name="bn3")
    shortcut = src
    if project:
        shortcut = conv_bn(g, prefix, src, width * expansion, 1, stride, 0,
                           x=X_BRANCH, y=y0, conv_name="sc_conv", bn_name="sc_bn")
    return residual_tail(g, prefix, h, shortcut)


# --------------------------------------------------------------------------
# Models
# --------------------------------------------------------------------------

def lenet_model():
    g = Graph()
    h = g.node("input", "Input", {"height": 28, "width": 28, "channels": 1})
    h = g.node("conv1", "Conv2d", conv(6, 5, 1, 2), h)
    h = g.node("relu1", "ReLU", None, h)
    h = g.node("pool1", "MaxPool2d", pool(2), h)
    h = g.node("conv2", "Conv2d", conv(16, 5, 1, 0), h)
    h = g.node("relu2", "ReLU", None, h)
    h = g.node("pool2", "MaxPool2d", pool(2), h)
    h = g.node("flatten", "Flatten", None, h)
    h = g.node("fc1", "Linear", linear(120), h)
    h = g.node("relu3", "ReLU", None, h)
    h = g.node("fc2", "Linear", linear(84), h)
    h = g.node("relu4", "ReLU", None, h)
    h = g.node("fc3", "Linear", linear(10), h)
    g.node("loss", "SoftmaxCrossEntropy", None, h)
    return g.model()


def cnn_bn_model():
    g = Graph()
    h = g.node("input", "Input", {"height": 28, "width": 28, "channels": 1})
    for i, ch in enumerate([32, 32, 64, 64], start=1):
        h = conv_bn(g, "", h, ch, 3, 1, 1, relu=True, conv_name="conv%d" % i,
                    bn_name="bn%d" % i, relu_name="relu%d" % i)
        if i % 2 == 0:
            h = g.node("pool%d" % (i // 2), "MaxPool2d", pool(2), h)
    h = g.node("gap", "GlobalAvgPool", None, h)
    h = g.node("fc", "Linear", linear(10), h)
    g.node("loss", "SoftmaxCrossEntropy", None, h)
    return g.model()


def cifar_resnet_model(height, width, channels, blocks_per_stage, classes=10):
    """ResNet v1 for small images: stem conv3x3(16), three stages of basic
    blocks (16, 32, 64 channels), projection shortcuts where the shape
    changes, global average pooling and one Linear layer."""
    g = Graph()
    h = g.node("input", "Input", {"height": height, "width": width, "channels": channels})
    h = conv_bn(g, "", h, 16, 3, 1, 1, relu=True, conv_name="conv1",
                bn_name="bn1", relu_name="relu1")
    in_ch = 16
    for s, ch in enumerate([16, 32, 64], start=1):
        for b in range(1, blocks_per_stage + 1):
            stride = 2 if (s > 1 and b == 1) else 1
            project = stride != 1 or in_ch != ch
            h = basic_block(g, "s%db%d_" % (s, b), h, ch, stride, project)
            in_ch = ch
    h = g.node("gap", "GlobalAvgPool", None, h)
    h = g.node("fc", "Linear", linear(classes), h)
    g.node("loss", "SoftmaxCrossEntropy", None, h)
    return g.model()


def resnet50_model():
    g = Graph()
    h = g.node("input", "Input", {"height": 224, "width": 224, "channels": 3})
    h = conv_bn(g, "", h, 64, 7, 2, 3, relu=True, conv_name="conv1",
                bn_name="bn1", relu_name="relu1")
    h = g.node("pool1", "MaxPool2d", pool(3, 2, 1), h)
    for s, (blocks, width) in enumerate(zip([3, 4, 6, 3], [64, 128, 256, 512]), start=1):
        for b in range(1, blocks + 1):
            stride = 2 if (s > 1 and b == 1) else 1
            h = bottleneck(g, "s%db%d_" % (s, b), h, width, stride, project=(b == 1))
    h = g.node("gap", "GlobalAvgPool", None, h)
    h = g.node("fc", "Linear", linear(1000), h)
    g.node("loss", "SoftmaxCrossEntropy", None, h)
    return g.model()


def vit_model(height, width, channels, patch, dim, heads, blocks, mlp, classes):
    """A Vision Transformer: a patch convolution (stride = kernel) makes the
    tokens, a learned position embedding and a class token go with them,
    then pre-norm blocks of multi-head self-attention (one
    MultiHeadSelfAttention layer, compiled as a TokenLinear to the queries,
    keys and values, SelfAttention and a TokenLinear back) and a GELU MLP,
    each added back to its input; a final LayerNorm, the class token and one
    Linear layer."""
    g = Graph()
    h = g.node("input", "Input", {"height": height, "width": width, "channels": channels})
    h = g.node("patch", "Conv2d", conv(dim, patch, patch, 0), h)
    h = g.node("pos", "PositionEmbedding", None, h)
    h = g.node("cls", "ClassToken", None, h)
    for b in range(1, blocks + 1):
        p = "b%d_" % b
        block_in = h
        a = g.node(p + "ln1", "LayerNorm", None, h)
        a = g.node(p + "attn", "MultiHeadSelfAttention", {"heads": heads}, a)
        h = g.node(p + "add1", "Add", None, a, to_port=0)
        g.edge(block_in, h, 1)
        m = g.node(p + "ln2", "LayerNorm", None, h)
        m = g.node(p + "fc1", "TokenLinear", linear(mlp), m)
        m = g.node(p + "gelu", "GELU", None, m)
        m = g.node(p + "fc2", "TokenLinear", linear(dim), m)
        s = g.node(p + "add2", "Add", None, m, to_port=0)
        g.edge(h, s, 1)
        h = s
    h = g.node("ln", "LayerNorm", None, h)
    h = g.node("pool", "TokenPool", None, h)
    h = g.node("head", "Linear", linear(classes), h)
    g.node("loss", "SoftmaxCrossEntropy", None, h)
    return g.model()


# --------------------------------------------------------------------------
# Dataset, training and variant sections
# --------------------------------------------------------------------------

FASHION = {"kind": "fashion-mnist", "mean": [0.286041], "std": [0.353024],
           "random_crop_padding": 0, "random_flip": False}


def training(lr, epochs, global_batch, devices="cpu:1", precision="fp32",
             weight_decay=0.0005, warmup_epochs=0, nesterov=False, sync_batch_norm=None):
    t = {
        "optimizer": {"type": "sgd", "lr": lr, "momentum": 0.9,
                      "weight_decay": weight_decay, "nesterov": nesterov},
        "schedule": {"type": "cosine", "warmup_epochs": warmup_epochs, "min_lr": 0},
        "epochs": epochs,
        "global_batch": global_batch,
        "devices": devices,
        "precision": precision,
        "seed": 42,
        "ema": {"enabled": False, "decay": 0.999},
    }
    if sync_batch_norm is not None:
        t["sync_batch_norm"] = sync_batch_norm
    return t


def adam_training(lr, epochs, global_batch, devices="cpu:1", precision="fp32"):
    t = training(lr, epochs, global_batch, devices, precision, weight_decay=0.0001)
    t["optimizer"] = {"type": "adam", "lr": lr, "weight_decay": 0.0001}
    t["schedule"]["warmup_epochs"] = 1
    return t


def variants(val_batch):
    return [
        {"name": "train", "kind": "train"},
        {"name": "last", "kind": "last_batch"},
        {"name": "val", "kind": "validation", "batch": val_batch},
    ]


def project(name, description, model, dataset, train, val_batch):
    return {
        "format": 1,
        "name": name,
        "description": description,
        "model": model,
        "dataset": dataset,
        "training": train,
        "variants": variants(val_batch),
    }


def all_projects():
    """(project, expected parameter count) in README order."""
    return [
        (project("lenet-fashion",
                 "LeNet-5 (ReLU, max pooling) on Fashion-MNIST; the default project.",
                 lenet_model(), FASHION, training(0.05, 3, 128), 1000), 61706),
        (project("cnn-bn-fashion",
                 "A four-layer 3x3 CNN with BatchNorm and global average pooling "
                 "on Fashion-MNIST.",
                 cnn_bn_model(), FASHION, training(0.2, 3, 128, nesterov=True, sync_batch_norm=True), 1000), 65834),
        (project("resnet8-fashion",
                 "ResNet-8 (three stages of one basic block, projection shortcuts) "
                 "on Fashion-MNIST.",
                 cifar_resnet_model(28, 28, 1, 1), FASHION, training(0.1, 3, 128),
                 1000), 77754),
        (project("resnet20",
                 "CIFAR-style ResNet-20 with projection shortcuts on synthetic "
                 "32x32x3 data.",
                 cifar_resnet_model(32, 32, 3, 3),
                 {"kind": "synthetic", "height": 32, "width": 32, "channels": 3,
                  "classes": 10, "train_size": 50000, "val_size": 10000,
                  "mean": [0.4914, 0.4822, 0.4465], "std": [0.247, 0.2435, 0.2616],
                  "random_crop_padding": 4, "random_flip": True},
                 training(0.1, 200, 128), 1000), 272474),
        (project("resnet20-cifar10",
                 "CIFAR-style ResNet-20 with projection shortcuts on CIFAR-10 "
                 "(the binary version's files in \"dataset.dir\").",
                 cifar_resnet_model(32, 32, 3, 3),
                 {"kind": "cifar-10",
                  "mean": [0.4914, 0.4822, 0.4465], "std": [0.247, 0.2435, 0.2616],
                  "random_crop_padding": 4, "random_flip": True},
                 training(0.1, 200, 128), 1000), 272474),
        (project("vit-tiny-fashion",
                 "A tiny Vision Transformer on Fashion-MNIST: 4x4 patches (49 tokens and a "
                 "class token) of 64 features, 6 pre-norm blocks of 4-head self-attention "
                 "and a GELU MLP of 128.",
                 vit_model(28, 28, 1, patch=4, dim=64, heads=4, blocks=6, mlp=128, classes=10),
                 FASHION, adam_training(0.001, 10, 128), 1000), 205898),
        (project("vit-b16",
                 "ViT-B/16 (torchvision's vit_b_16: 16x16 patches, 196 tokens and a class "
                 "token of 768 features, 12 blocks of 12-head self-attention and a GELU MLP "
                 "of 3072) on synthetic ImageNet-size data, for plans and benchmarks. The "
                 "position embedding covers the 196 patch tokens, not the class token.",
                 vit_model(224, 224, 3, patch=16, dim=768, heads=12, blocks=12, mlp=3072,
                           classes=1000),
                 {"kind": "synthetic", "height": 224, "width": 224, "channels": 3,
                  "classes": 1000, "train_size": 1281167, "val_size": 50000,
                  "mean": [0.485, 0.456, 0.406], "std": [0.229, 0.224, 0.225],
                  "random_crop_padding": 0, "random_flip": True},
                 adam_training(0.001, 300, 64, devices="cuda:0", precision="amp"), 64),
         86566888),
        (project("resnet50",
                 "torchvision ResNet-50 (v1.5) on synthetic ImageNet-size data.",
                 resnet50_model(),
                 {"kind": "synthetic", "height": 224, "width": 224, "channels": 3,
                  "classes": 1000, "train_size": 1281167, "val_size": 50000,
                  "mean": [0.485, 0.456, 0.406], "std": [0.229, 0.224, 0.225],
                  "random_crop_padding": 0, "random_flip": True},
                 training(0.1, 90, 256, devices="cuda:0", precision="amp",
                          weight_decay=0.0001, warmup_epochs=5), 250), 25557032),
    ]


# --------------------------------------------------------------------------
# Shape and parameter calculator (NHWC)
# --------------------------------------------------------------------------

def _pair(v):
    return (v, v) if isinstance(v, int) else (v[0], v[1])


def _window(size, k, s, p):
    out = (size + 2 * p - k) // s + 1
    assert out >= 1, "window larger than the padded input"
    return out


def count_parameters(proj):
    """Walks the graph in file order (nodes are written topologically),
    checks shapes and returns the number of trainable parameters."""
    nodes = proj["model"]["nodes"]
    inputs = {}  # node id -> {port: source id}
    for e in proj["model"]["edges"]:
        ports = inputs.setdefault(e["to"], {})
        port = e.get("to_port", 0)
        assert port not in ports, "%s: input port %d used twice" % (e["to"], port)
        ports[port] = e["from"]
    ids = [n["id"] for n in nodes]
    assert len(set(ids)) == len(ids), "duplicate node ids"
    consumed = {e["from"] for e in proj["model"]["edges"]}
    for n in nodes:  # everything feeds something, except the loss
        assert (n["type"] == "SoftmaxCrossEntropy") != (n["id"] in consumed), n["id"]
    assert [n["type"] for n in nodes].count("Input") == 1
    assert [n["type"] for n in nodes].count("SoftmaxCrossEntropy") == 1
    shape = {}  # node id -> (h, w, c)
    total = 0
    for n in nodes:
        nid, t, p = n["id"], n["type"], n.get("params", {})
        src = inputs.get(nid, {})
        x = [shape[src[i]] for i in sorted(src)]  # KeyError: not topological
        if t == "Input":
            assert not x
            out = (p["height"], p["width"], p["channels"])
        elif t == "Add":
            assert len(x) == 2 and x[0] == x[1], "%s: Add shapes %s" % (nid, x)
            out = x[0]
        else:
            assert len(x) == 1, "%s: expects one input" % nid
            h, w, c = x[0]
            if t == "Conv2d":
                kh, kw = _pair(p["kernel"])
                sh, sw = _pair(p.get("stride", 1))
                ph, pw = _pair(p.get("padding", 0))
                co = p["out_channels"]
                out = (_window(h, kh, sh, ph), _window(w, kw, sw, pw), co)
                total += kh * kw * c * co + (co if p.get("bias", True) else 0)
            elif t in ("MaxPool2d", "AvgPool2d"):
                kh, kw = _pair(p["kernel"])
                sh, sw = _pair(p.get("stride", p["kernel"]))
                ph, pw = _pair(p.get("padding", 0))
                out = (_window(h, kh, sh, ph), _window(w, kw, sw, pw), c)
            elif t == "BatchNorm2d":
                out = x[0]
                total += 2 * c
            elif t in ("ReLU", "Tanh", "SiLU", "GELU", "Dropout"):
                out = x[0]
            elif t == "LayerNorm":
                out = x[0]
                total += 2 * c
            elif t == "TokenLinear":
                o = p["out_features"]
                out = (h, w, o)
                total += c * o + (o if p.get("bias", True) else 0)
            elif t == "MultiHeadSelfAttention":
                assert c % p["heads"] == 0, "%s: heads" % nid
                out = x[0]
                total += 4 * c * c + (4 * c if p.get("bias", True) else 0)
            elif t == "SelfAttention":
                assert c % 3 == 0 and (c // 3) % p["heads"] == 0, "%s: heads" % nid
                out = (h, w, c // 3)
            elif t == "PositionEmbedding":
                out = x[0]
                total += h * w * c
            elif t == "ClassToken":
                out = (1, h * w + 1, c)
                total += c
            elif t == "TokenPool":
                out = (1, 1, c)
            elif t == "Flatten":
                out = (1, 1, h * w * c)
            elif t == "GlobalAvgPool":
                out = (1, 1, c)
            elif t == "Linear":
                assert h == 1 and w == 1, "%s: Linear needs a flat input" % nid
                o = p["out_features"]
                out = (1, 1, o)
                total += c * o + (o if p.get("bias", True) else 0)
            elif t == "SoftmaxCrossEntropy":
                assert h == 1 and w == 1, "%s: loss needs a flat input" % nid
                ds = proj["dataset"]
                classes = (ds.get("classes", 10) if ds["kind"] == "synthetic"
                           else 100 if ds["kind"] == "cifar-100" else 10)
                assert c == classes, "%s: %d logits, %d classes" % (nid, c, classes)
                out = x[0]
            else:
                raise AssertionError("%s: unknown type %s" % (nid, t))
        shape[nid] = out
    return total


# --------------------------------------------------------------------------
# Output
# --------------------------------------------------------------------------

def _dump(value, indent=0, inline=False):
    """json.dumps(indent=2) layout, except that each node, edge and variant
    (and any short list of numbers) stays on one line."""
    if inline or not isinstance(value, (dict, list)):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, list) and all(not isinstance(v, (dict, list)) for v in value):
        return json.dumps(value, ensure_ascii=False)
    pad = " " * (indent + 2)
    if isinstance(value, dict):
        items = ["%s%s: %s" % (pad, json.dumps(k), _dump(v, indent + 2))
                 for k, v in value.items()]
        return "{\n" + ",\n".join(items) + "\n" + " " * indent + "}"
    one_line = all(isinstance(v, dict) for v in value)  # nodes, edges, variants
    items = [pad + _dump(v, indent + 2, inline=one_line) for v in value]
    return "[\n" + ",\n".join(items) + "\n" + " " * indent + "]"


def render(proj):
    text = _dump(proj) + "\n"
    assert json.loads(text) == proj
    return text


def main(argv):
    check = "--check" in argv[1:]
    stale = []
    for proj, expected in all_projects():
        n = count_parameters(proj)
        print("%s: %d parameters" % (proj["name"], n))
        assert n == expected, "%s: %d parameters, expected %d" % (proj["name"], n, expected)
        path = os.path.join(PROJECTS_DIR, proj["name"] + ".json")
        text = render(proj)
        if check:
            try:
                with open(path, encoding="utf-8") as f:
                    if f.read() != text:
                        stale.append(path)
            except OSError:
                stale.append(path)
        else:
            os.makedirs(PROJECTS_DIR, exist_ok=True)
            with open(path, "w", encoding="utf-8", newline="\n") as f:
                f.write(text)
    if stale:
        for path in stale:
            print("out of date: %s (run scripts/gen_projects.py)" % os.path.relpath(path, ROOT),
                  file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
