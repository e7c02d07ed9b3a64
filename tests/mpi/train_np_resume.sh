#!/bin/sh
# Usage: train_np_resume.sh MPIEXEC NUMPROC_FLAG SEGRANK SOURCE_DIR DATA_DIR WORK_DIR [OWNERSHIP [EXTRA]]
# (EXTRA: more --set options of the runs under OWNERSHIP, e.g. "--set dist.segment_units=true")
# Resume across world sizes under dist.ownership = OWNERSHIP (default "balanced"; "per_step" too:
# every rank holds every history entry and each writes the graphs it is home to) (docs/sampling.md#ownership,
# docs/gst.md#history-table): the GST setup of train_np_gst_steps.sh (stale HistoryTable entries
# read and refreshed, one loss line per step) is trained
#   straight: -n 1 for 20 steps;
#   np2to1:   -n 2 OWNERSHIP for 10 steps, then resumed at -n 1 to step 20;
#   np1to2:   -n 1 for 10 steps, then resumed at -n 2 OWNERSHIP to step 20.
# Every step's loss of both resumed runs must agree with the straight run to 1e-5 relative (the
# tolerance of train_np_gst_steps.sh: float summation order only), the first step after the resume
# must read restored history entries, the -n 1 continuation must hold as many entries right after
# the resume as the straight run (every rank's shard reached rank 0), and the final parameters must
# agree to 1e-4. A shard lost or handed to the wrong rank makes the resumed steps recompute or miss
# stale entries and changes their loss by about 1e-2.
set -u
mpiexec=$1; npflag=$2; segrank=$3; src=$4; data=$5; work=$6; own2=${7:-balanced}; extra=${8:-}
rm -rf "$work"; mkdir -p "$work"
cd "$src" || exit 1
common="--set data.root=$data --set train.eval_every=0 --set train.log_every=1
        --set sampling.batch_graphs=4 --set segments.max_nodes=40 --set segments.max_staleness=4
        --set train.progress=false --set dist.threads_per_rank=1 --set train.threads=1
        --set optim.eps=1e-6 --set optim.schedule=constant"
# train NP RUN_DIR STEPS OWNERSHIP [--resume]
train() {
  np=$1; dir=$2; steps=$3; own=$4; shift 4
  if [ "${1:-}" = --resume ]; then
    what="--resume $dir"
  else
    what="--config configs/tiny.toml --set train.run_dir=$dir"
  fi
  more=""
  [ "$own" = "$own2" ] && more=$extra
  echo "== -n $np $what, to step $steps, dist.ownership = $own $more"
  # shellcheck disable=SC2086
  timeout 300 "$mpiexec" "$npflag" "$np" --oversubscribe "$segrank" train $what $common \
      --set train.steps="$steps" --set dist.ownership="$own" $more > "$dir.log" 2>&1
  rc=$?
  cat "$dir.log"
  [ "$rc" = 0 ] || { echo "FAIL: -n $np $what exited non-zero"; exit 1; }
}
train 1 "$work/straight" 20 "$own2"
train 2 "$work/np2to1" 10 "$own2"
grep -q "dist.ownership = $own2" "$work/np2to1.log" ||
  { echo "FAIL: the -n 2 run does not report dist.ownership = $own2"; exit 1; }
train 1 "$work/np2to1" 20 "$own2" --resume
train 1 "$work/np1to2" 10 modulo
train 2 "$work/np1to2" 20 "$own2" --resume
/usr/bin/python3 - "$work/straight" "$work/np2to1" "$work/np1to2" <<'PY'
import json, sys
import h5py, numpy as np
straight, runs = sys.argv[1], sys.argv[2:]
def train_lines(run):
    return {j["step"]: j for j in map(json.loads, open(run + "/metrics.jsonl")) if j.get("phase") == "train"}
def params(run):
    g = h5py.File(run + "/last.ckpt.h5", "r")["params"]
    names = sorted(g.keys())
    return names, np.concatenate([g[n][...].ravel() for n in names]).astype(np.float64)
ta = train_lines(straight)
na, pa = params(straight)
status = 0
if sorted(ta) != list(range(1, 21)):
    print("FAIL: straight run: expected train lines for steps 1..20, got", sorted(ta)); sys.exit(1)
for run in runs:
    name = run.rsplit("/", 1)[1]
    tb = train_lines(run)
    if sorted(tb) != list(range(1, 21)):
        print(f"FAIL: {name}: expected train lines for steps 1..20, got", sorted(tb)); status = 1; continue
    worst, worst_step = 0.0, 0
    for s in range(1, 21):
        la, lb = ta[s]["loss"], tb[s]["loss"]
        rel = abs(la - lb) / max(abs(la), 1e-12)
        print(f"{name} step {s:2d}: loss straight {la:.9g} resumed {lb:.9g} rel {rel:.2e} "
              f"(entries {ta[s]['history_entries']} / {tb[s]['history_entries']}, hits {tb[s]['history_hits']})")
        if rel > worst: worst, worst_step = rel, s
        if not rel <= 1e-5:
            print(f"FAIL: {name} step {s}: losses differ by {rel:.3g} relative (> 1e-5)"); status = 1
    print(f"{name}: loss max relative diff {worst:.3g} at step {worst_step}")
    # Counters restart with the process; entries are the table size (rank 0's shard).
    if not tb[11]["history_hits"] > 0:
        print(f"FAIL: {name}: step 11 read no restored history entry (history_hits = 0)"); status = 1
    if name == "np2to1" and tb[11]["history_entries"] != ta[11]["history_entries"]:
        print(f"FAIL: np2to1: {tb[11]['history_entries']} history entries after the resume at -n 1, "
              f"the straight run holds {ta[11]['history_entries']} (a shard was not restored)"); status = 1
    nb, pb = params(run)
    if na != nb or pa.shape != pb.shape:
        print(f"FAIL: {name}: /params datasets differ"); status = 1; continue
    d = float(np.max(np.abs(pa - pb)))
    print(f"{name}: params after 20 steps: max |diff| = {d:.3g}")
    if not d <= 1e-4:
        print(f"FAIL: {name}: parameters differ by more than 1e-4"); status = 1
sys.exit(status)
PY
