"""The one rule for the --work folder of the benchmark scripts (bench_quality.py, bench_tune.py,
bench_scale.py): it is new, empty, or marked as the script's own by a file the script writes there
when it first uses the folder. Any other folder (a training run directory, a data folder, a
user's folder) is refused before anything is written: the scripts write about 20 files and folders
into --work."""

import os

# The mark of each script in its --work (bench_scale.py's is its record of what it made there).
QUALITY_MARK = ".bench_quality_made"
TUNE_MARK = ".bench_tune_made"
SCALE_MARK = ".bench_scale_made.json"


def work_folder_error(work, mark, prog):
    """Why `work` cannot be the --work of `prog` (whose mark is the file `mark`), or None: it
    exists and is not a directory, cannot be listed, or is not empty and holds no regular file
    `mark`. Writes nothing."""
    if not os.path.lexists(work):
        return None
    if not os.path.isdir(work):
        return f"--work {work}: not a directory"
    try:
        entries = os.listdir(work)
    except OSError as e:
        return f"--work {work}: cannot list the folder: {e.strerror}"
    marked = os.path.join(work, mark)
    if not entries or (os.path.isfile(marked) and not os.path.islink(marked)):
        return None
    shown = ", ".join(sorted(entries)[:3]) + (", ..." if len(entries) > 3 else "")
    count = f"{len(entries)} entry" if len(entries) == 1 else f"{len(entries)} entries"
    return (
        f"--work {work}: the folder exists, is not empty ({count}: {shown}) and is "
        f"not a work folder of {prog} (no {mark}); {prog} writes its files and folders there: "
        f"give a new or empty folder, or one an earlier {prog} run made"
    )


def mark_work_folder(work, mark):
    """Creates `work` (and its parents) when missing and writes the file `mark` in it when
    missing, so later runs of the script accept the folder as its own."""
    os.makedirs(work, exist_ok=True)
    marked = os.path.join(work, mark)
    if not os.path.lexists(marked):
        with open(marked, "w") as f:
            f.write("a work folder of a segrank benchmark script (scripts/bench*.py)\n")
