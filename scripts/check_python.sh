#!/usr/bin/env bash
# Python check: every tracked *.py file (scripts/, fuzz/, tests/) is as black formats it and
# passes flake8 (pyflakes: unused names, undefined names; pycodestyle: style), with the settings of
# pyproject.toml and .flake8 (100 columns). Debian 12's black and flake8, installed by
# scripts/install_deps.sh. Prints each finding and exits 1; exits 0 when every file passes.
# Fix the format: black $(git ls-files '*.py')   (flake8 findings are fixed by hand)
# Usage: scripts/check_python.sh [repo root]   (default: the checkout this script is in)
set -euo pipefail
root=${1:-"$(dirname "$0")/.."}
cd "$root"
for tool in black flake8; do
    if ! command -v "$tool" >/dev/null 2>&1; then
        echo "check_python: $tool not found (scripts/install_deps.sh installs it)" >&2
        exit 1
    fi
done
mapfile -t files < <(git ls-files -- '*.py')
status=0
if ! black --check --quiet "${files[@]}"; then
    black --check "${files[@]}" 2>&1 | grep '^would reformat' >&2 || true
    echo "check_python: the files above are not black-formatted; run: black \$(git ls-files '*.py')" >&2
    status=1
fi
if ! flake8 "${files[@]}"; then
    echo "check_python: flake8 findings above" >&2
    status=1
fi
if [[ $status -eq 0 ]]; then
    echo "check_python: ${#files[@]} files formatted and lint-free"
fi
exit $status
