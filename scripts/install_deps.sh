#!/usr/bin/env bash
# Installs every Debian package segrank's build, tests and benchmarks need (idempotent).
# Usage: scripts/install_deps.sh   (as root, or with sudo available)
# Env: SEGRANK_INSTALL_BENCH=1 adds the benchmark packages, SEGRANK_INSTALL_FUZZ=1 the fuzzing ones.
set -euo pipefail

PACKAGES=(
  build-essential cmake pkg-config git
  libdnnl-dev ocl-icd-opencl-dev
  libopenmpi-dev openmpi-bin
  libhdf5-dev
  libcxxopts-dev doctest-dev libtomlplusplus-dev nlohmann-json3-dev
  libzip-dev zlib1g-dev libxxhash-dev
  libprotobuf-dev protobuf-compiler
  libmetis-dev
  python3-numpy python3-h5py
  clang-format
  # scripts/check_size.py (function extents), scripts/check_python.sh (format and lint)
  universal-ctags black flake8
)
# Benchmarks against the PyTorch peer (../shared/peers) and the HTML report check.
BENCH_PACKAGES=(python3-torch libopenblas0-pthread)
# Fuzz harnesses (fuzz/, scripts/fuzz.sh): clang with libFuzzer, ASan and UBSan (libclang-rt-16-dev
# holds the runtimes -fsanitize=fuzzer,address,undefined links; libomp: clang's OpenMP).
FUZZ_PACKAGES=(clang-16 libclang-rt-16-dev libfuzzer-16-dev libomp-16-dev)

want=("${PACKAGES[@]}")
if [[ "${SEGRANK_INSTALL_BENCH:-0}" == "1" ]]; then want+=("${BENCH_PACKAGES[@]}"); fi
if [[ "${SEGRANK_INSTALL_FUZZ:-0}" == "1" ]]; then want+=("${FUZZ_PACKAGES[@]}"); fi

missing=()
for p in "${want[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
if [[ ${#missing[@]} -eq 0 ]]; then
  echo "install_deps: all ${#want[@]} packages present"
  exit 0
fi

SUDO=""
if [[ $(id -u) -ne 0 ]]; then SUDO="sudo"; fi
echo "install_deps: installing ${missing[*]}"
$SUDO apt-get update
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y --no-install-recommends "${missing[@]}"
