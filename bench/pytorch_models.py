# SPDX-License-Identifier: GPL-3.0-or-later
# PyTorch twins of the ready-made Fashion-MNIST projects, timed the way `renaissance-cli bench` times ours.
"""The Fashion-MNIST projects of projects/ (lenet-fashion, cnn-bn-fashion,
resnet8-fashion, vit-tiny-fashion) and vit-b16 written in PyTorch, layer for
layer, with their parameter counts asserted, and a timer for their training
steps.

Run it with the system interpreter that has Debian's torch (python3-torch):

  /usr/bin/python3 bench/pytorch_models.py --model resnet8 --batch 128 --threads 2 \\
      --steps 30 --warmup 5 --channels-last 1
      -> one JSON line: model, batch, threads, channels_last, median_ms_per_step,
         images_per_s (and forward_flops, train_gflop_per_s, ...)
  /usr/bin/python3 bench/pytorch_models.py --model resnet8 --flops
      -> the forward FLOPs of one training batch, counted like the engine's
         `renaissance-cli plan --json` field forward_flops
  /usr/bin/python3 bench/pytorch_models.py --blas-check --threads 2
      -> which BLAS torch loaded and how fast a 1024^3 fp32 matmul runs
  /usr/bin/python3 bench/pytorch_models.py --bf16-check --threads 2
      -> how fast a 2048^3 matmul runs in bf16 and in fp32: this machine's
         bf16 ceiling (oneDNN's AMX or AVX-512 BF16 kernels)

--bf16 1 runs the forward and the loss under torch.autocast("cpu",
torch.bfloat16), PyTorch's fastest configuration on a CPU with AVX-512 BF16
or AMX (with --channels-last 1).

A timed step is what one engine training step does: forward, CrossEntropyLoss,
backward, the optimizer's step (SGD with momentum 0.9 and weight decay 5e-4 for
the CNNs, Adam with weight decay 1e-4 for the transformers, as their projects)
and zero_grad(set_to_none=True), on one random NCHW batch made before timing
(no data loading on either side).

Debian's torch links the generic libblas.so.3; for a fair comparison give it
OpenBLAS for this process only, e.g.
  LD_PRELOAD=/usr/lib/x86_64-linux-gnu/openblas-pthread/libblas.so.3
(bench/run_cpu_vs_pytorch.sh does this). torch.set_num_threads does not reach
OpenBLAS's own thread pool, so --threads also sets OPENBLAS_NUM_THREADS and
OMP_NUM_THREADS when they are unset, before torch is imported.
"""
import argparse
import json
import os
import statistics
import sys
import time

# Thread counts must be in the environment before torch (and OpenBLAS) load.
def _early_threads(argv):
    for i, a in enumerate(argv):
        if a == "--threads" and i + 1 < len(argv):
            return argv[i + 1]
        if a.startswith("--threads="):
            return a.split("=", 1)[1]
    return None


_t = _early_threads(sys.argv[1:])
if _t is not None:
    os.environ.setdefault("OPENBLAS_NUM_THREADS", _t)
    os.environ.setdefault("OMP_NUM_THREADS", _t)

try:
    import torch
    from torch import nn
except ImportError as e:  # the shell script checks first; this is for direct use
    sys.exit("pytorch_models.py: cannot import torch (%s); install it with "
             "`apt-get install python3-torch libopenblas0-pthread` and run this with "
             "/usr/bin/python3" % e)

PROJECTS_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                            "projects")
CLASSES = 10
INPUT_SHAPE = (1, 28, 28)  # Fashion-MNIST, NCHW per sample


class Add(nn.Module):
    """A residual sum as a module, so that the FLOP counter sees it (the engine's Add node)."""

    def forward(self, a, b):
        return a + b


def conv_bn_relu(cin, cout, stride=1):
    return [nn.Conv2d(cin, cout, 3, stride=stride, padding=1, bias=False),
            nn.BatchNorm2d(cout), nn.ReLU(inplace=True)]


