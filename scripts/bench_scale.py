#!/usr/bin/env python3
"""Full-size rehearsal: segrank at the size of the layout:xla collection, end to end.

Steps (each timed; every number comes from the segrank binary or from the wall clock and the
children's peak RSS):
  1. synth   `segrank synth --collections layout` with layout:xla's sizes: 69 train + 7 valid
             graphs, nodes log-uniform over 372-43,615, configs per graph log-uniform over
             10^3-10^5, configurable nodes proportional to size (2.3% of the nodes: 1000 at
             43,615), each choosing among 8 layouts drawn once per graph (--layout-choices; the
             real layout files have at most 8 distinct rows per configurable node), npz.
  2. pack    `segrank pack` into HDF5 stores; the store size is the sum of the .h5 files.
  3. train   a fixed number of GST steps with the layout recipe (--recipe, default
             configs/tpugraphs_layout_xla.toml: GST with segments.max_nodes = 1000, H = 128, L = 3,
             the mean readout over nodes within 2 hops of a configurable node, batch 8 graphs x 32
             configs, listmle; its data, steps, run dir and final evaluation replaced), read from
             the stores; the final evaluation scores 200 configs per valid graph
             (eval.indices). steps/s = 1 / mean step_wall_s of the train lines after the first
             (warmup); an epoch is one pass over the train graphs: ceil(train graphs /
             batch_graphs) steps, so time per epoch = those steps / steps/s.
  4. rank    `segrank predict --split valid`: every config of every valid graph; configs ranked per
             second = all valid configs / wall time (graph preparation included). Each distinct
             row is computed once (eval.dedupe_rows); --dense ranks with every row instead.
  5. probe   one graph of the largest size (43,615 nodes, 1000 configurable nodes) with
             --probe-configs configs (10^5 at full size), ranked by `segrank predict`; the time
             for 10^5 configs is measured when the probe has 10^5 configs, else extrapolated
             linearly (marked so).
MPI scaling (--np N, N >= 2; needs mpirun): after step 3 the same training (same stores, steps,
recipe and overrides) runs twice more with ONE OpenMP thread per process (train.threads = 1,
dist.threads_per_rank = 1, OMP_NUM_THREADS=1): under `mpirun -np 1` (the reference) and under
`mpirun -np N --oversubscribe --bind-to none` (N ranks, data-parallel: each rank trains the graphs
it owns of every global batch, dist.ownership = the recipe's or --ownership). Reported under "mpi":
steps/s of each (as in step 3), scaling efficiency = steps/s at N / (N x steps/s at 1), time per
epoch at N, and peak RSS per rank: the max over ranks of VmHWM that segrank logs in every
metrics.jsonl train line (each rank's VmHWM, reduced by max over the ranks; training up to the last
logged step), with rank 0's own peak over the whole run (report.json) and the os.wait4 peak of
mpirun (Linux: the max over mpirun and every rank it reaped, final evaluation included). The
checkpoint that steps 4 and 5 rank stays step 3's. Without --np (or --np 1) nothing changes.
Peak RSS: VmHWM of each child (os.wait4), in MiB. Targets: peak RSS < 2 GiB in training and
inference; 10^5 configs of the largest graph ranked in <= 60 s; an epoch in <= 2 h.

Prints ONE JSON object on stdout (schema in docs/benchmarks.md#scale-rehearsal) and a Markdown table
on stderr (and in --markdown FILE). Python 3 standard library only.

Sizes: full (default), --quick (12 + 2 graphs of 372-8000 nodes, 200-2000 configs, 20 steps, probe
of 1000 configs: a few minutes), --tiny (3 + 1 graphs of 200-500 nodes, 20-60 configs, 4 steps,
probe of 64 configs: seconds; the smoke test).

Paths: a relative path given to --segrank, --work, --recipe, --json-out, --markdown or --mpirun is
relative to the current directory (the defaults are relative to the repository). --work must be
new, empty or a work folder of this script (else exit 2): every file and folder the script writes
there is recorded in --work/.bench_scale_made.json before it is first written and replaced by later
runs; one of the same name that the record does not cover (e.g. your own run/ or train.toml) stops
the run before any work, untouched (exit 1). A name leaves the record when the script removes it
(npz/, deleted once packed) and when a run ends without it, so a folder you make there later is
yours. --segrank must be a segrank binary (its --help prints
segrank's usage), else exit 2. --json-out and --markdown must name two different files.

Examples:
  scripts/bench_scale.py --quick --json-out runs/bench_scale/quick.json \\
      --markdown runs/bench_scale/quick.md
  scripts/bench_scale.py --work /tmp/scale --segrank build/cli/segrank
  scripts/bench_scale.py --work /tmp/scale --reuse-data --np 2 --ownership balanced
"""

import argparse
import json
import math
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time

from bench.atomic_output import (
    OutputError,
    OutputKind,
    check_distinct_outputs,
    check_output,
    markdown_output,
    write_text_atomically,
)
from bench.options import (
    INT64_MAX,
    MAX_LAYOUT_CHOICES,
    MAX_SYNTH_CONFIGS,
    MAX_THREADS,
    int_range_error,
    parse_args_once,
)
from bench.segrank_binary import segrank_binary_error
from bench.work_folder import SCALE_MARK, work_folder_error


def _earlier_json(text):
    try:
        doc = json.loads(text)
    except ValueError:
        return False
    # "benchmark" since it was added; before that, the schema version and the probe.
    return isinstance(doc, dict) and (
        doc.get("benchmark") == "bench_scale" or ("schema_version" in doc and "probe" in doc)
    )


# What --json-out / --markdown may replace: an earlier output of this script (atomic_output.py).
OUTPUTS = {
    "--json-out": OutputKind(
        'a bench_scale JSON document ("benchmark": "bench_scale")', _earlier_json
    ),
    "--markdown": markdown_output("bench_scale.py", "| step | measured |"),
}

PROG = "bench_scale.py"
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCHEMA_VERSION = 1
MIB = 1024.0 * 1024.0

