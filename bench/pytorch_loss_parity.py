# SPDX-License-Identifier: GPL-3.0-or-later
# Our first training steps against PyTorch's from the same initial weights and batches.
"""Trains a project's first steps with the engine and with its PyTorch twin
(bench/pytorch_models.py) from the same initial weights on the same batches,
and prints both losses step by step with their relative difference.

  /usr/bin/python3 bench/pytorch_loss_parity.py --model vit-tiny [--steps 3]
      [--schedule project|constant] [--threads 2] [--cli build/bin/renaissance-cli]
      [--tolerance 1e-5] [--json]

How the two sides are made to agree:
- weights: the twin is built with torch.manual_seed(--seed) (PyTorch's own
  initialisation), its tensors are written into a checkpoint of the project
  (NCHW convolution kernels turned into our [O, KH, KW, I]; nn.MultiheadAttention's
  in_proj and out_proj are our MultiHeadSelfAttention's parts of those names) and the engine
  starts from it with `train --init-from`;
- batches: the engine's training order is a keyed Feistel permutation of the
  sample indices over Philox4x32-10 round keys (engine/data/permutation.cpp);
  this script computes the same order from the project's seed and normalises
  the pixels as the engine does ((v / 255 - mean) / std in double, then float);
- optimizer: torch.optim.Adam (L2 weight decay, as the engine's Adam) with the
  project's betas, eps and weight decay; each step's learning rate is the one
  the engine recorded for that step (`runs export`), so the schedule is the
  engine's on both sides.
--schedule constant trains a copy of the project at its peak learning rate from
the first step (the project's warm-up starts near 0, so its first updates are
tiny and the later losses test little).

Exits 0 when every step's losses agree within --tolerance (relative), 1 when
one does not, 2 on bad input and 77 (a test's "skipped") when torch or the
dataset is missing. FP32 only: the goal is about FP32 training. CTest runs it
as engine.pytorch_loss_parity (constant schedule, 3 steps)."""
import argparse
import csv
import gzip
import json
import os
import struct
import subprocess
import sys
import tempfile
import zlib

try:
    import numpy as np
    import torch  # noqa: F401 (pytorch_models needs it; checked here to skip cleanly)
except ImportError as e:
    print("SKIP: %s (apt-get install python3-torch)" % e)
    sys.exit(77)

import pytorch_models as pm

torch = pm.torch
nn = pm.nn

MASK64 = (1 << 64) - 1
MASK32 = (1 << 32) - 1
RNG_SHUFFLE = 1  # RngStream::Shuffle in engine/core/counter_rng.h


def philox4x32(ctr, key):
    """Philox4x32-10 block, as engine/core/counter_rng.h computes it."""
    c = list(ctr)
    k0, k1 = key
    for r in range(10):
        if r > 0:
            k0 = (k0 + 0x9E3779B9) & MASK32
            k1 = (k1 + 0xBB67AE85) & MASK32
        p0 = 0xD2511F53 * c[0]
        p1 = 0xCD9E8D57 * c[2]
        c = [((p1 >> 32) ^ c[1] ^ k0) & MASK32, p1 & MASK32,
             ((p0 >> 32) ^ c[3] ^ k1) & MASK32, p0 & MASK32]
    return c


def mix64(x):
    x ^= x >> 33
    x = (x * 0xFF51AFD7ED558CCD) & MASK64
    x ^= x >> 33
    x = (x * 0xC4CEB9FE1A85EC53) & MASK64
    x ^= x >> 33
    return x


class Permutation:
    """The engine's shuffled order of n samples for (seed, epoch)."""

    def __init__(self, n, seed, epoch):
        self.n = n
        bits = (n - 1).bit_length() if n > 1 else 0
        bits = max(bits, 2)
        bits += bits % 2
        self.half = bits // 2
        self.mask = (1 << self.half) - 1
        key = (seed & MASK32, (seed >> 32) & MASK32)
        self.keys = []
        for r in range(6):
            w = philox4x32((epoch & MASK32, epoch >> 32, r, RNG_SHUFFLE), key)
            self.keys.append((w[1] << 32) | w[0])

    def _feistel(self, x):
        left, right = x >> self.half, x & self.mask
        for k in self.keys:
            left, right = right, left ^ (mix64(right ^ k) & self.mask)
        return (left << self.half) | right

    def __call__(self, position):
        x = self._feistel(position)
        while x >= self.n:
            x = self._feistel(x)
        return x


