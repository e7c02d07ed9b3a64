#!/usr/bin/env bash
# Builds the libFuzzer harnesses of fuzz/ (clang-16, ASan + UBSan, build-fuzz/) and runs them.
# Usage: scripts/fuzz.sh TARGET SECONDS      one target for SECONDS
#        scripts/fuzz.sh --smoke [SECONDS]   every target for SECONDS each (default 20; for CI)
#        scripts/fuzz.sh --build             build only
# Targets: npz proto config submission eval_indices store store_raw (fuzz/README.md says what each
# covers; --smoke runs all but store_raw, whose findings are inside libhdf5).
# Env: FUZZ_BUILD_DIR (default build-fuzz), FUZZ_MEM_MB (default 2048: -rss_limit_mb and
#      -malloc_limit_mb, so one allocation or the process above it is a finding), FUZZ_NICE (10),
#      JOBS (default nproc), FUZZ_SEED (libFuzzer -seed; --smoke defaults to 1).
# Seeds: fuzz/corpus/<target>/ plus fixture files (../shared/data npz, pb and eval-indices files,
# configs/*.toml, the crafted npz files of tests/data/make_npz_cases.py), copied into
# $FUZZ_BUILD_DIR/corpus/<target>/, which the runs grow. Findings: $FUZZ_BUILD_DIR/artifacts/<target>/.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
BUILD=${FUZZ_BUILD_DIR:-build-fuzz}
MEM=${FUZZ_MEM_MB:-2048}
NICE=${FUZZ_NICE:-10}
JOBS=${JOBS:-$(nproc)}
TARGETS=(npz proto config submission eval_indices store store_raw)
SMOKE=(npz proto config submission eval_indices store)
SHARED="$ROOT/../shared/data"

usage() { sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'; exit "${1:-0}"; }

build() {
  SEGRANK_INSTALL_FUZZ=1 scripts/install_deps.sh
  local launcher=()
  if command -v ccache >/dev/null; then
    launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  fi
  # -O1 -g1 as in scripts/sanitize.sh: 2.5x faster to compile than -O2 -g, line tables for reports.
  cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_COMPILER=clang-16 \
    -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" \
    -DCMAKE_CXX_COMPILER=clang++-16 -DSEGRANK_FUZZ=ON -DSEGRANK_WITH_MPI=OFF -DSEGRANK_WITH_DNNL=OFF \
    "${launcher[@]}" >/dev/null
  cmake --build "$BUILD" -j "$JOBS" --target fuzz_all
}

# Fills $BUILD/corpus/$1 with the seeds of target $1 (existing entries are kept).
seed() {
  local t=$1 dir="$BUILD/corpus/$1"
  mkdir -p "$dir"
  [[ -d fuzz/corpus/$t ]] && cp -n fuzz/corpus/"$t"/* "$dir"/ 2>/dev/null || true
  case $t in
    npz)
      mkdir -p "$BUILD/seeds/npz"
      /usr/bin/python3 tests/data/make_npz_cases.py "$BUILD/seeds/npz"
      cp -n "$BUILD"/seeds/npz/*.npz "$dir"/
      if [[ -d $SHARED ]]; then  # fixtures up to 64 KiB (the -max_len of this target)
        find "$SHARED" -name '*.npz' -size -65k | while read -r f; do cp -n "$f" "$dir/$(basename "$f")"; done
      fi ;;
    proto)
      if [[ -d $SHARED ]]; then
        cp -n "$SHARED/xla_tuning/op_tuning_data.pb" "$dir"/
        /usr/bin/python3 fuzz/split_tuning_data.py "$SHARED/xla_tuning/op_tuning_data.pb" "$dir"
      fi ;;
    config) for f in configs/*.toml; do cp -n "$f" "$dir"/; done ;;
    eval_indices) [[ -d $SHARED ]] && cp -n "$SHARED"/tpugraphs_npz/eval_indices/*.json "$dir"/ || true ;;
  esac
}

max_len() {
  case $1 in
    npz|proto|store_raw) echo 65536 ;;
    *) echo 16384 ;;
  esac
}

# run TARGET SECONDS: prints one summary line; returns libFuzzer's exit status.
run() {
  local t=$1 secs=$2
  seed "$t"
  mkdir -p "$BUILD/artifacts/$t"
  local log="$BUILD/fuzz_$t.log" rc=0
  # TMPDIR: the harnesses write each input to a per-process scratch file.
  # lsan.supp: leaks inside libhdf5 on corrupt files (not ours; the store harness checks our ids).
  TMPDIR="$BUILD" UBSAN_OPTIONS=print_stacktrace=1 LSAN_OPTIONS=suppressions="$ROOT/fuzz/lsan.supp" \
    ASAN_SYMBOLIZER_PATH=${ASAN_SYMBOLIZER_PATH:-$(command -v llvm-symbolizer || true)} nice -n "$NICE" "$BUILD/fuzz/fuzz_$t" \
    -max_total_time="$secs" -rss_limit_mb="$MEM" -malloc_limit_mb="$MEM" -max_len="$(max_len "$t")" \
    -timeout=30 -print_final_stats=1 ${FUZZ_SEED:+-seed=$FUZZ_SEED} -artifact_prefix="$BUILD/artifacts/$t/" "$BUILD/corpus/$t" \
    >"$log" 2>&1 || rc=$?
  local runs cov corp
  runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo "?")
  cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 | grep -o '[0-9]*' || echo "?")
  corp=$(find "$BUILD/corpus/$t" -type f | wc -l)
  if [[ $rc -eq 0 ]]; then
    echo "fuzz: $t ${secs}s: $runs runs, cov $cov, corpus $corp files, no crash, leak or allocation over ${MEM} MB"
  else
    echo "fuzz: $t: FINDING (exit $rc), see $log and $BUILD/artifacts/$t/"
    grep -E '^==[0-9]+==ERROR|SUMMARY|runtime error|deadly signal|out-of-memory|malloc\(' "$log" | head -5
  fi
  return $rc
}

case ${1:-} in
  -h|--help|"") usage 0 ;;
  --build) build ;;
  --smoke)
    secs=${2:-20}
    FUZZ_SEED=${FUZZ_SEED:-1}  # the same input sequence on every CI run
    build
    status=0
    for t in "${SMOKE[@]}"; do run "$t" "$secs" || status=1; done
    exit $status ;;
  *)
    [[ $# -eq 2 && $2 =~ ^[0-9]+$ ]] || usage 1
    [[ " ${TARGETS[*]} " == *" $1 "* ]] || { echo "fuzz.sh: unknown target '$1' (${TARGETS[*]})" >&2; exit 1; }
    build
    run "$1" "$2" ;;
esac
