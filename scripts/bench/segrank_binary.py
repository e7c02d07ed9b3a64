"""The check that --segrank names a segrank binary, shared by the benchmark scripts
(bench_quality.py, bench_tune.py, bench_scale.py; bench_mpi.sh does the same in shell): an
executable file whose `--help` exits 0 and prints segrank's usage line. A binary that is not
segrank (`--segrank /bin/true`) would otherwise fail much later with a message about missing
graphs or outputs instead of naming the binary."""

import os
import subprocess

# The line `segrank --help` prints (cli/main.cpp).
USAGE_LINE = "usage: segrank <command>"
# Seconds `segrank --help` may take (it only prints text).
HELP_TIMEOUT_S = 60
BUILD_HINT = "build it: cmake --build build --target segrank"


def segrank_binary_error(path, option="--segrank"):
    """Why `path` (the value of `option`) is not a segrank binary, or None: not an executable
    regular file, or its `--help` fails, hangs (HELP_TIMEOUT_S) or prints no USAGE_LINE. Runs
    `path --help` once; writes nothing."""
    if not (os.path.isfile(path) and os.access(path, os.X_OK)):
        return f"{option}: '{path}' is not an executable file ({BUILD_HINT})"
    try:
        r = subprocess.run(
            [path, "--help"],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            errors="replace",
            timeout=HELP_TIMEOUT_S,
        )
    except subprocess.TimeoutExpired:
        return f"{option}: '{path} --help' did not finish within {HELP_TIMEOUT_S} s: not segrank"
    except OSError as e:
        return f"{option}: '{path}' cannot be run: {e.strerror or e}"
    if r.returncode != 0 or USAGE_LINE not in r.stdout:
        what = f"exited {r.returncode}" if r.returncode != 0 else f"printed no '{USAGE_LINE}'"
        return f"{option}: '{path}' is not a segrank binary ('{path} --help' {what}; {BUILD_HINT})"
    return None