def read_idx(path):
    with gzip.open(path, "rb") as f:
        b = f.read()
    dims = b[3]
    shape = struct.unpack(">" + "I" * dims, b[4:4 + 4 * dims])
    return np.frombuffer(b, dtype=np.uint8, offset=4 + 4 * dims).reshape(shape)


def read_checkpoint(path):
    b = open(path, "rb").read()
    if b[:8] != b"RWBCKPT\n":
        raise ValueError("%s is not a checkpoint" % path)
    h = struct.unpack("<Q", b[12:20])[0]
    return b, json.loads(b[20:20 + h]), 24 + h


def write_checkpoint(path, template, values):
    """A copy of the checkpoint `template` whose W tensors are `values` (name -> float32 array
    in our shape), with its checksums made again."""
    b, head, data = read_checkpoint(template)
    blob = bytearray(b[data:])
    for t in head["tensors"]:
        if t["region"].startswith("W_") and t["name"] in values:
            v = np.ascontiguousarray(values[t["name"]], dtype="<f4").tobytes()
            if len(v) != t["bytes"]:
                raise ValueError("%s: %d bytes for a tensor of %d" % (t["name"], len(v), t["bytes"]))
            blob[t["offset"]:t["offset"] + t["bytes"]] = v
            t["crc32"] = zlib.crc32(v) & MASK32
    header = json.dumps(head).encode()
    with open(path, "wb") as f:
        f.write(b"RWBCKPT\n" + struct.pack("<I", 1) + struct.pack("<Q", len(header)) + header +
                struct.pack("<I", zlib.crc32(header) & MASK32) + bytes(blob))


def torch_name(ours):
    """The twin's parameter name for one of our tensor names (bK_attn.in_proj.weight ->
    blocks.K-1.attn.in_proj_weight, bK_fc1.bias -> blocks.K-1.fc1.bias, ...)."""
    layer, _, kind = ours.rpartition(".")
    if layer.startswith("b") and "_" in layer and layer[1:layer.index("_")].isdigit():
        block, _, part = layer.partition("_")
        prefix = "blocks.%d." % (int(block[1:]) - 1)
        if part == "attn.in_proj":
            return prefix + "attn.in_proj_" + kind
        return prefix + part + "." + kind
    return ours


def twin_weights(model, head):
    """The twin's parameters in our layout, by our tensor names, for every W tensor of the
    checkpoint header `head`."""
    params = dict(model.named_parameters())
    out = {}
    for t in head["tensors"]:
        if not t["region"].startswith("W_"):
            continue
        name = torch_name(t["name"])
        if name not in params:
            raise ValueError("the PyTorch twin has no parameter %s for our %s" % (name, t["name"]))
        p = params[name].detach().numpy()
        if p.ndim == 4:  # a convolution kernel: [O, I, KH, KW] -> [O, KH, KW, I]
            p = p.transpose(0, 2, 3, 1)
        if p.size != int(np.prod(t["shape"])):
            raise ValueError("%s has %d values, our %s %d" % (name, p.size, t["name"],
                                                              int(np.prod(t["shape"]))))
        out[t["name"]] = p.reshape(t["shape"])
    return out


def run(cmd):
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if r.returncode != 0:
        sys.exit("pytorch_loss_parity.py: %s failed (%d):\n%s" % (" ".join(cmd), r.returncode,
                                                                  r.stdout))
    return r.stdout


def engine_steps(cli, project, init, steps, threads, work):
    """(losses, learning rates) of the engine's first `steps` steps from the checkpoint `init`."""
    store = os.path.join(work, "runs.sqlite")
    run([cli, "train", project, "--init-from", init, "--max-steps", str(steps), "--threads",
         str(threads), "--no-validation", "--store", store, "--precision", "fp32"])
    table = os.path.join(work, "steps.csv")
    run([cli, "runs", "export", "1", "--store", store, "--csv", table])
    rows = [r for r in csv.DictReader(open(table)) if r["kind"] == "step"]
    rows.sort(key=lambda r: int(r["step"]))
    return [float(r["loss"]) for r in rows], [float(r["lr"]) for r in rows]


def torch_steps(model, proj, data_dir, lrs, threads):
    """PyTorch's losses over the engine's first batches with the engine's learning rates."""
    torch.set_num_threads(threads)
    ds = proj["dataset"]
    images = read_idx(os.path.join(data_dir, "train-images-idx3-ubyte.gz"))
    labels = read_idx(os.path.join(data_dir, "train-labels-idx1-ubyte.gz"))
    mean, std = ds.get("mean", [0.0])[0], ds.get("std", [1.0])[0]
    lut = np.array([(v / 255.0 - mean) / std for v in range(256)], dtype=np.float32)
    tr = proj["training"]
    batch, seed = tr["global_batch"], tr.get("seed", 42)
    order = Permutation(len(images), seed, 0)
    o = tr["optimizer"]
    opt = torch.optim.Adam(model.parameters(), lr=o["lr"], betas=(o.get("beta1", 0.9),
                           o.get("beta2", 0.999)), eps=o.get("eps", 1e-8),
                           weight_decay=o.get("weight_decay", 0.0))
    loss_fn = nn.CrossEntropyLoss()
    model.train()
    losses = []
    for s, lr in enumerate(lrs):
        idx = [order(s * batch + i) for i in range(batch)]
        x = torch.from_numpy(lut[images[idx]]).unsqueeze(1)
        y = torch.from_numpy(labels[idx].astype(np.int64))
        for g in opt.param_groups:
            g["lr"] = lr
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        losses.append(loss.item())
    return losses


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", default="vit-tiny", choices=["vit-tiny"])
    p.add_argument("--steps", type=int, default=3)
    p.add_argument("--schedule", choices=["project", "constant"], default="project")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--cli", default=os.path.join(os.path.dirname(pm.PROJECTS_DIR), "build", "bin",
                                                  "renaissance-cli"))
    p.add_argument("--data", default="/usr/share/datasets/fashion-mnist",
                   help="the Fashion-MNIST folder (the project's dataset)")
    p.add_argument("--tolerance", type=float, default=1e-5)
    p.add_argument("--json", action="store_true", help="one JSON line instead of the table")
    a = p.parse_args()
    if a.steps < 1:
        p.error("--steps is %d; expected 1 or more" % a.steps)
    if not os.access(a.cli, os.X_OK):
        p.error("no renaissance-cli at %s; build the tree or pass --cli" % a.cli)
    if not os.path.isfile(os.path.join(a.data, "train-images-idx3-ubyte.gz")):
        print("SKIP: no Fashion-MNIST in %s (apt-get install dataset-fashion-mnist, or --data)" % a.data)
        sys.exit(77)
    proj_file = os.path.join(pm.PROJECTS_DIR, pm.MODELS[a.model][2])
    proj = json.load(open(proj_file))
    if proj["dataset"]["kind"] != "fashion-mnist":
        p.error("%s trains on %s; this script reads Fashion-MNIST only" %
                (proj_file, proj["dataset"]["kind"]))
    if proj["training"]["optimizer"]["type"] != "adam":
        p.error("%s uses %s; this script's twin optimizer is Adam" %
                (proj_file, proj["training"]["optimizer"]["type"]))
    with tempfile.TemporaryDirectory(prefix="loss-parity-") as work:
        if a.schedule == "constant":
            proj["training"]["schedule"] = {"type": "constant"}
        project = os.path.join(work, "project.json")
        json.dump(proj, open(project, "w"))
        # A checkpoint of the project gives the tensor list (names, shapes, offsets).
        run([a.cli, "train", project, "--max-steps", "1", "--no-validation", "--no-store",
             "--checkpoint-dir", os.path.join(work, "template"), "--precision", "fp32"])
        template = os.path.join(work, "template", os.listdir(os.path.join(work, "template"))[0])
        torch.manual_seed(proj["training"].get("seed", 42))
        model = pm.build(a.model)
        init = os.path.join(work, "init.ckpt")
        write_checkpoint(init, template, twin_weights(model, read_checkpoint(template)[1]))
        ours, lrs = engine_steps(a.cli, project, init, a.steps, a.threads, work)
        theirs = torch_steps(model, proj, a.data, lrs, a.threads)
    rel = [abs(x - y) / abs(y) for x, y in zip(ours, theirs)]
    ok = max(rel) <= a.tolerance
    if a.json:
        print(json.dumps({"model": a.model, "schedule": a.schedule, "threads": a.threads,
                          "ours": ours, "pytorch": theirs, "lr": lrs, "relative": rel,
                          "tolerance": a.tolerance, "ok": ok, "torch": torch.__version__}))
    else:
        print("%s, fp32, %s schedule, %d threads, PyTorch %s" % (a.model, a.schedule, a.threads,
                                                                 torch.__version__))
        print("step  learning rate   ours              PyTorch           relative")
        for s, (x, y, r, lr) in enumerate(zip(ours, theirs, rel, lrs)):
            print("%4d  %-14.6g  %.15f  %.15f  %.2e" % (s, lr, x, y, r))
        print("largest relative difference %.2e: %s (goal <= %g)" %
              (max(rel), "met" if ok else "NOT met", a.tolerance))
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
