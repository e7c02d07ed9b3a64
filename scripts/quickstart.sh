#!/usr/bin/env bash
# The main job on its embedded default: installs packages, builds, then trains and evaluates.
# Usage: scripts/quickstart.sh [--set section.key=value ...]
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install_deps.sh
BUILD_DIR=${BUILD_DIR:-build}
cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$BUILD_DIR" -j "$(nproc)" --target segrank
exec "$BUILD_DIR/trainer/segrank" train --config configs/quickstart.toml "$@"
