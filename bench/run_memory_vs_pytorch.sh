#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# Compares our planned bytes per device with what PyTorch needs for the same training; times the compiler.
#
# usage: bench/run_memory_vs_pytorch.sh [--out FILE]
#   --out FILE  the table and every raw result as JSON (bench/results/memory_vs_pytorch.json)
# environment (defaults): BUILD_DIR (<repo>/build), PYTHON (/usr/bin/python3, needs torch and,
#   for resnet50, torchvision), MODELS ("lenet cnn-bn resnet8 resnet50"), THREADS (2),
#   R50_BATCH (8: the batch resnet50 is measured at, training and validation, FP32; the
#   figures are scaled to the project's 256 and 250), R50_FIT_BATCH (empty; a second batch
#   to measure resnet50 at, to extrapolate on a line instead of proportionally),
#   SAMPLER_US (200: pytorch_memory.py's background sampling interval),
#   COMPILE_REPEAT (20: bench_compile --repeat; 0 skips the compile timing).
# See bench/README.md.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$here/build}
cli=$build/bin/renaissance-cli
bench_compile=$build/bin/bench_compile
python=${PYTHON:-/usr/bin/python3}
memory_py=$here/bench/pytorch_memory.py
read -r -a models <<<"${MODELS:-lenet cnn-bn resnet8 resnet50}"
threads=${THREADS:-2}
r50_batch=${R50_BATCH:-8}
r50_fit=${R50_FIT_BATCH:-}
sampler_us=${SAMPLER_US:-200}
compile_repeat=${COMPILE_REPEAT:-20}
out=$here/bench/results/memory_vs_pytorch.json

while [ $# -gt 0 ]; do
  case $1 in
    --out) [ $# -ge 2 ] || { echo "run_memory_vs_pytorch.sh: --out needs a file" >&2; exit 2; }
           out=$2; shift 2 ;;
    --out=*) out=${1#--out=}; shift ;;
    -h|--help) sed -n '5,14p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "run_memory_vs_pytorch.sh: unknown argument '$1' (try --help)" >&2; exit 2 ;;
  esac
done

die() { echo "run_memory_vs_pytorch.sh: $*" >&2; exit 1; }
[ -x "$cli" ] || die "no renaissance-cli at $cli; build the tree or set BUILD_DIR"
[ -x "$python" ] || die "no Python at $python; set PYTHON to the interpreter that has torch"
if ! "$python" -c 'import torch' >/dev/null 2>&1; then
  die "PyTorch is not importable by $python; install it with:
  apt-get install python3-torch python3-torchvision
(or set PYTHON to an interpreter that has torch)"
fi
case " ${models[*]} " in
  *" resnet50 "*)
    "$python" -c 'import torchvision' >/dev/null 2>&1 ||
      die "resnet50 needs torchvision for $python (apt-get install python3-torchvision),
or leave it out: MODELS=\"lenet cnn-bn resnet8\"" ;;
esac

project_of() {
  case $1 in
    lenet) echo "$here/projects/lenet-fashion.json" ;;
    cnn-bn) echo "$here/projects/cnn-bn-fashion.json" ;;
    resnet8) echo "$here/projects/resnet8-fashion.json" ;;
    resnet50) echo "$here/projects/resnet50.json" ;;
    *) die "unknown model '$1' (lenet, cnn-bn, resnet8, resnet50)" ;;
  esac
}

# The training batch (training.global_batch) and the validation variant's batch of a project.
batches_of() {
  "$python" - "$1" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
train = d["training"]["global_batch"]
val = [v["batch"] for v in d.get("variants", []) if v.get("kind") == "validation" and "batch" in v]
print(train, val[-1] if val else train)
EOF
}

# Does this CLI's plan know --memory-packing? (The help is captured first: grep -q would
# close the pipe early, and pipefail would take the writer's SIGPIPE for "no".)
plan_help=$("$cli" plan --help 2>&1 || true)
packing_option=0
if grep -q -- '--memory-packing' <<<"$plan_help"; then packing_option=1; fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

