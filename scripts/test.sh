#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# Every test on a fresh Debian 12 machine: install what is missing, build,
# and run the whole CTest suite.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bash "$root/scripts/setup-deps.sh"
bash "$root/scripts/build.sh"
export QT_QPA_PLATFORM=${QT_QPA_PLATFORM:-offscreen}
ctest --test-dir "$root/build" --output-on-failure -j "$(nproc)" "$@"

# The engine tests and the workbench's journeys once more under
# AddressSanitizer and UndefinedBehaviorSanitizer (a second, smaller tree: no
# CUDA, no benchmarks, of the GUI tests only the journeys through every view),
# at -O1 with assertions on, as the sanitizers' documentation advises: on a
# 2-core Zen 3 it builds in 13 minutes instead of 19 at -O3, and its tests
# take the same 4.8. Nobody edits this tree, so the engine and the workbench
# compile as unity files (TR_UNITY_BUILD). TR_SKIP_SANITIZERS=1 skips it.
if [ "${TR_SKIP_SANITIZERS:-0}" != "1" ]; then
  BUILD_DIR="$root/build-asan" \
    TR_CMAKE_ARGS="-DTR_CUDA=OFF -DTR_GUI=ON -DTR_GUI_TESTS=journeys -DTR_BENCH=OFF -DTR_SANITIZE=address,undefined -DCMAKE_CXX_FLAGS_RELEASE=-O1 -DTR_UNITY_BUILD=ON" \
    bash "$root/scripts/build.sh"
  UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
    ctest --test-dir "$root/build-asan" --output-on-failure -j "$(nproc)" -L "engine|gui" "$@"
fi
