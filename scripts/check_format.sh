#!/usr/bin/env bash
# Format check: every tracked C++ source (*.h, *.cpp, *.cc) is as clang-format (Debian 12's
# clang-format 14, installed by scripts/install_deps.sh) formats it under the repository's
# .clang-format (Google style, 4-space indent, 100 columns; docs/style.md). Prints each
# unformatted file and line and exits 1; exits 0 when every file is formatted.
# Fix: git ls-files '*.h' '*.cpp' '*.cc' | xargs clang-format -i
# Usage: scripts/check_format.sh [repo root]   (default: the checkout this script is in)
set -euo pipefail
root=${1:-"$(dirname "$0")/.."}
cd "$root"
if ! command -v clang-format >/dev/null 2>&1; then
    echo "check_format: clang-format not found (scripts/install_deps.sh installs it)" >&2
    exit 1
fi
mapfile -t files < <(git ls-files -- '*.h' '*.cpp' '*.cc')
if ! clang-format --dry-run -Werror "${files[@]}"; then
    echo "check_format: the files above are not clang-formatted; run:" >&2
    echo "  git ls-files '*.h' '*.cpp' '*.cc' | xargs clang-format -i" >&2
    exit 1
fi
echo "check_format: ${#files[@]} files formatted"
