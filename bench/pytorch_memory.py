# SPDX-License-Identifier: GPL-3.0-or-later
# Measures on the CPU the memory PyTorch needs to train the projects' models, to set beside our plans.
"""What PyTorch needs in memory to train the models of projects/ on the CPU:
parameter state, the working set of one training step, the tensors saved for
backward and the working set of one validation forward, as one JSON line.

  /usr/bin/python3 bench/pytorch_memory.py --model lenet --batch 128 --val-batch 1000 --threads 2
  /usr/bin/python3 bench/pytorch_memory.py --model resnet50 --batch 8 --val-batch 8 \\
      --scale-to-batch 256 --scale-to-val-batch 250

--batch and --val-batch default to the project's training and validation
batches (projects/*.json: training.global_batch and the validation variant's
batch); for resnet50 they default to 8 and the figures are scaled to the
project's 256 and 250 (--scale-to-batch, --scale-to-val-batch).

Fields (bytes):
  param_state_bytes        3 x the parameters (weights, gradients, SGD momentum
                           buffer; 4 x with Adam's two moments for the
                           transformers) + the BN running statistics once
  input_bytes              the training batch and its labels (not in any figure
                           below: our plan has input buffers of its own);
                           val_input_bytes the same for validation
  train_step_peak_bytes    forward, CrossEntropyLoss and backward at --batch,
                           above a baseline taken just before the forward (the
                           parameter state, zeroed gradients and the input
                           already exist)
  saved_for_backward_bytes the storages that autograd saved in the forward of
                           one such step, each counted once, parameters left out
  val_forward_peak_bytes   one torch.no_grad() forward in eval mode at
                           --val-batch, above its baseline
  needs_bytes              param_state_bytes + max(train_step_peak_bytes,
                           val_forward_peak_bytes)

Memory in use is glibc's mallinfo2(): uordblks + hblkhd, the bytes malloc has
handed out from its arenas and as mmapped blocks (PyTorch's CPU allocator is
malloc). It is sampled at every leaf module's forward pre-hook and forward
hook, at every parameter's gradient hook (in backward), after the loss and
after backward, and by a background thread every --sampler-us microseconds,
which sees inside an operator as well; the hook-only peak is reported too.
"""
import argparse
import ctypes
import gc
import json
import os
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))


# Thread counts must be in the environment before torch (and OpenBLAS) load:
# pytorch_models sets them from --threads when it is imported; two by default.
if not any(a == "--threads" or a.startswith("--threads=") for a in sys.argv[1:]):
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "2")
    os.environ.setdefault("OMP_NUM_THREADS", "2")

sys.path.insert(0, HERE)
sys.dont_write_bytecode = True  # no bench/__pycache__ from importing the twins
import pytorch_models  # noqa: E402  (the Fashion-MNIST twins; imports torch or says how to get it)
import torch  # noqa: E402
from torch import nn  # noqa: E402

RESNET50_PROJECT = "resnet50.json"
RESNET50_INPUT = (3, 224, 224)
RESNET50_CLASSES = 1000


# ---------------------------------------------------------------- malloc probe

class _MallInfo2(ctypes.Structure):
    _fields_ = [(n, ctypes.c_size_t) for n in (
        "arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks",
        "uordblks", "fordblks", "keepcost")]


def _load_mallinfo2():
    try:
        libc = ctypes.CDLL("libc.so.6")
        f = libc.mallinfo2
    except (OSError, AttributeError) as e:
        sys.exit("pytorch_memory.py: glibc's mallinfo2 is not available (%s); it needs "
                 "glibc 2.33 or newer" % e)
    f.restype = _MallInfo2
    f.argtypes = []
    return f


_mallinfo2 = _load_mallinfo2()


def in_use():
    """Bytes malloc has handed out and not had back: arena chunks in use plus mmapped blocks."""
    m = _mallinfo2()
    return m.uordblks + m.hblkhd


