#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# The CUDA backend's check on a machine with GPUs: build, CUDA tests (with the
# CPU/CUDA training parity test), and the ResNet-50 benchmark beside PyTorch.
# Every command has a time limit, and the results file is written after every
# stage, so a run killed at any point still reports what it finished.
#
# usage:
#   scripts/device-check.sh [--results FILE] [--full]
#       on the GPU machine: configure and build build-device/ (Release, CUDA for
#       the GPUs present, no workbench), then test and benchmark.
#   scripts/device-check.sh --bundle FILE.tar.xz
#       on a build machine without a GPU: build, and pack the CLI, the CUDA test
#       programs and the non-CUDA libraries they load into FILE, for a GPU machine
#       that lacks the build dependencies (Qt, oneDNN, ...).
#   scripts/device-check.sh --prebuilt FILE.tar.xz [--results FILE] [--full]
#       on the GPU machine: unpack such a bundle instead of building (the way to
#       stay inside a short lease). The CUDA libraries (cudart, cuBLAS, cuDNN,
#       NCCL) come from the machine: the system's, or those of the Python
#       environment that holds PyTorch.
#   scripts/device-check.sh --dry-run [--results FILE]
#       a rehearsal on a machine without a GPU, with the normal build
#       ($BUILD_DIR, default build/): every stage runs as far as it can and says
#       what it skipped; the benchmark's rows are refusals (no CUDA figure comes
#       from the CPU). Under 3 minutes.
#
# By default AMP only, 10 timed steps after 3 (about 6 minutes on one H200 from
# a bundle, leaving room for one rerun in a 15-minute lease); --full adds BF16
# and FP32 and times 20 steps after 5; --quick is the default's precision
# choice; PRECISIONS (e.g. "bf16") names the precisions to time instead.
# environment (defaults): PYTHON (python3, with torch and torchvision), ARCHS
#   (the GPUs' compute capabilities, e.g. 90), JOBS (nproc), STEPS, WARMUP,
#   BATCH (256), BUILD_DIR (<repo>/build-device; build/ for --dry-run),
#   ARCHS_BUNDLE (80;90), PROJECT (<repo>/projects/resnet50.json),
#   TEST_TIMEOUT (120 s per test program), BENCH_TIMEOUT (90 s per benchmark run).
# Two files come out: the results (default device-check-results.md: the
# environment, each stage's status and time, the tests, the parity figures, a
# table of images/s and memory per configuration with the ratio to PyTorch's
# best) and FILE-logs.tar.gz beside it with every log and the raw JSON lines.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$root/build-device}
python=${PYTHON:-python3}
jobs=${JOBS:-$(nproc)}
steps=${STEPS:-}
warmup=${WARMUP:-}
batch=${BATCH:-256}
project=${PROJECT:-$root/projects/resnet50.json}
results=$root/device-check-results.md
mode=build
bundle=""
quick=0
dry=0
full=0

die() { echo "device-check: $*" >&2; exit 2; }

while [ $# -gt 0 ]; do
  case $1 in
    --results) results=$2; shift 2 ;;
    --bundle) mode=bundle; bundle=$2; shift 2 ;;
    --prebuilt) mode=prebuilt; bundle=$2; shift 2 ;;
    --quick) quick=1; shift ;;
    --full) full=1; shift ;;
    --dry-run) dry=1; shift ;;
    -h|--help) sed -n '3,40p' "$0"; exit 0 ;;
    *) die "unknown argument '$1' (see --help)" ;;
  esac
