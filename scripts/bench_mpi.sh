#!/bin/sh
# MPI scale-out benchmark (docs/architecture.md#distribution): steady-state training steps per
# second of one job at np=1 x 1 thread, np=2 x 1 thread per rank and np=1 x 2 threads, printed as
# ONE JSON object on stdout (progress goes to stderr).
#
#   scripts/bench_mpi.sh [--segrank BIN] [--work DIR] [--repeats N] [--steps N] [--log-every N]
#                        [--warmup N] [--graphs N] [--nodes MIN:MAX] [--configs N] [--batch N]
#                        [--config TOML] [--omp-wait-policy passive|active|default] [--keep]
#
# Job: `segrank synth` writes a synthetic layout collection (default 16 graphs, 75 % train), then
# `mpirun -np N --oversubscribe --bind-to none segrank train --config configs/quickstart.toml` with
# batch_graphs = 8 (each rank owns about half of every global batch), no evaluation during training.
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
# Runs are interleaved (np1, np2, np1x2, np1, ...) so load changes hit every variant; medians of
# --repeats runs are reported together with the load average before and after.
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
configs=32
batch=8
config="$src/configs/quickstart.toml"
wait_policy=passive
keep=0

die() { echo "bench_mpi.sh: error: $*" >&2; exit 2; }
while [ $# -gt 0 ]; do
  case "$1" in
    --segrank) segrank=$2; shift 2 ;;
    --work) work=$2; shift 2 ;;
    --repeats) repeats=$2; shift 2 ;;
    --steps) steps=$2; shift 2 ;;
    --log-every) log_every=$2; shift 2 ;;
    --warmup) warmup=$2; shift 2 ;;
    --graphs) graphs=$2; shift 2 ;;
    --nodes) nodes=$2; shift 2 ;;
    --configs) configs=$2; shift 2 ;;
    --batch) batch=$2; shift 2 ;;
    --config) config=$2; shift 2 ;;
    --omp-wait-policy) wait_policy=$2; shift 2 ;;
    --keep) keep=1; shift ;;
    -h|--help) sed -n '2,25p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown argument '$1' (see --help)" ;;
  esac
done

for n in "$repeats" "$steps" "$log_every" "$warmup" "$graphs" "$configs" "$batch"; do
  case "$n" in ''|*[!0-9]*) die "expected a non-negative integer, got '$n'" ;; esac
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
command -v mpirun >/dev/null 2>&1 ||
  die "mpirun not found: install Open MPI (openmpi-bin, see scripts/install_deps.sh) or put it on PATH"
[ -x "$segrank" ] || die "segrank binary '$segrank' not found or not executable (build it, or pass --segrank BIN)"
[ -f "$config" ] || die "config '$config' not found"
command -v python3 >/dev/null 2>&1 || die "python3 not found (used to read metrics.jsonl)"

# Open MPI refuses to start as root without both variables.
if [ "$(id -u)" = 0 ]; then
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi

mkdir -p "$work"
data="$work/data"
echo "bench_mpi: synthesizing $graphs layout graphs ($nodes nodes, $configs configs) into $data" >&2
"$segrank" synth --out "$data" --collections layout --graphs "$graphs" --nodes "$nodes" --configs "$configs" \
  --splits 0.75,0.25,0 --seed 7 --force -q >&2

loadavg() { cut -d' ' -f1-3 /proc/loadavg; }
load_before=$(loadavg)
results="$work/results.tsv"
: > "$results"

# run VARIANT NP THREADS REPEAT
run() {
  variant=$1; np=$2; threads=$3; rep=$4
  dir="$work/run_${variant}_$rep"
  rm -rf "$dir"
  if [ "$np" -gt 1 ]; then tkey=dist.threads_per_rank; else tkey=train.threads; fi
  echo "bench_mpi: $variant repeat $rep (np $np x $threads thread(s)), load $(loadavg)" >&2
  t0=$(date +%s.%N)
  # shellcheck disable=SC2086  # $xwait is empty or "-x OMP_WAIT_POLICY" (two words)
  OMP_NUM_THREADS=$threads mpirun -np "$np" --oversubscribe --bind-to none -x OMP_NUM_THREADS $xwait \
    "$segrank" train --config "$config" --set data.root="$data" --set sampling.batch_graphs="$batch" \
    --set train.steps="$steps" --set train.log_every="$log_every" --set train.eval_every=0 \
    --set train.progress=false --set "$tkey=$threads" --set train.run_dir="$dir" \
    > "$dir.log" 2>&1 || { cat "$dir.log" >&2; die "$variant repeat $rep failed (log above, $dir.log)"; }
  t1=$(date +%s.%N)
  printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$variant" "$np" "$threads" "$rep" "$dir" "$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }')" >> "$results"
}

i=1
while [ "$i" -le "$repeats" ]; do
  run np1x1 1 1 "$i"
  run np2x1 2 1 "$i"
  run np1x2 1 2 "$i"
  i=$((i + 1))
done
load_after=$(loadavg)

model=$(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //')
python3 - "$results" "$warmup" "$load_before" "$load_after" "$(nproc)" "$model" "$(mpirun --version | head -1)" \
  "$steps" "$log_every" "$graphs" "$nodes" "$configs" "$batch" "$config" "$(awk '/MemTotal/ {print $2}' /proc/meminfo)" "$wait_policy" <<'PY'
import json, statistics, sys
(results, warmup, load_before, load_after, nproc, model, mpi_version, steps, log_every, graphs, nodes,
 configs, batch, config, mem_kb, wait_policy) = sys.argv[1:]
warmup = int(warmup)
runs = {}
for line in open(results):
    variant, np_, threads, rep, run_dir, wall = line.rstrip("\n").split("\t")
    steps_timed, seconds, prev = 0, 0.0, None
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
    if steps_timed == 0 or seconds <= 0:
        sys.exit(f"bench_mpi: {run_dir}: no timed steps after the warm-up")
    r = runs.setdefault(variant, {"ranks": int(np_), "threads_per_rank": int(threads), "steps_per_s": [],
                                  "timed_steps": steps_timed, "process_wall_s": []})
    r["steps_per_s"].append(round(steps_timed / seconds, 4))
    r["process_wall_s"].append(round(float(wall), 2))
for r in runs.values():
    r["median_steps_per_s"] = round(statistics.median(r["steps_per_s"]), 4)
np1, np2, np1x2 = (runs[v]["median_steps_per_s"] for v in ("np1x1", "np2x1", "np1x2"))
out = {
    "benchmark": "segrank train steady-state steps/s under mpirun (scripts/bench_mpi.sh)",
    "machine": {"nproc": int(nproc), "cpu_model": model, "mem_gb": round(int(mem_kb) / 1048576, 1),
                "mpirun": mpi_version, "loadavg_before": load_before, "loadavg_after": load_after},
    "job": {"config": config, "synth": f"layout, {graphs} graphs, nodes {nodes}, {configs} configs, splits 0.75/0.25/0",
            "batch_graphs": int(batch), "steps": int(steps), "log_every": int(log_every),
            "warmup_steps_excluded": warmup, "launcher": "mpirun -np N --oversubscribe --bind-to none", "omp_wait_policy": wait_policy,
            "timing": "rank 0 wall time inside Trainer::step() (metrics.jsonl step_wall_s); no eval, startup or checkpoints"},
    "runs": runs,
    "scaling_efficiency_np2": round(np2 / (2 * np1), 4),
    "np2x1_over_np1x2": round(np2 / np1x2, 4),
    "threads2_efficiency_np1": round(np1x2 / (2 * np1), 4),
}
print(json.dumps(out, indent=2))
PY
[ "$keep" = 1 ] || rm -rf "$work"/run_*
