#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# Compares our CPU training throughput with PyTorch's on the four Fashion-MNIST projects, interleaved:
# PyTorch in {fp32, bf16 autocast} x {NCHW, channels-last} x {OpenBLAS pthread, OpenBLAS OpenMP},
# its best taken, against the best of ours (fp32, and bf16 where renaissance-cli offers it), with
# the machine's bf16 ceiling (a bf16 matmul) measured too.
#
# usage: bench/run_cpu_vs_pytorch.sh [--out FILE] [--rounds N]
# environment (defaults): BUILD_DIR (<repo>/build), ROUNDS (3), THREADS (2), BATCH (128),
#   STEPS (30), WARMUP (5), MODELS ("lenet cnn-bn resnet8 vit-tiny"), PEAK_GFLOPS (390),
#   PYTHON (/usr/bin/python3), DATA_DIR (the CLI's default),
#   TORCH_BLAS (the BLAS builds PyTorch is tried with, each LD_PRELOADed into its processes only:
#   OpenBLAS's pthread and OpenMP libblas.so.3; "none" in the list: the system's libblas.so.3),
#   TORCH_BF16 (auto: PyTorch's bf16 autocast every round where the CPU has AVX-512 BF16 or AMX,
#   in the first round only elsewhere, where it is far slower than fp32; 1: always; 0: never),
#   OURS_LAYOUTS (nhwc: our feature layouts to time, each its own configuration; "nhwc blocked"
#   adds --feature-layout blocked, the channel blocks of oneDNN's convolutions),
#   TORCH_GLIBC_TUNABLES (keeps freed memory in the PyTorch processes; empty: glibc's defaults),
#   QUIET_WAIT (60: seconds to wait before each run for both CPUs to be idle; 0: don't wait),
#   RETRIES (2) and CONTENDED (0.10: rerun a run while others or steal took more of the CPUs).
# See bench/README.md.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$here/build}
cli=$build/bin/renaissance-cli
python=${PYTHON:-/usr/bin/python3}
models_py=$here/bench/pytorch_models.py
rounds=${ROUNDS:-3}
threads=${THREADS:-2}
batch=${BATCH:-128}
steps=${STEPS:-30}
warmup=${WARMUP:-5}
peak=${PEAK_GFLOPS:-390}
models=${MODELS:-lenet cnn-bn resnet8 vit-tiny}
quiet_wait=${QUIET_WAIT:-60}
retries=${RETRIES:-2}
contended=${CONTENDED:-0.10}
out=$here/bench/results/cpu_vs_pytorch.json
blas_dir=/usr/lib/x86_64-linux-gnu
torch_blas_list=${TORCH_BLAS-$blas_dir/openblas-pthread/libblas.so.3 $blas_dir/openblas-openmp/libblas.so.3}
torch_bf16=${TORCH_BF16:-auto}
ours_layouts=${OURS_LAYOUTS:-nhwc}
# glibc returns big freed blocks to the kernel (munmap / heap trim), so every PyTorch step
# page-faults its activations in again; our engine allocates from a planned arena once.
torch_tunables=${TORCH_GLIBC_TUNABLES-glibc.malloc.mmap_threshold=4294967296:glibc.malloc.trim_threshold=17179869184}

while [ $# -gt 0 ]; do
  case $1 in
    --out) out=$2; shift 2 ;;
    --out=*) out=${1#--out=}; shift ;;
    --rounds) rounds=$2; shift 2 ;;
    --rounds=*) rounds=${1#--rounds=}; shift ;;
    -h|--help) sed -n '3,20p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "run_cpu_vs_pytorch.sh: unknown argument '$1' (try --help)" >&2; exit 2 ;;
  esac
done

die() { echo "run_cpu_vs_pytorch.sh: $*" >&2; exit 1; }
[ -x "$cli" ] || die "no renaissance-cli at $cli; build the tree or set BUILD_DIR"
[ -x "$python" ] || die "no Python at $python; set PYTHON to the interpreter that has torch"
if ! "$python" -c 'import torch' >/dev/null 2>&1; then
  die "PyTorch is not importable by $python; install it with:
  apt-get install python3-torch libopenblas0-pthread libopenblas0-openmp
(or set PYTHON to an interpreter that has torch)"
fi
case $torch_bf16 in auto|0|1) ;; *) die "TORCH_BF16 is '$torch_bf16'; give auto, 0 or 1" ;; esac
# The BLAS builds to try, each with a short label for the table.
blases=()
for lib in $torch_blas_list; do
  if [ "$lib" = none ]; then blases+=(none); continue; fi
  if [ ! -e "$lib" ]; then
    echo "run_cpu_vs_pytorch.sh: warning: $lib is missing (apt-get install libopenblas0-pthread" \
         "libopenblas0-openmp); PyTorch is not tried with it" >&2
    continue
  fi
  blases+=("$lib")
