#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# Two "hosts" with their own addresses train together: inside the test's own
# network namespace (unshare --net: nothing it makes outlives it), two more
# namespaces joined by a veth pair, 10.77.0.1 and 10.77.0.2, each with only
# its loopback and its end of the wire. renaissance-cli train runs as node 0
# on the first and node 1 on the second (the rendezvous and Gloo's pairs go
# over the veth, as between two machines) and trains to the same losses, bit
# for bit, as one process of two ranks. Skipped (77) with the reason where
# network namespaces or veth pairs cannot be made.
# usage: netns_hosts_test.sh BUILD_DIR SOURCE_DIR
set -uo pipefail
build=$(cd "$1" && pwd)
root=$(cd "$2" && pwd)
cli=$build/bin/renaissance-cli
. "$root/tests/scripts/script_test_lib.sh"

for p in unshare nsenter ip python3; do
  command -v "$p" >/dev/null || skip "no $p (util-linux, iproute2, python3)"
done
if [ -z "${TR_NETNS_SANDBOX:-}" ]; then
  why=$(unshare --net true 2>&1) || skip "no network namespace can be made here: $why"
  exec unshare --net env TR_NETNS_SANDBOX=1 bash "$0" "$@"
fi
ip link set lo up

work=$(mktemp -d)
hosts=()
trap 'kill "${hosts[@]}" 2>/dev/null; rm -rf "$work"' EXIT
for _ in 1 2; do
  unshare --net sleep 600 &
  hosts+=($!)
done
for pid in "${hosts[@]}"; do # until each sleeps in its own namespace
  for _ in $(seq 50); do
    [ "$(readlink "/proc/$pid/ns/net")" != "$(readlink /proc/self/ns/net)" ] && break
    sleep 0.1
  done
done
why=$(ip link add tr-a type veth peer name tr-b 2>&1) || skip "no veth pair can be made: $why"
ip link set tr-a netns "${hosts[0]}" && ip link set tr-b netns "${hosts[1]}" ||
  skip "the veth ends cannot move into the hosts' namespaces"
on() { # $1 host (0 or 1), then the command
  local h=$1
  shift
  nsenter --net="/proc/${hosts[$h]}/ns/net" "$@"
}
for h in 0 1; do
  dev=tr-a
  [ "$h" = 1 ] && dev=tr-b
  on "$h" ip addr add "10.77.0.$((h + 1))/24" dev "$dev" &&
    on "$h" ip link set "$dev" up && on "$h" ip link set lo up ||
    skip "host $h's addresses cannot be set"
done
echo "ok: hosts 10.77.0.1 and 10.77.0.2 joined by a veth pair"

project=$root/tests/data/projects/tiny-synthetic.json
common=(--devices cpu:1 --epochs 2 --threads 1 --sync-bn on)
for h in 0 1; do
  on "$h" timeout 240 "$cli" train "$project" "${common[@]}" --nodes 2 --node-rank "$h" \
    --rendezvous 10.77.0.1:29500 --rendezvous-timeout 60 --store "$work/node$h.sqlite" \
    --summary "$work/node$h.json" >"$work/node$h.log" 2>&1 &
done
codes=()
for job in $(jobs -p | grep -v -x -F -e "${hosts[0]}" -e "${hosts[1]}"); do
  wait "$job"
  codes+=($?)
done
for h in 0 1; do
  sed "s/^/  node $h | /" "$work/node$h.log"
done
[ "${codes[*]}" = "0 0" ] || fail "the nodes exited with ${codes[*]}"
grep -q "global ranks 1-1 of 2 on this node" "$work/node1.log" &&
  echo "ok: host 10.77.0.2 trained as global rank 1" || fail "node 1 did not join as rank 1"

"$cli" train "$project" --devices cpu:2 --epochs 2 --threads 1 --sync-bn on --no-store \
  --summary "$work/one.json" >"$work/one.log" 2>&1 || fail "one process of cpu:2: $(tail -n 3 "$work/one.log")"
same=$(python3 - "$work/node0.json" "$work/one.json" <<'EOF'
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
keys = ("train_loss", "val_loss", "val_top1")
print(len(b["epochs"]) == 2 and all(x.get(k) == y.get(k) for x, y in zip(a["epochs"], b["epochs"]) for k in keys))
EOF
)
[ "$same" = True ] && echo "ok: the same losses, bit for bit, as one process of cpu:2" ||
  fail "the two hosts' losses differ from one process's: $(cat "$work/node0.json" "$work/one.json")"

verdict