done
case $results in /*) ;; *) results=$PWD/$results ;; esac
mkdir -p "$(dirname "$results")" || die "cannot make the folder of $results"
# The default fits about 6 minutes on one H200 with a prebuilt bundle (room
# for one rerun in a 15-minute lease): AMP only, 10 timed steps. --full:
# AMP, BF16 and FP32, 20 steps. Every command has a time limit.
if [ "$full" = 1 ]; then
  precisions="amp bf16 fp32"; steps=${steps:-20}; warmup=${warmup:-5}
else
  precisions=amp; steps=${steps:-10}; warmup=${warmup:-3}
fi
[ "$quick" = 1 ] && precisions=amp
if [ -n "${PRECISIONS:-}" ]; then
  for p in $PRECISIONS; do
    case $p in fp32|amp|bf16) ;; *) die "PRECISIONS: unknown precision '$p' (fp32, amp or bf16)" ;; esac
  done
  precisions=$PRECISIONS
fi
test_timeout=${TEST_TIMEOUT:-120}
bench_timeout=${BENCH_TIMEOUT:-90}
[ "$dry" = 1 ] && [ -z "${BUILD_DIR:-}" ] && build=$root/build
case $bundle in ""|/*) ;; *) bundle=$PWD/$bundle ;; esac

cuda_tests() { (cd "$root/tests/cuda" && ls test_cuda_*.cpp | sed 's/\.cpp$//'); }

configure_and_build() {  # $1: CUDA architectures
  if [ ! -f "$build/build.ninja" ]; then
    mkdir -p "$build"
    cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DTR_GUI=OFF -DTR_CUDA=ON \
      -DCMAKE_CUDA_ARCHITECTURES="$1" -DTR_WERROR=OFF >"$build/configure.log" 2>&1 ||
      { cat "$build/configure.log"; die "cmake failed (log above)"; }
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
  # The engine and its CUDA backend, which the engine loads from its own folder.
  cp "$build"/lib/librenaissance-*.so "$stage/lib/" ||
    die "no engine or CUDA backend library in $build/lib"
  # Every library the programs load except the C runtime and CUDA's own,
  # which must match the GPU machine's driver and come from there.
  for f in "$stage"/bin/* "$stage"/lib/librenaissance-cuda.so; do
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
# Logs live outside the results' folder and travel as one archive beside the
# results file: a device run returns only a few files.
logs=$(mktemp -d)
archive=${results%.md}-logs.tar.gz
raw=$logs/bench.jsonl
: >"$raw"
stage_lines=()   # "| stage | status | seconds |"
test_lines=()
env_lines=()
parity=""
failed=0

write_results() {  # everything so far: a run killed at any point still reports
  {
    echo "# Device check, $(date -u '+%Y-%m-%d %H:%M UTC')$([ "$dry" = 1 ] && echo ' (dry run)')"
    echo
    echo "- commit: $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)"
    printf '%s\n' "${env_lines[@]}"
    echo "- elapsed: $(( $(date +%s) - started )) s; logs: $(basename "$archive")"
    echo
    echo "## Stages"
    echo
    echo "| stage | status | seconds |"
    echo "| --- | --- | --- |"
    [ ${#stage_lines[@]} -gt 0 ] && printf '%s\n' "${stage_lines[@]}"
    echo
    echo "## CUDA tests"
    echo
    echo "| program | result | totals |"
    echo "| --- | --- | --- |"
    [ ${#test_lines[@]} -gt 0 ] && printf '%s\n' "${test_lines[@]}"
    echo
    echo "## CPU/CUDA parity (same project and seed)"
    echo
    if [ -n "$parity" ]; then echo "$parity" | sed 's/^/- /'; else echo "- no figures (see test_cuda_training.log)"; fi
    echo
    echo "## $(basename "$project" .json), batch $batch, median of $steps steps after $warmup"
    echo
    "$python" "$root/scripts/device_check_table.py" "$raw" 2>&1
  } >"$results"
  tar -C "$logs" -czf "$archive" . 2>/dev/null || true
}

stage_done() {  # $1 stage, $2 status, $3 start time
  stage_lines+=("| $1 | $2 | $(( $(date +%s) - $3 )) |")
  write_results
}

# ---- Environment --------------------------------------------------------------
t0=$(date +%s)
if command -v nvidia-smi >/dev/null && [ -n "$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null)" ]; then
  env_lines+=("- GPUs: $(nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | paste -sd';')")
  archs=${ARCHS:-$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | tr -d '.' | sort -u | paste -sd';')}
  env_status=run
elif [ "$dry" = 1 ]; then
  env_lines+=("- GPUs: none (dry run: every stage goes as far as it can without one)")
  archs=""
  env_status="skipped: no GPU (dry run)"
else
  die "no nvidia-smi or no GPU: this is not a machine with NVIDIA GPUs (--dry-run rehearses without one)"
fi
env_lines+=("- mode: $mode; CUDA architectures: ${archs:-none}; steps $steps, warmup $warmup; precisions: $precisions")
env_lines+=("- PyTorch: $("$python" -c 'import torch; print(torch.__version__, "CUDA", torch.version.cuda, "devices", torch.cuda.device_count())' 2>&1 | tail -1)")
stage_done environment "$env_status" "$t0"

# ---- Build --------------------------------------------------------------------
t0=$(date +%s)
if [ "$mode" = prebuilt ]; then
  [ -f "$bundle" ] || die "no bundle '$bundle'"
  unpacked=$(mktemp -d)
  tar -C "$unpacked" -xJf "$bundle" || die "could not unpack $bundle"
  bin=$unpacked/bin
  # CUDA's libraries from the machine: the toolkit's, else the Python wheels'.
  cuda_libs=$("$python" -c '
import glob, os, site
dirs = []
for s in site.getsitepackages():
    dirs += glob.glob(os.path.join(s, "nvidia", "*", "lib"))
print(":".join(sorted(set(dirs))))' 2>/dev/null)
  # For our programs only: PyTorch must keep its own libstdc++ and CUDA libraries.
  our_libs="$unpacked/lib:${cuda_libs}:/usr/local/cuda/lib64:/usr/local/cuda/lib:${LD_LIBRARY_PATH:-}"
  for f in "$bin/renaissance-cli" $(for t in $(cuda_tests); do echo "$bin/$t"; done) \
    "$unpacked/lib/librenaissance-cuda.so"; do
    missing=$(LD_LIBRARY_PATH=$our_libs ldd "$f" | awk '/not found/ {print $1}' | paste -sd' ')
    [ -z "$missing" ] || die "$(basename "$f") cannot find: $missing (searched $our_libs)"
  done
  build_status="unpacked $(basename "$bundle")"
elif [ "$dry" = 1 ]; then
  # A rehearsal builds nothing: the normal build as it is.
  bin=$build/bin
  [ -x "$bin/renaissance-cli" ] || die "no $bin/renaissance-cli: build first (scripts/build.sh) or set BUILD_DIR"
  build_status="skipped: the dry run uses $build"
else
  if ! configure_and_build "$archs" >"$logs/build.log" 2>&1; then
    tail -30 "$logs/build.log"
    stage_done build FAILED "$t0"
    exit 2
  fi
  bin=$build/bin
  build_status=run
fi
stage_done build "$build_status" "$t0"
cli=$bin/renaissance-cli
export TR_PROJECTS_DIR=$root/projects
export RENAISSANCE_STORE=$logs/runs.sqlite

# ---- CUDA tests -------------------------------------------------------------
t0=$(date +%s)
for t in $(cuda_tests); do
  log=$logs/$t.log
  exe=$bin/$t
  [ -x "$exe" ] || exe=$build/tests/$t
  if [ ! -x "$exe" ]; then test_lines+=("| $t | not built | |"); failed=1; continue; fi
  LD_LIBRARY_PATH=$our_libs timeout "$test_timeout" "$exe" >"$log" 2>&1
  code=$?
  case $code in
    0) r=passed ;;
    124) r="TIMED OUT after $test_timeout s"; failed=1 ;;
    *) r="FAILED (exit $code)"; failed=1 ;;
  esac
  # Skips for want of a device mean the check did not check.
  if grep -qE 'no CUDA device|^SKIP' "$log"; then
    r="skipped: $(grep -m1 -oE '(no CUDA device|SKIP).*' "$log" | cut -c1-120 | tr '|' '/')"
    [ "$dry" = 1 ] || failed=1
  fi
  totals=$(grep -E '^Totals:' "$log" | tail -1)
  test_lines+=("| $t | $r | ${totals#Totals: } |")
  write_results
done
parity=$(grep -hE 'largest relative difference' "$logs"/test_cuda_training.log 2>/dev/null |
         sed 's/^QINFO *: *//')