class LeNet(nn.Module):
    """lenet-fashion: conv5x5(6, pad 2)-ReLU-max2-conv5x5(16)-ReLU-max2-fc120-ReLU-fc84-ReLU-fc10."""

    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(
            nn.Conv2d(1, 6, 5, padding=2), nn.ReLU(inplace=True), nn.MaxPool2d(2, 2),
            nn.Conv2d(6, 16, 5), nn.ReLU(inplace=True), nn.MaxPool2d(2, 2),
            nn.Flatten(),
            nn.Linear(400, 120), nn.ReLU(inplace=True),
            nn.Linear(120, 84), nn.ReLU(inplace=True),
            nn.Linear(84, CLASSES))

    def forward(self, x):
        return self.net(x)


class CnnBn(nn.Module):
    """cnn-bn-fashion: [conv3x3-BN-ReLU] x (32, 32), max2, x (64, 64), max2, GAP, fc10."""

    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(
            *conv_bn_relu(1, 32), *conv_bn_relu(32, 32), nn.MaxPool2d(2, 2),
            *conv_bn_relu(32, 64), *conv_bn_relu(64, 64), nn.MaxPool2d(2, 2),
            nn.AdaptiveAvgPool2d(1), nn.Flatten(),
            nn.Linear(64, CLASSES))

    def forward(self, x):
        return self.net(x)


class BasicBlock(nn.Module):
    """conv3x3-BN-ReLU-conv3x3-BN + shortcut (identity, or 1x1 conv + BN when the shape changes), ReLU."""

    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride=stride, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.relu1 = nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(cout, cout, 3, stride=1, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        if stride != 1 or cin != cout:
            self.shortcut = nn.Sequential(nn.Conv2d(cin, cout, 1, stride=stride, bias=False),
                                          nn.BatchNorm2d(cout))
        else:
            self.shortcut = nn.Identity()
        self.add = Add()
        self.relu = nn.ReLU(inplace=True)

    def forward(self, x):
        y = self.bn2(self.conv2(self.relu1(self.bn1(self.conv1(x)))))
        return self.relu(self.add(y, self.shortcut(x)))


class ResNet8(nn.Module):
    """resnet8-fashion: stem conv3x3(16)-BN-ReLU, blocks of 16, 32 (stride 2), 64 (stride 2), GAP, fc10."""

    def __init__(self):
        super().__init__()
        self.stem = nn.Sequential(*conv_bn_relu(1, 16))
        self.stages = nn.Sequential(BasicBlock(16, 16, 1), BasicBlock(16, 32, 2),
                                    BasicBlock(32, 64, 2))
        self.head = nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(64, CLASSES))

    def forward(self, x):
        return self.head(self.stages(self.stem(x)))


class PositionEmbedding(nn.Module):
    """A learned [T, C] added to the tokens (the engine's PositionEmbedding)."""

    def __init__(self, tokens, dim):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(1, tokens, dim) * 0.02)

    def forward(self, x):
        return x + self.weight


class ClassToken(nn.Module):
    """One learned token put before the others: T -> T + 1 (the engine's ClassToken)."""

    def __init__(self, dim):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(1, 1, dim) * 0.02)

    def forward(self, x):
        return torch.cat([self.weight.expand(x.shape[0], -1, -1), x], 1)


class GELU(nn.GELU):
    """nn.GELU (exact erf form), its own class only so the FLOP counter can tell it apart."""


class ViTBlock(nn.Module):
    """Pre-norm: x + attn(ln1(x)), then x + fc2(gelu(fc1(ln2(x)))), the attention
    nn.MultiheadAttention as torchvision's ViT has it, the engine's MultiHeadSelfAttention: its
    in_proj ([3C, C] and 3C biases: queries, keys and values, head h on channels h*C/heads..),
    its scaled dot-product attention and its out_proj are the engine layer's parts. In
    training PyTorch 1.13 computes it with every head's T x T scores and probabilities in
    memory."""

    def __init__(self, dim, heads, mlp):
        super().__init__()
        self.ln1 = nn.LayerNorm(dim)
        self.attn = nn.MultiheadAttention(dim, heads, batch_first=True)
        self.add1 = Add()
        self.ln2 = nn.LayerNorm(dim)
        self.fc1 = nn.Linear(dim, mlp)
        self.gelu = GELU()
        self.fc2 = nn.Linear(mlp, dim)
        self.add2 = Add()

    def forward(self, x):
        y = self.ln1(x)
        x = self.add1(self.attn(y, y, y, need_weights=False)[0], x)
        return self.add2(self.fc2(self.gelu(self.fc1(self.ln2(x)))), x)