class Probe:
    """The peak of in_use() over one measured stretch, from hooks and a background thread."""

    def __init__(self, sampler_us):
        self.sampler_us = sampler_us
        self.active = False
        self.baseline = 0
        self.peak = 0
        self.peak_at = ""
        self.samples = 0
        self._thread_peak = 0
        self._thread_samples = 0
        self._stop = threading.Event()
        self._thread = None

    def sample(self, where):
        if not self.active:
            return
        v = in_use()
        self.samples += 1
        if v > self.peak:
            self.peak, self.peak_at = v, where

    def _run(self):
        interval = self.sampler_us / 1e6
        while not self._stop.is_set():
            v = in_use()  # ctypes lets go of the GIL for the call
            self._thread_samples += 1
            if v > self._thread_peak:
                self._thread_peak = v
            time.sleep(interval)

    def start(self):
        gc.collect()
        self.baseline = in_use()
        self.peak, self.peak_at, self.samples = self.baseline, "baseline", 0
        self._thread_peak, self._thread_samples = self.baseline, 0
        if self.sampler_us > 0:
            self._stop.clear()
            self._thread = threading.Thread(target=self._run, daemon=True)
            self._thread.start()
        self.active = True

    def stop(self):
        self.active = False
        if self._thread is not None:
            self._stop.set()
            self._thread.join()
            self._thread = None
        hooks = self.peak - self.baseline
        both = max(self.peak, self._thread_peak) - self.baseline
        return {"peak_bytes": both, "peak_hooks_bytes": hooks,
                "peak_at": self.peak_at if self.peak >= self._thread_peak else "sampler thread",
                "hook_samples": self.samples, "thread_samples": self._thread_samples,
                "baseline_bytes": self.baseline}


def attach(model, probe):
    """Forward pre- and post-hooks on every leaf module, a gradient hook on every parameter."""
    handles = []
    for name, m in model.named_modules():
        if any(True for _ in m.children()):
            continue
        handles.append(m.register_forward_pre_hook(
            lambda mod, inp, n=name: probe.sample("before " + n)))
        handles.append(m.register_forward_hook(
            lambda mod, inp, out, n=name: probe.sample("after " + n)))
    for name, p in model.named_parameters():
        handles.append(p.register_hook(lambda g, n=name: probe.sample("grad " + n)))
    return handles


# ---------------------------------------------------------------- models

def make_model(name):
    """(model, per-sample input shape, classes, project file)."""
    if name == "resnet50":
        try:
            import torchvision
        except ImportError as e:
            sys.exit("pytorch_memory.py: resnet50 needs torchvision (%s); install it with "
                     "`apt-get install python3-torchvision`" % e)
        return (torchvision.models.resnet50(num_classes=RESNET50_CLASSES), RESNET50_INPUT,
                RESNET50_CLASSES, RESNET50_PROJECT)
    shape, classes = pytorch_models.input_of(name)
    return (pytorch_models.build(name), shape, classes, pytorch_models.MODELS[name][2])


def storage_key(t):
    """(data pointer, bytes) of the whole storage behind t."""
    try:
        s = t.untyped_storage() if hasattr(t, "untyped_storage") else t.storage()
        return s.data_ptr(), s.nbytes()
    except (RuntimeError, NotImplementedError):
        return t.data_ptr(), t.numel() * t.element_size()


# ---------------------------------------------------------------- measurements

