#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# scripts/device-check.sh without a GPU: what a test program's exit and log
# make of it, the deadline's arithmetic, the dry run, and a rehearsal on a
# fake GPU machine (a fake nvidia-smi, the build as an unpacked bundle, a
# PyTorch row stuck and deaf to SIGTERM) whose deadline must cut the rest.
# usage: device_check_test.sh BUILD_DIR SOURCE_DIR
set -uo pipefail
build=$(cd "$1" && pwd)
root=$(cd "$2" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
expect() {  # $1 what, $2 wanted, $3 got
  if [ "$2" != "$3" ]; then fail "$1: wanted '$2', got '$3'"; else echo "ok: $1"; fi
}
contains() {  # $1 file, $2 extended regex, $3 what
  if grep -qE "$2" "$1"; then echo "ok: $3"; else fail "$3: no /$2/ in $1"; fi
}

# ---- Verdicts -----------------------------------------------------------------
. "$root/scripts/device_check_lib.sh"
log=$work/t.log
qt_log() {  # lines of a Qt Test log, then its totals
  printf '%s\n' "PASS   : T::initTestCase()" "$@" "PASS   : T::cleanupTestCase()" \
    "Totals: 0 passed, 0 failed, 0 skipped, 0 blacklisted, 1ms" >"$log"
}
qt_log "PASS   : T::one()" "SKIP   : T::two(ring) needs two GPUs" "   Loc: [t.cpp(9)]"
dc_test_verdict 0 "$log" 120
expect "a single-GPU pass beside a two-GPU skip" passed "$DC_VERDICT"
expect "its words" "passed (1; 1 skipped: needs two GPUs)" "$DC_TEXT"

qt_log "FAIL!  : T::one() Compared values are not the same" "SKIP   : T::two() needs two GPUs"
dc_test_verdict 1 "$log" 120
expect "a failure beside a skip is a failure" failed "$DC_VERDICT"
expect "its words" "FAILED (exit 1): 1 failed, 0 passed, 1 skipped" "$DC_TEXT"

qt_log "PASS   : T::parses()" "SKIP   : T::none(a) no case here yet" \
  "SKIP   : T::runs() no CUDA device: no driver"
dc_test_verdict 0 "$log" 120
expect "device cases that never ran" skipped "$DC_VERDICT"
expect "its words name the missing device" "skipped: no CUDA device: no driver" "$DC_TEXT"

qt_log "SKIP   : T::runs(lenet fp32) out of memory"
dc_test_verdict 0 "$log" 120
expect "nothing but the fixture passed" skipped "$DC_VERDICT"
expect "its words" "skipped: out of memory" "$DC_TEXT"

qt_log "PASS   : T::one()"
dc_test_verdict 0 "$log" 120
expect "a clean pass" "passed (1)" "$DC_TEXT"
dc_test_verdict 124 "$log" 37
expect "the limit" "TIMED OUT after 37 s" "$DC_TEXT"
dc_test_verdict 137 "$log" 37
expect "the kill after the limit" failed "$DC_VERDICT"
dc_test_verdict 139 "$log" 37
expect "a crash at exit" "FAILED: killed by signal 11" "$DC_TEXT"
echo "PASS   : T::one()" >"$log"
dc_test_verdict 0 "$log" 120
expect "exit 0 without totals" failed "$DC_VERDICT"

# ---- The deadline's arithmetic (10 s reserve, 5 s kill grace, 5 s minimum) -----
now=$(date +%s)
DC_DEADLINE_AT=$((now + 100))
expect "a step that fits" 30 "$(dc_limit_for 30)"
DC_DEADLINE_AT=$((now + 40))
expect "a step cut to what is left" 25 "$(dc_limit_for 90)"
DC_DEADLINE_AT=$((now + 18))
expect "too little left to start" 0 "$(dc_limit_for 90)"

# ---- The dry run ----------------------------------------------------------------
t0=$(date +%s)
BUILD_DIR=$build bash "$root/scripts/device-check.sh" --dry-run --results "$work/dry/r.md" \
  >"$work/dry.log" 2>&1
expect "the dry run's exit" 0 "$?"
took=$(($(date +%s) - t0))
[ "$took" -lt 60 ] && echo "ok: the dry run took $took s" || fail "the dry run took $took s"
r=$work/dry/r.md
contains "$r" '^\| test_cuda_backend \| skipped: no CUDA device' "the smoke test is a skip"
contains "$r" '^## Devices and CUDA libraries' "the devices section"
contains "$r" '^  cuDNN +[0-9]+\.[0-9]+\.[0-9]+ +/' "cuDNN's version and file"
contains "$r" 'REFUSED: ran on cpu' "a CPU figure is refused"
contains "$r" '^## Cut by the deadline' "the cut section"
[ -f "$work/dry/r-logs.tar.gz" ] && echo "ok: the logs archive" || fail "no logs archive"
# The most valuable first: the smoke test, our rows, PyTorch's, then parity.
order=$(sed -n '/^## Steps/,/^## CUDA tests/p' "$r" |
  grep -oE '^\| (test_cuda_backend|ours amp captured, 5 streams|PyTorch amp eager|test_cuda_training) ' |
  sed -E 's/^\| //; s/ $//' | paste -sd,)
expect "the order of the steps" "test_cuda_backend,ours amp captured, 5 streams,PyTorch amp eager,test_cuda_training" "$order"

# ---- A fake GPU machine with a stuck PyTorch and a 30-second deadline -----------
fake=$work/fake
mkdir -p "$fake/path" "$fake/bundle/bin"
cat >"$fake/path/nvidia-smi" <<'EOF'
#!/bin/sh
case "$*" in
  *compute_cap*) echo "9.0" ;;
  *driver_version*) echo "NVIDIA H200, 143771 MiB, 580.65" ;;
  *) echo "NVIDIA H200" ;;
