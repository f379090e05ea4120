#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# Training launched as Slurm users launch it: a one-node Slurm cluster of
# this machine (Debian's slurmctld and slurmd with a configuration generated
# in a temporary folder, authentication off, every file they write under
# that folder, both stopped at the end) runs `srun -N1 -n2 renaissance-cli
# train` to completion. The two tasks find each other from their SLURM_
# variables alone, train as global ranks 0 and 1, and the run is recorded
# once, by rank 0. Skipped (77) with the reason where Slurm cannot start.
# usage: slurm_srun_test.sh BUILD_DIR SOURCE_DIR
set -uo pipefail
build=$(cd "$1" && pwd)
root=$(cd "$2" && pwd)
cli=$build/bin/renaissance-cli
. "$root/tests/scripts/script_test_lib.sh"

[ "$(id -u)" = 0 ] || skip "slurmd starts jobs as root here (SlurmdUser=root); run the test as root"
for p in slurmctld slurmd srun sinfo; do
  command -v "$p" >/dev/null || skip "no $p: Debian's slurmctld, slurmd and slurm-client packages"
done
for plugin in auth_none cred_none; do
  ls /usr/lib/*/slurm-wlm/"$plugin".so >/dev/null 2>&1 ||
    skip "Slurm has no $plugin plugin, which a cluster without munge keys needs"
done

work=$(mktemp -d)
stop_daemons() {
  for d in slurmd slurmctld; do
    [ -s "$work/$d.pid" ] || continue
    pid=$(cat "$work/$d.pid")
    kill "$pid" 2>/dev/null
    for _ in $(seq 50); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.1
    done
    kill -9 "$pid" 2>/dev/null
  done
}
trap 'stop_daemons; rm -rf "$work"' EXIT

# A port nothing listens on, from FROM up.
free_port() {
  local p=$1
  while (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; do p=$((p + 1)); done
  echo "$p"
}
ctld_port=$(free_port $((40000 + RANDOM % 10000)))
slurmd_port=$(free_port $((ctld_port + 1)))
# The rendezvous port a Slurm launch takes is 29500 + the job id % 1000:
# the first job's id makes it a free one.
rendezvous_port=$(free_port $((29500 + RANDOM % 400)))
first_job=$((rendezvous_port - 29500 + 1000))

host=$(hostname -s)
mkdir -p "$work/state" "$work/spool"
cat >"$work/slurm.conf" <<EOF
ClusterName=renaissance-test
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/none
CredType=cred/none
StateSaveLocation=$work/state
SlurmdSpoolDir=$work/spool
SlurmctldPidFile=$work/slurmctld.pid
SlurmdPidFile=$work/slurmd.pid
SlurmctldLogFile=$work/slurmctld.log
SlurmdLogFile=$work/slurmd.log
ProctrackType=proctrack/pgid
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
ReturnToService=2
FirstJobId=$first_job
NodeName=$host NodeAddr=127.0.0.1 CPUs=2 State=UNKNOWN
PartitionName=renaissance Nodes=$host Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES
EOF
export SLURM_CONF=$work/slurm.conf

slurmctld -f "$SLURM_CONF" -i >"$work/start.log" 2>&1 ||
  skip "slurmctld did not start: $(tail -n 3 "$work/start.log" "$work/slurmctld.log" 2>/dev/null | tr '\n' ' ')"
slurmd -f "$SLURM_CONF" >>"$work/start.log" 2>&1 ||
  skip "slurmd did not start: $(tail -n 3 "$work/start.log" "$work/slurmd.log" 2>/dev/null | tr '\n' ' ')"
idle=""
for _ in $(seq 100); do
  idle=$(sinfo -h -o %t 2>/dev/null)
  [ "$idle" = idle ] && break
  sleep 0.2
done
[ "$idle" = idle ] ||
  skip "the Slurm node did not come up (sinfo says '$idle'): $(tail -n 3 "$work/slurmd.log" "$work/slurmctld.log" 2>/dev/null | tr '\n' ' ')"
echo "ok: a one-node Slurm cluster on $host (slurmctld :$ctld_port, slurmd :$slurmd_port)"

# The nodelist's first host is the rendezvous; where this machine's name
# does not resolve, MASTER_ADDR (which Slurm launches honour too) says where.
if ! getent hosts "$host" >/dev/null; then
  export MASTER_ADDR=127.0.0.1
  echo "note: '$host' does not resolve here; MASTER_ADDR=127.0.0.1"
fi

project=$root/tests/data/projects/tiny-synthetic.json
store=$work/runs.sqlite
timeout 240 srun -N1 -n2 --kill-on-bad-exit=1 --label \
  "$cli" train "$project" --devices cpu:1 --epochs 2 --threads 1 --store "$store" \
  >"$work/srun.log" 2>&1
code=$?
sed 's/^/  | /' "$work/srun.log"
if [ "$code" != 0 ]; then fail "srun exited with $code"; fi
contains "$work/srun.log" "^0: launched as one node of several: Slurm's SLURM_PROCID 0 of SLURM_NTASKS 2, rendezvous [^ ]+:$rendezvous_port" "task 0 found the job from its Slurm variables"
contains "$work/srun.log" "^1: global ranks 1-1 of 2 on this node; node 0 saves checkpoints and records the run" "task 1 is global rank 1"
contains "$work/srun.log" "^0: epoch 2/2 " "task 0 trained both epochs"
contains "$work/srun.log" "^1: epoch 2/2 " "task 1 trained both epochs"

"$cli" runs list --store "$store" --json >"$work/runs.json" 2>&1
runs=$(python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); print(len(r), *[x["status"] + ", " + x["devices"] for x in r])' "$work/runs.json" 2>&1)
if [ "$runs" = "1 finished, 2 nodes x cpu:1" ]; then echo "ok: the run is recorded once, finished, on 2 nodes x cpu:1"; else fail "the store holds: $runs"; fi

verdict