class ViT(nn.Module):
    """The engine's vit_model (scripts/gen_projects.py): patch convolution, position embedding
    over the patch tokens, class token, pre-norm blocks, final LayerNorm, the class token's
    features into one Linear layer."""

    def __init__(self, image, channels, patch, dim, heads, blocks, mlp, classes):
        super().__init__()
        tokens = (image // patch) ** 2
        self.patch = nn.Conv2d(channels, dim, patch, stride=patch)
        self.pos = PositionEmbedding(tokens, dim)
        self.cls = ClassToken(dim)
        self.blocks = nn.Sequential(*[ViTBlock(dim, heads, mlp) for _ in range(blocks)])
        self.ln = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, classes)

    def forward(self, x):
        # NCHW -> [N, H*W, C], rows in order; written as torchvision's ViT writes it (its sizes
        # constants in an ONNX export, where flatten(2) computes them from the input's shape).
        p = self.patch(x)
        n, c, h, w = p.shape
        t = p.reshape(n, c, h * w).transpose(1, 2)
        t = self.ln(self.blocks(self.cls(self.pos(t))))
        return self.head(t[:, 0])


def vit_tiny():
    return ViT(28, 1, patch=4, dim=64, heads=4, blocks=6, mlp=128, classes=CLASSES)


def vit_b16():
    return ViT(224, 3, patch=16, dim=768, heads=12, blocks=12, mlp=3072, classes=1000)


def resnet50():
    """torchvision's ResNet-50 (1000 classes), the twin of projects/resnet50.json."""
    try:
        import torchvision
    except ImportError as e:
        sys.exit("resnet50 needs torchvision (%s); install it with "
                 "`apt-get install python3-torchvision`" % e)
    return torchvision.models.resnet50(num_classes=1000)


# name -> (class, parameter count of the engine's project, project file)
MODELS = {
    "lenet": (LeNet, 61706, "lenet-fashion.json"),
    "cnn-bn": (CnnBn, 65834, "cnn-bn-fashion.json"),
    "resnet8": (ResNet8, 77754, "resnet8-fashion.json"),
    "vit-tiny": (vit_tiny, 205898, "vit-tiny-fashion.json"),
    "vit-b16": (vit_b16, 86566888, "vit-b16.json"),
    "resnet50": (resnet50, 25557032, "resnet50.json"),
}

# Per-sample input shape (NCHW) and classes where they are not Fashion-MNIST's.
INPUTS = {"vit-b16": ((3, 224, 224), 1000), "resnet50": ((3, 224, 224), 1000)}


def input_of(name):
    """(per-sample NCHW input shape, classes) of a model."""
    return INPUTS.get(name, (INPUT_SHAPE, CLASSES))


def make_optimizer(name, params):
    """The project's optimizer: Adam (torch's, L2 weight decay like the engine's) for the
    transformers, SGD with momentum for the CNNs."""
    if name.startswith("vit"):
        return torch.optim.Adam(params, lr=1e-3, weight_decay=1e-4)
    return torch.optim.SGD(params, lr=0.05, momentum=0.9, weight_decay=5e-4)


def project_batches(project_file):
    """(training batch, validation batch) of a project file, or (None, None) when unreadable."""
    try:
        with open(os.path.join(PROJECTS_DIR, project_file)) as f:
            d = json.load(f)
    except (OSError, ValueError):
        return None, None
    train = d.get("training", {}).get("global_batch")
    val = None
    for v in d.get("variants", []):
        if v.get("kind") == "validation" and "batch" in v:
            val = v["batch"]
    return train, val if val is not None else train


