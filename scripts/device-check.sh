#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# The CUDA backend's check on a machine with GPUs: build, CUDA tests (with the
# CPU/CUDA training parity test), and the ResNet-50 benchmark beside PyTorch,
# all written to one results file. Meant to finish within 8 minutes on one H200.
#
# usage:
#   scripts/device-check.sh [--results FILE] [--quick]
#       on the GPU machine: configure and build build-device/ (Release, CUDA for
#       the GPUs present, no workbench), then test and benchmark.
#   scripts/device-check.sh --bundle FILE.tar.xz
#       on a build machine without a GPU: build, and pack the CLI, the CUDA test
#       programs and the non-CUDA libraries they load into FILE, for a GPU machine
#       that lacks the build dependencies (Qt, oneDNN, ...).
#   scripts/device-check.sh --prebuilt FILE.tar.xz [--results FILE] [--quick]
#       on the GPU machine: unpack such a bundle instead of building. The CUDA
#       libraries (cudart, cuBLAS, cuDNN, NCCL) come from the machine: the system's,
#       or those of the Python environment that holds PyTorch.
#
# environment (defaults): PYTHON (python3, with torch and torchvision), ARCHS
#   (the GPUs' compute capabilities, e.g. 90), JOBS (nproc), STEPS (20), WARMUP (5),
#   BATCH (256), BUILD_DIR (<repo>/build-device), ARCHS_BUNDLE (80;90),
#   PROJECT (<repo>/projects/resnet50.json; another one for a quick dry run).
# The results file (default device-check-results.md) holds the environment,
# the test summary and parity figures, and a table of images/s per configuration
# with the ratio to PyTorch's best; the raw JSON lines and logs sit beside it.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$root/build-device}
python=${PYTHON:-python3}
jobs=${JOBS:-$(nproc)}
steps=${STEPS:-20}
warmup=${WARMUP:-5}
batch=${BATCH:-256}
project=${PROJECT:-$root/projects/resnet50.json}
results=$root/device-check-results.md
mode=build
bundle=""
quick=0

die() { echo "device-check: $*" >&2; exit 2; }

while [ $# -gt 0 ]; do
  case $1 in
    --results) results=$2; shift 2 ;;
    --bundle) mode=bundle; bundle=$2; shift 2 ;;
    --prebuilt) mode=prebuilt; bundle=$2; shift 2 ;;
    --quick) quick=1; shift ;;
    -h|--help) sed -n '3,27p' "$0"; exit 0 ;;
    *) die "unknown argument '$1' (see --help)" ;;
  esac
