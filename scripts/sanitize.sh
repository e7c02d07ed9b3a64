#!/usr/bin/env bash
# Builds segrank with AddressSanitizer + UndefinedBehaviorSanitizer (-DSEGRANK_SANITIZE=ON, the
# reference matmul instead of oneDNN, whose JIT code ASan cannot see) in build-asan/ and runs the
# whole test suite under them: any memory error, leak or undefined behaviour fails its test.
# Usage: scripts/sanitize.sh [ctest args, e.g. -R gnn:]   Env: SANITIZE_BUILD_DIR (default
# build-asan), JOBS (default nproc).
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
cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSEGRANK_SANITIZE=ON \
    -DSEGRANK_WITH_DNNL=OFF "${launcher[@]}" >/dev/null
cmake --build "$BUILD" -j "$JOBS"
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:strict_string_checks=1:detect_stack_use_after_return=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}
export LSAN_OPTIONS=${LSAN_OPTIONS:-suppressions=$ROOT/scripts/lsan.supp:print_suppressions=0}
ctest --test-dir "$BUILD" --output-on-failure --timeout 1800 "$@"
