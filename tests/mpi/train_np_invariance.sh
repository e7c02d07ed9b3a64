#!/bin/sh
# Usage: train_np_invariance.sh MPIEXEC NUMPROC_FLAG SEGRANK SOURCE_DIR DATA_DIR WORK_DIR [OWNERSHIP [EXTRA]]
# OWNERSHIP (default modulo): dist.ownership of both runs, EXTRA more --set options of both
# (e.g. "--set dist.slice_configs=true") (docs/sampling.md#ownership).
# Trains configs/tiny.toml on DATA_DIR for 4 steps (evaluations at 2 and 4) under `MPIEXEC -n 1`
# and `MPIEXEC -n 2 --oversubscribe`, then compares both runs' last.ckpt.h5 /params (max |diff|
# <= 1e-5) and every evaluation line of metrics.jsonl (each metric within 1e-4). Issue 7 item 5.
set -u
mpiexec=$1; npflag=$2; segrank=$3; src=$4; data=$5; work=$6; ownership=${7:-modulo}; extra=${8:-}
rm -rf "$work"; mkdir -p "$work"
cd "$src" || exit 1
common="--config configs/tiny.toml --set data.root=$data --set train.steps=4 --set train.eval_every=2
        --set sampling.batch_graphs=4 --set train.progress=false --set dist.threads_per_rank=1 --set train.threads=1
        --set dist.ownership=$ownership $extra"
for np in 1 2; do
  echo "== np $np"
  # shellcheck disable=SC2086
  timeout 300 "$mpiexec" "$npflag" $np --oversubscribe "$segrank" train $common \
      --set train.run_dir="$work/np$np" || { echo "FAIL: training with -n $np exited non-zero"; exit 1; }
done
/usr/bin/python3 - "$work/np1" "$work/np2" <<'PY'
import json, sys
import h5py, numpy as np
a, b = sys.argv[1], sys.argv[2]
def params(run):
    g = h5py.File(run + "/last.ckpt.h5", "r")["params"]
    names = sorted(g.keys())
    return names, np.concatenate([g[n][...].ravel() for n in names])
na, pa = params(a)
nb, pb = params(b)
status = 0
if na != nb or pa.shape != pb.shape:
    print("FAIL: /params datasets differ", na, nb); sys.exit(1)
d = float(np.max(np.abs(pa.astype(np.float64) - pb.astype(np.float64))))
print(f"np1 vs np2: {len(na)} tensors, {pa.size} parameters, max |diff| = {d:.3g}, max |param| = {float(np.max(np.abs(pa))):.3g}")
if not d <= 1e-5:
    print("FAIL: parameters differ by more than 1e-5"); status = 1
if np.array_equal(pa, 0 * pa):
    print("FAIL: parameters are all zero"); status = 1
def evals(run):
    out = []
    for line in open(run + "/metrics.jsonl"):
        j = json.loads(line)
        if j.get("phase") == "eval":
            out.append(j)
    return out
ea, eb = evals(a), evals(b)
if len(ea) != 2 or len(eb) != 2:
    print("FAIL: expected 2 eval lines per run, got", len(ea), len(eb)); status = 1
worst = 0.0
for x, y in zip(ea, eb):
    if x["step"] != y["step"]:
        print("FAIL: eval steps differ", x["step"], y["step"]); status = 1
    for cx, cy in zip(x["metrics"]["collections"], y["metrics"]["collections"]):
        for k, vx in cx.items():
            vy = cy.get(k)
            if isinstance(vx, (int, float)) and not isinstance(vx, bool):
                if vy is None or abs(vx - vy) > 1e-4:
                    print(f"FAIL: step {x['step']} {k}: np1 {vx} vs np2 {vy}"); status = 1
                else:
                    worst = max(worst, abs(vx - vy))
            elif vx != vy:
                print(f"FAIL: step {x['step']} {k}: np1 {vx!r} vs np2 {vy!r}"); status = 1
    print(f"step {x['step']}: np1 {x['metrics']['collections']}")
    print(f"step {y['step']}: np2 {y['metrics']['collections']}")
print(f"metrics: max |diff| = {worst:.3g}")
sys.exit(status)
PY