def measure(name, batch, val_batch, threads, channels_last, warmup, sampler_us, seed=42):
    torch.manual_seed(seed)
    torch.set_num_threads(threads)
    model, shape, classes, _ = make_model(name)
    fmt = torch.channels_last if channels_last else torch.contiguous_format
    model = model.to(memory_format=fmt)
    params = list(model.parameters())
    param_bytes = sum(p.numel() * p.element_size() for p in params)
    buffer_bytes = sum(b.numel() * b.element_size() for b in model.buffers())
    param_ptrs = {storage_key(p)[0] for p in params}

    x = torch.randn(batch, *shape).contiguous(memory_format=fmt)
    y = torch.randint(0, classes, (batch,))
    loss_fn = nn.CrossEntropyLoss()
    opt = pytorch_models.make_optimizer(name, params)
    # Weights, gradients and the optimizer's state per weight: momentum, or Adam's two moments.
    copies = 4 if isinstance(opt, torch.optim.Adam) else 3
    model.train()

    def step():
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=False)  # the gradients stay: they are parameter state

    # Warm-up: gradients, momentum buffers and oneDNN's primitive caches come to exist here.
    for _ in range(warmup):
        step()

    # The tensors autograd saves, counted in a step of their own so that the hooks that see
    # them cannot change the measured step. Only (pointer, size) is kept, never the tensor.
    saved = {}
    input_ptr = storage_key(x)[0]

    def pack(t):
        ptr, nbytes = storage_key(t)
        if ptr not in param_ptrs and nbytes > 0:
            saved[ptr] = max(saved.get(ptr, 0), nbytes)
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        loss = loss_fn(model(x), y)
    loss.backward()
    opt.zero_grad(set_to_none=False)  # no optimizer step: this batch's gradients are dropped
    del loss

    probe = Probe(sampler_us)
    handles = attach(model, probe)

    # The measured training step: forward, loss, backward (the optimizer step is outside).
    probe.start()
    loss = loss_fn(model(x), y)
    probe.sample("after loss")
    loss.backward()
    probe.sample("after backward")
    train = probe.stop()
    del loss
    opt.step()
    opt.zero_grad(set_to_none=False)

    # Validation: eval mode, no autograd, a warm-up forward first (oneDNN caches per shape).
    model.eval()
    xv = torch.randn(val_batch, *shape).contiguous(memory_format=fmt)
    with torch.no_grad():
        out = model(xv)  # the hooks are there but the probe is off until start()
        del out
        probe.start()
        out = model(xv)
        probe.sample("after output")
        val = probe.stop()
        del out
    for h in handles:
        h.remove()

    param_state = copies * param_bytes + buffer_bytes
    r = {
        "model": name, "batch": batch, "val_batch": val_batch, "threads": threads,
        "channels_last": int(bool(channels_last)),
        "parameters": sum(p.numel() for p in params),
        "parameter_bytes": param_bytes, "buffer_bytes": buffer_bytes,
        "param_state_bytes": param_state,
        "input_bytes": x.numel() * x.element_size() + y.numel() * y.element_size(),
        "val_input_bytes": xv.numel() * xv.element_size(),
        "train_step_peak_bytes": train["peak_bytes"],
        "train_step_peak_hooks_bytes": train["peak_hooks_bytes"],
        "train_step_peak_at": train["peak_at"],
        "train_step_samples": [train["hook_samples"], train["thread_samples"]],
        "saved_for_backward_bytes": sum(saved.values()),
        "saved_for_backward_storages": len(saved),
        "saved_for_backward_input_bytes": saved.get(input_ptr, 0),
        "val_forward_peak_bytes": val["peak_bytes"],
        "val_forward_peak_hooks_bytes": val["peak_hooks_bytes"],
        "val_forward_peak_at": val["peak_at"],
        "val_forward_samples": [val["hook_samples"], val["thread_samples"]],
        "needs_bytes": param_state + max(train["peak_bytes"], val["peak_bytes"]),
        "warmup_steps": warmup, "sampler_us": sampler_us,
        "torch": torch.__version__,
    }
    return r


def _extrapolate(v1, b1, v2, b2, to):
    """v at batch `to`: proportional to the batch from (b1, v1), or on the line through
    (b1, v1) and (b2, v2) when a second point is given."""
    if v2 is None or b2 == b1:
        return int(round(v1 * to / b1))
    return int(round(v1 + (v2 - v1) / (b2 - b1) * (to - b1)))


