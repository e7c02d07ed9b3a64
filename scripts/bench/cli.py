"""The command line of scripts/bench_quality.py: its arguments (checked before any work, --set and
--ablate by `segrank train --check`) and main(), which runs the cases and writes the JSON and
Markdown. Exit codes: 0 done, 1 a failed case or output (no JSON written), 2 bad arguments."""

import argparse
import datetime
import json
import os
import subprocess
import sys
import time

from .atomic_output import (
    OutputError,
    check_distinct_outputs,
    check_output,
    json_output,
    markdown_output,
    write_text_atomically,
)
from .common import PROG, REPO, BenchError, log
from .machine import children_cpu_s, cpu_model, git_commit
from .options import parse_args_once
from .report import clean_json, fmt, markdown, pm
from .runner import Runner
from .settings import CASES, DEFAULT_CASES, REAL_INPUTS, SCHEMA_VERSION, SIZES, TRANSFER_CASES
from .suite import Bench
from .segrank_binary import segrank_binary_error
from .work_folder import QUALITY_MARK, mark_work_folder, work_folder_error

# What --json-out / --markdown may replace: an earlier output of this script (atomic_output.py).
QUALITY_OUTPUTS = {
    "--json-out": json_output("bench_quality"),
    "--markdown": markdown_output("bench_quality.py", "Learning-quality benchmark:"),
}


def split_top_level(text):
    """Splits at commas outside brackets, braces and quotes (TOML values may hold commas)."""
    parts, depth, quote, cur = [], 0, None, ""
    for ch in text:
        if quote:
            cur += ch
            if ch == quote:
                quote = None
            continue
        if ch in "\"'":
            quote = ch
        elif ch in "[{":
            depth += 1
        elif ch in "]}":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
            continue
        cur += ch
    parts.append(cur)
    return parts


def check_kv(kv, what):
    """kv when it has the form section.key=value; argparse.ArgumentTypeError naming `what` else."""
    key, sep, value = kv.partition("=")
    if (
        not sep
        or "." not in key
        or not key.replace(".", "").replace("_", "").isalnum()
        or not value
    ):
        raise argparse.ArgumentTypeError(f"{what}: expected section.key=value, got '{kv}'")
    return kv


def parse_ablate(text):
    """--ablate NAME:key=value[,key=value...] -> (NAME, [key=value, ...])."""
    name, sep, rest = text.partition(":")
    if not sep or not name or not rest:
        raise argparse.ArgumentTypeError(
            f"--ablate: expected NAME:key=value[,key=value...], got '{text}'"
        )
    if not all(ch.isalnum() or ch in "_-." for ch in name) or name == "model":
        raise argparse.ArgumentTypeError(
            f"--ablate: row name '{name}' must be letters, digits, _ - . and not 'model'"
        )
    return name, [check_kv(kv.strip(), f"--ablate {name}") for kv in split_top_level(rest)]


def check_overrides(o, p):
    """--set and --ablate overrides checked by `segrank train --check` on configs/default.toml
    before any data is made, so a typo fails in a second, not after minutes of synth (as
    bench_scale.py).
    """
    rows = [("--set", list(o.set))] + [(f"--ablate {n}", list(o.set) + kv) for n, kv in o.ablate]
    for what, kvs in rows:
        if not kvs:
            continue
        cmd = [
            o.segrank,
            "train",
            "--config",
            os.path.join(REPO, "configs", "default.toml"),
            "--check",
            "--data-later",
            "--overwrite",
            "--set",
            "train.run_dir=" + os.path.join(o.work, "set-check"),
        ]
        last = {kv.split("=", 1)[0].strip(): kv for kv in kvs}  # an --ablate key replaces --set's
        for kv in last.values():
            cmd += ["--set", kv]
        r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if r.returncode != 0:
            p.error(f"{what}: {r.stdout.strip()}")


# --- what bench_quality.py and bench_tune.py share: the parser, the checks, the output


