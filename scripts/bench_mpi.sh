#!/bin/sh
# MPI scale-out benchmark (docs/architecture.md#distribution): steady-state training steps per
# second of one job at np=1 x 1 thread, np=2 x 1 thread per rank (once per dist.ownership mode) and
# np=1 x 2 threads, printed as ONE JSON object on stdout (progress goes to stderr).
#
#   scripts/bench_mpi.sh [--segrank BIN] [--work DIR] [--repeats N] [--steps N] [--log-every N]
#                        [--warmup N] [--graphs N] [--nodes MIN:MAX] [--nodes-dist uniform|log-uniform]
#                        [--configs C|MIN:MAX] [--config-node-fraction F] [--splits T,V,0]
#                        [--batch N] [--config TOML] [--ownership LIST] [--no-np1x2] [--np4]
#                        [--omp-wait-policy passive|active|default] [--keep]
#
# --work (default runs/bench_mpi): must be new, empty or a work folder of this script (holding its
# mark .bench_mpi_made), else exit 2 naming it: the script writes data/, results.tsv and run_*
# there. It deletes only the run_* folders (and their .log) it records in the mark as its own.
# A name leaves the mark when the script deletes its folder (at the end, unless --keep), so a folder
# made there later under that name is the user's and is refused, not deleted.
# --config must be a regular file, --segrank a segrank binary (its --help prints segrank's usage).
# A relative path may start with '-' (--work -x is the folder ./-x); a --segrank without a '/' is
# the file of that name in the current directory, not a command looked up in PATH.
# Errors exit non-zero with a message on stderr and print no JSON (2: a bad argument or a failed run).
#
# Job: `segrank synth` writes a synthetic layout collection (default 16 graphs, 75 % train), then
# `mpirun -np N --oversubscribe --bind-to none segrank train --config configs/quickstart.toml` with
# batch_graphs = 8 (each rank owns about half of every global batch), no evaluation during training.
# --ownership: comma list of dist.ownership modes (modulo, balanced, per_step, and
# per_step_slice_configs = per_step with dist.slice_configs = true, per_step_segment_units = per_step
# with dist.segment_units = true), one np=2 variant
# each (np2x1_<mode>; default modulo); np=1 does not depend on it. --no-np1x2 skips the np=1 x 2
# threads variant. --np4 adds np=4 x 1 thread per mode (np4x1_<mode>), OVERSUBSCRIBED when the
# machine has fewer than 4 cores: only its CPU balance is meaningful there, not its steps/s.
# Model: `segrank train --balance-model 2,4,8,16,64 --balance-from WARMUP` on the same config and
# data predicts step_balance_cpu per mode and world size from the batch schedule (nodes x configs
# per member, docs/architecture.md#distribution); printed as "predicted_step_balance" and beside the
# measured np=2 (and np=4) medians under "step_balance_cpu"; its scaling efficiency (config slices'
# repeated work counted) as "predicted_scaling_efficiency_np2" beside "scaling_efficiency_np2".
# Threads: np=1 runs set train.threads, np=2 runs set dist.threads_per_rank
# (docs/architecture.md#distribution, configs/default.toml [dist]); OMP_NUM_THREADS is exported to
# the ranks as well. --bind-to none: Open MPI binds each rank to one core by default for np <= 2,
# which would put the two threads of the np=1 x 2 run on one core.
# OMP_WAIT_POLICY (default passive here): with GCC's default (spin, then sleep) two threads on a
# loaded 2-core machine wait for each other at every parallel region; measured 10-20x slower steps
# than one thread. "default" leaves the variable unset (the OpenMP runtime's own choice).
# Measure: every train line of metrics.jsonl carries step_wall_s, the mean wall time inside
# Trainer::step() over its log interval on rank 0 (which includes waiting in the gradient
# allreduce for the slowest rank); steps/s = steps / sum of their wall time over the intervals after
# the first --warmup steps. Startup, data loading, evaluation and checkpoints are excluded.
# Balance, from the CPU time each rank spends on its own members before the allreduce (unaffected
# by other load on the machine): step_balance_cpu = mean rank CPU time / the busier rank's, per step
# (what the split of each step allows), run_balance_cpu = the same over whole log intervals (what a
# static ownership can balance); busy_fraction = mean rank wall time on own members / step wall.
# Runs are interleaved (np1, np2 per ownership, np1x2, np1, ...) so load changes hit every variant;
# medians of --repeats runs are reported together with the load average before and after.
set -eu

