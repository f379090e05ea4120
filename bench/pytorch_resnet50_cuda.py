# SPDX-License-Identifier: GPL-3.0-or-later
# PyTorch's torchvision ResNet-50 training steps on one CUDA device, timed as `renaissance-cli bench` times ours.
"""The peer of scripts/device-check.sh's benchmark: torchvision's resnet50
(v1.5, as projects/resnet50.json), channels-last, on a synthetic 224x224 batch
made on the device before timing, trained with SGD (momentum 0.9, weight decay
5e-4), in FP32 (TF32 allowed for convolutions and matmuls, PyTorch's default for
cuDNN, as the engine's FP32 default), AMP (autocast FP16 with FP32 master
weights) or BF16 (autocast bfloat16, FP32 master weights, no loss scale),
each as eager steps and as one whole-step CUDA graph replayed.
cudnn.benchmark is on, so PyTorch times its own algorithm choices first.

  python3 bench/pytorch_resnet50_cuda.py --precision amp --mode graph --batch 256 \\
      --steps 30 --warmup 10
      -> one JSON line: peer, precision, mode, batch, steps, median_ms_per_step,
         images_per_s

A timed step: forward, CrossEntropyLoss, backward, optimizer step,
zero_grad(set_to_none=False, so a captured graph's gradient buffers stay
put). AMP eager uses GradScaler (a dynamic loss scale, as the engine has);
GradScaler's overflow check reads a flag on the host, which a captured graph
cannot do, so graph mode multiplies the loss by a constant scale and divides
the gradients by it before the optimizer step: the same work per step
without the host round trip.
"""
import argparse
import json
import statistics
import sys
import time

try:
    import torch
    import torchvision
except ImportError as e:
    sys.exit("pytorch_resnet50_cuda.py: cannot import torch/torchvision (%s)" % e)


def make_model(device):
    model = torchvision.models.resnet50(weights=None, num_classes=1000)
    return model.to(device=device, memory_format=torch.channels_last)


def timed_steps(step, steps, warmup):
    for _ in range(warmup):
        step()
    torch.cuda.synchronize()
    times = []
    for _ in range(steps):
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        step()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return times


# autocast's 16-bit type for a precision, None for fp32.
AUTOCAST = {"fp32": None, "amp": torch.float16, "bf16": torch.bfloat16}


def eager_step(model, opt, x, y, precision):
    loss_fn = torch.nn.CrossEntropyLoss()
    half = AUTOCAST[precision]
    amp = precision == "amp"  # only FP16 needs a loss scale
    scaler = torch.amp.GradScaler("cuda", enabled=amp)

    def step():
        with torch.autocast("cuda", dtype=half or torch.float16, enabled=half is not None):
            loss = loss_fn(model(x), y)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        opt.zero_grad(set_to_none=False)

    return step


def graph_step(model, opt, x, y, precision):
    loss_fn = torch.nn.CrossEntropyLoss()
    half = AUTOCAST[precision]
    amp = precision == "amp"
    scale = 1024.0 if amp else 1.0

    def body():
        with torch.autocast("cuda", dtype=half or torch.float16, enabled=half is not None,
                            cache_enabled=False):
            loss = loss_fn(model(x), y)
        (loss * scale).backward()
        if amp:
            for group in opt.param_groups:
                for p in group["params"]:
                    if p.grad is not None:
                        p.grad.mul_(1.0 / scale)
        opt.step()
        opt.zero_grad(set_to_none=False)

    # Warm up on a side stream before capture, as PyTorch's docs require.
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            body()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        body()
    return graph.replay


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--precision", choices=["fp32", "amp", "bf16"], default="amp")
    ap.add_argument("--mode", choices=["eager", "graph"], default="eager")
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    if not torch.cuda.is_available():
        sys.exit("pytorch_resnet50_cuda.py: PyTorch sees no CUDA device")
    torch.manual_seed(a.seed)
    torch.backends.cudnn.benchmark = True
    torch.backends.cudnn.allow_tf32 = True
    torch.backends.cuda.matmul.allow_tf32 = True
    device = torch.device("cuda", 0)
    model = make_model(device)
    model.train()
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=5e-4)
    x = torch.randn(a.batch, 3, 224, 224, device=device).to(memory_format=torch.channels_last)
    y = torch.randint(0, 1000, (a.batch,), device=device)
    make = graph_step if a.mode == "graph" else eager_step
    times = timed_steps(make(model, opt, x, y, a.precision), a.steps, a.warmup)
    median_ms = statistics.median(times)
    print(json.dumps({
        "peer": "pytorch " + torch.__version__ + ", torchvision " + torchvision.__version__,
        "device": torch.cuda.get_device_name(0),
        "precision": a.precision,
        "mode": a.mode,
        "batch": a.batch,
        "steps": a.steps,
        "warmup": a.warmup,
        "median_ms_per_step": median_ms,
        "min_ms_per_step": min(times),
        "images_per_s": a.batch / (median_ms / 1000.0),
        # What PyTorch's caching allocator handed out at most: beside our plan's bytes.
        "max_memory_allocated_bytes": torch.cuda.max_memory_allocated(device),
    }), flush=True)


if __name__ == "__main__":
    main()
