#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# Our plan's bytes against PyTorch's exact CPU allocator peak (torch.profiler's allocation and free
# events summed in time order, bench/pytorch_allocator_peak.py) for the same training: one step of
# the project's optimizer at its batch plus one validation forward at its validation batch; and
# our plan under a memory budget of BUDGET_RATIO x PyTorch's peak (recomputation chosen by the
# planner); then the compiler's time.
#
# usage: bench/run_memory_vs_pytorch.sh [--out FILE]
# environment (defaults): BUILD_DIR (<repo>/build), PYTHON (/usr/bin/python3, needs torch, and
#   torchvision for resnet50), MODELS ("lenet cnn-bn resnet8 resnet50"; also vit-tiny, vit-b16),
#   PRECISIONS ("fp32 bf16": bf16 is our bf16 plan against PyTorch's bf16 autocast; the bytes do
#   not depend on the CPU's bf16 instructions, only the time does), THREADS (2),
#   LAYOUT (both: PyTorch's leaner of NCHW and channels-last; nchw or channels_last for one),
#   FIT_resnet50 ("16,32": PyTorch measured at these batches and extended linearly to 256; empty:
#   measured at 256, which takes this machine's memory and some minutes), FIT_vit_b16 ("2,4"),
#   BUDGET_RATIO (0.65: our plan again with --memory-budget this fraction of PyTorch's peak; 0
#   skips it), COMPILE_REPEAT (20: bench_compile --repeat over these projects; 0 skips it).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$here/build}
cli=$build/bin/renaissance-cli
python=${PYTHON:-/usr/bin/python3}
models=${MODELS:-lenet cnn-bn resnet8 resnet50}
precisions=${PRECISIONS:-fp32 bf16}
threads=${THREADS:-2}
layout=${LAYOUT:-both}
fit_resnet50=${FIT_resnet50-16,32}
fit_vit_b16=${FIT_vit_b16-2,4}
budget_ratio=${BUDGET_RATIO:-0.65}
compile_repeat=${COMPILE_REPEAT:-20}
out=$here/bench/results/memory_vs_pytorch.json

while [ $# -gt 0 ]; do
  case $1 in
    --out) out=$2; shift 2 ;;
    --out=*) out=${1#--out=}; shift ;;
    -h|--help) sed -n '3,17p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "run_memory_vs_pytorch.sh: unknown argument '$1' (try --help)" >&2; exit 2 ;;
  esac
done

die() { echo "run_memory_vs_pytorch.sh: $*" >&2; exit 1; }
[ -x "$cli" ] || die "no renaissance-cli at $cli; build the tree or set BUILD_DIR"
"$python" -c 'import torch' >/dev/null 2>&1 ||
  die "PyTorch is not importable by $python; install it with: apt-get install python3-torch"

project_of() {
  case $1 in
    lenet) echo lenet-fashion ;;
    cnn-bn) echo cnn-bn-fashion ;;
    resnet8) echo resnet8-fashion ;;
    resnet50) echo resnet50 ;;
    vit-tiny) echo vit-tiny-fashion ;;
    vit-b16) echo vit-b16 ;;
    *) die "unknown model '$1' (lenet, cnn-bn, resnet8, resnet50, vit-tiny, vit-b16)" ;;
  esac
}

field() { "$python" -c 'import json,sys
v = json.loads(sys.argv[1])
for k in sys.argv[2].split("."): v = v[k]
print(v)' "$1" "$2"; }
mib() { awk "BEGIN{printf \"%.2f\", $1/1048576}"; }

records=()
projects=()
for m in $models; do
  project=$here/projects/$(project_of "$m").json
  projects+=("$project")
  fit=
  case $m in resnet50) fit=$fit_resnet50 ;; vit-b16) fit=$fit_vit_b16 ;; esac
  for prec in $precisions; do
    args=(--model "$m" --threads "$threads" --layout "$layout" --bf16 "$([ "$prec" = bf16 ] && echo 1 || echo 0)")
    if [ -n "$fit" ]; then
      # --fit extends training and validation together: both at the training batch.
      batch=$("$cli" plan "$project" --json | "$python" -c 'import json,sys
print(next(v["batch"] for v in json.load(sys.stdin)["variants"] if v["kind"] == "train"))')
      args+=(--fit "$fit" --batch "$batch" --val-batch "$batch")
    fi
    theirs_json=$("$python" "$here/bench/pytorch_allocator_peak.py" "${args[@]}" | tail -n 1)
    theirs=$(field "$theirs_json" peak_bytes)
    plan=(plan "$project" --json --devices cpu:1 --precision "$prec")
    ours=$("$cli" "${plan[@]}" | "$python" -c 'import json,sys; print(json.load(sys.stdin)["bytes_per_device"])')
    line=$(printf '%s %s: ours %s MiB, PyTorch %s MiB (%s, batch %s, validation %s%s): %.2fx' \
      "$m" "$prec" "$(mib "$ours")" "$(mib "$theirs")" "$(field "$theirs_json" layout)" \
      "$(field "$theirs_json" batch)" "$(field "$theirs_json" val_batch)" \
      "$([ -n "$fit" ] && echo ", fitted from batches $fit")" "$(awk "BEGIN{print $ours/$theirs}")")
    budgeted=null
    if [ "$budget_ratio" != 0 ]; then
      budget=$(awk "BEGIN{printf \"%.0f\", $theirs*$budget_ratio}")  # %d stops at 2^31 in mawk
      budgeted=$("$cli" "${plan[@]}" --memory-budget "$budget" | "$python" -c 'import json,sys
j = json.load(sys.stdin); r = j["recompute"]
print(json.dumps({"budget": r["memory_budget"], "bytes": j["bytes_per_device"],
                  "fits": r["fits_budget"], "recomputed": len(r["chosen"]),
                  "candidates": len(r["candidates"]), "extra_flops_share": r["extra_flops_share"]}))')
      line+=$(printf '; with --memory-budget %s MiB (%sx): %s MiB, %s, %s of %s outputs recomputed (+%.2f%% FLOPs)' \
        "$(mib "$budget")" "$budget_ratio" "$(mib "$(field "$budgeted" bytes)")" \
        "$([ "$(field "$budgeted" fits)" = True ] && echo fits || echo "does not fit")" \
        "$(field "$budgeted" recomputed)" "$(field "$budgeted" candidates)" \
        "$(awk "BEGIN{print 100*$(field "$budgeted" extra_flops_share)}")")
    fi
    echo "$line"
    records+=("{\"model\":\"$m\",\"precision\":\"$prec\",\"ours_bytes\":$ours,\"ratio\":$(awk "BEGIN{print $ours/$theirs}"),\"budgeted\":$budgeted,\"pytorch\":$theirs_json}")
  done
done

compile_rows=
if [ "$compile_repeat" != 0 ] && [ -x "$build/bin/bench_compile" ]; then
  echo "compile time (bench_compile --repeat $compile_repeat):"
  compile_rows=$("$build/bin/bench_compile" --repeat "$compile_repeat" "${projects[@]}")
  echo "$compile_rows"
fi

mkdir -p "$(dirname "$out")"
{
  printf '{"cpu":%s,"results":[' "$("$python" -c 'import json; print(json.dumps(open("/proc/cpuinfo").read().split("model name")[1].split("\n")[0].split(":",1)[1].strip()))')"
  (IFS=,; printf '%s' "${records[*]}")
  printf '],"compile":[%s]}\n' "$(echo "$compile_rows" | paste -sd, -)"
} >"$out"
echo "written: $out"