def new_parser(prog, usage):
    """An argument parser for `prog` whose --help is `usage` (its first paragraph the description,
    the rest the epilog, as written)."""
    return argparse.ArgumentParser(
        prog=prog,
        description=usage.split("\n\n")[0],
        epilog="\n\n".join(usage.split("\n\n")[1:]),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )


def add_output_args(p):
    """--json-out and --markdown."""
    p.add_argument(
        "--json-out", help="also write the JSON to this file (only when every case succeeded)"
    )
    p.add_argument(
        "--markdown", help="also write the Markdown table to this file (not the --json-out file)"
    )


MAX_SEEDS = 1000  # --seeds and --random-seeds: each seed is a run (or several), so far beyond
# what a benchmark can finish; the bound refuses a typo before the work folder is made.


def check_seeds_and_mode(p, o):
    """--seeds and --random-seeds in [2, MAX_SEEDS], --quick and --tiny not both; sets o.mode
    (tiny, quick or full). Runs before the work folder is made (p.error exits 2)."""
    if o.seeds < 2:
        p.error(f"--seeds must be >= 2 (a standard deviation needs two runs), got {o.seeds}")
    if o.random_seeds < 2:
        p.error(f"--random-seeds must be >= 2, got {o.random_seeds}")
    for name, n in (("--seeds", o.seeds), ("--random-seeds", o.random_seeds)):
        if n > MAX_SEEDS:
            p.error(f"{name}: expected 2 to {MAX_SEEDS} (each seed is a run), got {n}")
    if o.quick and o.tiny:
        p.error("--quick and --tiny exclude each other")
    o.mode = "tiny" if o.tiny else "quick" if o.quick else "full"


def check_cases(p, text, known):
    """The case names of a --cases comma list, each in `known` and listed once."""
    cases = [c.strip() for c in text.split(",") if c.strip()]
    bad = [c for c in cases if c not in known]
    if bad or not cases:
        p.error(
            f"--cases: unknown case(s) {', '.join(bad) or '(none given)'}; "
            f"known: {', '.join(known)}"
        )
    if len(set(cases)) != len(cases):
        p.error("--cases: a case is listed twice")
    return cases


PATH_OPTIONS = ("segrank", "work", "shared_data", "json_out", "markdown")


def resolve_paths(o):
    """Makes every path option of `o` that is set (PATH_OPTIONS) absolute, once, right after
    parsing: a relative path given on the command line is relative to the caller's current
    directory. The defaults are absolute already (in the repository); the segrank commands run
    with the repository as working directory, so nothing after this may join a path to REPO."""
    for name in PATH_OPTIONS:
        value = getattr(o, name, None)
        if value:
            setattr(o, name, os.path.abspath(value))