done
case $results in /*) ;; *) results=$PWD/$results ;; esac
case $bundle in ""|/*) ;; *) bundle=$PWD/$bundle ;; esac

cuda_tests() { (cd "$root/tests/cuda" && ls test_cuda_*.cpp | sed 's/\.cpp$//'); }

configure_and_build() {  # $1: CUDA architectures
  if [ ! -f "$build/build.ninja" ]; then
    cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DTR_GUI=OFF -DTR_CUDA=ON \
      -DCMAKE_CUDA_ARCHITECTURES="$1" -DTR_WERROR=OFF >"$build.configure.log" 2>&1 ||
      { cat "$build.configure.log"; die "cmake failed (log above)"; }
  fi
  # shellcheck disable=SC2046
  cmake --build "$build" -j "$jobs" --target renaissance-cli $(cuda_tests) ||
    die "the build failed"
}

# ---------------------------------------------------------------------------
if [ "$mode" = bundle ]; then
  [ -n "$bundle" ] || die "--bundle needs a file name"
  configure_and_build "${ARCHS_BUNDLE:-80;90}"
  stage=$(mktemp -d)
  mkdir -p "$stage/bin" "$stage/lib"
  cp "$build/bin/renaissance-cli" "$stage/bin/"
  for t in $(cuda_tests); do cp "$build/tests/$t" "$stage/bin/"; done
  # Every library the programs load except the C runtime and CUDA's own,
  # which must match the GPU machine's driver and come from there.
  for f in "$stage"/bin/*; do
    ldd "$f" | awk '$3 ~ /^\// {print $3}'
  done | sort -u | grep -Ev '/(libc|libm|libdl|libpthread|librt|libgcc_s|libstdc\+\+|ld-linux[^/]*)\.so' |
    grep -Ev '/lib(cuda|cudart|cublas|cublasLt|cudnn[a-z_]*|nccl)\.so' |
    while read -r lib; do cp -L "$lib" "$stage/lib/"; done
  cp -L /lib/x86_64-linux-gnu/libstdc++.so.6 "$stage/lib/" 2>/dev/null || true
  tar -C "$stage" -cJf "$bundle" bin lib || die "could not write $bundle"
  rm -rf "$stage"
  echo "device-check: bundle $bundle ($(du -h "$bundle" | cut -f1))"
  exit 0
fi

# ---------------------------------------------------------------------------
started=$(date +%s)
our_libs=${LD_LIBRARY_PATH:-}
command -v nvidia-smi >/dev/null || die "no nvidia-smi: this is not a machine with NVIDIA GPUs"
gpus=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | wc -l)
[ "$gpus" -ge 1 ] || die "nvidia-smi lists no GPU"
archs=${ARCHS:-$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | tr -d '.' | sort -u | paste -sd';')}
outdir=$(dirname "$results")/device-check-logs
mkdir -p "$outdir"
raw=$outdir/bench.jsonl
: >"$raw"

if [ "$mode" = prebuilt ]; then
  [ -f "$bundle" ] || die "no bundle '$bundle'"
  unpacked=$(mktemp -d)
  tar -C "$unpacked" -xJf "$bundle" || die "could not unpack $bundle"
  bin=$unpacked/bin
  # CUDA's libraries from the machine: the toolkit's, else the Python wheels'.
  cuda_libs=$("$python" - <<'EOF' 2>/dev/null
import glob, os, site
dirs = []
for s in site.getsitepackages():
    dirs += glob.glob(os.path.join(s, "nvidia", "*", "lib"))
print(":".join(sorted(set(dirs))))
EOF
)
  # For our programs only: PyTorch must keep its own libstdc++ and CUDA libraries.
  our_libs="$unpacked/lib:${cuda_libs}:/usr/local/cuda/lib64:/usr/local/cuda/lib:${LD_LIBRARY_PATH:-}"
  for t in renaissance-cli $(cuda_tests); do
    missing=$(LD_LIBRARY_PATH=$our_libs ldd "$bin/$t" | awk '/not found/ {print $1}' | paste -sd' ')
    [ -z "$missing" ] || die "$t cannot find: $missing (searched $our_libs)"
  done
else
  configure_and_build "$archs"
  bin=$build/bin
  for t in $(cuda_tests); do ln -sf "$build/tests/$t" "$bin/$t"; done
fi
built=$(date +%s)
cli=$bin/renaissance-cli
export TR_PROJECTS_DIR=$root/projects
export RENAISSANCE_STORE=$outdir/runs.sqlite

# ---- CUDA tests -------------------------------------------------------------
test_lines=()
failed=0
for t in $(cuda_tests); do
  log=$outdir/$t.log
  if LD_LIBRARY_PATH=$our_libs timeout 300 "$bin/$t" >"$log" 2>&1; then r=passed; else r="FAILED (exit $?)"; failed=1; fi
  # Skips for want of a device mean the check did not check.
  if grep -q 'no CUDA device' "$log"; then r="skipped: $(grep -m1 -o 'no CUDA device.*' "$log")"; failed=1; fi
  totals=$(grep -E '^Totals:' "$log" | tail -1)
  test_lines+=("| $t | $r | ${totals#Totals: } |")
done
parity=$(grep -hE 'largest relative difference' "$outdir"/test_cuda_training.log 2>/dev/null |
         sed 's/^QINFO *: *//')
tested=$(date +%s)

