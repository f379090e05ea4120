#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# The one-way flow, for includes: each folder of the engine includes only its
# own headers, the public API (<renaissance/...>) and the folders below it,
# and the workbench and the CLI include nothing of the engine but the public
# API. The linker checks calls (each layer is a library linked with
# --no-undefined against those below it); this checks the types as well.
set -euo pipefail
root=${1:?usage: check_includes.sh SOURCE_ROOT}
cd "$root"

# folder: the engine folders its files may include from
declare -A allowed=(
  [engine/core]="core"
  [engine/model]="core model"
  [engine/plan]="core plan"
  [engine/compile]="core model plan compile"
  [engine/data]="core model data"
  [engine/runtime]="core model plan compile data runtime"
  [engine/backends/cpu]="core model plan compile data runtime backends/cpu"
  [engine/backends/cuda]="core model plan compile data runtime net backends backends/cuda"
  [engine/store]="core model store"
  [engine/net]="core model plan compile net"
  [engine/onnx]="core model plan compile onnx"
  [engine/setup]="core model plan compile data runtime backends backends/cpu net store setup"
  # its own files (device scan, CUDA loader) are built into tr_setup, above the CPU backend
  [engine/backends]="core model plan compile data runtime backends backends/cpu net"
  [engine/cli]=""
  [gui]=""
)
layers="core|model|plan|compile|data|runtime|backends|store|net|onnx|setup"

bad=0
checked=0
for folder in "${!allowed[@]}"; do
  depth=""
  # engine/backends holds only the files directly in it; its subfolders are layers of their own.
  [ "$folder" = engine/backends ] && depth="-maxdepth 1"
  while IFS= read -r file; do
    checked=$((checked + 1))
    while IFS=: read -r line inc; do
      target=$(sed -E 's/^#include "([^"]+)".*/\1/' <<<"$inc")
      # The engine folder an include names: its first one or two path parts.
      case "$target" in
        backends/cpu/*) from=backends/cpu ;;
        backends/cuda/*) from=backends/cuda ;;
        backends/*) from=backends ;;
        *) from=${target%%/*} ;;
      esac
      grep -Eq "^($layers)$|^backends/(cpu|cuda)$" <<<"$from" || continue
      ok=no
      for a in ${allowed[$folder]}; do [ "$a" = "$from" ] && ok=yes; done
      if [ $ok = no ]; then
        echo "$file:$line: includes \"$target\", but $folder may include only" \
             "${allowed[$folder]:-the public API (<renaissance/...>)}" >&2
        bad=$((bad + 1))
      fi
    done < <(grep -nE '^#include "' "$file" | sed -E 's/^([0-9]+):/\1:/')
  done < <(find "$folder" $depth -type f \( -name '*.h' -o -name '*.cpp' -o -name '*.cu' -o -name '*.cuh' \))
done

# Each public header belongs to one layer: the one whose file implements it
# (the file that includes it first), or, for declarations only, the layer
# named here. A folder may include a public header only of a layer it may
# include, and so may another public header of that layer.
declare -A owner=(
  [dtype.h]=core [project_limits.h]=core [stream_kind.h]=core [training_values.h]=core
  [cpu_bf16.h]=core [checkpoint_values.h]=core
  [plan_report.h]=compile [step_lifetimes.h]=compile
  [training.h]=runtime [profile.h]=runtime
  [multi_node_options.h]=net
)
while IFS= read -r file; do
  first=$(grep -m1 -E '^#include' "$file" || true)
  [[ "$first" =~ \<renaissance/([a-z_]+\.h)\> ]] || continue
  header=${BASH_REMATCH[1]}
  folder=${file%/*}
  owner[$header]=${folder#engine/}
done < <(find engine -name '*.cpp' -not -path 'engine/cli/*' -not -path 'engine/backends/cuda/*')
for header in engine/include/renaissance/*.h; do
  name=${header##*/}
  if [ -z "${owner[$name]:-}" ]; then
    echo "$header: no layer implements it; name its layer in check_includes.sh's owner table" >&2
    bad=$((bad + 1))
  fi
done
# May `folder` (an engine folder) include a header of layer `layer`?
may_include() {
  local folder=$1 layer=$2 a
  [ "engine/$layer" = "$folder" ] && return 0
  for a in ${allowed[$folder]}; do [ "$a" = "$layer" ] && return 0; done
  return 1
}
for folder in "${!allowed[@]}"; do
  [ "$folder" = engine/cli ] || [ "$folder" = gui ] && continue
  depth=""
  [ "$folder" = engine/backends ] && depth="-maxdepth 1"
  while IFS=: read -r file line inc; do
    name=$(sed -E 's/^#include <renaissance\/([^>]+)>.*/\1/' <<<"$inc")
    layer=${owner[$name]:-}
    [ -n "$layer" ] || continue
    if ! may_include "$folder" "$layer"; then
      echo "$file:$line: includes <renaissance/$name>, the $layer layer's, which $folder may not" \
           "(it may include ${allowed[$folder]})" >&2
      bad=$((bad + 1))
    fi
  done < <(find "$folder" $depth -type f \( -name '*.h' -o -name '*.cpp' \) -exec grep -nE '^#include <renaissance/' {} + 2>/dev/null |
           sed -E 's/^([^:]+):([0-9]+):/\1:\2:/')
done
for header in engine/include/renaissance/*.h; do
  self=${owner[${header##*/}]:-}
  [ -n "$self" ] || continue
  while IFS=: read -r line inc; do
    name=$(sed -E 's/^#include <renaissance\/([^>]+)>.*/\1/' <<<"$inc")
    layer=${owner[$name]:-}
    if [ -n "$layer" ] && ! may_include "engine/$self" "$layer"; then
      echo "$header:$line: includes <renaissance/$name>, the $layer layer's, below which" \
           "$self (its own layer) does not sit" >&2
      bad=$((bad + 1))
    fi
  done < <(grep -nE '^#include <renaissance/' "$header" || true)
done

# The public headers include only each other and the standard library (and nlohmann's JSON).
while IFS=: read -r file line inc; do
  echo "$file:$line: a public header includes $inc; it may include only <renaissance/...>" >&2
  bad=$((bad + 1))
done < <(grep -nE '^#include "' engine/include/renaissance/*.h || true)

echo "$checked files checked, $bad includes against the layer order"
[ "$bad" -eq 0 ]
