#!/bin/sh
# Usage: mixed_launch.sh MPIEXEC SEGRANK SOURCE_DIR DATA_DIR WORK_DIR
# An MPMD launch whose other rank runs another command (`mpiexec -n 1 segrank train ... : -n 1
# segrank evaluate ...`) used to leave the train rank waiting forever in its first collective, with
# its run directory's .lock behind. The start-up barrier has a deadline
# (SEGRANK_STARTUP_TIMEOUT_S, 3 s here): the job must end non-zero within seconds, saying why, and
# leave no run directory.
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
SEGRANK_STARTUP_TIMEOUT_S=3 EXPECT_ABSENT="$work/m" sh "$here/expect_abort.sh" 20 \
    "error: rank(s) did not join the start-up agreement within 3 s: are all ranks running the same segrank train command?" \
    "$mpiexec" --oversubscribe -x SEGRANK_STARTUP_TIMEOUT_S \
    -n 1 "$segrank" train $common --set train.steps=2 --set train.run_dir="$work/m" : \
    -n 1 "$segrank" evaluate --checkpoint "$work/base"