done
[ ${#blases[@]} -gt 0 ] || blases=(none)
blas_label() {
  case $1 in
    none) echo system ;;
    */openblas-pthread/*) echo openblas-pthread ;;
    */openblas-openmp/*) echo openblas-openmp ;;
    *) basename "$(dirname "$1")" ;;
  esac
}

project_of() {
  case $1 in
    lenet) echo "$here/projects/lenet-fashion.json" ;;
    cnn-bn) echo "$here/projects/cnn-bn-fashion.json" ;;
    resnet8) echo "$here/projects/resnet8-fashion.json" ;;
    vit-tiny) echo "$here/projects/vit-tiny-fashion.json" ;;
    *) die "unknown model '$1' (lenet, cnn-bn, resnet8, vit-tiny)" ;;
  esac
}

# PyTorch gets a BLAS ($1: a library or none), malloc settings and thread counts for its own
# process only.
torch_py() {
  local blas=$1; shift
  [ "$blas" != none ] || blas=
  env ${blas:+LD_PRELOAD="$blas${LD_PRELOAD:+:$LD_PRELOAD}"} \
      ${torch_tunables:+GLIBC_TUNABLES="$torch_tunables"} \
      OPENBLAS_NUM_THREADS="$threads" OMP_NUM_THREADS="$threads" \
      "$python" "$models_py" "$@"
}

# Waits up to $quiet_wait s until both CPUs were >= 97% idle over two seconds running;
# prints 1 when they were, 0 when it gave up (the run goes ahead and is marked).
wait_quiet() {
  [ "$quiet_wait" -gt 0 ] || { echo 1; return; }
  local deadline=$(( $(date +%s) + quiet_wait )) ok=0 i0 t0 i1 t1
  idle() { local _c u n s i w q sq st; read -r _c u n s i w q sq st _ < /proc/stat
           echo $((i + w)) $((u + n + s + i + w + q + sq + st)); }
  while [ "$(date +%s)" -lt "$deadline" ]; do
    read -r i0 t0 < <(idle); sleep 1; read -r i1 t1 < <(idle)
    if [ $(( 100 * (i1 - i0) / (t1 - t0 + 1) )) -ge 97 ]; then ok=$((ok + 1)); else ok=0; fi
    [ $ok -ge 2 ] && { echo 1; return; }
  done
  echo 0
}

# CPU accounting around a run: "busy steal total" jiffies of the machine and the CPU time
# of this shell's finished children, to tell how much of the machine other work took.
snap() {
  local _c u n s i w q sq st stat
  read -r _c u n s i w q sq st _ < /proc/stat
  stat=$(cat /proc/$$/stat); stat=${stat##*) }  # fields from 3 (state) on
  set -- $stat
  echo $((u + n + s + q + sq)) "$st" $((u + n + s + i + w + q + sq + st)) $(( ${14} + ${15} ))
}
raw=$(mktemp)
trap 'rm -f "$raw"' EXIT
# Prints "<per mille of the CPUs others or steal took> <JSON record>".
record_line() {  # side model round quiet "snap before" "snap after" attempts json
  local b0 s0 t0 c0 b1 s1 t1 c1
  read -r b0 s0 t0 c0 <<<"$5"; read -r b1 s1 t1 c1 <<<"$6"
  local total=$(( t1 - t0 > 0 ? t1 - t0 : 1 )) others=$(( b1 - b0 - (c1 - c0) ))
  [ $others -ge 0 ] || others=0
  local worst=$(( others > s1 - s0 ? others : s1 - s0 ))
  printf '%d {"side":"%s","model":"%s","round":%d,"quiet":%d,"others_cpu":%s,"steal":%s,"attempts":%d,"result":%s}\n' \
    $(( 1000 * worst / total )) "$1" "$2" "$3" "$4" \
    "$(awk "BEGIN{printf \"%.3f\", $others/$total}")" \
    "$(awk "BEGIN{printf \"%.3f\", ($s1-$s0)/$total}")" "$7" "$8"
}
# Runs a measuring command (its last line is its JSON result) and records it; when other
# processes or steal took more than CONTENDED of the CPUs meanwhile, runs it again, up to
# RETRIES more times, and records the least disturbed attempt.
measure() {  # side model round command...
  local side=$1 m=$2 r=$3; shift 3
  local attempt line best="" best_pm=1000000 pm q s0 res limit
  limit=$(awk "BEGIN{printf \"%d\", 1000 * $contended}")
  for attempt in $(seq 1 $((retries + 1))); do
    q=$(wait_quiet); s0=$(snap)
    res=$("$@" | tail -n 1)
    line=$(record_line "$side" "$m" "$r" "$q" "$s0" "$(snap)" "$attempt" "$res")
    pm=${line%% *}
    if [ "$pm" -lt "$best_pm" ]; then best_pm=$pm; best=${line#* }; fi
    [ "$pm" -gt "$limit" ] || break
  done
  echo "$best" >>"$raw"
}

blas="{}"
for lib in "${blases[@]}"; do
  echo "== PyTorch: BLAS check, $(blas_label "$lib") (LD_PRELOAD=$lib)"
  check=$(torch_py "$lib" --blas-check --threads "$threads")
  echo "$check"
  blas=$("$python" -c 'import json,sys; d=json.loads(sys.argv[1]); d[sys.argv[2]]=json.loads(sys.argv[3]); print(json.dumps(d))' \
         "$blas" "$(blas_label "$lib")" "$check")
done

echo "== PyTorch: bf16 ceiling (a 2048^3 matmul in bf16 and in fp32)"
ceiling=$(torch_py "${blases[0]}" --bf16-check --threads "$threads")
echo "$ceiling"
# Our precisions: bf16 where this CPU has the instructions our bf16 needs (the CLI refuses it
# elsewhere, naming them; `renaissance-cli devices` says which the CPU has).
our_precisions="fp32"
bf16_note=$("$cli" devices --json | "$python" -c 'import json,sys
b = json.load(sys.stdin)["cpu"]["bf16"]
print("" if b["amx"] or b["avx512_bf16"] else "no AVX-512 BF16 or AMX on this CPU")')
if [ -z "$bf16_note" ]; then our_precisions="fp32 bf16"
else echo "== ours: fp32 only ($bf16_note; renaissance-cli refuses --precision bf16 here)"; fi
# PyTorch's bf16 autocast without the instructions runs at a few percent of its fp32 speed: timed
# in the first round only (so the table still shows it), unless TORCH_BF16 says otherwise.
if [ "$torch_bf16" = auto ]; then
  if [ -z "$bf16_note" ]; then torch_bf16=1; else
    torch_bf16=first
    echo "== PyTorch: bf16 autocast in round 1 only ($bf16_note; TORCH_BF16=1 times it every round)"
  fi
fi

echo "== forward FLOPs per batch of $batch (ours: renaissance-cli plan; PyTorch: pytorch_models.py --flops)"
flops_json="{}"
for m in $models; do
  ours=$("$cli" plan "$(project_of "$m")" --json --batch "$batch" |
         "$python" -c 'import json,sys; print(json.load(sys.stdin)["forward_flops"])')
  theirs=$("$python" "$models_py" --model "$m" --batch "$batch" --flops |
           "$python" -c 'import json,sys; print(json.load(sys.stdin)["forward_flops"])')
  echo "  $m: ours $ours, PyTorch $theirs"
  flops_json=$("$python" -c 'import json,sys; d=json.loads(sys.argv[1]); d[sys.argv[2]]={"ours":int(sys.argv[3]),"pytorch":int(sys.argv[4])}; print(json.dumps(d))' \
               "$flops_json" "$m" "$ours" "$theirs")
done

summary() {  # of the last run recorded
  local l field
  l=$(tail -n 1 "$raw")
  field() { grep -o "\"$1\": \{0,1\}[0-9.e+-]*" <<<"$l" | head -n 1 | sed 's/.*: *//'; }
  printf '%.1f ms/step, %.0f images/s (others %s, steal %s of the CPUs; attempt %s)' \
    "$(field median_ms_per_step)" "$(field images_per_s)" "$(field others_cpu)" "$(field steal)" \
    "$(field attempts)"
}

data_args=()
[ -n "${DATA_DIR:-}" ] && data_args=(--data "$DATA_DIR")
for r in $(seq 1 "$rounds"); do
  for m in $models; do
    for prec in $our_precisions; do
      for layout in $ours_layouts; do
        side="ours-$prec"
        [ "$layout" = nhwc ] || side="ours-$prec/$layout"
        measure "$side" "$m" "$r" "$cli" bench "$(project_of "$m")" --steps "$steps" \
          --warmup "$warmup" --batch "$batch" --threads "$threads" --precision "$prec" \
          --feature-layout "$layout" "${data_args[@]}" --json
        echo "round $r $m ours $prec $layout: $(summary)"
      done
    done
    # Both memory formats, both precisions and every BLAS, their order alternating by round.
    if [ $((r % 2)) -eq 1 ]; then formats="0 1"; precs="0 1"; else formats="1 0"; precs="1 0"; fi
    case $torch_bf16 in
      0) precs=0 ;;
      first) [ "$r" -eq 1 ] || precs=0 ;;
    esac
    order=("${blases[@]}")
    if [ $((r % 2)) -eq 0 ]; then
      order=(); for ((i = ${#blases[@]} - 1; i >= 0; i--)); do order+=("${blases[i]}"); done
    fi
    for lib in "${order[@]}"; do
      for cl in $formats; do
        for bf in $precs; do
          measure "pytorch/$(blas_label "$lib")" "$m" "$r" torch_py "$lib" --model "$m" \
            --batch "$batch" --threads "$threads" --steps "$steps" --warmup "$warmup" \
            --channels-last "$cl" --bf16 "$bf"
          echo "round $r $m PyTorch $(blas_label "$lib") channels_last=$cl bf16=$bf: $(summary)"
        done
      done
    done
  done
done

mkdir -p "$(dirname "$out")"
"$python" - "$raw" "$out" "$peak" "$flops_json" "$blas" "$batch" "$threads" "$steps" "$warmup" \
  "$rounds" "$retries" "$contended" "$ceiling" <<'EOF'
import json, statistics, sys, time
raw, out, peak, flops, blas = sys.argv[1], sys.argv[2], float(sys.argv[3]), json.loads(sys.argv[4]), json.loads(sys.argv[5])
batch, threads, steps, warmup, rounds, retries = map(int, sys.argv[6:12])
contended = float(sys.argv[12])
ceiling = json.loads(sys.argv[13])
bf16_peak = ceiling["bf16_best_gflop_per_s"]
# The machine's ceiling: its faster matmul. Without AVX-512 BF16 or AMX that is FP32, and the
# bf16 figure alone would flatter both sides.
ceiling_dtype = "bf16" if bf16_peak >= ceiling["fp32_best_gflop_per_s"] else "fp32"
best_peak = ceiling[ceiling_dtype + "_best_gflop_per_s"]
runs = [json.loads(line) for line in open(raw)]
models = list(dict.fromkeys(r["model"] for r in runs))
med = statistics.median
rows = []
def config(r):  # a PyTorch run's configuration: memory format / precision / BLAS
    res = r["result"]
    return ("channels_last" if res["channels_last"] else "contiguous") + "/" + \
        res.get("precision", "fp32") + "/" + r["side"].split("/", 1)[1]

for m in models:
    mine = [r for r in runs if r["model"] == m]
    # Ours: each precision's images/s by round; the best precision by median.
    ours_prec = {}
    for r in mine:
        if r["side"].startswith("ours"):
            ours_prec.setdefault(r["side"][5:] or "fp32", {})[r["round"]] = r["result"]["images_per_s"]
    ours_med_by = {p: med(v.values()) for p, v in ours_prec.items()}
    best_ours = max(ours_med_by, key=ours_med_by.get)
    ours = ours_prec[best_ours]
    torch_cfg = {}
    for r in mine:
        if r["side"].startswith("pytorch/"):
            torch_cfg.setdefault(config(r), {})[r["round"]] = r["result"]["images_per_s"]
    cfg_med = {c: med(v.values()) for c, v in torch_cfg.items()}
    best_cfg = max(cfg_med, key=cfg_med.get)
    ours_med, torch_med = med(ours.values()), cfg_med[best_cfg]
    # per round: ours against PyTorch's best configuration in that round
    per_round = [ours[k] / max(v[k] for v in torch_cfg.values() if k in v) for k in sorted(ours)]
    fl_ours = flops[m]["ours"] / batch
    fl_torch = flops[m]["pytorch"] / batch
    rows.append({
        "model": m,
        "ours_images_per_s": ours_med,
        "ours_precision": best_ours,
        "ours_images_per_s_by_precision": ours_med_by,
        "pytorch_images_per_s": torch_med,
        "pytorch_configuration": best_cfg,
        "pytorch_images_per_s_by_configuration": cfg_med,
        "ratio_ours_over_pytorch": ours_med / torch_med,
        "ratio_median_of_rounds": med(per_round),
        "forward_flops_per_image": {"ours": fl_ours, "pytorch": fl_torch},
        "ours_train_gflop_per_s": 3 * fl_ours * ours_med / 1e9,
        "pytorch_train_gflop_per_s": 3 * fl_torch * torch_med / 1e9,
        "ours_fraction_of_peak": 3 * fl_ours * ours_med / 1e9 / peak,
        "pytorch_fraction_of_peak": 3 * fl_torch * torch_med / 1e9 / peak,
        "ours_fraction_of_bf16_ceiling": 3 * fl_ours * ours_med / 1e9 / bf16_peak,
        "pytorch_fraction_of_bf16_ceiling": 3 * fl_torch * torch_med / 1e9 / bf16_peak,
        "ours_fraction_of_ceiling": 3 * fl_ours * ours_med / 1e9 / best_peak,
        "pytorch_fraction_of_ceiling": 3 * fl_torch * torch_med / 1e9 / best_peak,
        "ours_images_per_s_by_round": [ours[k] for k in sorted(ours)],
        "pytorch_images_per_s_by_round": {c: [v[k] for k in sorted(v)] for c, v in torch_cfg.items()},
        "runs_not_quiet": sum(1 for r in mine if not r["quiet"]),
        "runs_contended": sum(1 for r in mine if max(r["others_cpu"], r["steal"]) > contended),
        "reruns": sum(r["attempts"] - 1 for r in mine),
    })
# Each configuration column: the best BLAS for that memory format and precision.
configs = ("contiguous/fp32", "channels_last/fp32", "contiguous/bf16", "channels_last/bf16")
def by_format(by, c):
    vals = [v for k, v in by.items() if k.rsplit("/", 1)[0] == c]
    return "%.0f" % max(vals) if vals else "-"
hdr = ("model", "ours img/s", "(prec)", "PyTorch img/s", "(configuration)") + \
      ("NCHW", "NHWC", "NCHW bf16", "NHWC bf16") + ("ours/PT", "per-round", "ours %ceil", "PT %ceil")
fmt = "%-8s %10s %-12s %13s %-37s %8s %8s %9s %9s %8s %9s %10s %9s"
print()
print("batch %d, %d threads, %d timed steps after %d warm-up, median of %d rounds; fp32 peak %.0f "
      "GFLOP/s; a %d^3 matmul: bf16 %.0f GFLOP/s, fp32 %.0f; %%ceil: of the faster (%s)"
      % (batch, threads, steps, warmup, rounds, peak, ceiling["matmul"], bf16_peak,
         ceiling["fp32_best_gflop_per_s"], ceiling_dtype))
print(fmt % hdr)
for w in rows:
    by = w["pytorch_images_per_s_by_configuration"]
    print(fmt % ((w["model"], "%.0f" % w["ours_images_per_s"], w["ours_precision"],
                  "%.0f" % w["pytorch_images_per_s"], w["pytorch_configuration"]) +
                 tuple(by_format(by, c) for c in configs) +
                 ("%.2f" % w["ratio_ours_over_pytorch"], "%.2f" % w["ratio_median_of_rounds"],
                  "%.1f%%" % (100 * w["ours_fraction_of_ceiling"]),
                  "%.1f%%" % (100 * w["pytorch_fraction_of_ceiling"]))))
kernels = sorted({r["result"].get("cpu_kernels", "?") for r in runs if r["side"].startswith("ours")})
print("PyTorch's columns: the faster of its BLAS builds (%s) in each format and precision; "
      "(configuration) names the fastest overall" % ", ".join(sorted(blas)))
print("our own CPU kernels (besides oneDNN's): the %s build" % " and ".join(kernels))
noisy = sum(w["runs_not_quiet"] for w in rows)
if noisy:
    print("note: %d run(s) started while other work kept the CPUs busy (see runs_not_quiet)" % noisy)
busy = sum(w["runs_contended"] for w in rows)
if busy:
    print("note: in %d run(s) kept, other processes or steal took over %.0f%% of the CPUs even after "
          "%d reruns (see others_cpu, steal)" % (busy, 100 * contended, retries))
reruns = sum(w["reruns"] for w in rows)
if reruns:
    print("note: %d run(s) were rerun because other work disturbed them" % reruns)
json.dump({"when": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "batch": batch, "threads": threads,
           "steps": steps, "warmup": warmup, "rounds": rounds, "peak_gflop_per_s": peak,
           "retries": retries, "contended": contended, "bf16_ceiling": ceiling,
           "ceiling_dtype": ceiling_dtype,
           "pytorch_blas_check": blas, "rows": rows, "runs": runs}, open(out, "w"), indent=1)
print("wrote " + out)
EOF
