#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# Configures (once) and builds everything into build/ (binaries in build/bin).
# Incremental: a second run rebuilds only what changed.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$root/build}
jobs=${JOBS:-$(nproc)}

# CI sets CI=true: warnings are errors there.
werror=OFF
if [ "${CI:-}" = "true" ]; then werror=ON; fi

if [ ! -f "$build/build.ninja" ]; then
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DTR_WERROR=$werror \
    ${TR_CMAKE_ARGS:-}
fi
cmake --build "$build" -j "$jobs"
