#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# The CUDA backend's check on a machine with GPUs: the backend's smoke test,
# the ResNet-50 benchmark beside PyTorch, the CUDA tests (with the CPU/CUDA
# training parity test) and the remaining benchmark rows, in that order, all
# inside one deadline. The results file is written after every step, so a run
# killed at any point still reports what it finished.
#
# usage:
#   scripts/device-check.sh [--results FILE] [--full]
#       on the GPU machine: configure and build build-device/ (Release, CUDA for
#       the GPUs present, no workbench), then test and benchmark.
#   scripts/device-check.sh --bundle FILE.tar.xz
#       on a build machine without a GPU: build, and pack the CLI, the CUDA test
#       programs and the non-CUDA libraries they load into FILE, for a GPU machine
#       that lacks the build dependencies (Qt, oneDNN, ...).
#   scripts/device-check.sh --prebuilt FILE.tar.xz|FOLDER [--results FILE] [--full]
#       on the GPU machine: unpack such a bundle (or use one unpacked, a folder
#       with bin/ and lib/) instead of building (the way to
#       stay inside a short lease). The CUDA libraries (cudart, cuBLAS, cuDNN,
#       and NCCL for more than one GPU) come from the machine: the system's
#       folders first, a Python wheel's only for a library they lack.
#   scripts/device-check.sh --dry-run [--results FILE]
#       a rehearsal on a machine without a GPU, with the normal build
#       ($BUILD_DIR, default build/): every step runs as far as it can and says
#       what it skipped; the benchmark's rows are refusals (no CUDA figure comes
#       from the CPU). About 15 seconds.
#
# One deadline (DEADLINE, 540 s: a device command is killed at 600) bounds the
# whole run: each step's time limit is what it wants or what is left, every
# limit is `timeout -k 5` (a process stuck in the driver ignores SIGTERM), and
# the results name every step the deadline cut. The most valuable rows come
# first: the smoke test, our captured ResNet-50 row per precision, PyTorch's
# eager row per precision, the parity test, the other tests, the other rows.
# By default AMP and BF16, 10 timed steps after 3; --full adds FP32 and times
# 20 steps after 5; --quick times AMP only; PRECISIONS (e.g. "bf16") names the
# precisions to time instead.
# environment (defaults): PYTHON (python3, with torch and torchvision), ARCHS
#   (the GPUs' compute capabilities, e.g. 90), JOBS (nproc), STEPS, WARMUP,
#   BATCH (256), BUILD_DIR (<repo>/build-device; build/ for --dry-run),
#   ARCHS_BUNDLE (80;90), PROJECT (<repo>/projects/resnet50.json), DEADLINE
#   (540 s for the whole run), TEST_TIMEOUT (120 s per test program at most),
#   BENCH_TIMEOUT (90 s per benchmark run at most).
# Two files come out: the results (default device-check-results.md: the
# environment with the CUDA libraries' paths and versions, each step's status
# and time, the tests, the parity figures, a table of images/s and memory per
# configuration with the ratio to PyTorch's best, and what the deadline cut)
# and FILE-logs.tar.gz beside it with every log and the raw JSON lines.
set -uo pipefail
started=$(date +%s)
root=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=scripts/device_check_lib.sh
. "$root/scripts/device_check_lib.sh"
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
# The value after option $1 ($2 on the command line), or a clear refusal.
value_of() { [ $# -ge 2 ] && [ -n "$2" ] || die "$1 needs a value (see --help)"; printf '%s' "$2"; }

while [ $# -gt 0 ]; do
  case $1 in
    --results) results=$(value_of "$@") || exit 2; shift 2 ;;
    --bundle) mode=bundle; bundle=$(value_of "$@") || exit 2; shift 2 ;;
    --prebuilt) mode=prebuilt; bundle=$(value_of "$@") || exit 2; shift 2 ;;
    --quick) quick=1; shift ;;
    --full) full=1; shift ;;
    --dry-run) dry=1; shift ;;
    -h|--help) sed -n '3,48p' "$0"; exit 0 ;;
    *) die "unknown argument '$1' (see --help)" ;;
  esac
