#!/usr/bin/env bash
# Installs the Debian packages, builds segrank (Release, -Wall -Wextra) and runs the whole test suite.
# Usage: scripts/test.sh [extra cmake -D options]   Env: BUILD_DIR (default build), JOBS (default nproc)
set -euo pipefail
# OpenMP threads spin 20000 iterations (libgomp's default: 300000) before sleeping between parallel
# regions: on a loaded 2-core machine the default made training about 50x slower
# (docs/benchmarks.md#openmp-wait-policy).
export GOMP_SPINCOUNT=${GOMP_SPINCOUNT:-20000}
cd "$(dirname "$0")/.."
scripts/install_deps.sh
BUILD_DIR=${BUILD_DIR:-build}
JOBS=${JOBS:-$(nproc)}
cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release "$@"
cmake --build "$BUILD_DIR" -j "$JOBS"
# Tests run their OpenMP kernels on 2 threads; ctest runs one test at a time so timings stay sane.
ctest --test-dir "$BUILD_DIR" --output-on-failure --timeout 900
