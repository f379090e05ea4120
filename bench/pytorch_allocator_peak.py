# SPDX-License-Identifier: GPL-3.0-or-later
# PyTorch's exact CPU allocator peak for one training step and one validation forward of a project's model.
"""The peak of the bytes PyTorch's CPU allocator holds while it trains one of the
projects' models, from its own allocation events: torch.profiler with
profile_memory=True records every allocation (+bytes) and free (-bytes); summed
in time order they give the bytes in use at every instant, and their maximum
is the peak, exact rather than sampled.

  /usr/bin/python3 bench/pytorch_allocator_peak.py --model vit-tiny
  /usr/bin/python3 bench/pytorch_allocator_peak.py --model vit-b16 --fit 2,4

What is measured, at the project's batches (training.global_batch and the
validation variant's batch; --batch and --val-batch override them):
  held_bytes        what exists before the measured work and through it:
                    weights, gradients, the optimizer's state (SGD momentum, or
                    Adam's two moments) and the training batch with its labels
  train_peak_bytes  above held_bytes, the peak of one training step: forward,
                    CrossEntropyLoss, backward and the optimizer's step
  val_peak_bytes    above held_bytes, the peak of one torch.no_grad() forward in
                    eval mode at the validation batch, its input made inside
  peak_bytes        held_bytes + max(train_peak_bytes, val_peak_bytes): what a
                    process must have to train this way
The optimizer state and oneDNN's caches come to exist in two warm-up steps
before the measurement. --bf16 1 runs forward and loss under bfloat16
autocast (the weights and their state stay FP32, as in the engine's AMP).

--layout both (the default) measures NCHW and channels-last and gives the
leaner (the other under other_layout).
--fit B1,B2 measures at those two batches instead (both training and
validation at B) and extends the figures linearly to --batch: what a step
allocates grows with the batch, so two small batches give a model too large
to train here at its own batch (vit-b16 at 64). The fitted figures say so.
One JSON line.
"""
import argparse
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))

if not any(a == "--threads" or a.startswith("--threads=") for a in sys.argv[1:]):
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "2")
    os.environ.setdefault("OMP_NUM_THREADS", "2")

sys.path.insert(0, HERE)
sys.dont_write_bytecode = True
import pytorch_models  # noqa: E402  (imports torch or says how to get it)
import torch  # noqa: E402
from torch import nn  # noqa: E402
from torch.profiler import ProfilerActivity, profile  # noqa: E402


def tensor_bytes(tensors):
    return sum(t.numel() * t.element_size() for t in tensors)


def running_peak(prof):
    """The maximum over time of the allocator's bytes in use, from 0 at the start."""
    events = [e for e in prof.profiler.kineto_results.events() if e.name() == "[memory]"]
    events.sort(key=lambda e: e.start_us())  # stable: same-microsecond events keep their order
    now = peak = 0
    for e in events:
        now += e.nbytes()
        peak = max(peak, now)
    return peak, len(events)


def measure(name, batch, val_batch, threads, bf16, channels_last, seed=42):
    torch.manual_seed(seed)
    torch.set_num_threads(threads)
    model = pytorch_models.build(name)
    shape, classes = pytorch_models.input_of(name)
    fmt = torch.channels_last if channels_last else torch.contiguous_format
    model = model.to(memory_format=fmt)
    params = list(model.parameters())
    opt = pytorch_models.make_optimizer(name, params)
    loss_fn = nn.CrossEntropyLoss()
    x = torch.randn(batch, *shape).contiguous(memory_format=fmt)
    y = torch.randint(0, classes, (batch,))

    def train_step():
        model.train()
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
            loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=False)  # the gradients stay: they are parameter state

    def val_forward():
        model.eval()
        if bf16:
            # PyTorch 1.13's inference fast path for nn.MultiheadAttention fails under bf16
            # autocast ("expected scalar type BFloat16 but found Float"); in training mode (its
            # dropout is 0) it computes the same output the way training does.
            for m in model.modules():
                if isinstance(m, nn.MultiheadAttention):
                    m.train()
        xv = torch.randn(val_batch, *shape).contiguous(memory_format=fmt)
        with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
            model(xv)

    for _ in range(2):
        train_step()
    val_forward()
    state = [v for s in opt.state.values() for v in s.values() if torch.is_tensor(v)]
    held = (tensor_bytes(params) + tensor_bytes(p.grad for p in params if p.grad is not None) +
            tensor_bytes(state) + tensor_bytes([x, y]))
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        train_step()
    train_peak, train_events = running_peak(prof)
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        val_forward()
    val_peak, val_events = running_peak(prof)
    return {"model": name, "batch": batch, "val_batch": val_batch, "threads": threads,
            "precision": "bf16 autocast" if bf16 else "fp32",
            "layout": "channels_last" if channels_last else "nchw",
            "parameters": sum(p.numel() for p in params),
            "optimizer": type(opt).__name__,
            "held_bytes": held, "train_peak_bytes": train_peak, "val_peak_bytes": val_peak,
            "peak_bytes": held + max(train_peak, val_peak),
            "allocator_events": [train_events, val_events],
            "torch": torch.__version__}


