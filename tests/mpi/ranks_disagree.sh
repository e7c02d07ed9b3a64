#!/bin/sh
# Usage: ranks_disagree.sh MPIEXEC SEGRANK SOURCE_DIR DATA_DIR WORK_DIR
# Two ranks that run different things (MPMD launch: `mpiexec -n 1 A : -n 1 B`) must end the job
# non-zero within seconds, naming the rank and the first differing config line or graph:
#   1. rank 1 with --set train.steps=30 (used to hang),
#   2. rank 1 with --set model.hidden=32 (used to corrupt the heap),
#   3. rank 1's data root (same relative path, other working directory) missing one train graph
#      (used to exit 0 with each rank trained on other data).
# Nothing may be left in the run directory by the failed fresh runs.
set -u
mpiexec=$1; segrank=$2; src=$3; data=$4; work=$5
here=$(dirname "$0")
rm -rf "$work"; mkdir -p "$work/a" "$work/b"
common="train --config $src/configs/tiny.toml --set sampling.batch_graphs=4
        --set train.progress=false --set dist.threads_per_rank=1"
status=0
run() {  # expected text, then mpiexec arguments
  expected=$1; shift
  echo "== $expected"
  sh "$here/expect_abort.sh" 20 "$expected" "$mpiexec" --oversubscribe "$@" || status=1
}
# shellcheck disable=SC2086
run "'steps = 30' on rank 1, 'steps = 20' on rank 0" \
    -n 1 "$segrank" $common --set train.steps=20 --set data.root="$data" --set train.run_dir="$work/run1" : \
    -n 1 "$segrank" $common --set train.steps=30 --set data.root="$data" --set train.run_dir="$work/run1"
# shellcheck disable=SC2086
run "'hidden = 32' on rank 1, 'hidden = 16' on rank 0" \
    -n 1 "$segrank" $common --set train.steps=20 --set data.root="$data" --set train.run_dir="$work/run2" : \
    -n 1 "$segrank" $common --set train.steps=20 --set data.root="$data" --set train.run_dir="$work/run2" --set model.hidden=32
# Same relative data.root in two working directories; b lacks one training graph.
cp -r "$data" "$work/a/data"; cp -r "$data" "$work/b/data"
missing=$(ls "$work/b/data/npz/layout/xla/random/train" | head -n 1)
rm "$work/b/data/npz/layout/xla/random/train/$missing"
# shellcheck disable=SC2086
run "ranks disagree: the list of graphs of rank(s) 1 differs from rank 0's (line 1:" \
    -n 1 -wdir "$work/a" "$segrank" $common --set train.steps=20 --set data.root=data --set train.run_dir="$work/run3" : \
    -n 1 -wdir "$work/b" "$segrank" $common --set train.steps=20 --set data.root=data --set train.run_dir="$work/run3"
for d in run1 run2 run3; do
  if [ -e "$work/$d" ] && [ -n "$(ls -A "$work/$d")" ]; then
    echo "FAIL: $work/$d left behind: $(ls -A "$work/$d")"; status=1
  fi
done
exit $status