done
case $results in /*) ;; *) results=$PWD/$results ;; esac
mkdir -p "$(dirname "$results")" || die "cannot make the folder of $results"
deadline=${DEADLINE:-540}
case $deadline in '' | *[!0-9]*) die "DEADLINE must be a number of seconds, not '$deadline'" ;; esac
DC_DEADLINE_AT=$((started + deadline))
if [ "$full" = 1 ]; then
  precisions="amp bf16 fp32"; steps=${steps:-20}; warmup=${warmup:-5}
else
  precisions="amp bf16"; steps=${steps:-10}; warmup=${warmup:-3}
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

# The test programs a GPU runs: every CUDA test, and engine.backend_ops,
# which runs every op on every backend against its reference.
device_tests() {
  (cd "$root/tests/cuda" && ls test_cuda_*.cpp | sed 's/\.cpp$//')
  echo test_backend_ops
}

# On the GPU machine the build runs inside the deadline: each command gets
# what it leaves (build_runner=within_deadline); a bundle builds unlimited.
build_runner=""
within_deadline() {
  local t
  t=$(dc_limit_for 100000)
  [ "$t" = 0 ] && return 124
  dc_run_limited "$t" "$@"
}

configure_and_build() {  # $1: CUDA architectures
  if [ ! -f "$build/build.ninja" ]; then
    mkdir -p "$build"
    $build_runner cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DTR_GUI=OFF \
      -DTR_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES="$1" -DTR_WERROR=OFF >"$build/configure.log" 2>&1 ||
      { cat "$build/configure.log"; die "cmake failed (log above)"; }
  fi
  # shellcheck disable=SC2046
  $build_runner cmake --build "$build" -j "$jobs" --target renaissance-cli $(device_tests) ||
    die "the build failed"
}

# ---------------------------------------------------------------------------
if [ "$mode" = bundle ]; then
  [ -n "$bundle" ] || die "--bundle needs a file name"
  configure_and_build "${ARCHS_BUNDLE:-80;90}"
  stage=$(mktemp -d)
  mkdir -p "$stage/bin" "$stage/lib"
  cp "$build/bin/renaissance-cli" "$stage/bin/"
  for t in $(device_tests); do cp "$build/tests/$t" "$stage/bin/"; done
  # The engine and its CUDA backend, which the engine loads from its own folder.
  cp "$build"/lib/librenaissance-*.so "$stage/lib/" ||
    die "no engine or CUDA backend library in $build/lib"
  # Every library the programs load except the C runtime and CUDA's own,
  # which must match the GPU machine's driver and come from there (NCCL is
  # not linked: the backend loads it for a world of more than one GPU).
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
our_libs=${LD_LIBRARY_PATH:-}
# Logs live outside the results' folder and travel as one archive beside the
# results file: a device run returns only a few files.
logs=$(mktemp -d)
archive=${results%.md}-logs.tar.gz
raw=$logs/bench.jsonl
: >"$raw"
stage_lines=()   # "| step | status | seconds |"
test_lines=()
env_lines=()
cut_lines=()     # what the deadline left out
device_lines=""  # renaissance-cli devices: the GPUs and the CUDA libraries it loaded
parity=""
failed=0

write_results() {  # everything so far: a run killed at any point still reports
  {
    echo "# Device check, $(date -u '+%Y-%m-%d %H:%M UTC')$([ "$dry" = 1 ] && echo ' (dry run)')"
    echo
    echo "- commit: $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)"
    printf '%s\n' "${env_lines[@]}"
    echo "- elapsed: $(( $(date +%s) - started )) s of a $deadline s deadline; logs: $(basename "$archive")"
    if [ -n "$device_lines" ]; then
      echo
      echo "## Devices and CUDA libraries (renaissance-cli devices)"
      echo
      echo '```'
      echo "$device_lines"
      echo '```'
    fi
    echo
    echo "## Steps"
    echo
    echo "| step | status | seconds |"
    echo "| --- | --- | --- |"
    [ ${#stage_lines[@]} -gt 0 ] && printf '%s\n' "${stage_lines[@]}"
    echo
    echo "## CUDA tests"
    echo
    echo "| program | result | Qt Test totals |"
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
    echo
    echo "## Cut by the deadline"
    echo
    if [ ${#cut_lines[@]} -gt 0 ]; then printf '%s\n' "${cut_lines[@]}"; else echo "- nothing"; fi
  } >"$results"
  tar -C "$logs" -czf "$archive" . 2>/dev/null || true
}

stage_done() {  # $1 step, $2 status, $3 start time
  stage_lines+=("| $1 | $2 | $(( $(date +%s) - $3 )) |")
  write_results
}

# Sets `limit` for a step that wants $2 seconds, or records step $1 as cut by
# the deadline and returns 1.
step_limit() {
  limit=$(dc_limit_for "$2")
  [ "$limit" != 0 ] && return 0
  cut_lines+=("- $1 (wanted up to $2 s; $(dc_seconds_left) s were left)")
  write_results
  return 1
}

# ---- Environment --------------------------------------------------------------
t0=$(date +%s)
if command -v nvidia-smi >/dev/null && [ -n "$(timeout -k 5 20 nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null)" ]; then
  env_lines+=("- GPUs: $(timeout -k 5 20 nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | paste -sd';')")
  archs=${ARCHS:-$(timeout -k 5 20 nvidia-smi --query-gpu=compute_cap --format=csv,noheader | tr -d '.' | sort -u | paste -sd';')}
  env_status=run
elif [ "$dry" = 1 ]; then
  env_lines+=("- GPUs: none (dry run: every step goes as far as it can without one)")
  archs=""
  env_status="skipped: no GPU (dry run)"
else
  die "no nvidia-smi or no GPU: this is not a machine with NVIDIA GPUs (--dry-run rehearses without one)"
fi
env_lines+=("- mode: $mode; CUDA architectures: ${archs:-none}; steps $steps, warmup $warmup; precisions: $precisions")
env_lines+=("- PyTorch: $(timeout -k 5 60 "$python" -c 'import torch; print(torch.__version__, "CUDA", torch.version.cuda, "devices", torch.cuda.device_count())' 2>&1 | tail -1)")
stage_done environment "$env_status" "$t0"

# The folders of the Python environment's NVIDIA wheels that hold library $1,
# for a library the system's folders lack.
wheel_dirs_with() {
  "$python" -c '
import glob, os, site, sys
for s in site.getsitepackages():
    for d in sorted(glob.glob(os.path.join(s, "nvidia", "*", "lib"))):
        if os.path.exists(os.path.join(d, sys.argv[1])):
            print(d)' "$1" 2>/dev/null
}

# ---- Build --------------------------------------------------------------------
t0=$(date +%s)
if [ "$mode" = prebuilt ]; then
  if [ -d "$bundle" ]; then  # one unpacked already
    unpacked=$bundle
  else
    [ -f "$bundle" ] || die "no bundle '$bundle'"
    unpacked=$(mktemp -d)
    tar -C "$unpacked" -xJf "$bundle" || die "could not unpack $bundle"
  fi
  [ -x "$unpacked/bin/renaissance-cli" ] || die "$bundle holds no bin/renaissance-cli"
  bin=$unpacked/bin
  # CUDA's libraries from the system's folders (the loader's cache and the
  # toolkit's); a Python wheel's folder only for a library those lack, so a
  # CUDA-12 wheel's libcudnn.so.9 never shadows the system's. For our programs
  # only: PyTorch keeps its own libstdc++ and CUDA libraries.
  our_libs="$unpacked/lib:/usr/local/cuda/lib64:/usr/local/cuda/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  programs="$bin/renaissance-cli $(for t in $(device_tests); do echo "$bin/$t"; done) $unpacked/lib/librenaissance-cuda.so"
  missing_libs() {
    for f in $programs; do LD_LIBRARY_PATH=$our_libs ldd "$f" | awk '/not found/ {print $1}'; done | sort -u
  }
  for lib in $(missing_libs); do
    dir=$(wheel_dirs_with "$lib" | head -1)
    [ -n "$dir" ] && our_libs="$our_libs:$dir"
  done
  missing=$(missing_libs | paste -sd' ')
  [ -z "$missing" ] || die "the bundle's programs cannot find: $missing (searched $our_libs and the loader's cache)"
  build_status="unpacked $(basename "$bundle")"
elif [ "$dry" = 1 ]; then
  # A rehearsal builds nothing: the normal build as it is.
  bin=$build/bin
  [ -x "$bin/renaissance-cli" ] || die "no $bin/renaissance-cli: build first (scripts/build.sh) or set BUILD_DIR"
  build_status="skipped: the dry run uses $build"
else
  if step_limit build 100000; then
    build_runner=within_deadline
    (configure_and_build "$archs") >"$logs/build.log" 2>&1  # die ends the subshell only
    code=$?
  else
    code=124
  fi
  if [ "$code" != 0 ]; then
    tail -30 "$logs/build.log"
    stage_done build "FAILED (exit $code)" "$t0"
    exit 2
  fi
  bin=$build/bin
  build_status=run
fi
stage_done build "$build_status" "$t0"
cli=$bin/renaissance-cli
export TR_PROJECTS_DIR=$root/projects
export RENAISSANCE_STORE=$logs/runs.sqlite

# ---- Devices and the libraries the backend resolved ----------------------------
t0=$(date +%s)
if step_limit devices 60; then
  device_lines=$(LD_LIBRARY_PATH=$our_libs dc_run_limited "$limit" "$cli" devices 2>&1 | cut -c1-300)
  stage_done devices run "$t0"
fi

# ---- One step each: a test program, our benchmark row, PyTorch's ----------------
run_test() {  # $1 program
  local t=$1 log=$logs/$1.log exe=$bin/$1 t0
  t0=$(date +%s)
  [ -x "$exe" ] || exe=$build/tests/$t
  if [ ! -x "$exe" ]; then test_lines+=("| $t | not built | |"); failed=1; write_results; return; fi
  step_limit "$t" "$test_timeout" || return
  # engine.backend_ops: the CUDA backend's cases against their references
  # only (CI runs the CPU's, and its CPU builds' comparison).
  local only=()
  [ "$t" = test_backend_ops ] && only=(opMatchesItsReference)
  LD_LIBRARY_PATH=$our_libs TR_BACKEND_OPS_BACKENDS=cuda dc_run_limited "$limit" "$exe" "${only[@]}" \
    >"$log" 2>&1
  dc_test_verdict $? "$log" "$limit"
  case $DC_VERDICT in
    failed) failed=1 ;;
    skipped) [ "$dry" = 1 ] || failed=1 ;;  # a device test that did not run checked nothing
  esac
  test_lines+=("| $t | $DC_TEXT | $DC_TOTALS |")
  if [ "$t" = test_cuda_training ]; then
    parity=$(grep -hE 'largest relative difference' "$log" | sed 's/^QINFO *: *//')
  fi
  stage_done "$t" "$DC_VERDICT" "$t0"
}

