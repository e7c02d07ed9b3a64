"""What every module of the quality benchmark shares: its name, the repository root, the error it
reports and its progress log."""

import hashlib
import os
import sys
import time

PROG = "bench_quality.py"
# The repository root: segrank runs there, and relative config paths are resolved from it.
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


class BenchError(Exception):
    """A failure to report: message names the case / seed / command."""


def log(msg):
    """One progress line on stderr, prefixed with the wall-clock time."""
    sys.stderr.write(f"[{time.strftime('%H:%M:%S')}] {msg}\n")
    sys.stderr.flush()


def sha256(path):
    """Hex sha256 of a file's content (the binary and config files in --resume stamps)."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()