# ---- Benchmark: ours and PyTorch's, alternating, one configuration at a time ----
bench_ours() {  # $1 precision, $2 label, then extra CLI arguments
  local p=$1 label=$2; shift 2
  local line
  line=$(LD_LIBRARY_PATH=$our_libs "$cli" bench "$project" --devices cuda:0 --precision "$p" \
         --batch "$batch" --steps "$steps" --warmup "$warmup" --json "$@" 2>>"$outdir/bench.log" |
         tail -1)
  [ -n "$line" ] || line='{"error": "see bench.log"}'
  echo "{\"side\": \"ours\", \"config\": \"$label\", \"precision\": \"$p\", \"result\": $line}" >>"$raw"
}
bench_torch() {  # $1 precision, $2 eager|graph
  local line
  line=$("$python" "$root/bench/pytorch_resnet50_cuda.py" --precision "$1" --mode "$2" \
         --batch "$batch" --steps "$steps" --warmup "$warmup" 2>>"$outdir/bench.log" | tail -1)
  [ -n "$line" ] || line='{"error": "see bench.log"}'
  echo "{\"side\": \"pytorch\", \"config\": \"$2\", \"precision\": \"$1\", \"result\": $line}" >>"$raw"
}
precisions="amp fp32"
[ "$quick" = 1 ] && precisions=amp
for p in $precisions; do
  bench_ours "$p" "captured, 5 streams"
  bench_torch "$p" eager
  bench_ours "$p" "uncaptured, 5 streams" --capture off
  bench_torch "$p" graph
  bench_ours "$p" "captured, 1 stream" --streams 1
done
benched=$(date +%s)

# ---- Results file -----------------------------------------------------------
{
  echo "# Device check, $(date -u '+%Y-%m-%d %H:%M UTC')"
  echo
  echo "- commit: $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)"
  echo "- GPUs: $(nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | paste -sd';')"
  echo "- mode: $mode; CUDA architectures: $archs"
  echo "- time: build $((built - started)) s, tests $((tested - built)) s, benchmark $((benched - tested)) s"
  echo
  echo "## CUDA tests"
  echo
  echo "| program | result | totals |"
  echo "| --- | --- | --- |"
  printf '%s\n' "${test_lines[@]}"
  echo
  echo "## CPU/CUDA parity (50 steps, same project and seed)"
  echo
  if [ -n "$parity" ]; then echo "$parity" | sed 's/^/- /'; else echo "- no figures (see test_cuda_training.log)"; fi
  echo
  echo "## $(basename "$project" .json), batch $batch, median of $steps steps after $warmup"
  echo
  "$python" - "$raw" <<'EOF'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
print("| side | precision | configuration | images/s | ms/step | vs PyTorch's best |")
print("| --- | --- | --- | --- | --- | --- |")
best = {}
for r in rows:
    if r["side"] == "pytorch" and "images_per_s" in r["result"]:
        best[r["precision"]] = max(best.get(r["precision"], 0), r["result"]["images_per_s"])
verdict = []
for r in rows:
    res = r["result"]
    if "images_per_s" not in res:
        print("| %s | %s | %s | error | | |" % (r["side"], r["precision"], r["config"]))
        continue
    b = best.get(r["precision"])
    ratio = "%.2fx" % (res["images_per_s"] / b) if b else "n/a"
    print("| %s | %s | %s | %.0f | %.1f | %s |" % (r["side"], r["precision"], r["config"],
          res["images_per_s"], res["median_ms_per_step"], ratio))
    if r["side"] == "ours" and r["config"].startswith("captured, 5") and b:
        verdict.append("%s: %.2fx PyTorch's best (goal 1.3x: %s)" % (
            r["precision"], res["images_per_s"] / b,
            "met" if res["images_per_s"] / b >= 1.3 else "missed"))
print()
for v in verdict:
    print("- " + v)
EOF
} >"$results"
cat "$results"
echo "device-check: results in $results, logs in $outdir ($(( $(date +%s) - started )) s)"
exit $failed
