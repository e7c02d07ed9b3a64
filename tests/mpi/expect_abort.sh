#!/bin/sh
# Usage: expect_abort.sh MAX_SECONDS EXPECTED_TEXT command...
# Passes when the command exits non-zero within MAX_SECONDS and its output contains EXPECTED_TEXT
# (a hang is cut off by timeout after 3 x MAX_SECONDS and fails).
# Env EXPECT_ABSENT=DIR: DIR is removed before the command and must not exist after it (a fresh run
# directory that the failed job must not leave behind).
max=$1; expected=$2; shift 2
if [ -n "$EXPECT_ABSENT" ]; then rm -rf "$EXPECT_ABSENT"; fi
out=$(mktemp)
start=$(date +%s)
timeout $((max * 3)) "$@" >"$out" 2>&1
rc=$?
elapsed=$(( $(date +%s) - start ))
cat "$out"
echo "expect_abort: exit code $rc after ${elapsed}s"
status=0
if [ "$rc" -eq 0 ]; then echo "FAIL: the job exited with 0, expected a failure"; status=1; fi
if [ "$rc" -eq 124 ]; then echo "FAIL: the job hung (killed by timeout)"; status=1; fi
if [ "$elapsed" -gt "$max" ]; then echo "FAIL: took ${elapsed}s, expected <= ${max}s"; status=1; fi
if ! grep -qF -- "$expected" "$out"; then echo "FAIL: output lacks: $expected"; status=1; fi
if [ -n "$EXPECT_ABSENT" ] && [ -e "$EXPECT_ABSENT" ]; then
  echo "FAIL: $EXPECT_ABSENT was left behind:"; ls -la "$EXPECT_ABSENT"; status=1
fi
rm -f "$out"
exit $status