def build(name):
    cls, params, _ = MODELS[name]
    model = cls()
    n = sum(p.numel() for p in model.parameters())
    assert n == params, "%s has %d parameters, the project has %d" % (name, n, params)
    return model


def forward_flops(model, batch, shape=INPUT_SHAPE, classes=CLASSES):
    """Forward FLOPs of one batch under the engine's rules (engine/model/layer_shapes.cpp):
    conv/linear 2 per multiply-add (+1 per output with a bias), BN 4 and ReLU 1 per element,
    pooling kernel-area per output, global average pool and Add 1 per input element,
    softmax cross-entropy 5 per score; flatten is free. Transformers: LayerNorm 8, GELU,
    position embedding 1 per element, attention 4 N T^2 C, class token and pooling free."""
    total = [0]

    def hook(m, inputs, out):
        x = inputs[0]
        if isinstance(m, nn.LayerNorm):
            total[0] += 8 * x.numel()
        elif isinstance(m, (GELU, PositionEmbedding)):
            total[0] += x.numel()
        elif isinstance(m, nn.MultiheadAttention):
            # TokenLinear to 3C, SelfAttention (4 N T^2 C), TokenLinear back, with biases.
            n, t, c = x.shape
            total[0] += 2 * n * t * c * 3 * c + n * t * 3 * c
            total[0] += 4 * n * t * t * c
            total[0] += 2 * n * t * c * c + n * t * c
        if isinstance(m, nn.Conv2d):
            k = m.in_channels // m.groups * m.kernel_size[0] * m.kernel_size[1]
            total[0] += 2 * out.numel() * k + (out.numel() if m.bias is not None else 0)
        elif isinstance(m, nn.Linear):
            total[0] += 2 * out.numel() * m.in_features + (out.numel() if m.bias is not None else 0)
        elif isinstance(m, nn.BatchNorm2d):
            total[0] += 4 * x.numel()
        elif isinstance(m, nn.ReLU):
            total[0] += x.numel()  # in place: out is x, same size either way
        elif isinstance(m, (nn.MaxPool2d, nn.AvgPool2d)):
            kh, kw = (m.kernel_size, m.kernel_size) if isinstance(m.kernel_size, int) else m.kernel_size
            total[0] += out.numel() * kh * kw
        elif isinstance(m, nn.AdaptiveAvgPool2d):
            total[0] += x.numel()
        elif isinstance(m, Add):
            total[0] += x.numel()

    handles = [m.register_forward_hook(hook) for m in model.modules()
               if isinstance(m, (nn.Conv2d, nn.Linear, nn.BatchNorm2d, nn.ReLU, nn.MaxPool2d,
                                 nn.AvgPool2d, nn.AdaptiveAvgPool2d, Add, nn.LayerNorm, GELU,
                                 PositionEmbedding, nn.MultiheadAttention))]
    with torch.no_grad():
        model.eval()
        model(torch.zeros(batch, *shape))
        model.train()
    for h in handles:
        h.remove()
    return total[0] + 5 * batch * classes  # the loss


def blas_libraries():
    libs = set()
    try:
        with open("/proc/self/maps") as f:
            for line in f:
                path = line.split()[-1]
                base = os.path.basename(path)
                if "blas" in base or "lapack" in base or "dnnl" in base:
                    libs.add(path)
    except OSError:
        pass
    return sorted(libs)


def matmul_times(a, b, reps):
    """Seconds of each of `reps` products a @ b, after three warm-up ones."""
    for _ in range(3):
        a @ b
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        a @ b
        times.append(time.perf_counter() - t0)
    return times


def blas_check(threads):
    torch.set_num_threads(threads)
    n = 1024
    times = matmul_times(torch.randn(n, n), torch.randn(n, n), 15)
    med = statistics.median(times)
    return {"matmul": n, "threads": threads, "median_ms": 1000 * med,
            "gflop_per_s": 2 * n ** 3 / med / 1e9,
            "best_gflop_per_s": 2 * n ** 3 / min(times) / 1e9,
            "blas_libraries": blas_libraries(),
            "mkldnn_available": torch.backends.mkldnn.is_available(),
            "openblas_coretype": os.environ.get("OPENBLAS_CORETYPE", ""),
            "openblas_num_threads": os.environ.get("OPENBLAS_NUM_THREADS", "")}


