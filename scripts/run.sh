#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# The main job on a fresh Debian 12 machine: install what is missing, build,
# and run the default project. Until the workbench lands this is
# renaissance-cli on the default project (lenet-fashion).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bash "$root/scripts/setup-deps.sh"
bash "$root/scripts/build.sh"
exec "$root/build/bin/renaissance-cli" plan "$root/projects/lenet-fashion.json" "$@"
