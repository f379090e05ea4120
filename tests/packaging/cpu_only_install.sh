#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# The two Debian packages, and the workbench package on a machine without
# CUDA. cpack makes renaissance-workbench (and, with the CUDA backend built,
# renaissance-workbench-cuda); the workbench package must name no CUDA
# package and load no CUDA library. Unpacked, in a mount namespace where
# every CUDA library is hidden, its programs must plan, train two steps
# (also when cuda:0 is asked for) and render the workbench's screenshots;
# with the CUDA package unpacked too, `devices` must say which library the
# backend lacks, and training must still run on the CPU.
#
# usage: cpu_only_install.sh BUILD_DIR SOURCE_DIR CUDA(ON|OFF) GUI(ON|OFF)
# Exits 77 (CTest: skipped) after the package checks when no mount
# namespace can be made here (neither root nor user namespaces).
set -euo pipefail
build=$1 src=$2 with_cuda=$3 with_gui=$4
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() {
  echo "FAIL: $*" >&2
  exit 1
}
cuda_names='lib(cuda|cudart|cublas|cublasLt|cudnn[a-z_]*|nccl)\.so'

# ---- The packages --------------------------------------------------------------
if ! cpack --config "$build/CPackConfig.cmake" -B "$work/pkg" >"$work/cpack.log" 2>&1; then
  cat "$work/cpack.log" >&2
  fail "cpack failed"
fi
workbench=$(ls "$work"/pkg/renaissance-workbench_*.deb 2>/dev/null) || fail "no renaissance-workbench package: $(ls "$work/pkg")"
cuda_pkg=$(ls "$work"/pkg/renaissance-workbench-cuda_*.deb 2>/dev/null || true)
if [ "$with_cuda" = ON ] && [ -z "$cuda_pkg" ]; then fail "no renaissance-workbench-cuda package: $(ls "$work/pkg")"; fi
echo "packages: $(cd "$work/pkg" && ls -- *.deb | paste -sd' ')"

depends=$(dpkg-deb -f "$workbench" Depends)
echo "renaissance-workbench depends on: $depends"
if echo "$depends" | grep -Eiq 'cuda|cudnn|nccl|cublas'; then fail "the workbench package depends on CUDA: $depends"; fi
if dpkg-deb -c "$workbench" | grep -q librenaissance-cuda; then fail "the workbench package ships the CUDA backend"; fi
if [ -n "$cuda_pkg" ]; then
  cuda_depends=$(dpkg-deb -f "$cuda_pkg" Depends)
  echo "renaissance-workbench-cuda depends on: $cuda_depends"
  version=$(dpkg-deb -f "$workbench" Version)
  echo "$cuda_depends" | grep -q "renaissance-workbench (= $version)" ||
    fail "the CUDA package does not depend on renaissance-workbench (= $version)"
  dpkg-deb -c "$cuda_pkg" | grep -q 'librenaissance-cuda\.so$' || fail "the CUDA package lacks the backend"
fi