def bf16_check(threads):
    torch.set_num_threads(threads)
    n = 2048
    out = {"matmul": n, "threads": threads}
    for dtype, key in ((torch.bfloat16, "bf16"), (torch.float32, "fp32")):
        times = matmul_times(torch.randn(n, n).to(dtype), torch.randn(n, n).to(dtype), 10)
        out[key + "_gflop_per_s"] = 2 * n ** 3 / statistics.median(times) / 1e9
        out[key + "_best_gflop_per_s"] = 2 * n ** 3 / min(times) / 1e9
    return out


def time_training(name, batch, threads, steps, warmup, channels_last, bf16=False, seed=42):
    torch.manual_seed(seed)
    torch.set_num_threads(threads)
    model = build(name)
    shape, classes = input_of(name)
    flops = forward_flops(model, batch, shape, classes)
    fmt = torch.channels_last if channels_last else torch.contiguous_format
    model = model.to(memory_format=fmt)
    model.train()
    x = torch.randn(batch, *shape).contiguous(memory_format=fmt)
    y = torch.randint(0, classes, (batch,))
    loss_fn = nn.CrossEntropyLoss()
    opt = make_optimizer(name, model.parameters())
    times = []
    for _ in range(warmup + steps):
        t0 = time.perf_counter()
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
            loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        loss.item()  # everything is synchronous on the CPU; this only keeps the value honest
        times.append(time.perf_counter() - t0)
    timed = sorted(times[warmup:])
    med = timed[len(timed) // 2]  # the upper median, as `renaissance-cli bench` takes it
    return {"model": name, "batch": batch, "threads": threads,
            "channels_last": int(bool(channels_last)),
            "precision": "bf16" if bf16 else "fp32",
            "median_ms_per_step": 1000 * med, "min_ms_per_step": 1000 * timed[0],
            "images_per_s": batch / med,
            "forward_flops": flops,
            "train_gflop_per_s": 3 * flops / med / 1e9,
            "steps": steps, "warmup": warmup,
            "mkldnn": torch.backends.mkldnn.is_available() and torch.backends.mkldnn.enabled,
            "torch": torch.__version__}


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", choices=sorted(MODELS))
    p.add_argument("--batch", type=int, default=128)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--steps", type=int, default=30)
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--channels-last", type=int, choices=(0, 1), default=0)
    p.add_argument("--bf16", type=int, choices=(0, 1), default=0,
                   help="1: forward and loss under bfloat16 autocast")
    p.add_argument("--mkldnn", type=int, choices=(0, 1), default=1,
                   help="0 turns oneDNN off (torch.backends.mkldnn.enabled), for comparison")
    p.add_argument("--flops", action="store_true",
                   help="print the forward FLOPs of one --batch batch and exit")
    p.add_argument("--blas-check", action="store_true",
                   help="time a 1024^3 matmul and list the BLAS libraries loaded")
    p.add_argument("--bf16-check", action="store_true",
                   help="time a 2048^3 matmul in bf16 and in fp32")
    a = p.parse_args()
    if a.blas_check:
        print(json.dumps(blas_check(a.threads)))
        return
    if a.bf16_check:
        print(json.dumps(bf16_check(a.threads)))
        return
    if not a.model:
        p.error("--model is needed (or --blas-check)")
    if a.flops:
        model = build(a.model)
        print(json.dumps({"model": a.model, "batch": a.batch,
                          "parameters": sum(q.numel() for q in model.parameters()),
                          "forward_flops": forward_flops(model, a.batch, *input_of(a.model))}))
        return
    torch.backends.mkldnn.enabled = bool(a.mkldnn)
    print(json.dumps(time_training(a.model, a.batch, a.threads, a.steps, a.warmup,
                                   a.channels_last, bool(a.bf16))))


if __name__ == "__main__":
    main()
