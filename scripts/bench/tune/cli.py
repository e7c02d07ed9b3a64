"""The command line of scripts/bench_tune.py: its arguments (checked before any work, by the checks
it shares with bench_quality.py) and main(), which runs the cases and writes the JSON and Markdown.
Exit codes: 0 done, 1 a failed case or output (no JSON written), 2 bad arguments."""

import datetime
import os
import shlex
import sys
import time

from ..cli import (
    MAX_SEEDS,
    add_output_args,
    check_cases,
    check_jobs_and_binary,
    check_paths,
    check_seeds_and_mode,
    new_parser,
    resolve_paths,
    run_env,
    write_outputs,
)
from ..atomic_output import json_output, markdown_output
from ..common import REPO, BenchError, log
from ..machine import cpu_model, git_commit
from ..options import INT64_MAX, int_range_error, parse_args_once
from ..runner import Runner
from ..work_folder import TUNE_MARK, mark_work_folder
from .report import markdown
from .settings import BATCH, BUDGETS, CASES, PROG, SCHEMA_VERSION, SEARCH_FAMILY, SIZES, WITHIN
from .suite import TuneBench

# What --json-out / --markdown may replace: an earlier output of this script (atomic_output.py).
TUNE_OUTPUTS = {
    "--json-out": json_output("bench_tune"),
    "--markdown": markdown_output("bench_tune.py", "Autotuning benchmark:"),
}


def batch_value(text):
    """(value, error) of a --batch text: value the count (int) or `grow` / `grow:CAP` (str) that
    `segrank tune --batch` receives; error None, or the message naming --batch and what it
    expected (a count 1 to INT64_MAX, grow, grow:CAP with CAP 2 to INT64_MAX)."""
    if text == "grow":
        return text, None
    grow = text.startswith("grow:")
    count = text[5:] if grow else text
    if count.isascii() and count.isdigit():
        if not grow:
            return int(count), int_range_error(
                "--batch", int(count), 1, INT64_MAX, "segrank tune --batch"
            )
        if 2 <= int(count) <= INT64_MAX:
            return text, None
    return None, (
        f"--batch: expected a count 1 to {INT64_MAX}, grow or grow:CAP (CAP 2 to {INT64_MAX}) "
        f"(segrank tune --batch), got {text!r}"
    )


def parse_args(argv, usage):
    """The checked options of argv (exit 2 with a message on a bad one). usage: the --help text."""
    p = new_parser(PROG, usage)
    p.add_argument(
        "--segrank",
        default=os.path.join(REPO, "build", "cli", "segrank"),
        help="segrank binary (default: build/cli/segrank of the repository)",
    )
    p.add_argument("--quick", action="store_true", help="smaller sizes (minutes on 2 cores)")
    p.add_argument(
        "--tiny", action="store_true", help="smoke-test sizes (seconds; the numbers mean nothing)"
    )
    p.add_argument(
        "--seeds",
        type=int,
        default=3,
        help=f"model seeds, 2 to {MAX_SEEDS} (default 3): train.seed = sampling.seed = 0..N-1",
    )
    p.add_argument(
        "--random-seeds",
        type=int,
        default=3,
        help=f"search mode: seeds of --strategy random / anneal, 2 to {MAX_SEEDS} (default 3)",
    )
    p.add_argument(
        "--cases", default=None, help="comma list of cases (default: all: " + ", ".join(CASES) + ")"
    )
    p.add_argument(
        "--work",
        default=os.path.join(REPO, "runs", "bench_tune"),
        help="scratch directory (default: runs/bench_tune of the repository)",
    )
    p.add_argument(
        "--shared-data",
        default=os.path.normpath(os.path.join(REPO, "..", "shared", "data")),
        help="real data root (default: ../shared/data beside the repository)",
    )
    p.add_argument("--jobs", type=int, default=0, help="segrank runs at a time (default: nproc)")
    p.add_argument(
        "--models",
        default=None,
        help="the --work folder of an earlier run of the same size and --seeds: its synth_ models "
        "(synth_COLLECTION/runs/seedS/best.ckpt.h5) are used instead of training new ones",
    )
    p.add_argument(
        "--batch",
        default=str(BATCH),
        help=f"configs measured per round by every tuning strategy: a count 1 to {INT64_MAX}, or "
        "grow[:CAP] (rounds growing with the measurements, docs/tune.md#choosing-the-batch) "
        f"(default {BATCH}; `segrank tune --batch`)",
    )
    add_output_args(p)
    o = parse_args_once(p, argv)
    resolve_paths(o)
    check_seeds_and_mode(p, o)
    o.batch, err = batch_value(o.batch)
    if err:
        p.error(err)
    o.cases = check_cases(p, o.cases or ",".join(CASES), CASES)
    if o.models is not None:
        o.models = os.path.abspath(o.models)
        if not os.path.isdir(o.models):
            p.error(f"--models: '{o.models}' is not a directory (an earlier run's --work)")
        if o.models == os.path.abspath(o.work):
            p.error("--models: the earlier run's --work, not this run's --work")
    check_jobs_and_binary(p, o)
    check_paths(p, o, TUNE_OUTPUTS, TUNE_MARK)
    return o


def main(argv, usage):
    """Runs the benchmark for argv; returns the exit code (usage: the --help text)."""
    o = parse_args(argv, usage)
    mark_work_folder(o.work, TUNE_MARK)
    runner = Runner(o.segrank, o.work, o.threads, run_env())
    with open(runner.log_path, "w"):
        pass
    model, avx512 = cpu_model()
    commit, _ = git_commit(REPO)
    doc = {
        "schema": SCHEMA_VERSION,
        "benchmark": "bench_tune",
        "mode": o.mode,
        "started": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
        "commit": commit,
        "command": shlex.join(["scripts/bench_tune.py"] + list(argv)),
        "machine": {"cpu": model, "avx512": avx512, "nproc": os.cpu_count()},
        "settings": {
            "budgets": [n for n in BUDGETS if n <= SIZES[o.mode]["budget"]],
            "batch": o.batch,
            "within": WITHIN,
            "sizes": SIZES[o.mode],
            "search_family": SEARCH_FAMILY,
            "seeds": o.seeds,
            "random_seeds": o.random_seeds,
            "models": o.models,
        },
        "cases": {},
    }
    bench = TuneBench(o, runner)
    t_all = time.monotonic()
    for case in o.cases:
        t0 = time.monotonic()
        log(f"case {case}")
        try:
            doc["cases"][case] = bench.run_case(case)
        except BenchError as e:
            sys.stderr.write(f"{PROG}: error: {e}\n{PROG}: no JSON written\n")
            bench.pool.shutdown(wait=True, cancel_futures=True)
            return 1
        doc["cases"][case]["wall_s"] = round(time.monotonic() - t0, 1)
    bench.pool.shutdown(wait=True)
    doc["wall_s"] = round(time.monotonic() - t_all, 1)
    return write_outputs(PROG, o, doc, markdown, TUNE_OUTPUTS)
