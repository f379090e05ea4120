#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# Times the compiler on every ready-made project (all variants each time).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$here/build}
"$build/bin/bench_compile" --repeat "${REPEAT:-50}" "$here"/projects/*.json