src=$(cd "$(dirname "$0")/.." && pwd)
segrank="$src/build/cli/segrank"
work="$src/runs/bench_mpi"
repeats=3
steps=40
log_every=5
warmup=10
graphs=16
nodes="300:700"
nodes_dist=uniform
configs=32
config_node_fraction=0
splits=0.75,0.25,0
batch=8
ownership=modulo
np1x2=1
np4=0
config="$src/configs/quickstart.toml"
wait_policy=passive
keep=0

die() { echo "bench_mpi.sh: error: $*" >&2; exit 2; }
while [ $# -gt 0 ]; do
  # An option that takes a value, given last without one.
  case "$1" in
    --segrank|--work|--repeats|--steps|--log-every|--warmup|--graphs|--nodes|--nodes-dist|\
    --configs|--config-node-fraction|--splits|--ownership|--batch|--config|--omp-wait-policy)
      [ $# -ge 2 ] || die "$1: expected a value after it"
      # Another option where the value belongs (`--work --steps 5`), as argparse refuses it.
      case "$2" in --*) die "$1: expected a value after it, got the option '$2'" ;; esac ;;
  esac
  case "$1" in
    --segrank) segrank=$2; shift 2 ;;
    --work) work=$2; shift 2 ;;
    --repeats) repeats=$2; shift 2 ;;
    --steps) steps=$2; shift 2 ;;
    --log-every) log_every=$2; shift 2 ;;
    --warmup) warmup=$2; shift 2 ;;
    --graphs) graphs=$2; shift 2 ;;
    --nodes) nodes=$2; shift 2 ;;
    --nodes-dist) nodes_dist=$2; shift 2 ;;
    --configs) configs=$2; shift 2 ;;
    --config-node-fraction) config_node_fraction=$2; shift 2 ;;
    --splits) splits=$2; shift 2 ;;
    --ownership) ownership=$2; shift 2 ;;
    --no-np1x2) np1x2=0; shift ;;
    --np4) np4=1; shift ;;
    --batch) batch=$2; shift 2 ;;
    --config) config=$2; shift 2 ;;
    --omp-wait-policy) wait_policy=$2; shift 2 ;;
    --keep) keep=1; shift ;;
    -h|--help) sed -n '/^set -eu$/q; 2,$p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown argument '$1' (see --help)" ;;
  esac
done