def scale(r, to_batch, to_val_batch, fp16_halving, fit=None):
    """Scales the working sets linearly in the batch; with fp16_halving, adds an AMP estimate.
    fit: a second measurement (another batch); then the scaling has an intercept."""
    def ext(key, batch_key, to):
        return _extrapolate(r[key], r[batch_key], fit[key] if fit else None,
                            fit[batch_key] if fit else None, to)

    s = {
        "scale_to_batch": to_batch, "scale_to_val_batch": to_val_batch,
        "train_step_peak_bytes_scaled": ext("train_step_peak_bytes", "batch", to_batch),
        "saved_for_backward_bytes_scaled": ext("saved_for_backward_bytes", "batch", to_batch),
        "val_forward_peak_bytes_scaled": ext("val_forward_peak_bytes", "val_batch", to_val_batch),
    }
    working = max(s["train_step_peak_bytes_scaled"], s["val_forward_peak_bytes_scaled"])
    s["needs_bytes_scaled"] = r["param_state_bytes"] + working
    how = ("measured at batch %d (validation %d) and scaled linearly to %d (%d)"
           % (r["batch"], r["val_batch"], to_batch, to_val_batch))
    if fit:
        s["fit"] = {k: fit[k] for k in ("batch", "val_batch", "train_step_peak_bytes",
                                        "saved_for_backward_bytes", "val_forward_peak_bytes")}
        how = ("measured at batches %d and %d (validation %d and %d) and extrapolated on the "
               "line through them to %d (%d)" % (r["batch"], fit["batch"], r["val_batch"],
                                                 fit["val_batch"], to_batch, to_val_batch))
    if fp16_halving:
        s["amp_estimate_bytes"] = (r["param_state_bytes"] + r["parameter_bytes"] // 2
                                   + working // 2)
        s["note"] = ("FP32, " + how + "; amp_estimate_bytes = FP32 parameter state (master "
                     "weights, gradients, momentum, BN statistics) + an FP16 copy of the "
                     "weights (0.5 x W) + the scaled working set halved (FP16 activations): "
                     "an estimate, not a measurement")
    else:
        s["note"] = how
    return s


def main():
    names = sorted(pytorch_models.MODELS) + ["resnet50"]
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", choices=names, required=True)
    p.add_argument("--batch", type=int, help="training batch (default: the project's; resnet50 8)")
    p.add_argument("--val-batch", type=int,
                   help="validation batch (default: the project's; resnet50 8)")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--channels-last", choices=("0", "1", "both"),
                   help="memory format: 0 NCHW, 1 channels_last, both: measure each and report "
                        "the one that needs less (default: 1 for resnet50, else both)")
    p.add_argument("--scale-to-batch", type=int,
                   help="scale the training working set to this batch (default for resnet50: "
                        "the project's, 256)")
    p.add_argument("--scale-to-val-batch", type=int,
                   help="scale the validation working set to this batch (default for resnet50: "
                        "the project's, 250)")
    p.add_argument("--fp16-halving", action=argparse.BooleanOptionalAction, default=None,
                   help="with scaling, add amp_estimate_bytes: FP32 state + FP16 weights + the "
                        "working set halved (default: on for resnet50)")
    p.add_argument("--fit-batch", type=int,
                   help="with scaling, also measure at this batch (training and validation) "
                        "and extrapolate on the line through both points instead of "
                        "proportionally (the batch-independent part then does not scale)")
    p.add_argument("--warmup", type=int, default=2, help="training steps before measuring")
    p.add_argument("--sampler-us", type=float, default=200,
                   help="background sampling interval in microseconds; 0: hooks only")
    a = p.parse_args()

    project = RESNET50_PROJECT if a.model == "resnet50" else pytorch_models.MODELS[a.model][2]
    proj_batch, proj_val = pytorch_models.project_batches(project)
    r50 = a.model == "resnet50"
    batch = a.batch or (8 if r50 else proj_batch or 128)
    val_batch = a.val_batch or (8 if r50 else proj_val or batch)
    to_batch = a.scale_to_batch or (proj_batch or 256 if r50 else None)
    to_val = a.scale_to_val_batch or (proj_val or 250 if r50 else None)
    if to_batch and not to_val:
        to_val = to_batch * val_batch // batch
    if to_val and not to_batch:
        to_batch = batch
    formats = a.channels_last or ("1" if r50 else "both")
    fp16 = a.fp16_halving if a.fp16_halving is not None else r50

    results = []
    if formats in ("1", "both"):
        try:
            results.append(measure(a.model, batch, val_batch, a.threads, True, a.warmup,
                                   a.sampler_us))
        except RuntimeError as e:  # fall back to NCHW rather than give no figure
            print("pytorch_memory.py: channels_last failed (%s); measuring NCHW" % e,
                  file=sys.stderr)
    if formats in ("0", "both") or not results:
        results.append(measure(a.model, batch, val_batch, a.threads, False, a.warmup,
                               a.sampler_us))
    r = min(results, key=lambda q: q["needs_bytes"])  # PyTorch in its better format
    r["formats"] = {("channels_last" if q["channels_last"] else "nchw"): {
        k: q[k] for k in ("needs_bytes", "train_step_peak_bytes", "val_forward_peak_bytes",
                          "saved_for_backward_bytes")} for q in results}
    r["project"] = project
    if to_batch:
        fit = None
        if a.fit_batch:
            fit = measure(a.model, a.fit_batch, a.fit_batch, a.threads, bool(r["channels_last"]),
                          a.warmup, a.sampler_us)
        r.update(scale(r, to_batch, to_val, fp16, fit))
    print(json.dumps(r))


if __name__ == "__main__":
    main()