# Sizes: changing any of these changes what the numbers mean; the JSON records them ("settings").
SIZES = {
    "full": {
        "train": 69,
        "valid": 7,
        "nodes": "372:43615",
        "configs": "1000:100000",
        "config_node_fraction": 0.023,
        "max_config_nodes": 1000,
        "layout_choices": 8,
        "steps": 100,
        "log_every": 10,
        "probe_nodes": 43615,
        "probe_configs": 100000,
        "eval_configs": 200,
    },
    "quick": {
        "train": 12,
        "valid": 2,
        "nodes": "372:8000",
        "configs": "200:2000",
        "config_node_fraction": 0.023,
        "max_config_nodes": 1000,
        "layout_choices": 8,
        "steps": 20,
        "log_every": 5,
        "probe_nodes": 43615,
        "probe_configs": 1000,
        "eval_configs": 100,
    },
    "tiny": {
        "train": 3,
        "valid": 1,
        "nodes": "200:500",
        "configs": "20:60",
        "config_node_fraction": 0.023,
        "max_config_nodes": 1000,
        "layout_choices": 8,
        "steps": 4,
        "log_every": 2,
        "probe_nodes": 500,
        "probe_configs": 64,
        "eval_configs": 16,
    },
}
LAST_CPU = [0.0]
TARGETS = {"peak_rss_mb": 2048.0, "probe_1e5_seconds": 60.0, "epoch_seconds": 7200.0}


class BenchError(Exception):
    pass


def log(msg):
    print(f"[{PROG}] {msg}", file=sys.stderr, flush=True)


def stop_process_group(p):
    """Stops the child p and its process group (SIGTERM, SIGKILL after 5 s) and reaps p. A second
    Ctrl-C meanwhile is ignored."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    for sig, grace_s in ((signal.SIGTERM, 5.0), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(p.pid, sig)
        except OSError:
            pass
        deadline = time.monotonic() + grace_s
        while p.returncode is None and time.monotonic() < deadline:
            try:
                pid, status = os.waitpid(p.pid, os.WNOHANG)
            except ChildProcessError:
                pid, status = p.pid, 0
            if pid == p.pid:
                p.returncode = os.waitstatus_to_exitcode(status)
            else:
                time.sleep(0.05)
        if p.returncode is not None:
            break
    try:  # what the child left behind in its group (mpirun's ranks)
        os.killpg(p.pid, signal.SIGKILL)
    except OSError:
        pass


def run(cmd, log_path, env):
    """Runs cmd (list), stdout+stderr to log_path; returns (seconds, peak RSS MiB, output).
    The child's CPU seconds (user + system) are left in LAST_CPU[0]."""
    log("$ " + " ".join(shlex.quote(c) for c in cmd))
    t0 = time.monotonic()
    with open(log_path, "w") as out:
        # Its own process group (with mpirun's ranks), so an interrupt can stop all of it.
        p = subprocess.Popen(
            cmd, stdout=out, stderr=subprocess.STDOUT, env=env, cwd=REPO, start_new_session=True
        )
        try:
            _, status, ru = os.wait4(p.pid, 0)
        except BaseException:  # Ctrl-C / SIGINT: no child is left running
            stop_process_group(p)
            raise
    secs = time.monotonic() - t0
    LAST_CPU[0] = ru.ru_utime + ru.ru_stime
    p.returncode = os.waitstatus_to_exitcode(status)
    with open(log_path) as f:
        text = f.read()
    if p.returncode != 0:
        tail = "\n".join(text.splitlines()[-15:])
        raise BenchError(
            f"command failed (exit {p.returncode}): "
            f"{' '.join(shlex.quote(c) for c in cmd)}\n{tail}"
        )
    return secs, ru.ru_maxrss / 1024.0, text


def dir_bytes(path, suffix):
    total = 0
    for root, _, files in os.walk(path):
        for f in files:
            if f.endswith(suffix):
                total += os.path.getsize(os.path.join(root, f))
    return total


def stats_of(segrank, store_dir, env, log_path):
    """`segrank stats --json` of store_dir (its output also in log_path)."""
    _, _, text = run([segrank, "stats", store_dir, "--json"], log_path, env)
    return json.loads(text[text.index("{") :])


def graphs_of(stats):
    """[(collection split, graph name, nodes, configs)] from `segrank stats --json`."""
    out = []
    for c in stats.get("collections", []):
        split = c["collection"].rsplit(":", 1)[-1]
        for g in c.get("per_graph", []):
            out.append((split, g["name"], g["nodes"], g["configs"]))
    return out


def train_config(path, size, store_dir, run_dir, indices, threads, steps):
    """Writes the rehearsal's overrides of the recipe (data, steps, run dir, final evaluation) and
    returns them (train_config_text)."""
    text = train_config_text(size, store_dir, run_dir, indices, threads, steps)
    with open(path, "w") as f:
        f.write(text)
    return text


def train_config_text(size, store_dir, run_dir, indices, threads, steps):
    """The rehearsal's overrides of the recipe, as flat TOML."""
    return f"""# written by {PROG}: overrides of the recipe (--recipe) for the rehearsal stores
[data]
root = "{store_dir}"
store = "hdf5"
collections = ["layout:xla:random"]
holdout = "graphs"

[train]
steps = {steps}
eval_every = 0
log_every = {size['log_every']}
run_dir = "{run_dir}"
threads = {threads}
progress = false

[eval]
indices = "{indices}"
"""


def recipe_command(seg, recipe, overrides):
    """`segrank train` of the recipe file with every key of the overrides (train_config_text: flat
    TOML, [section] headers and key = value lines) set on top."""
    cmd = [seg, "train", "--config", recipe, "--overwrite"]
    section = ""
    for line in overrides.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("["):
            section = line.strip("[]")
            continue
        key, value = (x.strip() for x in line.split("=", 1))
        cmd += ["--set", f"{section}.{key}={value}"]
    return cmd


def train_lines(run_dir):
    """The train lines of run_dir/metrics.jsonl, in order."""
    lines = []
    with open(os.path.join(run_dir, "metrics.jsonl")) as f:
        for line in f:
            j = json.loads(line)
            if j.get("phase") == "train":
                lines.append(j)
    return lines


