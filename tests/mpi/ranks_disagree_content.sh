#!/bin/sh
# Usage: ranks_disagree_content.sh MPIEXEC SEGRANK SOURCE_DIR DATA_DIR WORK_DIR
# Two ranks whose copies of the data (same relative data.root, other working directories) hold the
# same graphs with the same sizes but other bytes must end the job non-zero within seconds, naming
# the graph and the rank, and leave no run directory behind:
#   1. one node_feat value of one training graph changed (used to corrupt the heap in
#      MPI_Allreduce when the normalizer kept another column count, or to exit 0 with the ranks
#      trained on different data),
#   2. two config rows (node_config_feat) of one graph swapped, runtimes in place (a label change).
set -u
mpiexec=$1; segrank=$2; src=$3; data=$4; work=$5
here=$(dirname "$0")
rm -rf "$work"; mkdir -p "$work/a" "$work/b" "$work/c"
for d in a b c; do cp -r "$data" "$work/$d/data"; done
graph=$(ls "$work/b/data/npz/layout/xla/random/train" | head -n 1)
name=${graph%.npz}
/usr/bin/python3 - "$work/b/data/npz/layout/xla/random/train/$graph" "$work/c/data/npz/layout/xla/random/train/$graph" <<'PY' || exit 1
import sys
import numpy as np
b, c = sys.argv[1], sys.argv[2]
d = dict(np.load(b))
d["node_feat"][3, 21] += 5.0
np.savez_compressed(b[:-4], **d)
d = dict(np.load(c))
f = d["node_config_feat"]
other = next(i for i in range(1, f.shape[0]) if not np.array_equal(f[0], f[i]))
f[[0, other]] = f[[other, 0]]
np.savez_compressed(c[:-4], **d)
PY
common="train --config $src/configs/tiny.toml --set sampling.batch_graphs=4 --set train.steps=20
        --set train.progress=false --set dist.threads_per_rank=1 --set data.root=data"
status=0
run() {  # expected text, run dir, then mpiexec arguments
  expected=$1; dir=$2; shift 2
  echo "== $expected"
  EXPECT_ABSENT="$dir" sh "$here/expect_abort.sh" 20 "$expected" "$mpiexec" --oversubscribe "$@" || status=1
}
# shellcheck disable=SC2086
run "ranks disagree: the content of the graphs (data manifest" "$work/run1" \
    -n 1 -wdir "$work/a" "$segrank" $common --set train.run_dir="$work/run1" : \
    -n 1 -wdir "$work/b" "$segrank" $common --set train.run_dir="$work/run1"
# shellcheck disable=SC2086
run "of rank(s) 1 differs from rank 0's (line 1: 'train\tlayout:xla:random\t$name\t" "$work/run2" \
    -n 1 -wdir "$work/a" "$segrank" $common --set train.run_dir="$work/run2" : \
    -n 1 -wdir "$work/c" "$segrank" $common --set train.run_dir="$work/run2"
exit $status
