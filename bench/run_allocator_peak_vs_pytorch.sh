#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# Our plan's bytes against PyTorch's exact CPU allocator peak (torch.profiler's allocation and free
# events summed in time order, bench/pytorch_allocator_peak.py) for the same training: one step of
# the project's optimizer at its batch plus one validation forward at its validation batch.
#
# usage: bench/run_allocator_peak_vs_pytorch.sh [--out FILE]
# environment (defaults): BUILD_DIR (<repo>/build), MODELS ("vit-tiny vit-b16"),
#   PRECISIONS ("fp32 bf16": bf16 is our bf16 plan against PyTorch's bf16 autocast, and only
#   where this CPU runs bf16), THREADS (2), PYTHON (/usr/bin/python3),
#   FIT_vit_b16 ("2,4": vit-b16 at its batch of 64 does not fit this machine's time, so
#   PyTorch is measured at batches 2 and 4 and extended linearly; empty: measured at 64),
#   RECOMPUTE ("on matmuls": our plan with each `plan --recompute` value, each a row).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$here/build}
cli=$build/bin/renaissance-cli
python=${PYTHON:-/usr/bin/python3}
models=${MODELS:-vit-tiny vit-b16}
precisions=${PRECISIONS:-fp32 bf16}
threads=${THREADS:-2}
fit_vit_b16=${FIT_vit_b16-2,4}
recompute=${RECOMPUTE:-on matmuls}
out=$here/bench/results/allocator_peak_vs_pytorch.json

while [ $# -gt 0 ]; do
  case $1 in
    --out) out=$2; shift 2 ;;
    --out=*) out=${1#--out=}; shift ;;
    -h|--help) sed -n '3,12p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "run_allocator_peak_vs_pytorch.sh: unknown argument '$1' (try --help)" >&2; exit 2 ;;
  esac
done

die() { echo "run_allocator_peak_vs_pytorch.sh: $*" >&2; exit 1; }
[ -x "$cli" ] || die "no renaissance-cli at $cli; build the tree or set BUILD_DIR"
"$python" -c 'import torch' >/dev/null 2>&1 ||
  die "PyTorch is not importable by $python; install it with: apt-get install python3-torch"

project_of() {
  case $1 in
    lenet) echo lenet-fashion ;;
    cnn-bn) echo cnn-bn-fashion ;;
    resnet8) echo resnet8-fashion ;;
    vit-tiny) echo vit-tiny-fashion ;;
    vit-b16) echo vit-b16 ;;
    *) die "unknown model '$1' (lenet, cnn-bn, resnet8, vit-tiny, vit-b16)" ;;
  esac
}

bf16_ok=$("$cli" devices --json | "$python" -c 'import json,sys
b = json.load(sys.stdin)["cpu"]["bf16"]
print(1 if b["amx"] or b["avx512_bf16"] else 0)')

field() { "$python" -c 'import json,sys; print(json.loads(sys.argv[1])[sys.argv[2]])' "$1" "$2"; }
records=()
for m in $models; do
  project=$here/projects/$(project_of "$m").json
  for prec in $precisions; do
    if [ "$prec" = bf16 ] && [ "$bf16_ok" != 1 ]; then
      echo "$m bf16: skipped (no AVX-512 BF16 or AMX on this CPU)"
      continue
    fi
    fit_args=()
    if [ "$m" = vit-b16 ] && [ -n "$fit_vit_b16" ]; then fit_args=(--fit "$fit_vit_b16"); fi
    theirs_json=$("$python" "$here/bench/pytorch_allocator_peak.py" --model "$m" \
                  --threads "$threads" --bf16 "$([ "$prec" = bf16 ] && echo 1 || echo 0)" \
                  "${fit_args[@]}" | tail -n 1)
    theirs=$(field "$theirs_json" peak_bytes)
    for rc in $recompute; do
      ours=$("$cli" plan "$project" --json --devices cpu:1 --precision "$prec" --recompute "$rc" |
             "$python" -c 'import json,sys; print(json.load(sys.stdin)["bytes_per_device"])')
      printf '%s %s, --recompute %s: ours %.2f MiB, PyTorch %.2f MiB (batch %s, validation %s%s): %.2fx\n' \
        "$m" "$prec" "$rc" "$(awk "BEGIN{print $ours/1048576}")" "$(awk "BEGIN{print $theirs/1048576}")" \
        "$(field "$theirs_json" batch)" "$(field "$theirs_json" val_batch)" \
        "$([ ${#fit_args[@]} -gt 0 ] && echo ", fitted from ${fit_args[1]}")" \
        "$(awk "BEGIN{print $ours/$theirs}")"
      records+=("{\"model\":\"$m\",\"precision\":\"$prec\",\"recompute\":\"$rc\",\"ours_bytes\":$ours,\"ratio\":$(awk "BEGIN{print $ours/$theirs}"),\"pytorch\":$theirs_json}")
    done
  done
done

mkdir -p "$(dirname "$out")"
{
  printf '{"cpu":%s,"results":[' "$("$python" -c 'import json,platform; print(json.dumps(open("/proc/cpuinfo").read().split("model name")[1].split("\n")[0].split(":",1)[1].strip()))')"
  (IFS=,; printf '%s' "${records[*]}")
  printf ']}\n'
} >"$out"
echo "written: $out"