def train_numbers(run_dir, train_graphs, batch_graphs):
    lines = train_lines(run_dir)
    with open(os.path.join(run_dir, "report.json")) as f:
        report = json.load(f)
    walls = [j["step_wall_s"] for j in lines[1:]] or [j["step_wall_s"] for j in lines]
    step_s = sum(walls) / len(walls)
    steps_per_epoch = math.ceil(train_graphs / batch_graphs)
    return {
        "steps": report["steps"],
        "steps_per_s": 1.0 / step_s,
        "step_seconds": step_s,
        "steps_per_epoch": steps_per_epoch,
        "epoch_seconds": steps_per_epoch * step_s,
        "peak_rss_mb": report["peak_rss_mb"],
        "train_lines": len(lines),
    }


def positive_int(text):
    """argparse type of --np: an integer >= 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer >= 1, got '{text}'") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {value}")
    return value


def mpi_env(env):
    """The environment of the mpirun runs: one OpenMP thread per rank; as root, Open MPI refuses
    to start without both OMPI_ALLOW_* variables."""
    menv = dict(env, OMP_NUM_THREADS="1")
    if os.geteuid() == 0:
        menv.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    return menv


def mpi_launcher(mpirun, ranks):
    """mpirun -np RANKS: more ranks than cores need --oversubscribe; --bind-to none leaves the
    placement to the kernel (Open MPI binds each rank to a core for np <= 2 by default)."""
    return [
        mpirun,
        "-np",
        str(ranks),
        "--oversubscribe",
        "--bind-to",
        "none",
        "-x",
        "OMP_NUM_THREADS",
        "-x",
        "GOMP_SPINCOUNT",
    ]


def one_thread_overrides(ownership):
    """--set options of the MPI comparison on top of its overrides file (which has threads = 1):
    one thread per rank under several ranks too, and the graph ownership when given."""
    sets = ["--set", "dist.threads_per_rank=1"]
    if ownership == "per_step_slice_configs":
        sets += ["--set", 'dist.ownership="per_step"', "--set", "dist.slice_configs=true"]
    elif ownership == "per_step_segment_units":
        sets += ["--set", 'dist.ownership="per_step"', "--set", "dist.segment_units=true"]
    elif ownership:
        sets += ["--set", f'dist.ownership="{ownership}"']
    return sets


def mpi_train_numbers(run_dir, log_text, ranks, train_graphs, batch_graphs):
    """Numbers of one `mpirun -np RANKS segrank train` run: train_numbers' steps/s and epoch, the
    world size segrank reports, peak RSS per rank and how evenly the ranks were loaded."""
    with open(os.path.join(run_dir, "report.json")) as f:
        report = json.load(f)
    world = report.get("world_size")
    if world != ranks:
        raise BenchError(
            f"mpirun -np {ranks}: segrank reports world_size {world} in "
            f"{run_dir}/report.json (built without MPI? cmake -DSEGRANK_WITH_MPI=ON "
            f"with Open MPI installed)"
        )
    base = train_numbers(run_dir, train_graphs, batch_graphs)
    lines = train_lines(run_dir)
    timed = lines[1:] or lines

    def ratio(num, den):
        a = [j.get(num) for j in timed]
        b = [j.get(den) for j in timed]
        if None in a or None in b or sum(b) <= 0:
            return None
        return sum(a) / sum(b)

    # Every train line's peak_rss_mb is the max over the ranks of their VmHWM so far
    # (trainer_run.cpp: comm.allreduce_max(peak_rss_mb())).
    rss = [j["peak_rss_mb"] for j in lines if "peak_rss_mb" in j]
    out = {
        "ranks": world,
        "threads_per_rank": 1,
        "steps": base["steps"],
        "steps_per_s": base["steps_per_s"],
        "step_seconds": base["step_seconds"],
        "steps_per_epoch": base["steps_per_epoch"],
        "epoch_seconds": base["epoch_seconds"],
        "peak_rss_mb": max(rss) if rss else None,
        "peak_rss_mb_rank0": report["peak_rss_mb"],
        "train_lines": base["train_lines"],
        # As bench_mpi.sh: mean rank wall time on its own members per step wall time, and CPU
        # time on own members, mean over ranks / max over ranks, per step and per log interval.
        "busy_fraction": ratio("step_busy_s", "step_wall_s"),
        "step_balance_cpu": ratio("step_cpu_s", "step_cpu_max_s"),
        "run_balance_cpu": ratio("step_cpu_s", "rank_cpu_max_s"),
    }
    m = re.search(
        r"segrank train: (\d+) ranks \((\w+)\), (\d+) OpenMP thread\(s\) per rank", log_text
    )
    if m:
        out["threads_per_rank"] = int(m.group(3))
    m = re.search(r"dist\.ownership = (\w+), training work per rank ([0-9.nan /]+)", log_text)
    if m:
        out["ownership"] = m.group(1)
        out["work_shares"] = [float(x) for x in m.group(2).split(" / ")]
    m = re.search(r"dist\.ownership = per_step, .*modelled step efficiency ([0-9.]+)", log_text)
    if m:  # no fixed shares: the step-cost model's prediction instead
        out["ownership"] = "per_step"
        out["modelled_step_balance"] = float(m.group(1))
    m = re.search(r"modelled step efficiency [0-9.]+, scaling efficiency ([0-9.]+)", log_text)
    if m:  # config slices: the modelled steps/s at N over N x steps/s at 1
        out["modelled_scaling_efficiency"] = float(m.group(1))
    return out


def mpi_scaling(opts, seg, ws, size, h5, indices, train_graphs, env):
    """The train step again at np = 1 and np = N, one thread per rank each (see the docstring)."""
    menv = mpi_env(env)
    out = {
        "np": opts.np,
        "threads_per_rank": 1,
        "launcher": " ".join(mpi_launcher("mpirun", opts.np)),
        "mpirun": opts.mpirun_version,
        "ownership": opts.ownership or "recipe",
    }
    for ranks, key in ((1, "np1"), (opts.np, "npN")):
        run_dir = ws.fresh_dir(f"run_np{ranks}")
        cfg_path = ws.file(f"train_np{ranks}.toml")
        overrides = train_config(cfg_path, size, h5, run_dir, indices, 1, size["steps"])
        load = os.getloadavg()[0]
        cmd = (
            mpi_launcher(opts.mpirun, ranks)
            + recipe_command(seg, opts.recipe, overrides)
            + one_thread_overrides(opts.ownership)
        )
        secs, rss, text = run(cmd, ws.file(f"train_np{ranks}.log"), menv)
        res = mpi_train_numbers(run_dir, text, ranks, train_graphs, 8)
        # os.wait4 of mpirun: Linux reports the max of mpirun's own peak and that of every child
        # it reaped (the ranks), over the whole run; CPU seconds likewise summed over them.
        res.update(
            {
                "seconds": secs,
                "cpu_seconds": LAST_CPU[0],
                "process_peak_rss_mb": rss,
                "load_avg_start": load,
            }
        )
        out[key] = res
    if "ownership" in out["npN"]:
        out["ownership"] = out["npN"]["ownership"]
    out["speedup"] = out["npN"]["steps_per_s"] / out["np1"]["steps_per_s"]
    out["scaling_efficiency"] = out["speedup"] / opts.np
    out["epoch_seconds"] = out["npN"]["epoch_seconds"]
    out["peak_rss_mb_per_rank"] = out["npN"]["peak_rss_mb"]
    return out


def predict_timing(text):
    """Per-graph lines of `segrank predict --timing`."""
    rows = []
    for line in text.splitlines():
        if line.startswith("predict: "):
            f = line.split()
            rows.append(
                {
                    "graph": f[1],
                    "nodes": int(f[3]),
                    "configs": int(f[5]),
                    "seconds": float(f[7]),
                    "configs_per_s": float(f[9]),
                }
            )
    return rows


def target(value, limit):
    return {"value": value, "limit": limit, "met": value is not None and value <= limit}


def markdown(res):
    r = res
    t = r["targets"]
    probe = r["probe"]

    def mark(ok):
        return "met" if ok else "NOT met"

    rows = [
        (
            "synth (69+7 graphs)" if r["size"] == "full" else "synth",
            f"{r['synth']['seconds']:.0f} s",
        ),
        ("pack to HDF5", f"{r['pack']['seconds']:.0f} s"),
        ("store size", f"{r['pack']['store_mb']:.0f} MiB ({r['data']['configs']} configs)"),
        ("training steps/s", f"{r['train']['steps_per_s']:.3f} ({r['train']['steps']} steps)"),
        (
            "time per epoch",
            f"{r['train']['epoch_seconds']:.0f} s " f"({r['train']['steps_per_epoch']} steps)",
        ),
        ("peak RSS training", f"{r['train']['peak_rss_mb']:.0f} MiB"),
        (
            "rank all valid configs",
            f"{r['rank']['configs']} configs in {r['rank']['seconds']:.0f} s, "
            f"{r['rank']['configs_per_s']:.1f} configs/s",
        ),
        ("peak RSS inference", f"{r['rank']['peak_rss_mb']:.0f} MiB"),
        (
            f"probe {probe['nodes']} nodes",
            f"{probe['configs']} configs in {probe['seconds']:.0f} s, "
            f"{probe['configs_per_s']:.1f} configs/s "
            f"({probe['cpu_seconds']:.0f} CPU s), "
            f"{probe['peak_rss_mb']:.0f} MiB",
        ),
        (
            "target: peak RSS < 2 GiB",
            f"{mark(t['peak_rss_mb']['met'])} ({t['peak_rss_mb']['value']:.0f} MiB)",
        ),
        (
            "target: 10^5 configs of the largest graph <= 60 s",
            f"{mark(t['probe_1e5_seconds']['met'])} ({t['probe_1e5_seconds']['value']:.0f} s"
            f"{', extrapolated' if probe['extrapolated'] else ''})"
            if r["size"] == "full"
            else f"not judged at the {r['size']} size ({t['probe_1e5_seconds']['value']:.0f} s "
            f"extrapolated from a {probe['nodes']}-node probe of {probe['configs']} configs)",
        ),
        (
            "target: epoch <= 2 h",
            f"{mark(t['epoch_seconds']['met'])} ({t['epoch_seconds']['value']:.0f} s)",
        ),
    ]
    if "mpi" in r:
        m = r["mpi"]
        n, one = m["npN"], m["np1"]
        rows += [
            (
                "MPI training steps/s, np=1 x 1 thread",
                f"{one['steps_per_s']:.3f} ({one['steps']} steps)",
            ),
            (
                f"MPI training steps/s, np={m['np']} x 1 thread per rank",
                f"{n['steps_per_s']:.3f} ({n['steps']} steps, dist.ownership = {m['ownership']})",
            ),
            (
                f"MPI scaling efficiency np={m['np']}",
                f"{m['scaling_efficiency']:.3f} (speedup {m['speedup']:.2f} on {m['np']} ranks)"
                + (
                    f"; step-cost model {n['modelled_scaling_efficiency']:.3f}"
                    if n.get("modelled_scaling_efficiency") is not None
                    else ""
                ),
            ),
            (
                f"MPI time per epoch np={m['np']}",
                f"{n['epoch_seconds']:.0f} s ({n['steps_per_epoch']} steps; "
                f"np=1: {one['epoch_seconds']:.0f} s)",
            ),
            (
                f"MPI peak RSS per rank np={m['np']}",
                (
                    f"{n['peak_rss_mb']:.0f} MiB max over ranks (training)"
                    if n["peak_rss_mb"] is not None
                    else "max over ranks not logged by this segrank"
                )
                + f"; rank 0 with final evaluation {n['peak_rss_mb_rank0']:.0f} MiB; "
                f"mpirun and its ranks {n['process_peak_rss_mb']:.0f} MiB",
            ),
        ]
    out = ["| step | measured |", "|---|---|"] + [f"| {a} | {b} |" for a, b in rows]
    return "\n".join(out) + "\n"


def main(argv):
    ap = argparse.ArgumentParser(
        prog=PROG,
        description=__doc__.split("\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=__doc__.split("\n", 1)[1],
    )
    ap.add_argument(
        "--segrank",
        default=os.path.join(REPO, "build", "cli", "segrank"),
        help="segrank binary (default: build/cli/segrank of the repository)",
    )
    ap.add_argument(
        "--work",
        default=os.path.join(REPO, "runs", "bench_scale"),
        help="scratch directory (data, stores, run dir, logs; default: runs/bench_scale of the "
        "repository); it may hold files of yours: what the script writes there is recorded in "
        f"{OWNED}, and a file or folder of the same name it did not make stops the run",
    )
    ap.add_argument("--quick", action="store_true", help="CI size (a few minutes)")
    ap.add_argument("--tiny", action="store_true", help="smoke-test size (seconds)")
    ap.add_argument(
        "--steps", type=int, help=f"training steps, 1 to {INT64_MAX} (default: the size's)"
    )
    ap.add_argument(
        "--probe-configs",
        type=int,
        help=f"configs of the largest-graph probe, 2 to {MAX_SYNTH_CONFIGS} (segrank synth's "
        "limit)",
    )
    ap.add_argument(
        "--layout-choices",
        type=int,
        help="segrank synth --layout-choices: distinct layouts per configurable node, 0 to "
        f"{MAX_LAYOUT_CHOICES} (default 8, as in the real layout files; 0 = a fresh random "
        "layout per config)",
    )
    ap.add_argument(
        "--dense",
        action="store_true",
        help="rank with segrank predict --dense (every row; default: each distinct row " "once)",
    )
    ap.add_argument(
        "--recipe",
        default=os.path.join(REPO, "configs", "tpugraphs_layout_xla.toml"),
        help="training config the rehearsal trains (its data, steps, run dir and "
        "final evaluation are replaced; default: the layout:xla recipe, "
        "configs/tpugraphs_layout_xla.toml of the repository)",
    )
    ap.add_argument(
        "--threads",
        type=int,
        default=0,
        help=f"OpenMP threads, 0 to {MAX_THREADS} (0 = all cores; segrank's limit)",
    )
    ap.add_argument(
        "--seed", type=int, default=0, help=f"synth seed, 0 to {INT64_MAX - 1} (default 0)"
    )
    ap.add_argument(
        "--reuse-data",
        action="store_true",
        help="keep the stores of an earlier run in --work with the same settings",
    )
    ap.add_argument(
        "--np",
        type=positive_int,
        default=1,
        metavar="N",
        help="also train at mpirun -np 1 and -np N, one thread per rank, and report "
        "the scaling efficiency (default 1: no MPI runs)",
    )
    ap.add_argument(
        "--ownership",
        choices=(
            "modulo",
            "balanced",
            "per_step",
            "per_step_slice_configs",
            "per_step_segment_units",
        ),
        help="dist.ownership of the --np runs (default: the recipe's); per_step_slice_configs = "
        "per_step with dist.slice_configs = true, per_step_segment_units = per_step with "
        "dist.segment_units = true",
    )
    ap.add_argument(
        "--mpirun",
        help="mpirun of the --np runs: a path, or a name looked up on PATH (default: mpirun on "
        "PATH; Open MPI)",
    )
    ap.add_argument("--json-out", help="also write the JSON here")
    ap.add_argument(
        "--markdown", help="also write the Markdown table here (not the --json-out file)"
    )
    try:
        opts = parse_args_once(ap, argv)
    except SystemExit as e:
        return 2 if e.code else 0
    # A relative path on the command line is the caller's: made absolute here, once, against the
    # current directory (the segrank commands run with the repository as working directory).
    for name in ("segrank", "work", "recipe", "json_out", "markdown"):
        if getattr(opts, name):
            setattr(opts, name, os.path.abspath(getattr(opts, name)))
    if opts.mpirun and os.sep in opts.mpirun:  # a path, not a name looked up on PATH
        opts.mpirun = os.path.abspath(opts.mpirun)
    if opts.quick and opts.tiny:
        print(f"{PROG}: error: --quick and --tiny exclude each other", file=sys.stderr)
        return 2
    err = work_error(opts.work) or work_folder_error(opts.work, OWNED, PROG)
    if err:
        print(f"{PROG}: error: {err}", file=sys.stderr)
        return 2
    if not (os.path.isfile(opts.segrank) and os.access(opts.segrank, os.X_OK)):
        print(f"{PROG}: error: segrank binary not found: {opts.segrank}", file=sys.stderr)
        return 2
    err = segrank_binary_error(opts.segrank)
    if err:
        print(f"{PROG}: error: {err}", file=sys.stderr)
        return 2
    # Every integer passed to segrank within segrank's range: refused here, before any work.
    for option, value, lo, hi, passed_as in (
        ("--steps", opts.steps, 1, INT64_MAX, "train.steps"),
        ("--probe-configs", opts.probe_configs, 2, MAX_SYNTH_CONFIGS, "segrank synth --configs"),
        (
            "--layout-choices",
            opts.layout_choices,
            0,
            MAX_LAYOUT_CHOICES,
            "segrank synth --layout-choices",
        ),
        ("--threads", opts.threads, 0, MAX_THREADS, "train.threads and --threads; 0 = all cores"),
        ("--seed", opts.seed, 0, INT64_MAX - 1, "segrank synth --seed, the probe's seed + 1"),
    ):
        err = value is not None and int_range_error(option, value, lo, hi, passed_as)
        if err:
            print(f"{PROG}: error: {err}", file=sys.stderr)
            return 2
    if not os.path.isfile(opts.recipe):
        print(f"{PROG}: error: --recipe: no such config file: {opts.recipe}", file=sys.stderr)
        return 2
    if opts.np == 1 and (opts.ownership or opts.mpirun):
        print(
            f"{PROG}: error: --ownership and --mpirun apply only with --np N >= 2", file=sys.stderr
        )
        return 2
    opts.mpirun_version = None
    if opts.np > 1:
        mpirun = shutil.which(opts.mpirun or "mpirun")
        if mpirun is None:
            print(
                f"{PROG}: error: --np {opts.np} needs mpirun, and "
                f"'{opts.mpirun or 'mpirun'}' was not found "
                f"(install Open MPI: openmpi-bin, see scripts/install_deps.sh; "
                f"or pass --mpirun PATH)",
                file=sys.stderr,
            )
            return 2
        try:
            v = subprocess.run(
                [mpirun, "--version"],
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
                timeout=60,
            )
        except (OSError, subprocess.TimeoutExpired) as e:
            print(f"{PROG}: error: --np {opts.np}: {mpirun} --version failed: {e}", file=sys.stderr)
            return 2
        if v.returncode != 0:
            print(
                f"{PROG}: error: --np {opts.np}: {mpirun} --version exited {v.returncode}: "
                f"{v.stdout.strip()}",
                file=sys.stderr,
            )
            return 2
        opts.mpirun = mpirun
        opts.mpirun_version = (v.stdout.strip().splitlines() or [""])[0]
    for flag, path in (("--json-out", opts.json_out), ("--markdown", opts.markdown)):
        # Refused before any work (a directory, a socket); a missing folder is created at the end.
        if path and os.path.lexists(path):
            try:
                check_output(path, OUTPUTS[flag])
            except OutputError as e:
                print(f"{PROG}: error: {flag}: {e}", file=sys.stderr)
                return 2
    if opts.json_out and opts.markdown:
        try:
            check_distinct_outputs({"--json-out": opts.json_out, "--markdown": opts.markdown})
        except OutputError as e:
            print(f"{PROG}: error: {e}", file=sys.stderr)
            return 2
    dirs, files = work_names(opts.np)
    for flag, path in (("--json-out", opts.json_out), ("--markdown", opts.markdown)):
        # Not a file the rehearsal itself writes in --work (its train.log, say).
        clash = [
            n
            for n in dirs + files
            if path and os.path.realpath(path) == os.path.realpath(os.path.join(opts.work, n))
        ]
        if clash:
            print(
                f"{PROG}: error: {flag} '{path}' is the {clash[0]} the rehearsal writes in --work "
                f"{opts.work}: choose another path",
                file=sys.stderr,
            )
            return 2
    size_name = "tiny" if opts.tiny else "quick" if opts.quick else "full"
    size = dict(SIZES[size_name])
    if opts.steps is not None:
        size["steps"] = opts.steps
    if opts.probe_configs is not None:
        size["probe_configs"] = opts.probe_configs
    if opts.layout_choices is not None:
        size["layout_choices"] = opts.layout_choices
    try:
        res = rehearse(opts, size_name, size)
    except BenchError as e:
        print(f"{PROG}: error: {e}", file=sys.stderr)
        return 1
    text = json.dumps(res, indent=1)
    print(text)
    md = markdown(res)
    print(md, file=sys.stderr)
    for flag, path, body in (
        ("--json-out", opts.json_out, text + "\n"),
        ("--markdown", opts.markdown, md),
    ):
        if path:
            os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
            try:
                write_text_atomically(path, body, OUTPUTS[flag])
            except OutputError as e:
                print(f"{PROG}: error: {e}", file=sys.stderr)
                return 1
    return 0


OWNED = SCALE_MARK  # in --work: the files and folders this script made there, and its mark


def work_names(np_ranks):
    """(folders, files): every name bench_scale.py writes directly in --work (besides its record
    OWNED); with --np N (np_ranks >= 2) those of the two MPI runs too."""
    dirs = ["npz", "h5", "run", "probe"]
    files = [
        "train.toml",
        "synth.log",
        "pack.log",
        "data.json",
        "stats.log",
        "eval_indices.json",
        "train.log",
        "valid_submission.csv",
        "predict_valid.log",
        "probe_synth.log",
        "probe_submission.csv",
        "predict_probe.log",
    ]
    if np_ranks > 1:
        for ranks in (1, np_ranks):
            dirs.append(f"run_np{ranks}")
            files += [f"train_np{ranks}.toml", f"train_np{ranks}.log"]
    return dirs, files


class Work:
    """--work: the folder may hold anything of the user's. Every file and folder bench_scale.py
    writes there is one of work_names(); each is recorded in <work>/OWNED before it is first
    written, and one that exists without that record (or that is now a symbolic link, or a file
    where the script makes a folder and vice versa) is refused: check() before any work, and again
    when it is claimed (BenchError naming the path). Names the record covers are replaced."""

    def __init__(self, path, np_ranks):
        self.path = path
        self.dirs, self.files = work_names(np_ranks)
        self.kinds = dict([(d, True) for d in self.dirs] + [(f, False) for f in self.files])
        self.begun = False  # begin() was called: the record may be written

    def owned(self):
        """The names the record lists (an empty set without a record)."""
        record = os.path.join(self.path, OWNED)
        try:
            with open(record) as f:
                names = json.load(f)
        except FileNotFoundError:
            return set()
        except NotADirectoryError:  # --work is refused by work_error before this is reached
            return set()
        except (OSError, ValueError) as e:
            raise BenchError(f"--work {self.path}: cannot read {OWNED}: {e}") from None
        if not isinstance(names, list):
            return set()
        return set(n for n in names if isinstance(n, str))

    def _refuse(self, name, owned):
        p = os.path.join(self.path, name)
        if not os.path.lexists(p):
            return
        is_dir = self.kinds[name]
        ok = (
            name in owned
            and not os.path.islink(p)
            and (os.path.isdir(p) if is_dir else os.path.isfile(p))
        )
        if not ok:
            raise BenchError(
                f"--work {self.path}: '{p}' exists and was not made by {PROG} (no record in "
                f"{os.path.join(self.path, OWNED)}); it is not replaced or deleted: choose "
                f"another --work or move it away"
            )

    def check(self):
        """Refuses (BenchError) any name of work_names() that exists and is not the script's.
        Writes nothing."""
        owned = self.owned()
        for name in self.kinds:
            self._refuse(name, owned)

    def begin(self):
        """Creates the folder and drops the record's names that no longer exist (a file the user
        puts there later under such a name is theirs again)."""
        os.makedirs(self.path, exist_ok=True)
        self.begun = True
        self.prune()

    def prune(self):
        """Drops the record's names that no longer exist, so a file or folder the user makes later
        under such a name is theirs (e.g. a folder fresh_dir emptied for a command that then
        failed or was interrupted). Does nothing before begin() (nothing is written in --work
        before every check passed); a record it cannot read or write is left as it is (the next
        run names it)."""
        if not self.begun:
            return
        try:
            owned = self.owned()
            self._save(set(n for n in owned if os.path.lexists(os.path.join(self.path, n))))
        except (OSError, BenchError):
            pass

    def _save(self, owned):
        write_text_atomically(os.path.join(self.path, OWNED), json.dumps(sorted(owned)))

    def _claim(self, name):
        if name not in self.kinds:
            raise BenchError(f"internal: '{name}' is not one of the names of --work")
        owned = self.owned()
        self._refuse(name, owned)
        if name not in owned:
            owned.add(name)
            self._save(owned)
        return os.path.join(self.path, name)

    def file(self, name):
        """The path of file `name` in --work, recorded as the script's, to be (re)written."""
        return self._claim(name)

    def fresh_dir(self, name):
        """The path of folder `name` in --work, recorded as the script's and removed when it
        exists, for a command to create."""
        d = self._claim(name)
        if os.path.isdir(d):
            shutil.rmtree(d)
        return d

    def remove_dir(self, name):
        """Removes folder `name` when the record says the script made it, and drops the name from
        the record (a folder the user makes later under that name is theirs: the next run refuses
        it, check()); else leaves both."""
        d = os.path.join(self.path, name)
        owned = self.owned()
        if os.path.isdir(d) and not os.path.islink(d) and name in owned:
            shutil.rmtree(d)
            owned.discard(name)
            self._save(owned)


