#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# Tensor parallel's figures (issue 38): what one rank holds of vit-b16's
# transformer blocks on a mesh of tensor=2 against one rank holding all of
# them (from `plan --json`), and the ViT's step time with tensor parallel
# beside pure data parallel on the same ranks, with the share of each
# rank's collectives that ran under kernels (from a profiled `train`).
# Settings: BUILD_DIR, DEVICES (cpu:2), STEPS (12), VIT (vit-tiny-fashion).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$here/build}
cli="$build/bin/renaissance-cli"
devices=${DEVICES:-cpu:2}
steps=${STEPS:-12}
vit=${VIT:-vit-tiny-fashion}
if [[ "${1:-}" == "--help" ]]; then
  sed -n '3,8p' "$0" | sed 's/^# //'
  exit 0
fi
ranks=${devices#cpu:}
[[ "$devices" == cuda:* ]] && ranks=2

echo "== vit-b16's blocks per rank, mesh tensor=2 against one rank (plan --json)"
"$cli" plan "$here/projects/vit-b16.json" --json --devices "${devices%%:*}:1" > /tmp/tp-one.$$.json
"$cli" plan "$here/projects/vit-b16.json" --json --devices "${devices%%:*}:2" --mesh tensor=2 \
  > /tmp/tp-two.$$.json
python3 - /tmp/tp-one.$$.json /tmp/tp-two.$$.json <<'PY'
import json, re, sys
def blocks(path):
    j = json.load(open(path))
    v = next(v for v in j["variants"] if v["kind"] == "train")
    params = features = communication = 0
    for t in v["tensors"]:
        if not re.match(r"b\d+_", t.get("owner") or ""):
            continue
        r = t["region"]
        if r.startswith("F_"):
            # Sequence parallel's buffers for the tensor group's batch:
            # gathered (R) or pending sums (P), each alive from its
            # collective to its reader.
            if t.get("tensor_placement", "S") in ("R", "P"):
                communication += t["slot_bytes"]
            else:
                features += t["slot_bytes"]
        elif r[0] in "WEAGHMV" and r[1] == "_":
            params += t["slot_bytes"]
    return params, features, communication, v["total_bytes"], v["batch"]
p1, f1, c1, t1, b1 = blocks(sys.argv[1])
p2, f2, c2, t2, b2 = blocks(sys.argv[2])
mib = lambda b: b / 2**20
print(f"batch per rank: {b1} on one rank; {b2} on each tensor rank (the whole layers; "
      f"the split ones compute the group's {2 * b2})")
print(f"blocks' parameters (every series): {mib(p1):.2f} -> {mib(p2):.2f} MiB = {p2/p1:.3f}x")
print(f"blocks' features and gradient slots held (own slots): {mib(f1):.2f} -> {mib(f2):.2f} MiB "
      f"= {f2/f1:.3f}x")
print(f"blocks' parameters and features: {(p2+f2)/(p1+f1):.3f}x")
print(f"blocks' communication buffers for the group's batch (own slots, short-lived): "
      f"{mib(c2):.2f} MiB; with them {(p2+f2+c2)/(p1+f1):.3f}x")
print(f"train variant, packed (what a rank allocates, buffers included): {mib(t1):.2f} -> "
      f"{mib(t2):.2f} MiB = {t2/t1:.3f}x")
PY
rm -f /tmp/tp-one.$$.json /tmp/tp-two.$$.json

echo "== $vit on $devices: data parallel, then mesh tensor=$ranks (bench, one resident batch)"
for mesh in "" "--mesh tensor=$ranks"; do
  "$cli" bench "$here/projects/$vit.json" --devices "$devices" $mesh --steps "$steps" --warmup 3 \
    --resident-batch | tail -1
done
echo "== collectives hidden under kernels (train --profile-steps 4:$((steps + 4)) --trace)"
for mesh in "" "--mesh tensor=$ranks"; do
  echo "-- ${mesh:-data parallel}"
  "$cli" train "$here/projects/$vit.json" --devices "$devices" $mesh --max-steps $((steps + 4)) \
    --profile-steps "4:$((steps + 4))" --trace /tmp/tp-trace.$$.json --no-validation |
    grep -E "^communication|^epoch"
done
rm -f /tmp/tp-trace.$$.json