root=$work/root
dpkg-deb -x "$workbench" "$root"
cli=$root/usr/bin/renaissance-cli
[ -x "$cli" ] || fail "no usr/bin/renaissance-cli in the workbench package"
for f in "$root"/usr/bin/* "$root"/usr/lib/renaissance/*.so; do
  if ldd "$f" | grep -E "$cuda_names"; then fail "$(basename "$f") loads a CUDA library"; fi
  if ldd "$f" | grep -q 'not found'; then fail "$(basename "$f"): $(ldd "$f" | grep 'not found')"; fi
done
echo "no program or library of the workbench package needs a CUDA library"

# The AVX2 and AVX-512 builds of the CPU kernels ship beside the engine, which
# finds them there as the build tree's does (the widest the CPU runs).
for k in avx2 avx512; do
  [ -f "$root/usr/lib/renaissance/librenaissance-cpu-$k.so" ] ||
    fail "the workbench package lacks librenaissance-cpu-$k.so"
done
kernels_of() { "$1" devices | grep -o '[A-Za-z0-9-]* kernels$' || true; }
built_kernels=$(kernels_of "$build/bin/renaissance-cli")
installed_kernels=$(kernels_of "$cli")
[ -n "$built_kernels" ] && [ "$installed_kernels" = "$built_kernels" ] ||
  fail "the installed engine runs '$installed_kernels', the build tree's '$built_kernels'"
echo "installed engine: $installed_kernels"

# ---- Without CUDA -----------------------------------------------------------------
if unshare -m --propagation private true 2>/dev/null; then
  namespace=(unshare -m --propagation private)
elif unshare -m -r --propagation private true 2>/dev/null; then
  namespace=(unshare -m -r --propagation private)
else
  echo "SKIP: no mount namespace here (unshare -m as root or with a user namespace), so CUDA's libraries cannot be hidden"
  exit 77
fi

# Runs inside the namespace: hides every CUDA library, then runs the checks.
cat >"$work/hidden.sh" <<'EOF'
set -euo pipefail
work=$1 src=$2 with_cuda=$3 with_gui=$4 cuda_names=$5
root=$work/root cli=$work/root/usr/bin/renaissance-cli
fail() { echo "FAIL: $*" >&2; exit 1; }
: >"$work/empty"
hidden=0
# Every CUDA library the loader's cache knows becomes an empty file, and
# every toolkit folder an empty one.
for lib in $(ldconfig -p | grep -E "$cuda_names" | awk '{print $NF}' | xargs -r readlink -f | sort -u); do
  mount --bind "$work/empty" "$lib"
  hidden=$((hidden + 1))
done
for d in /usr/local/cuda*; do
  if [ -d "$d" ] && [ ! -L "$d" ]; then mount -t tmpfs none "$d"; hidden=$((hidden + 1)); fi
done
echo "hidden: $hidden CUDA libraries and toolkit folders"
export RENAISSANCE_STORE=$work/runs.sqlite QT_QPA_PLATFORM=offscreen
unset RENAISSANCE_CUDA_BACKEND LD_LIBRARY_PATH

out=$("$cli" devices) || fail "devices failed: $out"
echo "$out"
echo "$out" | grep -q "no CUDA backend installed" || fail "devices does not say the CUDA backend is missing"
"$cli" plan "$src/projects/lenet-fashion.json" >"$work/plan.txt" || fail "plan failed: $(cat "$work/plan.txt")"
grep -q '^variant train (train, batch [0-9]* per device): ' "$work/plan.txt" || fail "plan printed no plan: $(head "$work/plan.txt")"
echo "plan: $(grep -m1 '^variant train' "$work/plan.txt")"
"$cli" train "$src/projects/lenet-fashion.json" --devices cpu:1 --max-steps 2 \
  >"$work/train.txt" 2>&1 || fail "train failed: $(cat "$work/train.txt")"
grep -q "finished at --max-steps 2" "$work/train.txt" || fail "train did not stop at 2 steps: $(cat "$work/train.txt")"
echo "train cpu:1: $(tail -1 "$work/train.txt")"
"$cli" train "$src/projects/lenet-fashion.json" --devices cuda:0 --max-steps 2 \
  >"$work/train-cuda.txt" 2>&1 || fail "train --devices cuda:0 failed: $(cat "$work/train-cuda.txt")"
grep -q "training on cpu:1 instead" "$work/train-cuda.txt" ||
  fail "train --devices cuda:0 did not say it falls back: $(cat "$work/train-cuda.txt")"
echo "train cuda:0: $(grep -m1 'instead' "$work/train-cuda.txt")"
if [ "$with_gui" = ON ]; then
  "$root/usr/bin/renaissance" --screenshots "$work/shots" "$src/projects/lenet-fashion.json" \
    >"$work/shots.txt" 2>&1 || fail "the workbench's screenshots failed: $(cat "$work/shots.txt")"
  shots=$(ls "$work"/shots/*.png 2>/dev/null | wc -l)
  [ "$shots" -ge 4 ] || fail "the workbench wrote $shots screenshots"
  echo "workbench: $shots screenshots"
fi

if [ "$with_cuda" = ON ]; then
  dpkg-deb -x "$(ls "$work"/pkg/renaissance-workbench-cuda_*.deb)" "$root"
  out=$("$cli" devices) || fail "devices with the CUDA package failed: $out"
  echo "$out"
  echo "$out" | grep -q "librenaissance-cuda.so cannot be loaded: lib[a-zA-Z]*\.so" ||
    fail "devices does not name the library the CUDA backend lacks"
  "$cli" train "$src/projects/lenet-fashion.json" --devices cuda:0 --max-steps 2 \
    >"$work/train-cuda2.txt" 2>&1 || fail "train with the CUDA package failed: $(cat "$work/train-cuda2.txt")"
  grep -q "cannot be loaded.*training on cpu:1 instead" "$work/train-cuda2.txt" ||
    fail "train did not say why it falls back: $(cat "$work/train-cuda2.txt")"
  echo "train cuda:0 with the CUDA package: falls back, naming the missing library"
fi
EOF
"${namespace[@]}" bash "$work/hidden.sh" "$work" "$src" "$with_cuda" "$with_gui" "$cuda_names"

# ---- With CUDA's libraries visible again, the backend loads ----------------------------
if [ "$with_cuda" = ON ]; then
  dpkg-deb -x "$cuda_pkg" "$root"
  out=$(env -u RENAISSANCE_CUDA_BACKEND "$cli" devices --json)
  echo "$out" | grep -A2 '"cuda_backend"'
  echo "$out" | tr -d ' \n' | grep -q '"loaded":true' || fail "the unpacked CUDA backend does not load: $out"
fi
echo "PASS"