def work_error(work):
    """Why --work cannot be the scratch folder (a file, or under one), or None. Writes nothing."""
    path = os.path.abspath(work)
    if os.path.lexists(path) and not os.path.isdir(path):
        return f"--work {work}: not a directory"
    probe = path
    while not os.path.lexists(probe) and os.path.dirname(probe) != probe:
        probe = os.path.dirname(probe)
    if not os.path.isdir(probe):
        return f"--work {work}: '{probe}' is not a directory"
    return None


def probe_key(opts, size):
    """What the probe graph depends on (its probe.json records it)."""
    return [
        str(size["probe_nodes"]),
        str(size["probe_configs"]),
        str(opts.seed),
        str(size["config_node_fraction"]),
        str(size["layout_choices"]),
    ]


def reused_stamp(opts, path, key):
    """The stamp at `path` when --reuse-data and it records `key`, else None (an unreadable or
    torn stamp too: the data is made again)."""
    if not (opts.reuse_data and os.path.isfile(path)):
        return None
    try:
        with open(path) as f:
            old = json.load(f)
    except (OSError, ValueError):
        return None
    return old if isinstance(old, dict) and old.get("key") == key else None


def rehearse(opts, size_name, size):
    """The whole rehearsal in --work (its result object); BenchError on a failure. However it ends
    (a failure, an interrupt), the record of --work keeps only the names that still exist
    (Work.prune)."""
    ws = Work(opts.work, opts.np)
    try:
        return rehearse_in(opts, size_name, size, ws)
    finally:
        ws.prune()


