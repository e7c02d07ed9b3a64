"""Provenance of a run for the JSON: the CPU, the source commit of the scripts and of the binary,
and the CPU time of the segrank processes."""

import os
import resource
import subprocess


def cpu_model():
    """(model name of the first CPU in /proc/cpuinfo, whether it has avx512f)."""
    try:
        with open("/proc/cpuinfo") as f:
            model, flags = None, ""
            for line in f:
                if line.startswith("model name") and model is None:
                    model = line.split(":", 1)[1].strip()
                if line.startswith("flags") and not flags:
                    flags = line.split(":", 1)[1]
            return model or "unknown", "avx512f" in flags.split()
    except OSError:
        return "unknown", False


def git_commit(path):
    """(short commit of the git checkout holding `path`, "-dirty" appended when tracked files
    differ; the checkout's root), or (None, ...) outside a checkout or without git."""
    d = os.path.abspath(path)
    while True:
        if os.path.exists(os.path.join(d, ".git")):
            try:
                head = subprocess.run(
                    ["git", "-C", d, "rev-parse", "--short", "HEAD"], capture_output=True, text=True
                )
                dirty = subprocess.run(
                    ["git", "-C", d, "status", "--porcelain", "--untracked-files=no"],
                    capture_output=True,
                    text=True,
                )
                if head.returncode == 0:
                    return head.stdout.strip() + ("-dirty" if dirty.stdout.strip() else ""), d
            except OSError:
                pass
            return None, d
        parent = os.path.dirname(d)
        if parent == d:
            return None, None
        d = parent


def children_cpu_s():
    """User + system CPU seconds of every finished child process (segrank runs) so far: the cost
    of a case independent of the machine's load (on an idle machine wall ~ cpu_s / cores)."""
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime
