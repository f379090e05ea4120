#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""Checks an ONNX file `renaissance-cli onnx export` wrote against the
checkpoint it came from: onnx.checker (full check) and strict shape
inference, then the numbers. The ONNX graph is evaluated in NCHW, node by
node as the ONNX operator specification defines its operators; the reference is the project's model computed in the engine's own
NHWC layout with numpy straight from the checkpoint's tensors. The two
share no layout code, so a wrong transpose, flatten order or BN form shows.

usage: check_export.py MODEL.onnx CHECKPOINT [--softmax] [--ema]
(--ema: the file holds the checkpoint's EMA weights, not the trained ones)
Prints one line per check; exits 0 when all pass, 1 on a mismatch and 77
when onnx or numpy is missing (the test reports itself skipped)."""
import json
import math
import struct
import sys

try:
    import numpy as np
    import onnx
    from onnx import numpy_helper
except ImportError as e:  # pragma: no cover
    print("SKIP: %s (apt-get install python3-onnx)" % e)
    sys.exit(77)


def read_checkpoint(path):
    b = open(path, "rb").read()
    assert b[:8] == b"RWBCKPT\n", "not a checkpoint"
    h = struct.unpack("<Q", b[12:20])[0]
    head = json.loads(b[20:20 + h])
    data = 24 + h
    tensors = {}
    for t in head["tensors"]:
        v = np.frombuffer(b, dtype="<f4", count=t["bytes"] // 4, offset=data + t["offset"])
        tensors[(t["region"], t["name"])] = v.reshape(t["shape"]).astype(np.float64)
    return head, tensors


EMA = "--ema" in sys.argv[3:]


def weight(tensors, name):
    series = ("E_", "B_PREV") if EMA else ("W_", "B_PREV")
    for (region, n), v in tensors.items():
        if n == name and region.startswith(series):
            return v
    raise KeyError(name)


# ---- the reference: the project's model in NHWC, from the checkpoint ----

def windows(x, kh, kw, sh, sw, ph, pw, fill):
    n, h, w, c = x.shape
    xp = np.full((n, h + 2 * ph, w + 2 * pw, c), fill)
    xp[:, ph:ph + h, pw:pw + w, :] = x
    v = np.lib.stride_tricks.sliding_window_view(xp, (kh, kw), axis=(1, 2))
    return v[:, ::sh, ::sw]  # [n, oh, ow, c, kh, kw]


def token_linear(tensors, nid, x, bias):
    """One matrix for every position."""
    wt = weight(tensors, nid + ".weight")  # [out, 1, 1, in]
    y = x @ wt.reshape(wt.shape[0], -1).T
    return y + weight(tensors, nid + ".bias").reshape(-1) if bias else y


def self_attention(x, heads):
    """[N,H,W,3C] -> [N,H,W,C], head h on channels h*d.. of each third."""
    n_, h_, w_, c3 = x.shape
    c = c3 // 3
    d = c // heads
    tok = x.reshape(n_, h_ * w_, 3, heads, d)
    q, k, v = (tok[:, :, i].transpose(0, 2, 1, 3) for i in range(3))  # [N, heads, T, d]
    s = q @ k.transpose(0, 1, 3, 2) / math.sqrt(d)
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    o = (e / e.sum(axis=-1, keepdims=True)) @ v  # [N, heads, T, d]
    return o.transpose(0, 2, 1, 3).reshape(n_, h_, w_, c)


def reference(project, tensors, x_nhwc):
    nodes = {n["id"]: n for n in project["model"]["nodes"]}
    inputs = {}
    for e in project["model"]["edges"]:
        inputs.setdefault(e["to"], {})[e.get("to_port", 0)] = e["from"]
    out = {}
    order = []
    pending = list(nodes)
    while pending:  # topological order
        for nid in pending:
            if all(src in out or src in order for src in inputs.get(nid, {}).values()):
                order.append(nid)
                out[nid] = None
                pending.remove(nid)
                break
    out = {}
    for nid in order:
        n = nodes[nid]
        t = n["type"]
        p = n.get("params", {})
        ins = [out[inputs[nid][k]] for k in sorted(inputs.get(nid, {}))]
        x = ins[0] if ins else None

        def pair(key, default):
            v = p.get(key, default)
            return (v, v) if isinstance(v, int) else tuple(v)

        if t == "Input":
            y = x_nhwc
        elif t == "Conv2d":
            kh, kw = pair("kernel", 1)
            sh, sw = pair("stride", 1)
            ph, pw = pair("padding", 0)
            g = p.get("groups", 1)
            wt = weight(tensors, nid + ".weight")  # [O, KH, KW, I/g]
            o = wt.shape[0]
            win = windows(x, kh, kw, sh, sw, ph, pw, 0.0)
            cg, og = x.shape[3] // g, o // g
            parts = [np.einsum("nhwckl,oklc->nhwo", win[:, :, :, j * cg:(j + 1) * cg],
                               wt[j * og:(j + 1) * og]) for j in range(g)]
            y = np.concatenate(parts, axis=3)
            if p.get("bias", True):
                y = y + weight(tensors, nid + ".bias").reshape(-1)
        elif t == "BatchNorm2d":
            eps = p.get("eps", 1e-5)
            m = weight(tensors, nid + ".running_mean").reshape(-1)
            v = weight(tensors, nid + ".running_var").reshape(-1)
            y = (x - m) / np.sqrt(v + eps) * weight(tensors, nid + ".weight").reshape(-1) \
                + weight(tensors, nid + ".bias").reshape(-1)
        elif t == "TokenLinear":
            y = token_linear(tensors, nid, x, p.get("bias", True))
        elif t == "SelfAttention":
            y = self_attention(x, p["heads"])
        elif t == "MultiHeadSelfAttention":  # its parts, as the engine compiles it
            bias = p.get("bias", True)
            y = token_linear(tensors, nid + ".in_proj", x, bias)
            y = token_linear(tensors, nid + ".out_proj", self_attention(y, p["heads"]), bias)
        elif t == "PositionEmbedding":
            y = x + weight(tensors, nid + ".weight").reshape(1, *x.shape[1:])
        elif t == "ClassToken":  # [N,H,W,C] -> [N,1,1+H*W,C]
            tok = np.broadcast_to(weight(tensors, nid + ".weight").reshape(1, 1, 1, -1),
                                  (x.shape[0], 1, 1, x.shape[3]))
            y = np.concatenate([tok, x.reshape(x.shape[0], 1, -1, x.shape[3])], axis=2)
        elif t == "TokenPool":
            tokens = x.reshape(x.shape[0], -1, x.shape[3])
            first = p.get("class_token", True)
            y = (tokens[:, :1] if first else tokens.mean(axis=1, keepdims=True)).reshape(
                x.shape[0], 1, 1, -1)
        elif t == "LayerNorm":  # over the channels of each position
            eps = p.get("eps", 1e-5)
            m = x.mean(axis=3, keepdims=True)
            v = ((x - m) ** 2).mean(axis=3, keepdims=True)
            y = (x - m) / np.sqrt(v + eps) * weight(tensors, nid + ".weight").reshape(-1) \
                + weight(tensors, nid + ".bias").reshape(-1)
        elif t == "ReLU":
            y = np.maximum(x, 0)
        elif t == "ReLU6":
            y = np.clip(x, 0, 6)
        elif t == "LeakyReLU":
            y = np.where(x > 0, x, p.get("negative_slope", 0.01) * x)
        elif t == "Tanh":
            y = np.tanh(x)
        elif t == "Sigmoid":
            y = 1 / (1 + np.exp(-x))
        elif t == "SiLU":
            y = x / (1 + np.exp(-x))
        elif t == "GELU":
            y = 0.5 * x * (1 + np.vectorize(math.erf)(x / math.sqrt(2)))
        elif t in ("MaxPool2d", "AvgPool2d"):
            kh, kw = pair("kernel", 1)
            sh, sw = pair("stride", pair("kernel", 1))
            ph, pw = pair("padding", 0)
            if t == "MaxPool2d":
                y = windows(x, kh, kw, sh, sw, ph, pw, -np.inf).max(axis=(4, 5))
            else:  # count_include_pad, as torch's default
                y = windows(x, kh, kw, sh, sw, ph, pw, 0.0).sum(axis=(4, 5)) / (kh * kw)
        elif t == "GlobalAvgPool":
            y = x.mean(axis=(1, 2), keepdims=True)
        elif t in ("Dropout",):
            y = x
        elif t == "Flatten":
            y = x.reshape(x.shape[0], 1, 1, -1)  # HWC order
        elif t == "Linear":
            wt = weight(tensors, nid + ".weight")  # [out, 1, 1, in]
            y = x.reshape(x.shape[0], -1) @ wt.reshape(wt.shape[0], -1).T
            if p.get("bias", True):
                y = y + weight(tensors, nid + ".bias").reshape(-1)
            y = y.reshape(y.shape[0], 1, 1, -1)
        elif t == "Add":
            y = sum(ins)
        elif t == "Concat":
            y = np.concatenate(ins, axis=3)
        elif t == "SoftmaxCrossEntropy":
            return x.reshape(x.shape[0], -1)
        else:
            raise AssertionError("no reference for " + t)
        out[nid] = y
    raise AssertionError("no loss")


# ---- the ONNX graph, operator by operator, in NCHW ----

def attrs(node):
    return {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}


def nchw_windows(x, kernel, strides, pads, fill):
    n, c, h, w = x.shape
    ph0, pw0, ph1, pw1 = pads
    xp = np.full((n, c, h + ph0 + ph1, w + pw0 + pw1), fill)
    xp[:, :, ph0:ph0 + h, pw0:pw0 + w] = x
    v = np.lib.stride_tricks.sliding_window_view(xp, tuple(kernel), axis=(2, 3))
    return v[:, :, ::strides[0], ::strides[1]]  # [n, c, oh, ow, kh, kw]


def run_onnx(model, x_nchw):
    env = {i.name: numpy_helper.to_array(i).astype(np.float64) for i in model.graph.initializer}
    env[model.graph.input[0].name] = x_nchw
    for n in model.graph.node:
        a = attrs(n)
        i = [env[k] for k in n.input]
        op = n.op_type
        if op == "Conv":
            wt = i[1]  # [O, I/g, KH, KW]
            g = a.get("group", 1)
            assert a.get("dilations", [1, 1]) == [1, 1]
            win = nchw_windows(i[0], wt.shape[2:], a.get("strides", [1, 1]),
                               a.get("pads", [0, 0, 0, 0]), 0.0)
            cg, og = i[0].shape[1] // g, wt.shape[0] // g
            y = np.concatenate([np.einsum("nchwkl,ockl->nohw", win[:, j * cg:(j + 1) * cg],
                                          wt[j * og:(j + 1) * og]) for j in range(g)], axis=1)
            if len(i) > 2:
                y = y + i[2].reshape(1, -1, 1, 1)
        elif op == "BatchNormalization":
            r = lambda v: v.reshape(1, -1, 1, 1)
            y = (i[0] - r(i[3])) / np.sqrt(r(i[4]) + a.get("epsilon", 1e-5)) * r(i[1]) + r(i[2])
        elif op == "MaxPool":
            y = nchw_windows(i[0], a["kernel_shape"], a["strides"], a.get("pads", [0] * 4),
                             -np.inf).max(axis=(4, 5))
        elif op == "AveragePool":
            assert a.get("count_include_pad", 0) == 1
            k = a["kernel_shape"]
            y = nchw_windows(i[0], k, a["strides"], a.get("pads", [0] * 4),
                             0.0).sum(axis=(4, 5)) / (k[0] * k[1])
        elif op == "GlobalAveragePool":
            y = i[0].mean(axis=(2, 3), keepdims=True)
        elif op == "Relu":
            y = np.maximum(i[0], 0)
        elif op == "Tanh":
            y = np.tanh(i[0])
        elif op == "Sigmoid":
            y = 1 / (1 + np.exp(-i[0]))
        elif op == "Erf":
            y = np.vectorize(math.erf)(i[0])
        elif op == "LeakyRelu":
            y = np.where(i[0] > 0, i[0], a.get("alpha", 0.01) * i[0])
        elif op == "Clip":
            y = np.minimum(np.maximum(i[0], i[1]), i[2])
        elif op == "Add":
            y = sum(i)
        elif op == "Reshape":
            shape = [i[0].shape[k] if s == 0 else int(s) for k, s in enumerate(i[1])]
            y = i[0].reshape(shape)
        elif op == "Shape":
            y = np.array(i[0].shape, dtype=np.float64)
        elif op == "Slice":
            axes = [int(v) for v in i[3]] if len(i) > 3 else list(range(len(i[1])))
            index = [slice(None)] * i[0].ndim
            for ax, lo, hi in zip(axes, i[1], i[2]):
                index[ax] = slice(int(lo), int(hi))
            y = i[0][tuple(index)]
        elif op == "Expand":
            y = np.broadcast_to(i[0], [int(v) for v in i[1]]).copy()
        elif op == "Gather":
            y = np.take(i[0], i[1].astype(np.int64), axis=a.get("axis", 0))
        elif op == "Transpose":
            y = i[0].transpose(a["perm"])
        elif op == "MatMul":
            y = i[0] @ i[1]
        elif op == "Split":
            at = np.cumsum(i[1].astype(np.int64))[:-1]
            for name, part in zip(n.output, np.split(i[0], at, axis=a.get("axis", 0))):
                env[name] = part
            continue
        elif op == "ReduceMean":
            y = i[0].mean(axis=tuple(a["axes"]), keepdims=bool(a.get("keepdims", 1)))
        elif op == "Sub":
            y = i[0] - i[1]
        elif op == "Pow":
            y = i[0] ** i[1]
        elif op == "Sqrt":
            y = np.sqrt(i[0])
        elif op == "Mul":
            y = i[0] * i[1]
        elif op == "Div":
            y = i[0] / i[1]
        elif op == "Identity":
            y = i[0]
        elif op == "Flatten":
            ax = a.get("axis", 1)
            y = i[0].reshape(int(np.prod(i[0].shape[:ax])), -1)
        elif op == "Gemm":
            b = i[1].T if a.get("transB", 0) else i[1]
            y = i[0] @ b + (i[2] if len(i) > 2 else 0)
        elif op == "Concat":
            y = np.concatenate(i, axis=a["axis"])
        elif op == "Softmax":
            e = np.exp(i[0] - i[0].max(axis=a.get("axis", -1), keepdims=True))
            y = e / e.sum(axis=a.get("axis", -1), keepdims=True)
        else:
            raise AssertionError("no evaluator for " + op)
        env[n.output[0]] = y
    return env[model.graph.output[0].name]


def main():
    path, ckpt = sys.argv[1], sys.argv[2]
    softmax = "--softmax" in sys.argv[3:]
    model = onnx.load(path)
    onnx.checker.check_model(model, full_check=True)
    inferred = onnx.shape_inference.infer_shapes(model, strict_mode=True)
    assert model.opset_import[0].version == 13, model.opset_import
    out_dims = [d.dim_value or d.dim_param for d in
                inferred.graph.output[0].type.tensor_type.shape.dim]
    print("checker: ok, opset 13, output %s %s" % (inferred.graph.output[0].name, out_dims))
    head, tensors = read_checkpoint(ckpt)
    project = head["project"]
    inp = next(n for n in project["model"]["nodes"] if n["type"] == "Input")["params"]
    rng = np.random.default_rng(7)
    x = rng.standard_normal((3, inp["height"], inp["width"], inp["channels"]))
    want = reference(project, tensors, x)
    if softmax:
        e = np.exp(want - want.max(axis=1, keepdims=True))
        want = e / e.sum(axis=1, keepdims=True)
    got = run_onnx(model, np.ascontiguousarray(x.transpose(0, 3, 1, 2)))
    err = np.abs(got - want).max() / max(1e-30, np.abs(want).max())
    print("numbers: %d samples x %d outputs, largest relative difference %.3g" %
          (want.shape[0], want.shape[1], err))
    if got.shape != want.shape or not err < 1e-5:
        print("FAIL: the ONNX graph computes another function than the checkpoint's model")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
