#!/usr/bin/env bash
# ctest case: `cmake --install` of this build into a scratch prefix, examples/score_configs
# configured and built against it with find_package(segrank), then run on a checkpoint trained here
# (configs/tiny.toml, 2 steps on a 3-graph synthetic collection). Fails when the package config,
# the installed header or a library is missing, or the example's output lacks its best config.
# Usage: install_example_test.sh BUILD_DIR SOURCE_DIR SEGRANK_BINARY CXX_COMPILER [LINKER_FLAGS]
set -euo pipefail
build=$1 src=$2 segrank=$3 cxx=$4 ldflags=${5:-}
work="$build/tests/scratch/install_example"
rm -rf "$work"
mkdir -p "$work"
cmake --install "$build" --prefix "$work/prefix" >"$work/install.log"
test -f "$work/prefix/include/segrank/cost_model.h"
test -f "$work/prefix/lib/cmake/segrank/segrank-config.cmake"
launcher=()
if command -v ccache >/dev/null; then launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache); fi
cmake -S "$src/examples/score_configs" -B "$work/build" -DCMAKE_PREFIX_PATH="$work/prefix" \
    -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_COMPILER="$cxx" "${launcher[@]}" \
    -DCMAKE_EXE_LINKER_FLAGS="$ldflags" >"$work/configure.log"
cmake --build "$work/build" -j 2 >"$work/build.log"
"$segrank" synth --out "$work/data" --collections layout --graphs 3 --nodes 30:50 --configs 12 \
    --seed 1 >"$work/synth.log"
"$segrank" train --config "$src/configs/tiny.toml" --set train.steps=2 --set train.eval_every=0 \
    --set "data.root='$work/data'" --set "train.run_dir='$work/run'" \
    --set 'data.collections=["layout:xla:random"]' >"$work/train.log" 2>&1
npz=$(find "$work/data" -name '*.npz' | sort | head -1)
test -n "$npz"
out=$("$work/build/score_configs" "$work/run" "$npz")
echo "$out"
grep -q "layout graph, 12 configs" <<<"$out"
grep -q "^best 1: config [0-9]" <<<"$out"
# A bad checkpoint is an error with a message, not a crash.
if "$work/build/score_configs" "$work/nowhere" "$npz" 2>"$work/err.log"; then exit 1; fi
grep -q "no checkpoint found" "$work/err.log"
echo "install example: ok"