def fitted(name, fit, batch, val_batch, threads, bf16, channels_last):
    """Measures at two batches and extends every byte figure linearly to the given batches."""
    if val_batch != batch:
        sys.exit("pytorch_allocator_peak.py: --fit extends training and validation together, "
                 "so it needs --val-batch equal to --batch (got %d and %d)" % (batch, val_batch))
    b1, b2 = fit
    r1 = measure(name, b1, b1, threads, bf16, channels_last)
    r2 = measure(name, b2, b2, threads, bf16, channels_last)
    out = dict(r2)
    for key in ("held_bytes", "train_peak_bytes", "val_peak_bytes"):
        slope = (r2[key] - r1[key]) / (b2 - b1)
        out[key] = int(round(r2[key] + slope * (batch - b2)))
    out["peak_bytes"] = out["held_bytes"] + max(out["train_peak_bytes"], out["val_peak_bytes"])
    out["batch"] = out["val_batch"] = batch
    out["fitted_from"] = {str(b1): r1["peak_bytes"], str(b2): r2["peak_bytes"]}
    return out


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", required=True, choices=sorted(pytorch_models.MODELS))
    p.add_argument("--batch", type=int, help="training batch (default: the project's)")
    p.add_argument("--val-batch", type=int, help="validation batch (default: the project's)")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--bf16", type=int, choices=(0, 1), default=0)
    p.add_argument("--fit", help="B1,B2: measure at these batches, extend linearly to --batch")
    p.add_argument("--layout", choices=("nchw", "channels_last", "both"), default="both",
                   help="the memory format of the model and its inputs; both (the default) "
                        "measures each and gives the leaner, the other under 'other_layout'")
    a = p.parse_args()
    train, val = pytorch_models.project_batches(pytorch_models.MODELS[a.model][2])
    if train is None:
        sys.exit("pytorch_allocator_peak.py: cannot read the project of %s" % a.model)
    batch = a.batch or train
    val_batch = a.val_batch or (batch if a.batch and not a.val_batch and val == train else val)
    if a.fit:
        try:
            b1, b2 = (int(v) for v in a.fit.split(","))
        except ValueError:
            p.error("--fit takes two batches, e.g. --fit 2,4 (got '%s')" % a.fit)
        if not 0 < b1 < b2:
            p.error("--fit needs 0 < B1 < B2 (got %d,%d)" % (b1, b2))
    layouts = [False, True] if a.layout == "both" else [a.layout == "channels_last"]
    runs = []
    for channels_last in layouts:
        if a.fit:
            runs.append(fitted(a.model, (b1, b2), batch, val_batch, a.threads, bool(a.bf16),
                               channels_last))
        else:
            runs.append(measure(a.model, batch, val_batch, a.threads, bool(a.bf16),
                                channels_last))
    runs.sort(key=lambda r: r["peak_bytes"])
    r = runs[0]
    if len(runs) > 1:
        r["other_layout"] = {k: runs[1][k] for k in ("layout", "peak_bytes", "train_peak_bytes",
                                                     "val_peak_bytes")}
    print(json.dumps(r))


if __name__ == "__main__":
    main()
