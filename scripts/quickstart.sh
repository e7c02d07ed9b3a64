#!/usr/bin/env bash
# The main job on its embedded default (a couple of minutes on 2 cores): installs packages, builds,
# synthesizes a small layout collection labelled by the TPU v3 timing model, trains a GNN with Graph
# Segment Training, and prints a leaderboard of the model, the hwmodel baseline and random ranking on
# the valid split. Extra arguments go to `segrank train` (e.g. --set train.steps=500).
set -euo pipefail
cd "$(dirname "$0")/.."
# OpenMP threads spin 20000 iterations (libgomp's default: 300000) before sleeping between parallel
# regions: on a loaded 2-core machine the default made training about 50x slower
# (docs/benchmarks.md#openmp-wait-policy).
export GOMP_SPINCOUNT=${GOMP_SPINCOUNT:-20000}
scripts/install_deps.sh
BUILD_DIR=${BUILD_DIR:-build}
cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$BUILD_DIR" -j "$(nproc)" --target segrank
SEGRANK="$BUILD_DIR/cli/segrank"
OUT=runs/quickstart
mkdir -p "$OUT"
"$SEGRANK" synth --out "$OUT/data" --collections layout --graphs 192 --nodes 200:2000 --configs 64 --seed 0 --force -q
# --overwrite: a second run of this script starts the training over in the same run directory.
"$SEGRANK" train --config configs/quickstart.toml --overwrite "$@"
"$SEGRANK" predict --checkpoint "$OUT" --split valid --out "$OUT/model.csv"
"$SEGRANK" hwmodel --data "$OUT/data" --split valid --out "$OUT/hwmodel.csv"
"$SEGRANK" predict --random 0 --data "$OUT/data" --split valid --out "$OUT/random.csv"
"$SEGRANK" evaluate --checkpoint "$OUT" --split valid --json "$OUT/eval_valid.json"
"$SEGRANK" leaderboard --truth "$OUT/data" --split valid --out-md "$OUT/leaderboard.md" \
    --out-csv "$OUT/leaderboard.csv" "$OUT/model.csv" "$OUT/hwmodel.csv" "$OUT/random.csv"
# The page shows the three-submission leaderboard and the per-graph Kendall bars of the valid split.
"$SEGRANK" report "$OUT" --out "$OUT/report.html" --leaderboard "$OUT/leaderboard.csv" --eval "$OUT/eval_valid.json"
echo "quickstart: run directory $OUT (report.html, leaderboard.md, leaderboard.csv, eval_valid.json, metrics.jsonl, best.ckpt.h5)"
echo "quickstart: check the page renders: scripts/check_report_render.sh $OUT/report.html $OUT/report.png"