# A relative path that starts with '-' gets './' in front, so no command (mkdir, ls, rm, grep,
# segrank, mpirun) reads it as an option; --segrank without '/' names a file here (as [ -f ] checks
# it), not a PATH command.
case "$work" in -*) work="./$work" ;; esac
case "$config" in -*) config="./$config" ;; esac
case "$segrank" in */*) ;; ?*) segrank="./$segrank" ;; esac

# count_option NAME VALUE MAX: refuses VALUE of option --NAME unless it is an integer from 0 to MAX
# (more than 9 digits is refused before the shell's arithmetic sees it).
count_option() {
  case "$2" in ''|*[!0-9]*) die "--$1: expected a non-negative integer, got '$2'" ;; esac
  { [ ${#2} -le 9 ] && [ "$2" -le "$3" ]; } || die "--$1: expected 0 to $3, got '$2'"
}
count_option repeats "$repeats" 1000
count_option steps "$steps" 10000000
count_option log-every "$log_every" 10000000
count_option warmup "$warmup" 10000000
count_option graphs "$graphs" 1000000
count_option batch "$batch" 1000000
case "$configs" in ''|*[!0-9:]*) die "--configs must be C or MIN:MAX, got '$configs'" ;; esac
modes=$(echo "$ownership" | tr ',' ' ')
[ -n "$modes" ] || die "--ownership needs at least one mode"
for m in $modes; do
  case "$m" in modulo|balanced|per_step|per_step_slice_configs|per_step_segment_units) ;;
    *) die "--ownership: unknown mode '$m' (modulo, balanced, per_step, per_step_slice_configs, per_step_segment_units)" ;; esac
done
case "$wait_policy" in
  passive|active) export OMP_WAIT_POLICY="$wait_policy"; xwait="-x OMP_WAIT_POLICY" ;;
  default) unset OMP_WAIT_POLICY; xwait="" ;;
  *) die "--omp-wait-policy must be passive, active or default, got '$wait_policy'" ;;
esac
[ "$repeats" -ge 1 ] || die "--repeats must be >= 1"
[ "$batch" -ge 2 ] || die "--batch must be >= 2 so that np=2 splits the work"
[ "$log_every" -ge 1 ] || die "--log-every must be >= 1"
[ $((steps - warmup)) -ge $((2 * log_every)) ] ||
  die "--steps ($steps) must exceed --warmup ($warmup) by at least two log intervals (2 x $log_every)"
if [ -e "$config" ] && [ ! -f "$config" ]; then
  die "--config '$config' is not a regular file (expected a TOML config such as configs/quickstart.toml)"
fi
[ -f "$config" ] || die "--config '$config' not found"
{ [ -f "$segrank" ] && [ -x "$segrank" ]; } ||
  die "segrank binary '$segrank' not found or not executable (build it, or pass --segrank BIN)"
"$segrank" --help 2>/dev/null | grep -q '^usage: segrank <command>' ||
  die "--segrank '$segrank' is not a segrank binary ('$segrank --help' does not print segrank's usage)"

# --work: new, empty or marked as this script's (the rule of scripts/bench/work_folder.py).
[ -n "$work" ] || die "--work: the path is empty (expected a work folder; the default is runs/bench_mpi)"
mark_name=.bench_mpi_made
mark="$work/$mark_name"
if [ -e "$work" ] || [ -L "$work" ]; then
  [ -d "$work" ] || die "--work '$work': not a directory"
  entries=$(ls -A -- "$work") || die "--work '$work': cannot list the folder"
  if [ -n "$entries" ] && { [ ! -f "$mark" ] || [ -L "$mark" ]; }; then
    die "--work '$work': the folder exists, is not empty and is not a work folder of bench_mpi.sh (no $mark_name); bench_mpi.sh writes data/, results.tsv and run_* there: give a new or empty folder, or one an earlier bench_mpi.sh run made"
  fi
fi
command -v mpirun >/dev/null 2>&1 ||
  die "mpirun not found: install Open MPI (openmpi-bin, see scripts/install_deps.sh) or put it on PATH"
command -v python3 >/dev/null 2>&1 || die "python3 not found (used to read metrics.jsonl)"

# Open MPI refuses to start as root without both variables.
if [ "$(id -u)" = 0 ]; then
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi

mkdir -p -- "$work"
[ -f "$mark" ] || echo "a work folder of scripts/bench_mpi.sh; the run folders it made follow" > "$mark"
data="$work/data"
echo "bench_mpi: synthesizing $graphs layout graphs ($nodes nodes $nodes_dist, $configs configs) into $data" >&2
"$segrank" synth --out "$data" --collections layout --graphs "$graphs" --nodes "$nodes" --configs "$configs" \
  --nodes-dist "$nodes_dist" --config-node-fraction "$config_node_fraction" \
  --splits "$splits" --seed 7 --force -q >&2

# The step-cost model over the timed steps (the run's own schedule: same config, data, batch, steps).
model_json="$work/balance_model.json"
"$segrank" train --config "$config" --set data.root="$data" --set sampling.batch_graphs="$batch" \
  --set train.steps="$steps" --balance-model 2,4,8,16,64 --balance-from "$warmup" > "$model_json" ||
  die "segrank train --balance-model failed (binary too old? it needs --balance-model)"

loadavg() { cut -d' ' -f1-3 /proc/loadavg; }
load_before=$(loadavg)
results="$work/results.tsv"
: > "$results"

# run VARIANT NP THREADS REPEAT [OWNERSHIP]
run() {
  variant=$1; np=$2; threads=$3; rep=$4; own=${5:-modulo}; slices=false; segments=false
  if [ "$own" = per_step_slice_configs ]; then own=per_step; slices=true; fi
  if [ "$own" = per_step_segment_units ]; then own=per_step; segments=true; fi
  dir="$work/run_${variant}_$rep"
  if [ -e "$dir" ] || [ -L "$dir" ] || [ -e "$dir.log" ] || [ -L "$dir.log" ]; then
    grep -qxF -e "run_${variant}_$rep" -- "$mark" ||
      die "$dir (or its .log) exists and was not made by bench_mpi.sh (not listed in $mark): move it away"
    rm -rf -- "$dir" "$dir.log"
  else
    echo "run_${variant}_$rep" >> "$mark"
  fi
  made="$made
$dir"
  if [ "$np" -gt 1 ]; then tkey=dist.threads_per_rank; else tkey=train.threads; fi
  echo "bench_mpi: $variant repeat $rep (np $np x $threads thread(s)), load $(loadavg)" >&2
  t0=$(date +%s.%N)
  # shellcheck disable=SC2086  # $xwait is empty or "-x OMP_WAIT_POLICY" (two words)
  OMP_NUM_THREADS=$threads mpirun -np "$np" --oversubscribe --bind-to none -x OMP_NUM_THREADS $xwait \
    "$segrank" train --config "$config" --set data.root="$data" --set sampling.batch_graphs="$batch" \
    --set train.steps="$steps" --set train.log_every="$log_every" --set train.eval_every=0 \
    --set train.progress=false --set "$tkey=$threads" --set train.run_dir="$dir" --set dist.ownership="$own" \
    --set dist.slice_configs="$slices" --set dist.segment_units="$segments" \
    > "$dir.log" 2>&1 || { cat "$dir.log" >&2; die "$variant repeat $rep failed (log above, $dir.log)"; }
  t1=$(date +%s.%N)
  printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$variant" "$np" "$threads" "$rep" "$dir" "$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }')" >> "$results"
}

made=""  # the run folders of this invocation (removed at the end unless --keep)
i=1
while [ "$i" -le "$repeats" ]; do
  run np1x1 1 1 "$i"
  for m in $modes; do run "np2x1_$m" 2 1 "$i" "$m"; done
  [ "$np1x2" = 0 ] || run np1x2 1 2 "$i"
  if [ "$np4" = 1 ]; then for m in $modes; do run "np4x1_$m" 4 1 "$i" "$m"; done; fi
  i=$((i + 1))
done
load_after=$(loadavg)

model=$(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //')
python3 - "$results" "$warmup" "$load_before" "$load_after" "$(getconf _NPROCESSORS_ONLN)" "$model" "$(mpirun --version | head -1)" \
  "$steps" "$log_every" "$graphs" "$nodes" "$configs" "$batch" "$config" "$(awk '/MemTotal/ {print $2}' /proc/meminfo)" "$wait_policy" \
  "$nodes_dist" "$config_node_fraction" "$splits" "$modes" "$model_json" <<'PY'
import json, statistics, sys
(results, warmup, load_before, load_after, nproc, model, mpi_version, steps, log_every, graphs, nodes,
 configs, batch, config, mem_kb, wait_policy, nodes_dist, cnf, splits, modes, model_json) = sys.argv[1:]
predicted = json.load(open(model_json))
warmup = int(warmup)
modes = modes.split()
runs = {}
for line in open(results):
    variant, np_, threads, rep, run_dir, wall = line.rstrip("\n").split("\t")
    steps_timed, seconds, busy, cpu, cpu_step_max, cpu_rank_max, prev = 0, 0.0, 0.0, 0.0, 0.0, 0.0, None
    for raw in open(run_dir + "/metrics.jsonl"):
        j = json.loads(raw)
        if j.get("phase") != "train":
            continue
        step = j["step"]
        n = step - (prev if prev is not None else 0)
        prev = step
        if step - n < warmup:
            continue  # interval overlaps the warm-up steps
        if "step_wall_s" not in j:
            sys.exit(f"bench_mpi: {run_dir}/metrics.jsonl has no step_wall_s field (segrank binary too old?)")
        steps_timed += n
        seconds += j["step_wall_s"] * n
        busy += j.get("step_busy_s", 0.0) * n
        cpu += j.get("step_cpu_s", 0.0) * n
        cpu_step_max += j.get("step_cpu_max_s", 0.0) * n
        cpu_rank_max += j.get("rank_cpu_max_s", 0.0) * n
    if steps_timed == 0 or seconds <= 0:
        sys.exit(f"bench_mpi: {run_dir}: no timed steps after the warm-up")
    r = runs.setdefault(variant, {"ranks": int(np_), "threads_per_rank": int(threads), "steps_per_s": [],
                                  "busy_fraction": [], "step_balance_cpu": [], "run_balance_cpu": [],
                                  "timed_steps": steps_timed, "process_wall_s": []})
    r["steps_per_s"].append(round(steps_timed / seconds, 4))
    # Mean over ranks of the wall time spent on their own graphs, per step wall time (1 = no rank
    # waits at the gradient allreduce).
    r["busy_fraction"].append(round(busy / seconds, 4))
    # CPU seconds on own graphs (robust to other load): per step, mean over ranks / max over ranks
    # (the efficiency the per-step split allows), and per log interval, mean / busiest rank's total
    # (the part a static ownership can balance).
    r["step_balance_cpu"].append(round(cpu / cpu_step_max, 4) if cpu_step_max > 0 else None)
    r["run_balance_cpu"].append(round(cpu / cpu_rank_max, 4) if cpu_rank_max > 0 else None)
    r["process_wall_s"].append(round(float(wall), 2))
for r in runs.values():
    r["median_steps_per_s"] = round(statistics.median(r["steps_per_s"]), 4)
    for k in ("busy_fraction", "step_balance_cpu", "run_balance_cpu"):
        v = [x for x in r[k] if x is not None]
        r["median_" + k] = round(statistics.median(v), 4) if v else None
np1 = runs["np1x1"]["median_steps_per_s"]
out = {
    "benchmark": "segrank train steady-state steps/s under mpirun (scripts/bench_mpi.sh)",
    "machine": {"nproc": int(nproc), "cpu_model": model, "mem_gb": round(int(mem_kb) / 1048576, 1),
                "mpirun": mpi_version, "loadavg_before": load_before, "loadavg_after": load_after},
    "job": {"config": config,
            "synth": f"layout, {graphs} graphs, nodes {nodes} {nodes_dist}, {configs} configs, "
                     f"config node fraction {cnf}, splits {splits}",
            "batch_graphs": int(batch), "steps": int(steps), "log_every": int(log_every),
            "warmup_steps_excluded": warmup, "launcher": "mpirun -np N --oversubscribe --bind-to none", "omp_wait_policy": wait_policy,
            "timing": "rank 0 wall time inside Trainer::step() (metrics.jsonl step_wall_s); no eval, startup or checkpoints"},
    "runs": runs,
    "scaling_efficiency_np2": {m: round(runs["np2x1_" + m]["median_steps_per_s"] / (2 * np1), 4) for m in modes},
}
# Step-cost model beside the measured per-step CPU balance (the model's mean/max rank work per step
# is what step_balance_cpu measures in CPU seconds).
out["predicted_step_balance"] = {"model": predicted["model"], "steps": predicted["steps"],
                                 "by_ownership": predicted["efficiency"]}
balance = {}
for np_ in (2, 4):
    for m in modes:
        r = runs.get(f"np{np_}x1_{m}")
        if r is None:
            continue
        label = f"np{np_}" + ("_oversubscribed" if np_ > int(nproc) else "")
        balance.setdefault(label, {})[m] = {"measured": r["median_step_balance_cpu"],
                                            "predicted": round(predicted["efficiency"][m][str(np_)], 4)}
out["step_balance_cpu"] = balance
# The model's scaling efficiency (the work slices repeat counted; whole graphs: their step balance)
# beside the measured steps/s ratio; segrank builds before it print none.
if "scaling_efficiency" in predicted:
    out["predicted_scaling_efficiency_np2"] = {
        m: round(predicted["scaling_efficiency"][m]["2"], 4) for m in modes}
if "np1x2" in runs:
    np1x2 = runs["np1x2"]["median_steps_per_s"]
    out["np2x1_over_np1x2"] = {m: round(runs["np2x1_" + m]["median_steps_per_s"] / np1x2, 4) for m in modes}
    out["threads2_efficiency_np1"] = round(np1x2 / (2 * np1), 4)
print(json.dumps(out, indent=2))
PY
if [ "$keep" = 0 ]; then
  printf '%s\n' "$made" | while IFS= read -r d; do [ -z "$d" ] || rm -rf -- "$d" "$d.log"; done
  # The deleted folders leave the mark: one made there later is not the script's.
  printf '%s\n' "$made" | sed -n 's|.*/||p' |
    awk 'NR == FNR { gone[$0] = 1; next } !($0 in gone)' - "$mark" > "$mark.tmp"
  mv -f -- "$mark.tmp" "$mark"
fi