for m in "${models[@]}"; do
  project=$(project_of "$m")
  [ -f "$project" ] || die "no project file $project"
  read -r batch val_batch < <(batches_of "$project") || true
  [ -n "${val_batch:-}" ] || die "cannot read the batches of $project"
  echo "== $m: plan $(basename "$project") (batch $batch, validation $val_batch)" >&2
  "$cli" plan "$project" --json > "$tmp/$m.plan.json"
  if [ "$packing_option" = 1 ]; then
    "$cli" plan "$project" --json --memory-packing off > "$tmp/$m.plan-unpacked.json"
  fi
  if [ "$m" = resnet50 ]; then
    echo "== $m: PyTorch at batch $r50_batch, scaled to $batch / $val_batch" \
         "(about a minute on two cores)" >&2
    "$python" "$memory_py" --model "$m" --threads "$threads" --sampler-us "$sampler_us" \
        --batch "$r50_batch" --val-batch "$r50_batch" \
        --scale-to-batch "$batch" --scale-to-val-batch "$val_batch" --fp16-halving \
        ${r50_fit:+--fit-batch "$r50_fit"} > "$tmp/$m.torch.json"
  else
    echo "== $m: PyTorch at batch $batch, validation $val_batch" >&2
    "$python" "$memory_py" --model "$m" --threads "$threads" --sampler-us "$sampler_us" \
        --batch "$batch" --val-batch "$val_batch" > "$tmp/$m.torch.json"
  fi
done