esac
EOF
# PyTorch's benchmark hangs and ignores SIGTERM, as a process stuck in the driver.
cat >"$fake/path/python-stuck" <<'EOF'
#!/bin/bash
case "$*" in
  *pytorch_resnet50_cuda.py*) trap '' TERM; sleep 120 & wait; sleep 120 ;;
  *) exec python3 "$@" ;;
esac
EOF
chmod +x "$fake/path/nvidia-smi" "$fake/path/python-stuck"
ln -s "$build/bin/renaissance-cli" "$fake/bundle/bin/"
for t in "$build"/tests/test_cuda_*; do ln -s "$t" "$fake/bundle/bin/"; done
ln -s "$build/lib" "$fake/bundle/lib"
t0=$(date +%s)
PATH=$fake/path:$PATH PYTHON=$fake/path/python-stuck DEADLINE=30 \
  bash "$root/scripts/device-check.sh" --prebuilt "$fake/bundle" --quick --results "$work/fake/r.md" \
  >"$work/fake.log" 2>&1
code=$?
took=$(($(date +%s) - t0))
[ "$took" -le 30 ] && echo "ok: the rehearsal ended in $took s" || fail "the rehearsal took $took s (deadline 30)"
expect "a check that checked nothing fails" 1 "$code"
r=$work/fake/r.md
contains "$r" 'GPUs: NVIDIA H200, 143771 MiB' "the fake GPU"
contains "$r" 'pytorch \| amp \| eager \| error: timed out after [0-9]+ s' "the stuck row timed out"
contains "$r" '^- test_cuda_training \(wanted up to 120 s' "the parity test was cut"
contains "$r" '^- PyTorch amp graph ' "the last row was cut"

# An option without its value is refused by name, not by the shell.
for opt in --bundle --prebuilt --results; do
  said=$(bash "$root/scripts/device-check.sh" "$opt" 2>&1)
  expect "$opt without a value exits" 2 "$?"
  expect "$opt without a value says so" "device-check: $opt needs a value (see --help)" "$said"
done

if [ "$failures" -gt 0 ]; then
  echo "--- dry run"; cat "$work/dry.log"
  echo "--- rehearsal"; cat "$work/fake.log"
  exit 1
fi
echo "all device-check checks passed"