def check_jobs_and_binary(p, o):
    """--jobs >= 0 (0: nproc; sets o.threads = nproc / jobs OpenMP threads per run), --segrank a
    segrank binary (segrank_binary.segrank_binary_error; absolute: resolve_paths)."""
    nproc = os.cpu_count() or 1
    if o.jobs < 0:
        p.error(f"--jobs must be >= 0, got {o.jobs}")
    o.jobs = o.jobs or nproc
    o.threads = max(1, nproc // o.jobs)
    err = segrank_binary_error(o.segrank)
    if err:
        p.error(err)


def check_paths(p, o, kinds=None, mark=QUALITY_MARK):
    """--work new, empty or marked as the script's (`mark`, work_folder.work_folder_error), its
    nearest existing ancestor a directory, --json-out / --markdown in an existing
    folder and not a directory, FIFO or socket (atomic_output.check_output), an existing file only
    an earlier output of the script (`kinds`: flag -> OutputKind; default this script's,
    QUALITY_OUTPUTS), and the two not the same file (atomic_output.check_distinct_outputs). The
    paths are absolute already (resolve_paths)."""
    # The nearest existing ancestor of --work must be a directory (makedirs would raise otherwise).
    probe = o.work
    while not os.path.exists(probe) and os.path.dirname(probe) != probe:
        probe = os.path.dirname(probe)
    if not os.path.isdir(probe):
        p.error(f"--work: '{probe}' is not a directory")
    err = work_folder_error(o.work, mark, p.prog)
    if err:
        p.error(err)
    for flag, path in (("--json-out", o.json_out), ("--markdown", o.markdown)):
        if path and not os.path.isdir(os.path.dirname(os.path.abspath(path))):
            p.error(f"{flag}: output directory of '{path}' does not exist")
        if path and os.path.lexists(path):
            try:
                # a directory, FIFO, socket or another kind of file is refused before any work
                check_output(path, (kinds or QUALITY_OUTPUTS)[flag])
            except OutputError as e:
                p.error(f"{flag}: {e}")
    try:
        check_distinct_outputs({"--json-out": o.json_out, "--markdown": o.markdown})
    except OutputError as e:
        p.error(str(e))


def run_env():
    """The environment of the segrank runs: this one, with GOMP_SPINCOUNT=20000 unless set."""
    env = dict(os.environ)
    env.setdefault("GOMP_SPINCOUNT", "20000")
    return env


def write_outputs(prog, o, doc, markdown_of, kinds=None):
    """Writes a finished benchmark: the JSON (NaN and inf as null) to --json-out and its Markdown
    (markdown_of(doc)) to --markdown by the binary's output rules (atomic_output.py), then the
    Markdown on stderr and the JSON on stdout. Returns the exit code: 0, or 1 (message on stderr,
    nothing on stdout) when a file cannot be written."""
    doc = clean_json(doc)
    text = json.dumps(doc, indent=1)
    md = markdown_of(doc)
    try:
        kinds = kinds or QUALITY_OUTPUTS
        if o.json_out:
            write_text_atomically(o.json_out, text + "\n", kinds["--json-out"])
        if o.markdown:
            write_text_atomically(o.markdown, md, kinds["--markdown"])
    except OutputError as e:
        sys.stderr.write(f"{prog}: error: {e}\n")
        return 1
    sys.stderr.write("\n" + md)
    sys.stdout.write(text + "\n")
    return 0


def run_script(main, prog):
    """Exits with main(command-line arguments)'s code; exit 130 with a message on Ctrl-C."""
    try:
        sys.exit(main(sys.argv[1:]))
    except KeyboardInterrupt:
        sys.stderr.write(f"{prog}: interrupted\n")
        sys.exit(130)


def parse_args(argv, usage):
    """The checked options of argv (exit 2 with a message on a bad one). usage: the --help text
    (its first paragraph is the description, the rest the epilog)."""
    p = new_parser(PROG, usage)
    default_bin = os.path.join(REPO, "build", "cli", "segrank")
    if not os.path.exists(default_bin):
        default_bin = os.path.join(REPO, "build", "trainer", "segrank")
    p.add_argument(
        "--segrank",
        default=default_bin,
        help="segrank binary (default: build/cli/segrank of the repository if it exists, "
        "else build/trainer/segrank)",
    )
    p.add_argument(
        "--quick",
        action="store_true",
        help="smaller data and fewer steps (about 5 minutes on 2 cores)",
    )
    p.add_argument(
        "--tiny", action="store_true", help="smoke-test sizes (seconds; the numbers mean nothing)"
    )
    p.add_argument(
        "--seeds",
        type=int,
        default=3,
        help=f"model seeds per case, 2 to {MAX_SEEDS} (default 3): train.seed = sampling.seed = "
        "0..N-1",
    )
    p.add_argument(
        "--random-seeds",
        type=int,
        default=5,
        help=f"seeds of the random baseline, 2 to {MAX_SEEDS} (default 5)",
    )
    p.add_argument(
        "--cases",
        default=None,
        help="comma list of cases (default: "
        + ", ".join(DEFAULT_CASES)
        + "; also "
        + ", ".join(TRANSFER_CASES)
        + ")",
    )
    p.add_argument(
        "--work",
        default=os.path.join(REPO, "runs", "bench_quality"),
        help="scratch directory (default: runs/bench_quality of the repository)",
    )
    p.add_argument(
        "--shared-data",
        default=os.path.normpath(os.path.join(REPO, "..", "shared", "data")),
        help="real data root (default: ../shared/data beside the repository)",
    )
    p.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        type=lambda s: check_kv(s, "--set"),
        help="override applied to every model run (repeatable)",
    )
    p.add_argument(
        "--layout-choices",
        type=int,
        default=0,
        metavar="N",
        help="synth_layout: each configurable node picks among N layouts drawn once per graph "
        "(`segrank synth --layout-choices`; the real layout files have at most 8 distinct per "
        "node); "
        "0 (default): a fresh random layout per config",
    )
    p.add_argument(
        "--ablate",
        action="append",
        default=[],
        metavar="NAME:KEY=VALUE[,KEY=VALUE]",
        type=parse_ablate,
        help="extra model row per case with these overrides (repeatable)",
    )
    p.add_argument(
        "--no-regression",
        action="store_true",
        help="real_tile: skip the regression row (15 more runs "
        "per seed, trained with an mse term; docs/metrics.md#runtime-regression)",
    )
    p.add_argument(
        "--no-ensemble",
        action="store_true",
        help="skip the seed-ensemble rows (the N seed models of each "
        "row ensembled by `segrank predict`, docs/benchmarks.md#seed-ensembles)",
    )
    p.add_argument("--jobs", type=int, default=0, help="training runs at a time (default: nproc)")
    p.add_argument(
        "--resume",
        action="store_true",
        help="reuse the finished training and evaluation runs of an "
        "earlier (e.g. interrupted) benchmark in the same --work whose binary (sha256) and "
        "arguments are the "
        "same (stamp files beside each run); the JSON marks them reused. A --work that does not "
        "exist or holds no earlier run (no .bench_quality_made) is refused: nothing to resume",
    )
    add_output_args(p)
    o = parse_args_once(p, argv)
    resolve_paths(o)
    check_seeds_and_mode(p, o)
    if not 0 <= o.layout_choices <= 1000:
        p.error(f"--layout-choices must be in [0, 1000], got {o.layout_choices}")
    o.cases_explicit = o.cases is not None
    o.cases = check_cases(p, o.cases if o.cases is not None else ",".join(DEFAULT_CASES), CASES)
    names = [n for n, _ in o.ablate]
    if len(set(names)) != len(names):
        p.error("--ablate: row names must be unique")
    check_jobs_and_binary(p, o)
    check_paths(p, o)
    if o.resume:
        err = resume_error(o.work, QUALITY_MARK, p.prog)
        if err:
            p.error(err)
    check_overrides(o, p)
    return o


