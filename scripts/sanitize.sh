#!/usr/bin/env bash
# Builds segrank with AddressSanitizer + UndefinedBehaviorSanitizer (-DSEGRANK_SANITIZE=ON, the
# portable matmul instead of oneDNN, whose JIT code ASan cannot see) in build-asan/ and runs the
# whole test suite under them: any memory error, leak or undefined behaviour fails its test.
# Usage: scripts/sanitize.sh [ctest args, e.g. -R gnn:]   Env: SANITIZE_BUILD_DIR (default
# build-asan), JOBS (default nproc: build jobs and tests run at once), SANITIZE_EXCLUDE (ctest -E
# regex, default below; empty runs all).
# Not run here by default: the tests of scripts/bench_quality.py, bench_tune.py, bench_scale.py and
# bench_mpi.sh (whose mpirun plugins' one-time allocations LSan reports from an unknown module).
# They test the harness (arguments, case wiring, JSON, --work rules), run no segrank code the
# rest of the suite does not run under the sanitizers, and take 25+ min under ASan (1512 s for the
# real cases alone in CI) against seconds in the Release suite, which runs them. Nor the Ctrl-C
# test of the signal relay ("Ctrl-C at random moments"): it guards oneDNN's JIT GEMM, which this
# build replaces by the portable matmul, and its eight default-recipe trainings outlast the
# 600-second test timeout under ASan.
# Tests run JOBS at a time (they are independent; the MPI train data is a declared fixture): on a
# 2-core machine the sanitized suite takes about half its serial time.
# Leaks inside Open MPI / hwloc / libgomp (allocated once per process by the libraries, not by
# segrank) are suppressed by scripts/lsan.supp; nothing of segrank's own is.
set -euo pipefail
export GOMP_SPINCOUNT=${GOMP_SPINCOUNT:-20000}
cd "$(dirname "$0")/.."
ROOT=$(pwd)
scripts/install_deps.sh
BUILD=${SANITIZE_BUILD_DIR:-build-asan}
JOBS=${JOBS:-$(nproc)}
launcher=()
if command -v ccache >/dev/null; then
    launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
fi
# -O1 -g1: compiles about 2.5x faster than RelWithDebInfo's -O2 -g (trainer/trainer.cpp: 44 s
# against 111 s) and keeps the line tables sanitizer reports need.
cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSEGRANK_SANITIZE=ON \
    -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" \
    -DSEGRANK_WITH_DNNL=OFF "${launcher[@]}" >/dev/null
cmake --build "$BUILD" -j "$JOBS"
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:strict_string_checks=1:detect_stack_use_after_return=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}
export LSAN_OPTIONS=${LSAN_OPTIONS:-suppressions=$ROOT/scripts/lsan.supp:print_suppressions=0}
EXCLUDE=${SANITIZE_EXCLUDE-bench_(quality|scale|tune)\.py|bench_mpi\.sh|Ctrl-C at random moments}
exclude=()
if [ -n "$EXCLUDE" ]; then
    exclude=(-E "$EXCLUDE")
fi
ctest --test-dir "$BUILD" --output-on-failure --timeout 1800 -j "$JOBS" "${exclude[@]}" "$@"
