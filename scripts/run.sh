#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# The main job on a fresh Debian 12 machine: install what is missing, build,
# and open the workbench on the default project (lenet-fashion); arguments
# replace the project (`bash scripts/run.sh projects/resnet8-fashion.json`).
# Without a display ($DISPLAY and $WAYLAND_DISPLAY unset) a window cannot
# open: it says so, renders each view of the workbench to a PNG in
# build/screenshots (offscreen) and prints the compiled plan with
# renaissance-cli instead. The screenshots' short training run is recorded in
# a temporary run store, not in the user's.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bash "$root/scripts/setup-deps.sh"
bash "$root/scripts/build.sh"
if [ $# -eq 0 ]; then set -- "$root/projects/lenet-fashion.json"; fi
if [ -z "${DISPLAY:-}" ] && [ -z "${WAYLAND_DISPLAY:-}" ]; then
  echo "run: no display (\$DISPLAY and \$WAYLAND_DISPLAY are unset), so no window;" \
       "writing the workbench's views to $root/build/screenshots and printing the plan instead"
  # The screenshots train a short demo run; it goes to a run store of its
  # own, removed afterwards, not into the user's run history.
  demo_store=$(mktemp -d "${TMPDIR:-/tmp}/renaissance-demo.XXXXXX")
  trap 'rm -rf "$demo_store"' EXIT
  RENAISSANCE_STORE="$demo_store/runs.sqlite" \
    "$root/build/bin/renaissance" "$1" --screenshots "$root/build/screenshots"
  rm -rf "$demo_store"
  trap - EXIT
  exec "$root/build/bin/renaissance-cli" plan "$@"
fi
exec "$root/build/bin/renaissance" "$@"