: > "$tmp/compile.jsonl"
if [ "$compile_repeat" != 0 ]; then
  if [ -x "$bench_compile" ]; then
    echo "== compile timing: bench_compile --repeat $compile_repeat projects/*.json" >&2
    "$bench_compile" --repeat "$compile_repeat" "$here"/projects/*.json > "$tmp/compile.jsonl"
  else
    echo "run_memory_vs_pytorch.sh: no $bench_compile (configure with TR_BENCH);" \
         "no compile timing" >&2
  fi
fi

mkdir -p "$(dirname "$out")"
"$python" - "$tmp" "$out" "$packing_option" "$threads" "${models[@]}" <<'EOF'
import datetime, json, os, platform, sys

tmp, out, packing_option, threads, models = (sys.argv[1], sys.argv[2], sys.argv[3] == "1",
                                             int(sys.argv[4]), sys.argv[5:])
MiB, GiB = float(1 << 20), float(1 << 30)


def load(path):
    with open(path) as f:
        return json.load(f)


def cell(v, unit, digits=1):
    return "-" if v is None else "%.*f" % (digits, v / unit)


def table(header, rows):
    widths = [max(len(str(r[i])) for r in [header] + rows) for i in range(len(header))]
    line = lambda r: "  ".join(str(c).ljust(w) if i == 0 else str(c).rjust(w)
                               for i, (c, w) in enumerate(zip(r, widths)))
    return [line(header), line(["-" * w for w in widths])] + [line(r) for r in rows]


results, small, big = [], [], []
for m in models:
    plan = load(os.path.join(tmp, m + ".plan.json"))
    unpacked_path = os.path.join(tmp, m + ".plan-unpacked.json")
    unpacked = load(unpacked_path) if os.path.exists(unpacked_path) else None
    torch = load(os.path.join(tmp, m + ".torch.json"))
    ours = plan["bytes_per_device"]
    ours_unpacked = unpacked["bytes_per_device"] if unpacked else None
    variants = [{k: v.get(k) for k in ("name", "kind", "batch", "total_bytes", "peak_live_bytes")}
                for v in plan.get("variants", [])]
    rec = {"model": m, "project": plan.get("project"), "precision": plan.get("precision"),
           "devices": plan.get("devices"), "world_size": plan.get("world_size"),
           "ours_bytes_per_device": ours, "ours_unpacked_bytes_per_device": ours_unpacked,
           "ours_variants": variants, "pytorch": torch}
    if "scale_to_batch" in torch:
        theirs = torch.get("amp_estimate_bytes") if plan.get("precision") == "amp" else None
        theirs = theirs or torch["needs_bytes_scaled"]
        rec["pytorch_needs_bytes"] = theirs
        rec["ratio_ours_to_pytorch"] = ours / theirs
        big.append([plan["project"],
                    "%d/%d" % (torch["scale_to_batch"], torch["scale_to_val_batch"]),
                    "%d/%d" % (torch["batch"], torch["val_batch"]), plan.get("precision"),
                    cell(ours, GiB, 2), cell(ours_unpacked, GiB, 2),
                    cell(torch["needs_bytes_scaled"], GiB, 2),
                    cell(torch.get("amp_estimate_bytes"), GiB, 2),
                    "%.2f" % (ours / theirs),
                    cell(torch["saved_for_backward_bytes_scaled"], GiB, 2),
                    cell(torch["train_step_peak_bytes_scaled"], GiB, 2),
                    cell(torch["val_forward_peak_bytes_scaled"], GiB, 2),
                    cell(torch["param_state_bytes"], MiB, 1)])
    else:
        theirs = torch["needs_bytes"]
        rec["pytorch_needs_bytes"] = theirs
        rec["ratio_ours_to_pytorch"] = ours / theirs
        small.append([plan["project"], "%d/%d" % (torch["batch"], torch["val_batch"]),
                      cell(ours, MiB), cell(ours_unpacked, MiB), cell(theirs, MiB),
                      "%.2f" % (ours / theirs), cell(torch["saved_for_backward_bytes"], MiB),
                      cell(torch["train_step_peak_bytes"], MiB),
                      cell(torch["val_forward_peak_bytes"], MiB),
                      cell(torch["param_state_bytes"], MiB, 2),
                      "channels_last" if torch["channels_last"] else "NCHW"])
    results.append(rec)

lines = []
tv = results[0]["pytorch"].get("torch", "?") if results else "?"
lines.append("Memory per device: our plan against what PyTorch %s needs (CPU, %d threads)"
             % (tv, threads))
if not packing_option:
    lines.append("(this renaissance-cli has no plan --memory-packing option: no unpacked column)")
if small:
    lines.append("")
    lines += table(["project", "batch/val", "ours MiB", "ours unpacked MiB", "PyTorch needs MiB",
                    "ours/PyTorch", "PyTorch saved-for-bwd MiB", "PyTorch train ws MiB",
                    "PyTorch val ws MiB", "PyTorch state MiB", "PyTorch format"], small)
if big:
    lines.append("")
    lines += table(["project", "batch/val", "measured at", "ours", "ours GiB",
                    "ours unpacked GiB", "PyTorch FP32 GiB", "PyTorch AMP est. GiB",
                    "ours/PyTorch", "saved-for-bwd GiB (FP32)", "train ws GiB (FP32)",
                    "val ws GiB (FP32)", "PyTorch state MiB"], big)
    for r in results:
        if "note" in r["pytorch"]:
            lines.append("%s: %s; ours/PyTorch against the AMP estimate when the project is "
                         "AMP" % (r["project"], r["pytorch"]["note"]))
lines.append("")
lines.append("PyTorch needs = parameter state (W + G + momentum, BN statistics) + "
             "max(training-step working set, validation-forward working set), its input batch "
             "left out; ours is the plan's bytes_per_device, its input buffers included.")

compile_rows = []
with open(os.path.join(tmp, "compile.jsonl")) as f:
    for l in f:
        l = l.strip()
        if l.startswith("{"):
            compile_rows.append(json.loads(l))
if compile_rows:
    lines.append("")
    lines.append("Compile time (bench_compile, all variants, %d repeats)"
                 % compile_rows[0].get("repeat", 0))
    lines += table(["project", "load ms", "compile median ms", "min ms", "max ms", "graphs",
                    "tensors/variant", "bytes/device MiB"],
                   [[c["project"], "%.3f" % c["load_ms"], "%.3f" % c["compile_median_ms"],
                     "%.3f" % c["compile_min_ms"], "%.3f" % c["compile_max_ms"], c["graphs"],
                     c["tensors_per_variant"], cell(c["bytes_per_device"], MiB)]
                    for c in compile_rows])

text = "\n".join(lines)
print(text)
with open(out, "w") as f:
    json.dump({"generated": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
               "host": platform.node(), "cpus": os.cpu_count(), "threads": threads,
               "memory_packing_option": packing_option, "models": results,
               "compile": compile_rows, "table": text}, f, indent=1)
    f.write("\n")
print("\nwritten to %s" % out)
EOF