def rehearse_in(opts, size_name, size, ws):
    seg = opts.segrank
    work = opts.work
    env = dict(os.environ)
    env.setdefault("GOMP_SPINCOUNT", "20000")
    graphs = size["train"] + size["valid"]
    splits = f"{size['train'] / graphs:.6f},{size['valid'] / graphs:.6f},0"
    settings = dict(
        size,
        seed=opts.seed,
        threads=opts.threads,
        dense=opts.dense,
        recipe=os.path.relpath(os.path.abspath(opts.recipe), REPO),
    )
    if opts.np > 1:
        settings.update(np=opts.np, ownership=opts.ownership or "recipe")
    dense = ["--dense"] if opts.dense else []
    stamp = os.path.join(work, "data.json")
    npz, h5 = os.path.join(work, "npz"), os.path.join(work, "h5")
    synth_args = [
        "--collections",
        "layout",
        "--graphs",
        str(graphs),
        "--splits",
        splits,
        "--nodes",
        size["nodes"],
        "--nodes-dist",
        "log-uniform",
        "--configs",
        size["configs"],
        "--config-node-fraction",
        str(size["config_node_fraction"]),
        "--max-config-nodes",
        str(size["max_config_nodes"]),
        "--layout-choices",
        str(size["layout_choices"]),
        "--seed",
        str(opts.seed),
    ]
    data_key = {"synth": synth_args}
    # The recipe with the rehearsal's overrides is checked before any data is made
    # (`segrank train --check`), so a bad recipe fails in a second, not after synth and pack.
    # Nothing is written in --work before every check passed: every file and folder the script
    # would write there that exists without its record (Work), then the recipe.
    indices = os.path.join(work, "eval_indices.json")
    run_dir = os.path.join(work, "run")
    probe_dir = os.path.join(work, "probe")
    ws.check()
    reused = reused_stamp(opts, stamp, data_key)
    overrides = train_config_text(size, h5, run_dir, indices, opts.threads, size["steps"])
    check = subprocess.run(
        recipe_command(seg, opts.recipe, overrides) + ["--check", "--data-later"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
    )
    if check.returncode == 0 and opts.np > 1:
        check = subprocess.run(
            recipe_command(seg, opts.recipe, overrides)
            + ["--check", "--data-later"]
            + one_thread_overrides(opts.ownership),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env=env,
        )
    if check.returncode != 0:
        raise BenchError(
            f"--recipe {opts.recipe} does not fit the rehearsal: " + check.stdout.strip()
        )
    ws.begin()
    with open(ws.file("train.toml"), "w") as f:
        f.write(overrides)  # the record of what was trained
    if reused:
        log(
            f"reusing the stores in {h5} (synth {reused['synth']['seconds']:.0f} s, "
            f"pack {reused['pack']['seconds']:.0f} s when made)"
        )
        synth_res, pack_res = reused["synth"], reused["pack"]
    else:
        for d in ("npz", "h5"):
            ws.fresh_dir(d)
        secs, rss, _ = run(
            [seg, "synth", "--out", npz, "--stored", "-q"] + synth_args,
            ws.file("synth.log"),
            env,
        )
        synth_res = {"seconds": secs, "peak_rss_mb": rss}
        secs, rss, _ = run(
            [seg, "pack", os.path.join(npz, "npz"), "--out", h5],
            ws.file("pack.log"),
            env,
        )
        pack_res = {
            "seconds": secs,
            "peak_rss_mb": rss,
            "store_mb": dir_bytes(h5, ".h5") / MIB,
            "npz_mb": dir_bytes(npz, ".npz") / MIB,
        }
        with open(ws.file("data.json"), "w") as f:
            json.dump({"key": data_key, "synth": synth_res, "pack": pack_res}, f)
    ws.remove_dir("npz")  # the stores are what is trained and ranked on

    stats = stats_of(seg, h5, env, ws.file("stats.log"))
    gl = graphs_of(stats)
    train_g = [g for g in gl if g[0] == "train"]
    valid_g = [g for g in gl if g[0] == "valid"]
    if len(train_g) != size["train"] or len(valid_g) != size["valid"]:
        raise BenchError(
            f"expected {size['train']} train and {size['valid']} valid graphs in "
            f"{h5}, found {len(train_g)} and {len(valid_g)}"
        )
    data = {
        "train_graphs": len(train_g),
        "valid_graphs": len(valid_g),
        "nodes_min": min(g[2] for g in gl),
        "nodes_max": max(g[2] for g in gl),
        "nodes_mean": sum(g[2] for g in gl) / len(gl),
        "configs": sum(g[3] for g in gl),
        "configs_max": max(g[3] for g in gl),
        "valid_configs": sum(g[3] for g in valid_g),
    }

    # Training: the final evaluation scores a fixed subset of each valid graph's configs.
    with open(ws.file("eval_indices.json"), "w") as f:
        json.dump({g[1]: list(range(min(g[3], size["eval_configs"]))) for g in valid_g}, f)
    ws.fresh_dir("run")
    secs, rss, _ = run(recipe_command(seg, opts.recipe, overrides), ws.file("train.log"), env)
    train_res = train_numbers(run_dir, len(train_g), 8)
    train_res.update({"seconds": secs, "cpu_seconds": LAST_CPU[0], "process_peak_rss_mb": rss})
    mpi_res = None
    if opts.np > 1:
        mpi_res = mpi_scaling(opts, seg, ws, size, h5, indices, len(train_g), env)

    # Ranking every valid config.
    secs, rss, text = run(
        [
            seg,
            "predict",
            "--checkpoint",
            run_dir,
            "--split",
            "valid",
            "--out",
            ws.file("valid_submission.csv"),
            "--timing",
            "--threads",
            str(opts.threads),
        ]
        + dense,
        ws.file("predict_valid.log"),
        env,
    )
    rank_res = {
        "configs": data["valid_configs"],
        "seconds": secs,
        "cpu_seconds": LAST_CPU[0],
        "configs_per_s": data["valid_configs"] / secs,
        "peak_rss_mb": rss,
        "graphs": predict_timing(text),
    }

    # The largest graph with probe_configs configs.
    pkey = probe_key(opts, size)
    pstamp = os.path.join(probe_dir, "probe.json")
    pold = reused_stamp(opts, pstamp, pkey)
    if not pold:
        ws.fresh_dir("probe")
        psecs, prss, _ = run(
            [
                seg,
                "synth",
                "--out",
                probe_dir,
                "--collections",
                "layout",
                "--graphs",
                "1",
                "--splits",
                "0,0,1",
                "--format",
                "hdf5",
                "--nodes",
                f"{size['probe_nodes']}:{size['probe_nodes']}",
                "--configs",
                str(size["probe_configs"]),
                "--config-node-fraction",
                str(size["config_node_fraction"]),
                "--max-config-nodes",
                str(size["max_config_nodes"]),
                "--layout-choices",
                str(size["layout_choices"]),
                "--seed",
                str(opts.seed + 1),
                "-q",
            ],
            ws.file("probe_synth.log"),
            env,
        )
        pold = {"key": pkey, "synth_seconds": psecs, "synth_peak_rss_mb": prss}
        with open(pstamp, "w") as f:
            json.dump(pold, f)
    secs, rss, text = run(
        [
            seg,
            "predict",
            "--checkpoint",
            run_dir,
            "--data",
            os.path.join(probe_dir, "h5"),
            "--split",
            "test",
            "--out",
            ws.file("probe_submission.csv"),
            "--timing",
            "--threads",
            str(opts.threads),
        ]
        + dense,
        ws.file("predict_probe.log"),
        env,
    )
    pt = predict_timing(text)
    if len(pt) != 1:
        raise BenchError(f"expected one probe graph in {probe_dir}, predict timed {len(pt)}")
    probe = {
        "nodes": pt[0]["nodes"],
        "configs": pt[0]["configs"],
        "seconds": secs,
        "cpu_seconds": LAST_CPU[0],
        "configs_per_cpu_s": pt[0]["configs"] / LAST_CPU[0],
        "configs_per_s": pt[0]["configs"] / secs,
        "peak_rss_mb": rss,
        "synth_seconds": pold["synth_seconds"],
        "extrapolated": pt[0]["configs"] < 100000,
        "seconds_1e5": secs * 100000.0 / pt[0]["configs"],
    }

    peak = max(
        train_res["peak_rss_mb"],
        train_res["process_peak_rss_mb"],
        rank_res["peak_rss_mb"],
        probe["peak_rss_mb"],
    )
    res = {
        "benchmark": "bench_scale",
        "schema_version": SCHEMA_VERSION,
        "size": size_name,
        "settings": settings,
        "command": " ".join(shlex.quote(a) for a in [PROG] + sys.argv[1:]),
        "host": {"cpus": os.cpu_count(), "load_avg_start": os.getloadavg()[0]},
        "data": data,
        "synth": synth_res,
        "pack": pack_res,
        "train": train_res,
        "rank": rank_res,
        "probe": probe,
        "targets": {
            "peak_rss_mb": target(peak, TARGETS["peak_rss_mb"]),
            "probe_1e5_seconds": target(probe["seconds_1e5"], TARGETS["probe_1e5_seconds"]),
            "epoch_seconds": target(train_res["epoch_seconds"], TARGETS["epoch_seconds"]),
        },
    }
    if mpi_res is not None:
        res["mpi"] = mpi_res
    return res


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except KeyboardInterrupt:  # the child is stopped already (run); one line, exit 130
        sys.stderr.write(f"{PROG}: interrupted\n")
        sys.exit(130)