stage_done "CUDA tests" run "$t0"

# ---- Benchmark: ours and PyTorch's, alternating, one configuration at a time ----
row_error() {  # $1 exit code, $2 log: a short reason for the table
  if [ "$1" = 124 ]; then echo "timed out after $bench_timeout s"; return; fi
  grep -v '^$' "$2" | tail -1 | cut -c1-200 | tr '"|\\' "'/ "
}
bench_ours() {  # $1 precision, $2 label, then extra CLI arguments
  local p=$1 label=$2 line code log
  log=$logs/bench-ours-$1-$(echo "$2" | tr -c 'a-z0-9' '-').log
  shift 2
  line=$(LD_LIBRARY_PATH=$our_libs timeout "$bench_timeout" "$cli" bench "$bench_project" \
         --devices cuda:0 --precision "$p" --batch "$batch" --steps "$steps" --warmup "$warmup" \
         --json "$@" 2>"$log" | tail -1)
  code=${PIPESTATUS[0]}
  case $line in "{"*) ;; *) line="{\"error\": \"$(row_error "$code" "$log")\"}" ;; esac
  echo "{\"side\": \"ours\", \"config\": \"$label\", \"precision\": \"$p\", \"result\": $line}" >>"$raw"
  write_results
}
bench_torch() {  # $1 precision, $2 eager|graph
  local line code log=$logs/bench-torch-$1-$2.log
  line=$(timeout "$bench_timeout" "$python" "$root/bench/pytorch_resnet50_cuda.py" --precision "$1" \
         --mode "$2" --batch "$batch" --steps "$steps" --warmup "$warmup" 2>"$log" | tail -1)
  code=${PIPESTATUS[0]}
  case $line in "{"*) ;; *) line="{\"error\": \"$(row_error "$code" "$log")\"}" ;; esac
  echo "{\"side\": \"pytorch\", \"config\": \"$2\", \"precision\": \"$1\", \"result\": $line}" >>"$raw"
  write_results
}
t0=$(date +%s)
bench_project=$project
for p in $precisions; do
  bench_ours "$p" "captured, 5 streams"
  bench_torch "$p" eager
  bench_ours "$p" "uncaptured, 5 streams" --capture off
  bench_torch "$p" graph
  bench_ours "$p" "captured, 1 stream" --streams 1
done
if [ "$dry" = 1 ]; then
  # Without a GPU the rows above are refusals; a run allowed to fall back
  # shows that the results refuse a CPU figure as well.
  bench_project=$root/projects/lenet-fashion.json
  saved_batch=$batch; batch=128
  bench_ours amp "captured, 5 streams, allowed to fall back (dry run)" --allow-fallback
  batch=$saved_batch
fi
stage_done benchmark run "$t0"

cat "$results"
echo "device-check: results in $results, logs in $archive ($(( $(date +%s) - started )) s)"
exit $failed