row_error() {  # $1 exit code, $2 log, $3 limit: a short reason for the table
  case $1 in
    124 | 137) echo "timed out after $3 s"; return ;;
  esac
  grep -v '^$' "$2" | tail -1 | cut -c1-200 | tr '"|\\' "'/ "
}
bench_ours() {  # $1 precision, $2 label, then extra CLI arguments
  local p=$1 label=$2 line code log t0
  t0=$(date +%s)
  log=$logs/bench-ours-$1-$(echo "$2" | tr -c 'a-z0-9' '-').log
  shift 2
  step_limit "ours $p $label" "$bench_timeout" || return
  line=$(LD_LIBRARY_PATH=$our_libs dc_run_limited "$limit" "$cli" bench "$bench_project" \
         --devices cuda:0 --precision "$p" --batch "$batch" --steps "$steps" --warmup "$warmup" \
         --json "$@" 2>"$log" | tail -1)
  code=${PIPESTATUS[0]}
  case $line in "{"*) ;; *) line="{\"error\": \"$(row_error "$code" "$log" "$limit")\"}" ;; esac
  echo "{\"side\": \"ours\", \"config\": \"$label\", \"precision\": \"$p\", \"result\": $line}" >>"$raw"
  stage_done "ours $p $label" "exit $code" "$t0"
}
bench_torch() {  # $1 precision, $2 eager|graph
  local line code log=$logs/bench-torch-$1-$2.log t0
  t0=$(date +%s)
  step_limit "PyTorch $1 $2" "$bench_timeout" || return
  line=$(dc_run_limited "$limit" "$python" "$root/bench/pytorch_resnet50_cuda.py" --precision "$1" \
         --mode "$2" --batch "$batch" --steps "$steps" --warmup "$warmup" 2>"$log" | tail -1)
  code=${PIPESTATUS[0]}
  case $line in "{"*) ;; *) line="{\"error\": \"$(row_error "$code" "$log" "$limit")\"}" ;; esac
  echo "{\"side\": \"pytorch\", \"config\": \"$2\", \"precision\": \"$1\", \"result\": $line}" >>"$raw"
  stage_done "PyTorch $1 $2" "exit $code" "$t0"
}

