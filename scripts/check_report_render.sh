#!/usr/bin/env bash
# Renders a `segrank report` HTML page in headless Chromium (Debian's `chromium`) and checks that a
# non-empty screenshot was produced; look at the PNG afterwards.
# Usage: scripts/check_report_render.sh REPORT.html|RUN_DIR [OUT.png]
#   RUN_DIR: `segrank report RUN_DIR` is run first ($SEGRANK, default build/cli/segrank).
#   HEIGHT=N: window height in pixels (default 1600, the top of the page); the whole page of a
#   quickstart run, leaderboard and config included, fits in HEIGHT=4800.
# Needs: apt-get install -y chromium   (not part of scripts/install_deps.sh: optional check).
set -euo pipefail

if [[ $# -lt 1 ]]; then
  echo "usage: $0 REPORT.html|RUN_DIR [OUT.png]" >&2
  exit 2
fi
input=$1
out=${2:-/tmp/segrank_report.png}
repo=$(cd "$(dirname "$0")/.." && pwd)

if [[ -d "$input" ]]; then
  bin=${SEGRANK:-$repo/build/cli/segrank}
  "$bin" report "$input" --out "$input/report.html"
  input=$input/report.html
fi
[[ -f "$input" ]] || { echo "$0: $input: no such file" >&2; exit 1; }
command -v chromium >/dev/null || { echo "$0: chromium not found (apt-get install -y chromium)" >&2; exit 1; }

# The page must not reference anything outside itself.
if grep -Eq '<script|<link |src="http|href="http' "$input"; then
  echo "$0: $input references external resources or scripts" >&2
  exit 1
fi

profile=$(mktemp -d)
trap 'rm -rf "$profile"' EXIT
rm -f "$out"
timeout 120 chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
  --disable-background-networking --disable-component-update --disable-sync \
  --user-data-dir="$profile" --screenshot="$out" --window-size=1200,"${HEIGHT:-1600}" \
  "file://$(realpath "$input")" >/dev/null 2>&1 || true
if [[ ! -s "$out" ]]; then
  echo "$0: chromium wrote no screenshot for $input" >&2
  exit 1
fi
echo "check_report_render: $input -> $out ($(stat -c %s "$out") bytes)"
