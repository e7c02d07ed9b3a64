#!/bin/sh
# Usage: mixed_launch.sh MPIEXEC SEGRANK SOURCE_DIR DATA_DIR WORK_DIR
# An MPMD launch whose other rank runs another command (`mpiexec -n 1 segrank evaluate ... : -n 1
# segrank train ...`) used to leave the train rank waiting forever in its first collective, with
# its run directory's .lock behind. A one-process command started as one of several ranks refuses
# before any work (rank 0 says why; docs/distributed.md), so the launcher ends the job: non-zero
# within seconds, saying why, and no run directory. (The start-up barrier's own deadline,
# SEGRANK_STARTUP_TIMEOUT_S, still covers ranks that never join for other reasons.)
set -u
mpiexec=$1; segrank=$2; src=$3; data=$4; work=$5
here=$(dirname "$0")
rm -rf "$work"; mkdir -p "$work"
common="--config $src/configs/tiny.toml --set data.root=$data --set sampling.batch_graphs=4
        --set train.progress=false --set dist.threads_per_rank=1"
# The checkpoint the evaluate rank reads: 2 steps in one process.
# shellcheck disable=SC2086
"$segrank" train $common --set train.steps=2 --set train.run_dir="$work/base" >/dev/null || exit 1
# shellcheck disable=SC2086
EXPECT_ABSENT="$work/m" sh "$here/expect_abort.sh" 20 \
    "segrank evaluate: error: segrank evaluate runs in one process; only segrank train uses MPI ranks (started as rank 0 of 2)" \
    "$mpiexec" --oversubscribe \
    -n 1 "$segrank" evaluate --checkpoint "$work/base" : \
    -n 1 "$segrank" train $common --set train.steps=2 --set train.run_dir="$work/m"