def resume_error(work, mark, prog):
    """Why --resume has nothing to resume in `work` (absolute), or None: the folder does not exist,
    or holds no `mark` (empty, or never used by `prog`). Call it after work_folder_error has
    accepted `work`."""
    hint = "drop --resume to start a new benchmark there"
    if not os.path.lexists(work):
        return f"--resume: --work {work} does not exist: nothing to resume ({hint})"
    if not os.path.isfile(os.path.join(work, mark)):
        return (
            f"--resume: --work {work} holds no earlier run of {prog} (no {mark}): nothing to "
            f"resume ({hint})"
        )
    return None


def main(argv, usage):
    """Runs the benchmark for argv; returns the exit code (usage: the --help text)."""
    o = parse_args(argv, usage)
    mark_work_folder(o.work, QUALITY_MARK)
    os.makedirs(os.path.join(o.work, "logs"), exist_ok=True)
    env = run_env()
    runner = Runner(o.segrank, o.work, o.threads, env, resume=o.resume)
    with open(runner.log_path, "a" if o.resume else "w"):
        pass
    model, avx512 = cpu_model()
    commit, _ = git_commit(REPO)
    bin_commit, bin_tree = git_commit(os.path.dirname(o.segrank))
    doc = {
        "schema": SCHEMA_VERSION,
        "benchmark": "bench_quality",
        "mode": o.mode,
        "started": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
        "commit": commit,
        "resume": o.resume,
        "segrank": {
            "path": o.segrank,
            "sha256": runner.segrank_sha,
            "source_tree": bin_tree,
            "source_commit": bin_commit,
        },
        "machine": {
            "nproc": os.cpu_count(),
            "cpu_model": model,
            "avx512": avx512,
            "load_start": list(os.getloadavg()),
            "load_end": None,
        },
        "seeds": o.seeds,
        "random_seeds": o.random_seeds,
        "jobs": o.jobs,
        "threads_per_job": o.threads,
        "env": {
            "GOMP_SPINCOUNT": env["GOMP_SPINCOUNT"],
            "OMP_WAIT_POLICY": env.get("OMP_WAIT_POLICY"),
        },
        "set": o.set,
        "ablate": {n: kv for n, kv in o.ablate},
        "layout_choices": o.layout_choices,
        "sizes": {c: SIZES[o.mode][c] for c in o.cases},
        "cases": {},
    }
    bench = Bench(o, runner, o.shared_data)
    t_all = time.monotonic()
    try:
        for case in o.cases:
            missing = [
                f
                for f in REAL_INPUTS.get(case, [])
                if not os.path.exists(os.path.join(o.shared_data, f))
            ]
            if missing:
                why = f"missing {os.path.join(o.shared_data, missing[0])}"
                if o.cases_explicit:
                    raise BenchError(f"case {case}: {why} (--shared-data DIR)")
                log(f"{case}: skipped ({why})")
                doc["cases"][case] = {"skipped": why}
                continue
            log(f"case {case} ({doc['mode']})")
            t0 = time.monotonic()
            cpu0 = children_cpu_s()
            load0 = os.getloadavg()[0]
            res = bench.run_case(case)
            res["task"] = "tile" if "tile" in case else "layout"
            res["wall_s"] = round(time.monotonic() - t0, 1)
            res["cpu_s"] = round(children_cpu_s() - cpu0, 1)
            res["load_start"] = load0
            res["load_end"] = os.getloadavg()[0]
            doc["cases"][case] = res
            if res.get("kind") == "transfer":
                log(
                    f"{case}: model / ceiling {pm(res['fraction_of_ceiling'])} "
                    "(mean over held-out families), "
                    f"hwmodel / ceiling {fmt(res['hwmodel_fraction_of_ceiling'])} "
                    f"({res['wall_s']:.0f} s)"
                )
                continue
            log(
                f"{case}: model {pm(res['model']['metrics']['kendall'])} kendall, hwmodel "
                f"{fmt(res['hwmodel']['metrics']['kendall'])}, "
                f"random {pm(res['random']['metrics']['kendall'])}, "
                f"ceiling {fmt(res['ceiling']['value']) if res.get('ceiling') else '-'}"
                + (
                    f" (trip-blind {fmt(res['ceiling_trip_blind']['value'])})"
                    if res.get("ceiling_trip_blind")
                    else ""
                )
                + f" ({res['wall_s']:.0f} s)"
            )
    except Exception as e:  # every failure ends the same way: message, exit 1, no JSON
        if isinstance(e, BenchError):
            sys.stderr.write(f"{PROG}: error: {e}\n")
        else:
            import traceback

            sys.stderr.write(f"{PROG}: internal error: {e!r}\n{traceback.format_exc()}")
        sys.stderr.write(
            f"{PROG}: no JSON written; commands in {runner.log_path}, run logs in {o.work}/logs\n"
        )
        bench.pool.shutdown(wait=True, cancel_futures=True)
        return 1
    bench.pool.shutdown(wait=True)
    doc["wall_s"] = round(time.monotonic() - t_all, 1)
    doc["cpu_s"] = round(sum(c.get("cpu_s", 0.0) for c in doc["cases"].values()), 1)
    doc["machine"]["load_end"] = list(os.getloadavg())
    doc["crosschecks"] = bench.crosschecks
    return write_outputs(PROG, o, doc, markdown)