# ---- The steps, most valuable first ------------------------------------------
bench_project=$project
# Our rows train on one batch left on the device, as PyTorch's script reuses
# one resident batch: the device against the device. The "input pipeline"
# row adds our host pipeline and the overlapped transfers.
run_test test_cuda_backend
for p in $precisions; do bench_ours "$p" "captured, 5 streams" --resident-batch; done
for p in $precisions; do bench_torch "$p" eager; done
run_test test_cuda_training
for t in $(device_tests); do
  case $t in test_cuda_backend | test_cuda_training) ;; *) run_test "$t" ;; esac
done
for p in $precisions; do
  bench_ours "$p" "uncaptured, 5 streams" --capture off --resident-batch
  bench_torch "$p" graph
  bench_ours "$p" "captured, 1 stream" --streams 1 --resident-batch
  bench_ours "$p" "captured, 5 streams, input pipeline"
  bench_ours "$p" "captured, 5 streams, deterministic convolutions" --resident-batch \
    --conv-algorithms deterministic
done
if [ "$dry" = 1 ]; then
  # Without a GPU the rows above are refusals; a run allowed to fall back
  # shows that the results refuse a CPU figure as well.
  bench_project=$root/projects/lenet-fashion.json
  saved_batch=$batch; batch=128
  bench_ours amp "captured, 5 streams, allowed to fall back (dry run)" --allow-fallback \
    --resident-batch
  batch=$saved_batch
fi
[ ${#cut_lines[@]} -gt 0 ] && failed=1
write_results

cat "$results"
echo "device-check: results in $results, logs in $archive ($(( $(date +%s) - started )) s)"
exit $failed
