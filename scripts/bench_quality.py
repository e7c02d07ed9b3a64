#!/usr/bin/env python3
"""Learning-quality benchmark: how well the segrank GNN ranks configurations,
with random, the hwmodel baseline and the reachable ceiling side by side, over several seeds.

Prints ONE JSON object on stdout (the schema is in docs/benchmarks.md) and a Markdown table on
stderr (and in --markdown FILE). Progress goes to stderr. Python 3 standard library only; every
number comes from the segrank binary (train, evaluate, predict, hwmodel, leaderboard), except the
Kendall tau of tile baselines (a tile submission lists only 5 configs), which is computed here from
`--scores` files and cross-checked against `segrank evaluate` on a model (see docs/benchmarks.md).

Cases (default: all but the transfer cases; --cases a,b,...). Model runs vary
train.seed = sampling.seed = 0..N-1 (--seeds, default 3); the data is fixed. Steps and sizes
below are "full / --quick".
  synth_layout          segrank synth --collections layout: 64 / 32 graphs of 500-5000 / 500-2500
                        nodes, 200 configs, --noise 0.03, seed 0, splits 40/8/16 (/ 20/4/8) graphs;
                        configs/quickstart.toml, 600 / 150 steps; best checkpoint (on valid) scored
                        on test. Ceiling: the noise-free labels (synth --noise 0, same seed: same
                        graphs and configs, the noise has its own RNG stream) as a submission.
                        Trip-blind ceiling beside it: the same with every while loop charged the
                        generator's mean trip count (synth --cost-off trip_counts
                        --default-trip-count 5.8333), since no node feature carries trip counts.
  synth_tile            segrank synth --collections tile: 256 / 128 kernels of 20-500 nodes, 200
                        configs, --noise 0.03, splits 160/32/64 (/ 80/16/32); configs/
                        xla_fixture_tile.toml with the valid split, 600 / 200 steps; ceiling as
                        above.
  real_tile             configs/xla_fixture_tile.toml (15 TPU tile kernels), all 5 folds over
                        kernels, 300 / 100 steps; every held-out kernel scored by `segrank evaluate
                        --heldout` on its fold's best checkpoint; hwmodel on the same 15 kernels.
                        Regression row: the same folds and seeds trained with an mse term beside
                        listmle; the MAPE and median APE `segrank evaluate` reports for the held-out
                        kernels, beside hwmodel's on the same configs (absolute and anchored on the
                        measured log mean and spread, docs/metrics.md#runtime-regression);
                        --no-regression skips it.
  real_layout_fixture   configs/xla_fixture_layout.toml (U-Net, 112 configs), 5-fold config holdout:
                        groups of identical config rows split into 5 fixed folds (Python, seed 0),
                        each fold written as a train / valid npz pair; 300 / 100 steps; hwmodel and
                        random on the same held-out configs.
  real_layout_official  train unet3d.npz (layout:xla:default), score unet_3d.4x4.bf16 (valid) on the
                        1000 indices of eval_indices/xla_default.json;
                        configs/xla_fixture_layout.toml with graph holdout, 600 / 150 steps; the
                        best checkpoint is chosen on 699
                        of the graph's 965 unlisted configs (none equal to a scored row), never on
                        the scored ones.
  real_layout_official_random
                        the same for layout:xla:random: train openai_v0_rnn_optimized.npz, score
                        unet_3d.4x4.bf16 on xla_random.json (1000 indices, 481 distinct); checkpoint
                        chosen on 1922 default-search configs of unet_3d.4x4.bf16.
  transfer_layout       (only when listed in --cases) leave one cost family out
  transfer_tile         (docs/benchmarks.md#transfer): per family (`segrank synth --cost F`,
                        seed 100 + i) 40 / 20 layout graphs of 500-2500 / 300-1500 nodes (tile:
                        160 / 80 kernels), 200 / 100 configs, splits 0.6/0.15/0.25; for each
                        held-out family F, train on tpu_v3 and the other families (their train
                        splits; best checkpoint on their valid splits), score F's test graphs;
                        model / hwmodel / random / ceiling per family; headline = mean over
                        families of model Kendall / ceiling Kendall (sd over seeds).
Random: --random-seeds (default 5) seeds of `segrank predict --random`. Runs execute --jobs at a
time (default: nproc), each with nproc / jobs OpenMP threads (train.threads); GOMP_SPINCOUNT=20000
unless set.

Examples:
  scripts/bench_quality.py --json-out runs/bench_quality/result.json \\
      --markdown runs/bench_quality/table.md
  scripts/bench_quality.py --quick --cases synth_tile,real_tile
  scripts/bench_quality.py --cases synth_layout \\
      --ablate hinge:loss.terms='[{name="listmle",weight=1.0}]'
"""

import argparse
import ast
import concurrent.futures
import datetime
import hashlib
import json
import math
import os
import random
import resource
import shlex
import shutil
import statistics
import struct
import subprocess
import sys
import threading
import time
import zipfile
from array import array

from atomic_output import OutputError, check_output, write_text_atomically

PROG = "bench_quality.py"
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCHEMA_VERSION = 1

DEFAULT_CASES = [
    "synth_layout",
    "synth_tile",
    "real_tile",
    "real_layout_fixture",
    "real_layout_official",
    "real_layout_official_random",
]
# Run only when listed in --cases (they train one model per held-out cost family and seed).
TRANSFER_CASES = ["transfer_layout", "transfer_tile"]
CASES = DEFAULT_CASES + TRANSFER_CASES

# Sizes and steps per case: full / quick. Changing any of these changes what the numbers mean: the
# JSON records them ("settings") so that a before/after diff can tell.
SIZES = {
    "full": {
        "synth_layout": {
            "graphs": 64,
            "nodes": "500:5000",
            "configs": 200,
            "splits": "0.625,0.125,0.25",
            "steps": 600,
            "eval_every": 100,
        },
        "synth_tile": {
            "graphs": 256,
            "nodes": "20:500",
            "configs": 200,
            "splits": "0.625,0.125,0.25",
            "steps": 600,
            "eval_every": 100,
        },
        "real_tile": {"steps": 300, "eval_every": 50},
        "real_layout_fixture": {"steps": 300, "eval_every": 50, "folds": 5},
        "real_layout_official": {"steps": 600, "eval_every": 100},
        "real_layout_official_random": {"steps": 600, "eval_every": 100},
        # graphs per cost family; its test split is scored when the family is held out
        "transfer_layout": {
            "graphs": 40,
            "nodes": "500:2500",
            "configs": 200,
            "splits": "0.6,0.15,0.25",
            "steps": 600,
            "eval_every": 100,
        },
        "transfer_tile": {
            "graphs": 160,
            "nodes": "20:500",
            "configs": 200,
            "splits": "0.6,0.15,0.25",
            "steps": 600,
            "eval_every": 100,
        },
    },
    "quick": {
        "synth_layout": {
            "graphs": 32,
            "nodes": "500:2500",
            "configs": 200,
            "splits": "0.625,0.125,0.25",
            "steps": 150,
            "eval_every": 50,
        },
        "synth_tile": {
            "graphs": 128,
            "nodes": "20:500",
            "configs": 200,
            "splits": "0.625,0.125,0.25",
            "steps": 200,
            "eval_every": 50,
        },
        "real_tile": {"steps": 100, "eval_every": 25},
        "real_layout_fixture": {"steps": 100, "eval_every": 25, "folds": 5},
        "real_layout_official": {"steps": 150, "eval_every": 50},
        "real_layout_official_random": {"steps": 150, "eval_every": 50},
        "transfer_layout": {
            "graphs": 20,
            "nodes": "300:1500",
            "configs": 100,
            "splits": "0.6,0.15,0.25",
            "steps": 150,
            "eval_every": 50,
        },
        "transfer_tile": {
            "graphs": 80,
            "nodes": "20:300",
            "configs": 100,
            "splits": "0.6,0.15,0.25",
            "steps": 200,
            "eval_every": 50,
        },
    },
    # Smoke tests only (tests/cli/bench_quality_test.cpp): seconds, the numbers mean nothing.
    "tiny": {
        "synth_layout": {
            "graphs": 8,
            "nodes": "100:300",
            "configs": 16,
            "splits": "0.5,0.25,0.25",
            "steps": 10,
            "eval_every": 5,
        },
        "synth_tile": {
            "graphs": 16,
            "nodes": "20:60",
            "configs": 16,
            "splits": "0.5,0.25,0.25",
            "steps": 10,
            "eval_every": 5,
        },
        "real_tile": {"steps": 5, "eval_every": 5},
        "real_layout_fixture": {"steps": 5, "eval_every": 5, "folds": 5},
        "real_layout_official": {"steps": 5, "eval_every": 5},
        "real_layout_official_random": {"steps": 5, "eval_every": 5},
        "transfer_layout": {
            "graphs": 4,
            "nodes": "60:120",
            "configs": 8,
            "splits": "0.5,0.25,0.25",
            "steps": 4,
            "eval_every": 2,
        },
        "transfer_tile": {
            "graphs": 4,
            "nodes": "20:40",
            "configs": 8,
            "splits": "0.5,0.25,0.25",
            "steps": 4,
            "eval_every": 2,
        },
    },
}
SYNTH_NOISE = 0.03
SYNTH_SEED = 0
# The trip counts a synthetic while loop draws from, uniformly (while_block in
# hwmodel/synth/families_layout.cpp). The 140 node features carry no literals, so no model can see a
# loop's count: the trip-blind ceiling charges every loop their mean (docs/benchmarks.md).
SYNTH_WHILE_TRIPS = (2, 3, 4, 6, 8, 12)
SYNTH_MEAN_TRIPS = sum(SYNTH_WHILE_TRIPS) / len(SYNTH_WHILE_TRIPS)
FOLD_SEED = 0  # real_layout_fixture: the fold partition of the config groups (fixed: data fixed)
# The real_tile regression row's loss (docs/metrics.md#runtime-regression): listmle for the ranking
# plus an mse term of equal weight, which makes the scores standardized log runtimes.
REGRESSION_SETS = ['loss.terms=[{name="listmle",weight=1.0},{name="mse",weight=1.0}]']
METRICS = ["kendall", "kendall_all", "opa", "slowdown_1", "slowdown_5", "slowdown_10", "score"]


class BenchError(Exception):
    """A failure to report: message names the case / seed / command."""


def log(msg):
    sys.stderr.write(f"[{time.strftime('%H:%M:%S')}] {msg}\n")
    sys.stderr.flush()


# ------------------------------------------------------------------------------------------------
# npy / npz (read and write the subset of the format TpuGraphs files use)

NPY_MAGIC = b"\x93NUMPY"


def parse_npy(blob, where):
    if blob[:6] != NPY_MAGIC:
        raise BenchError(f"{where}: not an npy member")
    major = blob[6]
    if major == 1:
        hlen = struct.unpack("<H", blob[8:10])[0]
        start = 10
    else:
        hlen = struct.unpack("<I", blob[8:12])[0]
        start = 12
    header = ast.literal_eval(blob[start : start + hlen].decode("latin1"))
    data = blob[start + hlen :]
    return header["descr"], bool(header["fortran_order"]), tuple(header["shape"]), data


def npy_bytes(descr, fortran, shape, data):
    shape_txt = "(" + "".join(f"{d}, " for d in shape).rstrip(" ")
    if len(shape) != 1:
        shape_txt = shape_txt.rstrip(",")
    shape_txt += ")"
    header = "{'descr': '%s', 'fortran_order': %s, 'shape': %s, }" % (descr, fortran, shape_txt)
    pad = 64 - (10 + len(header) + 1) % 64
    header = header + " " * (pad % 64) + "\n"
    return NPY_MAGIC + b"\x01\x00" + struct.pack("<H", len(header)) + header.encode("latin1") + data


def read_npz(path):
    """name (without .npy) -> (descr, fortran, shape, raw bytes)."""
    out = {}
    try:
        with zipfile.ZipFile(path) as z:
            for name in z.namelist():
                key = name[:-4] if name.endswith(".npy") else name
                out[key] = parse_npy(z.read(name), f"{path}:{name}")
    except (OSError, zipfile.BadZipFile) as e:
        raise BenchError(f"cannot read npz '{path}': {e}")
    return out


def write_npz(path, members):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = path + ".tmp"
    with zipfile.ZipFile(tmp, "w", compression=zipfile.ZIP_DEFLATED) as z:
        for key, (descr, fortran, shape, data) in members.items():
            z.writestr(key + ".npy", npy_bytes(descr, fortran, shape, data))
    os.replace(tmp, path)


def int64_values(member, where):
    descr, fortran, shape, data = member
    if descr not in ("<i8", "<u8"):
        raise BenchError(f"{where}: expected int64, got {descr}")
    a = array("q")
    a.frombytes(data[: 8 * math.prod(shape)])
    return list(a)


def npz_rows(member):
    """The rows (axis 0) of a C-order array as bytes objects."""
    descr, fortran, shape, data = member
    row_bytes = (len(data) // shape[0]) if shape[0] else 0
    return [data[r * row_bytes : (r + 1) * row_bytes] for r in range(shape[0])]


def take_rows(member, rows, where):
    """Rows (axis 0, repeats allowed) of a C-order array."""
    descr, fortran, shape, data = member
    if fortran and len(shape) > 1:
        raise BenchError(f"{where}: Fortran-order array cannot be sliced by rows")
    row_bytes = (len(data) // shape[0]) if shape[0] else 0
    out = b"".join(data[r * row_bytes : (r + 1) * row_bytes] for r in rows)
    return (descr, False, (len(rows),) + tuple(shape[1:]), out)


def npz_targets(path):
    """Ranking targets of one graph, as segrank computes them
    (tile: runtime / max(1, normalizer))."""
    m = read_npz(path)
    runtime = int64_values(m["config_runtime"], path)
    if "config_runtime_normalizers" in m:
        norm = int64_values(m["config_runtime_normalizers"], path)
        return [float(r) / float(max(1, n)) for r, n in zip(runtime, norm)]
    return [float(r) for r in runtime]


def npz_runtimes(path):
    return int64_values(read_npz(path)["config_runtime"], path)


def list_graphs(split_dir):
    if not os.path.isdir(split_dir):
        raise BenchError(f"no graphs in '{split_dir}'")
    return sorted(f[:-4] for f in os.listdir(split_dir) if f.endswith(".npz"))


# ------------------------------------------------------------------------------------------------
# metrics (only where segrank cannot give them: Kendall of tile baselines; cross-checked)


def predicted_order(scores):
    """Ascending score, ties by lower config index (data/submission.h top_configs)."""
    return sorted(range(len(scores)), key=lambda i: (scores[i], i))


def tau_b_of_order(order, targets):
    """Kendall tau-b (scipy variant b) between predicted positions (no ties) and targets."""
    n = len(order)
    if n < 2:
        return float("nan")
    t = [targets[i] for i in order]
    conc = disc = tied = 0
    for i in range(n):
        ti = t[i]
        for j in range(i + 1, n):
            tj = t[j]
            if tj > ti:
                conc += 1
            elif tj < ti:
                disc += 1
            else:
                tied += 1
    total = n * (n - 1) // 2
    denom = math.sqrt(float(total) * float(total - tied))
    if denom == 0:
        return float("nan")
    return max(-1.0, min(1.0, (conc - disc) / denom))


def slowdown_of_order(order, targets, k):
    best = min(targets)
    top = min(targets[i] for i in order[: min(k, len(order))])
    return (top - best) / best


def ape_stats(predicted, measured):
    """(MAPE, median APE) as fractions, as segrank's runtime_errors."""
    ape = sorted(abs(p - t) / t for p, t in zip(predicted, measured))
    if not ape:
        return float("nan"), float("nan")
    mid = len(ape) // 2
    return statistics.fmean(ape), (ape[mid] if len(ape) % 2 else 0.5 * (ape[mid - 1] + ape[mid]))


def anchored(predicted, measured):
    """predicted moved onto the measured log mean and std (docs/metrics.md#runtime-regression)."""

    def stats(v):
        logs = [math.log(x) for x in v]
        m = statistics.fmean(logs)
        return m, math.sqrt(statistics.fmean([(x - m) ** 2 for x in logs]))

    pm_, ps = stats(predicted)
    mm, ms = stats(measured)
    return [math.exp(mm + ms * ((math.log(p) - pm_) / ps if ps > 0 else 0.0)) for p in predicted]


def graph_metrics(order, targets):
    return {
        "num_configs": len(targets),
        "targets_constant": all(x == targets[0] for x in targets),
        "kendall": tau_b_of_order(order, targets),
        "slowdown_1": slowdown_of_order(order, targets, 1),
        "slowdown_5": slowdown_of_order(order, targets, 5),
        "slowdown_10": slowdown_of_order(order, targets, 10),
    }


def tau_b_raw(x, y):
    """Kendall tau-b of raw values with ties in both (scipy.stats.kendalltau); NaN if either is
    constant."""
    n = len(x)
    conc = disc = tx = ty = txy = 0
    for i in range(n):
        for j in range(i + 1, n):
            dx, dy = x[i] - x[j], y[i] - y[j]
            if dx == 0 and dy == 0:
                txy += 1
            elif dx == 0:
                tx += 1
            elif dy == 0:
                ty += 1
            elif (dx > 0) == (dy > 0):
                conc += 1
            else:
                disc += 1
    n0 = n * (n - 1) // 2
    denom = math.sqrt(float(n0 - tx - txy) * float(n0 - ty - txy))
    return (conc - disc) / denom if denom else float("nan")


def aggregate(graphs, task, kendall_mask=None):
    """segrank's aggregate_collection: tau mean over informative graphs (and, if given, where
    kendall_mask is true: `kendall`; every informative graph: `kendall_all`), slowdowns over all."""
    if not graphs:
        raise BenchError("internal: no graphs to aggregate")
    mask = kendall_mask if kendall_mask is not None else [True] * len(graphs)
    informative = [not g["targets_constant"] and g["num_configs"] >= 2 for g in graphs]

    def tau_mean(sel):
        vals = [g["kendall"] for g, ok in zip(graphs, sel) if ok]
        return (sum(v for v in vals if not math.isnan(v)) / len(vals)) if vals else float(
            "nan"
        ), len(vals)

    out = {}
    out["kendall"], out["kendall_graphs"] = tau_mean([a and b for a, b in zip(informative, mask)])
    if kendall_mask is not None:
        out["kendall_all"], _ = tau_mean(informative)
    out.update(
        {
            "slowdown_1": sum(g["slowdown_1"] for g in graphs) / len(graphs),
            "slowdown_5": sum(g["slowdown_5"] for g in graphs) / len(graphs),
            "slowdown_10": sum(g["slowdown_10"] for g in graphs) / len(graphs),
            "graphs": len(graphs),
        }
    )
    out["score"] = 1.0 - out["slowdown_5"] if task == "tile" else out["kendall"]
    return out


def mean_std(values):
    vals = [v for v in values if v is not None and not (isinstance(v, float) and math.isnan(v))]
    if not vals:
        return {"mean": None, "std": None, "n": 0}
    return {
        "mean": statistics.fmean(vals),
        "std": statistics.stdev(vals) if len(vals) > 1 else None,
        "n": len(vals),
    }


def summarize(per_seed):
    """per_seed: list of metric dicts -> {metric: {mean, std, n, per_seed}}."""
    out = {}
    for key in METRICS:
        vals = [r.get(key) for r in per_seed]
        if all(v is None for v in vals):
            continue
        s = mean_std(vals)
        s["per_seed"] = vals
        out[key] = s
    return out


# ------------------------------------------------------------------------------------------------
# running segrank


class Runner:
    def __init__(self, segrank, work, threads, env, resume=False):
        self.resume = resume
        self.segrank_sha = sha256(segrank)
        self.segrank = segrank
        self.work = work
        self.threads = threads
        self.env = env
        self.lock = threading.Lock()
        self.log_path = os.path.join(work, "commands.log")
        self.cancelled = threading.Event()

    def stamp_of(self, args):
        """Binary, arguments and the content of config files among them."""
        text = self.segrank_sha + "\0" + shlex.join(str(a) for a in args)
        for a in args:
            path = os.path.join(REPO, str(a)) if not os.path.isabs(str(a)) else str(a)
            if str(a).endswith(".toml") and os.path.isfile(path):
                text += "\0" + sha256(path)
        return hashlib.sha256(text.encode()).hexdigest()

    def run_stamped(self, args, ctx, stamp_file, outputs, log_name=None):
        """run(), but with --resume a command whose stamp file records the same binary and arguments
        (and whose outputs exist) is not run again: segrank runs are deterministic."""
        stamp = self.stamp_of(args)
        if self.resume and all(os.path.exists(o) for o in outputs):
            try:
                with open(stamp_file) as f:
                    rec = json.load(f)
                if rec.get("stamp") == stamp:
                    return rec.get("wall_s"), True
            except (OSError, ValueError):
                pass
        if os.path.exists(stamp_file):
            os.remove(stamp_file)
        _, wall = self.run(args, ctx, log_name=log_name)
        with open(stamp_file, "w") as f:
            json.dump(
                {
                    "stamp": stamp,
                    "wall_s": round(wall, 2),
                    "command": shlex.join(str(a) for a in args),
                },
                f,
            )
        return wall, False

    def run(self, args, ctx, log_name=None, cwd=REPO):
        if self.cancelled.is_set():
            raise BenchError(f"{ctx}: cancelled after an earlier failure")
        cmd = [self.segrank] + [str(a) for a in args]
        text = shlex.join(cmd)
        with self.lock:
            with open(self.log_path, "a") as f:
                f.write(f"{time.strftime('%H:%M:%S')} [{ctx}] {text}\n")
        t0 = time.monotonic()
        try:
            p = subprocess.run(
                cmd,
                cwd=cwd,
                env=self.env,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                errors="replace",
            )
        except OSError as e:
            raise BenchError(f"{ctx}: cannot run {text}: {e}")
        wall = time.monotonic() - t0
        if log_name:
            with open(os.path.join(self.work, "logs", log_name), "w") as f:
                f.write(
                    f"$ {text}\n# exit {p.returncode}, {wall:.1f} s\n--- stdout\n{p.stdout}"
                    f"--- stderr\n{p.stderr}"
                )
        if p.returncode != 0:
            tail = "\n".join((p.stderr.strip() or p.stdout.strip()).splitlines()[-15:])
            raise BenchError(
                f"{ctx}: segrank failed (exit {p.returncode}) after {wall:.1f} s\n"
                f"  command: {text}\n  stderr (last lines):\n    " + tail.replace("\n", "\n    ")
            )
        return p, wall

    # --- wrappers
    def synth(self, out, collection, size, noise, ctx, layout_choices=0, extra=()):
        extra = (["--layout-choices", layout_choices] if layout_choices else []) + list(extra)
        self.run(
            [
                "synth",
                "--out",
                out,
                "--collections",
                collection,
                "--graphs",
                size["graphs"],
                "--nodes",
                size["nodes"],
                "--configs",
                size["configs"],
                "--seed",
                SYNTH_SEED,
                "--noise",
                noise,
                "--splits",
                size["splits"],
                "--force",
                "-q",
            ]
            + extra,
            ctx,
        )

    def leaderboard(self, coll_dir, split, submission, ctx):
        """Leaderboard metrics of one submission against the graphs of coll_dir/split."""
        truth = os.path.join(coll_dir, split)
        p, _ = self.run(
            [
                "leaderboard",
                "--truth",
                truth,
                "--split",
                split,
                "--missing",
                "error",
                "--json",
                submission,
            ],
            ctx,
        )
        try:
            doc = json.loads(p.stdout)
            entry = doc["entries"][0]
        except (ValueError, KeyError, IndexError) as e:
            raise BenchError(
                f"{ctx}: cannot parse `segrank leaderboard --json` output ({e}): {p.stdout[:300]}"
            )
        if not entry.get("valid", False):
            issues = "; ".join(i.get("message", "") for i in entry.get("issues", [])[:5])
            raise BenchError(f"{ctx}: leaderboard rejected {submission}: {issues}")
        if len(entry["collections"]) != 1:
            raise BenchError(
                f"{ctx}: expected one collection in the truth '{truth}', got "
                f"{[c['collection'] for c in entry['collections']]}"
            )
        return collection_metrics(entry["collections"][0])

    def evaluate(self, ckpt, where, json_out, ctx, data=None):
        args = ["evaluate", "--checkpoint", ckpt, "--json", json_out, "--threads", self.threads]
        args += ["--heldout"] if where == "heldout" else ["--split", where]
        if data is not None:
            args += ["--data", data]
        self.run_stamped(args, ctx, json_out + ".stamp", [json_out])
        with open(json_out) as f:
            doc = json.load(f)
        colls = doc["metrics"]["collections"]
        if len(colls) != 1:
            raise BenchError(f"{ctx}: expected one collection in {json_out}")
        return doc["graphs"], collection_metrics(colls[0])


def collection_metrics(c):
    def num(v):
        return float("nan") if v is None else float(v)

    return {
        "kendall": num(c.get("kendall_tau")),
        "opa": num(c.get("opa")),
        "slowdown_1": num(c.get("slowdown_1")),
        "slowdown_5": num(c.get("slowdown_5")),
        "slowdown_10": num(c.get("slowdown_10")),
        "score": num(c.get("score")),
        "graphs": c.get("num_graphs"),
    }


def read_scores(path):
    """ID,config,score CSV -> {id: [scores by config index]}."""
    out = {}
    with open(path) as f:
        header = f.readline()
        if not header.startswith("ID,config,score"):
            raise BenchError(f"{path}: unexpected header {header!r}")
        for line in f:
            gid, cfg, score = line.rstrip("\n").split(",")
            lst = out.setdefault(gid, [])
            if int(cfg) != len(lst):
                raise BenchError(f"{path}: configs of {gid} not in order 0, 1, ...")
            lst.append(float(score))
    return out


def write_submission(path, rows):
    with open(path, "w") as f:
        f.write("ID,TopConfigs\n")
        for gid, order in rows:
            f.write(f"{gid},{';'.join(str(i) for i in order)}\n")


# ------------------------------------------------------------------------------------------------
# the benchmark


class Bench:
    def __init__(self, opts, runner, shared):
        self.o = opts
        self.r = runner
        self.shared = shared
        self.mode = opts.mode
        self.seeds = list(range(opts.seeds))
        self.random_seeds = list(range(opts.random_seeds))
        self.pool = concurrent.futures.ThreadPoolExecutor(max_workers=opts.jobs)
        self.crosschecks = []

    # --- helpers
    def case_dir(self, case, *parts):
        d = os.path.join(self.o.work, case, *parts)
        os.makedirs(d, exist_ok=True)
        return d

    def parallel(self, tasks):
        """Runs callables on the job pool; the first failure cancels the rest and is raised."""
        futures = [self.pool.submit(t) for t in tasks]
        try:
            return [f.result() for f in futures]
        except BaseException:
            self.r.cancelled.set()
            for f in futures:
                f.cancel()
            concurrent.futures.wait(futures)
            raise

    def variants(self):
        """The model row plus one row per --ablate: (name, extra overrides)."""
        out = [("model", list(self.o.set))]
        for name, kv in self.o.ablate:
            out.append((name, list(self.o.set) + kv))
        return out

    def train(self, case, variant, seed, config, overrides, run_dir, ctx):
        args = ["train", "--config", config, "--overwrite"]
        sets = overrides + [
            f"train.run_dir={run_dir}",
            f"train.seed={seed}",
            f"sampling.seed={seed}",
            "train.progress=false",
            f"train.threads={self.o.threads}",
        ]
        for kv in sets:
            args += ["--set", kv]
        os.makedirs(os.path.dirname(run_dir), exist_ok=True)
        wall, reused = self.r.run_stamped(
            args,
            ctx,
            run_dir + ".stamp",
            [os.path.join(run_dir, f) for f in ("report.json", "best.ckpt.h5", "last.ckpt.h5")],
            log_name=f"{case}.{variant}.{os.path.basename(run_dir)}.train.log",
        )
        try:
            with open(os.path.join(run_dir, "report.json")) as f:
                rep = json.load(f)
            final = collection_metrics(rep["final"]["collections"][0])
        except (OSError, ValueError, KeyError, IndexError) as e:
            raise BenchError(f"{ctx}: cannot read {run_dir}/report.json: {e}")
        return {
            "wall_s": wall,
            "reused": reused,
            "steps": rep.get("steps"),
            "steps_per_s": rep.get("steps_per_s"),
            "best_step": rep.get("best_step"),
            "peak_rss_mb": rep.get("peak_rss_mb"),
        }, final

    def evaluate_best(self, info, final, run_dir, where, ctx):
        """Metrics of best.ckpt.h5 on `where`; when the best step is the last, the final evaluation
        of training on the same set is that (report.json), so no second pass is run."""
        if where in ("valid", "heldout") and info["best_step"] == info["steps"]:
            return final
        return self.r.evaluate(
            os.path.join(run_dir, "best.ckpt.h5"),
            where,
            os.path.join(run_dir, f"eval_{where}_best.json"),
            ctx + " evaluate best",
        )[1]

    def random_baseline(self, data_root, split, truth, ctx, scores=False):
        """Leaderboard metrics of `predict --random S` for every random seed (+ scores files)."""
        out = []
        for s in self.random_seeds:
            sub = os.path.join(self.cur_dir, f"random{s}.csv")
            args = ["predict", "--random", s, "--data", data_root, "--split", split, "--out", sub]
            if scores:
                args += ["--scores", os.path.join(self.cur_dir, f"random{s}.scores.csv")]
            self.r.run(args, f"{ctx} random seed {s}")
            out.append(self.r.leaderboard(truth, split, sub, f"{ctx} random seed {s}"))
        return out

    def hwmodel(self, data_root, split, truth, ctx, scores=False):
        sub = os.path.join(self.cur_dir, "hwmodel.csv")
        args = ["hwmodel", "--data", data_root, "--split", split, "--out", sub]
        if scores:
            args += ["--scores", os.path.join(self.cur_dir, "hwmodel.scores.csv")]
        self.r.run(args, f"{ctx} hwmodel")
        return sub, self.r.leaderboard(truth, split, sub, f"{ctx} hwmodel")

    def baseline_summary(self, random_runs):
        return summarize(random_runs)

    def finish_case(self, case, res, model_key="kendall"):
        m = res["model"]
        ceiling = res.get("ceiling")
        for row in [m] + list(res.get("ablations", {}).values()):
            row["mean"] = row["metrics"][model_key]["mean"]
            row["std"] = row["metrics"][model_key]["std"]
            row["per_seed"] = row["metrics"][model_key]["per_seed"]
        res["metric"] = model_key
        rnd = res["random"]
        res["random"] = {
            "mean": rnd[model_key]["mean"],
            "std": rnd[model_key]["std"],
            "metrics": rnd,
        }
        hw = res.get("hwmodel")
        if hw is not None:
            hw["value"] = hw["metrics"].get(model_key)
        if ceiling is not None:
            ceiling["value"] = ceiling["metrics"].get(model_key)
            cv = ceiling["value"]
            res["fraction_of_ceiling"] = (
                (m["mean"] / cv) if (cv and m["mean"] is not None) else None
            )
            res["gap_to_ceiling"] = {
                k: ceiling["metrics"][k] - m["metrics"][k]["mean"]
                for k in ("kendall", "score")
                if k in m["metrics"] and m["metrics"][k]["mean"] is not None
            }
            if hw is not None and cv:
                hw["fraction_of_ceiling"] = hw["value"] / cv
            blind = res.get("ceiling_trip_blind")
            if blind is not None:
                blind["value"] = bv = blind["metrics"].get(model_key)
                res["fraction_of_trip_blind_ceiling"] = (
                    (m["mean"] / bv) if (bv and m["mean"] is not None) else None
                )
        else:
            res["fraction_of_ceiling"] = None
        for name, row in res.get("ablations", {}).items():
            diffs = [
                a - b
                for a, b in zip(row["per_seed"], m["per_seed"])
                if a is not None and b is not None
            ]
            row["delta_vs_model"] = mean_std(diffs)
        for row in [m] + list(res.get("ablations", {}).values()):
            ens = row.get("ensemble")
            if ens is None:
                continue
            v = ens["metrics"].get(model_key)
            ens["value"] = v
            ok = v is not None and not math.isnan(v) and row["mean"] is not None
            ens["gain_vs_seed_mean"] = (v - row["mean"]) if ok else None
            ens["gain_in_seed_sd"] = ((v - row["mean"]) / row["std"]) if ok and row["std"] else None
        return res

    def model_rows(self, case, job_fn):
        """job_fn(variant, overrides, seed) -> per-seed result dict; runs every variant x seed."""
        tasks, keys = [], []
        for vname, extra in self.variants():
            for seed in self.seeds:
                tasks.append(lambda vname=vname, extra=extra, seed=seed: job_fn(vname, extra, seed))
                keys.append((vname, seed))
        results = self.parallel(tasks)
        rows = {}
        for (vname, seed), r in zip(keys, results):
            rows.setdefault(vname, []).append(r)
        return rows

    def predict_ensemble(self, ckpts, data_root, split, sub, ctx, scores=None):
        """`segrank predict` with every checkpoint in `ckpts`: segrank's seed ensemble (per graph,
        each model's scores min-max normalized, then averaged;
        docs/benchmarks.md#seed-ensembles)."""
        args = ["predict"]
        for c in ckpts:
            args += ["--checkpoint", c]
        args += ["--data", data_root, "--split", split, "--out", sub, "--threads", self.o.threads]
        if scores:
            args += ["--scores", scores]
        self.r.run(args, ctx)

    def add_ensembles(self, res, metrics_of):
        """Adds row["ensemble"] = {"metrics": metrics_of(variant), "members": seeds} to the model
        row and every ablation row (with --seeds >= 2; --no-ensemble skips it)."""
        if self.o.no_ensemble or len(self.seeds) < 2:
            return
        rows = [("model", res["model"])] + list(res.get("ablations", {}).items())
        for vname, row in rows:
            row["ensemble"] = {"members": len(self.seeds), "metrics": metrics_of(vname)}

    @staticmethod
    def row_of(runs, overrides):
        return {
            "overrides": overrides,
            "metrics": summarize([r["metrics"] for r in runs]),
            "metrics_last": summarize([r["metrics_last"] for r in runs]),
            "runs": [r["run"] for r in runs],
        }

    def assemble(self, case, rows):
        res = {}
        variants = dict(self.variants())
        res["model"] = self.row_of(rows["model"], variants["model"])
        if len(rows) > 1:
            res["ablations"] = {
                k: self.row_of(v, variants[k]) for k, v in rows.items() if k != "model"
            }
        return res

    # --- synthetic cases
    def case_synth(self, case, collection, config, extra_sets):
        size = SIZES[self.mode][case]
        base = self.case_dir(case)
        self.cur_dir = base
        noisy, clean = os.path.join(base, "data_noisy"), os.path.join(base, "data_clean")
        choices = self.o.layout_choices if collection == "layout" else 0
        log(
            f"{case}: synthesizing {size['graphs']} graphs (noise {SYNTH_NOISE} and 0"
            + (f", {choices} layouts per configurable node)" if choices else ")")
        )
        blind = os.path.join(base, "data_trip_blind") if collection == "layout" else None
        jobs = [
            lambda: self.r.synth(
                noisy, collection, size, SYNTH_NOISE, f"{case} synth noisy", choices
            ),
            lambda: self.r.synth(clean, collection, size, 0, f"{case} synth clean", choices),
        ]
        if blind:  # the clean labels with every while loop charged the mean trip count
            jobs.append(
                lambda: self.r.synth(
                    blind,
                    collection,
                    size,
                    0,
                    f"{case} synth trip-blind",
                    choices,
                    ["--cost-off", "trip_counts", "--default-trip-count", repr(SYNTH_MEAN_TRIPS)],
                )
            )
        self.parallel(jobs)
        coll = "tile:xla" if collection == "tile" else "layout:xla:random"
        task = "tile" if collection == "tile" else "layout"
        rel = (
            os.path.join("npz", "tile", "xla")
            if task == "tile"
            else os.path.join("npz", "layout", "xla", "random")
        )
        noisy_coll, clean_coll = os.path.join(noisy, rel), os.path.join(clean, rel)
        overrides = [
            f"data.root={noisy}",
            f'data.collections=["{coll}"]',
            f"train.steps={size['steps']}",
            f"train.eval_every={size['eval_every']}",
        ] + extra_sets

        def job(vname, extra, seed):
            ctx = f"case {case} {vname} seed {seed}"
            run_dir = os.path.join(base, "runs", f"{vname}_seed{seed}")
            info, _ = self.train(case, vname, seed, config, overrides + extra, run_dir, ctx)
            _, best = self.r.evaluate(
                os.path.join(run_dir, "best.ckpt.h5"),
                "test",
                os.path.join(run_dir, "eval_test_best.json"),
                ctx + " evaluate best",
            )
            if info["best_step"] == info["steps"]:
                last = best
            else:
                _, last = self.r.evaluate(
                    os.path.join(run_dir, "last.ckpt.h5"),
                    "test",
                    os.path.join(run_dir, "eval_test_last.json"),
                    ctx + " evaluate last",
                )
            info.update(seed=seed, run_dir=run_dir)
            return {"metrics": best, "metrics_last": last, "run": info}

        log(
            f"{case}: training {len(self.variants())} x {len(self.seeds)} runs, "
            f"{size['steps']} steps each"
        )
        rows = self.model_rows(case, job)
        log(f"{case}: baselines")
        ctx = f"case {case}"
        res = self.assemble(case, rows)

        def synth_ensemble(vname):
            ectx = f"{ctx} {vname} ensemble"
            sub = os.path.join(base, f"ensemble_{vname}.csv")
            sc = os.path.join(base, f"ensemble_{vname}.scores.csv") if task == "tile" else None
            self.predict_ensemble(
                [
                    os.path.join(base, "runs", f"{vname}_seed{s}", "best.ckpt.h5")
                    for s in self.seeds
                ],
                noisy,
                "test",
                sub,
                ectx,
                scores=sc,
            )
            lb = self.r.leaderboard(noisy_coll, "test", sub, ectx)
            if task == "tile":  # 5 configs per submission row: Kendall from the ensemble's scores
                es = read_scores(sc)
                names_t = list_graphs(os.path.join(noisy_coll, "test"))
                py = aggregate(
                    [
                        graph_metrics(
                            predicted_order(es[f"{coll}:{n}"]),
                            npz_targets(os.path.join(noisy_coll, "test", n + ".npz")),
                        )
                        for n in names_t
                    ],
                    task,
                )
                self.check(ectx, py, lb)
                lb["kendall"] = py["kendall"]
            return lb

        self.add_ensembles(res, synth_ensemble)
        hw_sub, hw = self.hwmodel(noisy, "test", noisy_coll, ctx, scores=True)
        hw_vs_clean = self.r.leaderboard(
            clean_coll, "test", hw_sub, ctx + " hwmodel vs clean labels"
        )
        rnd = self.random_baseline(noisy, "test", noisy_coll, ctx, scores=(task == "tile"))
        # Ceiling: the clean labels as a submission against the noisy truth.
        test_clean = os.path.join(clean_coll, "test")
        names = list_graphs(test_clean)
        names_noisy = list_graphs(os.path.join(noisy_coll, "test"))
        if names != names_noisy:
            raise BenchError(f"{ctx}: clean and noisy collections differ in graphs")
        clean_t = {n: npz_targets(os.path.join(test_clean, n + ".npz")) for n in names}
        noisy_t = {n: npz_targets(os.path.join(noisy_coll, "test", n + ".npz")) for n in names}
        rows_sub = []
        for n in names:
            order = predicted_order(clean_t[n])
            rows_sub.append((f"{coll}:{n}", order[:5] if task == "tile" else order))
        ceil_sub = os.path.join(base, "ceiling.csv")
        write_submission(ceil_sub, rows_sub)
        ceiling = self.r.leaderboard(noisy_coll, "test", ceil_sub, ctx + " ceiling")
        blind_ceiling = None
        if blind:
            blind_test = os.path.join(blind, rel, "test")
            if list_graphs(blind_test) != names:
                raise BenchError(f"{ctx}: trip-blind and noisy collections differ in graphs")
            blind_sub = os.path.join(base, "ceiling_trip_blind.csv")
            write_submission(
                blind_sub,
                [
                    (
                        f"{coll}:{n}",
                        predicted_order(npz_targets(os.path.join(blind_test, n + ".npz"))),
                    )
                    for n in names
                ],
            )
            blind_ceiling = self.r.leaderboard(
                noisy_coll, "test", blind_sub, ctx + " trip-blind ceiling"
            )
        if task == "tile":
            # A tile submission has 5 configs: Kendall of the baselines from their full score files.
            pid = lambda n: f"{coll}:{n}"  # noqa: E731
            ceil_py = aggregate(
                [graph_metrics(predicted_order(clean_t[n]), noisy_t[n]) for n in names], task
            )
            self.check(ctx + " ceiling", ceil_py, ceiling)
            ceiling["kendall"] = ceil_py["kendall"]
            hs = read_scores(os.path.join(base, "hwmodel.scores.csv"))
            hw_py = aggregate(
                [graph_metrics(predicted_order(hs[pid(n)]), noisy_t[n]) for n in names], task
            )
            self.check(ctx + " hwmodel", hw_py, hw)
            hw["kendall"] = hw_py["kendall"]
            hwc_py = aggregate(
                [graph_metrics(predicted_order(hs[pid(n)]), clean_t[n]) for n in names], task
            )
            self.check(ctx + " hwmodel vs clean", hwc_py, hw_vs_clean)
            hw_vs_clean["kendall"] = hwc_py["kendall"]
            for s, rm in zip(self.random_seeds, rnd):
                rs = read_scores(os.path.join(base, f"random{s}.scores.csv"))
                r_py = aggregate(
                    [graph_metrics(predicted_order(rs[pid(n)]), noisy_t[n]) for n in names], task
                )
                self.check(f"{ctx} random seed {s}", r_py, rm)
                rm["kendall"] = r_py["kendall"]
            self.check_model_kendall(
                ctx, rows["model"][0]["run"]["run_dir"], "test", noisy_coll, coll
            )
        # Is hwmodel (on the featurized graphs) the label generator? Compare its estimates with the
        # clean runtimes (synth writes max(2, llround(ns))) config by config.
        hs = read_scores(os.path.join(base, "hwmodel.scores.csv"))
        equal = total = graphs_equal = 0
        rel = []
        for n in names:
            clean_rt = npz_runtimes(os.path.join(test_clean, n + ".npz"))
            est = hs[f"{coll}:{n}"]
            eq = sum(int(max(2, round(a)) == b) for a, b in zip(est, clean_rt))
            graphs_equal += int(eq == len(clean_rt))
            equal += eq
            total += len(clean_rt)
            rel += [abs(a - b) / b for a, b in zip(est, clean_rt)]
        rel.sort()
        res["hwmodel"] = {
            "metrics": hw,
            "vs_clean_labels": hw_vs_clean,
            "equals_clean_label": equal == total,
            "configs_equal_to_clean_label": equal,
            "configs_compared": total,
            "graphs_equal_to_clean_label": graphs_equal,
            "graphs_compared": len(names),
            "relative_difference_to_clean_label": {
                "median": rel[len(rel) // 2],
                "p90": rel[int(0.9 * (len(rel) - 1))],
                "max": rel[-1],
            },
        }
        res["random"] = self.baseline_summary(rnd)
        res["ceiling"] = {
            "definition": "noise-free labels (synth --noise 0, same seed) as a submission scored "
            "against the noisy labels",
            "metrics": ceiling,
        }
        if blind_ceiling is not None:
            res["ceiling_trip_blind"] = {
                "definition": "noise-free labels with every while loop charged the mean trip "
                "count of the generator (synth --noise 0 --cost-off trip_counts "
                "--default-trip-count MEAN), scored against the noisy labels: about what a "
                "predictor that cannot see trip counts can score (a reference, not a strict bound)",
                "trip_count": SYNTH_MEAN_TRIPS,
                "trip_counts_drawn_from": list(SYNTH_WHILE_TRIPS),
                "metrics": blind_ceiling,
            }
        res["settings"] = {
            "synth": dict(
                size,
                noise=SYNTH_NOISE,
                seed=SYNTH_SEED,
                collection=collection,
                layout_choices=choices,
            ),
            "config": config,
            "overrides": overrides,
            "scored_split": "test",
            "checkpoint": "best (selected on valid); metrics_last = last",
        }
        return self.finish_case(case, res)

    def check(self, ctx, py, seg):
        """Python slowdowns against segrank leaderboard's (same graphs)."""
        for k in ("slowdown_1", "slowdown_5"):
            if abs(py[k] - seg[k]) > 1e-9 * max(1.0, abs(seg[k])):
                raise BenchError(
                    f"{ctx}: internal cross-check failed: {k} computed here {py[k]!r}, "
                    f"segrank leaderboard {seg[k]!r}"
                )
        self.crosschecks.append(f"{ctx}: slowdown_1/5 equal to segrank leaderboard")

    def check_model_kendall(self, ctx, run_dir, split, truth_coll, coll, heldout_names=None):
        """Python Kendall on `predict --scores` of a model against `segrank evaluate`'s per
        graph."""
        ckpt = os.path.join(run_dir, "best.ckpt.h5")
        scores = os.path.join(run_dir, "predict.scores.csv")
        self.r.run(
            [
                "predict",
                "--checkpoint",
                ckpt,
                "--split",
                split,
                "--out",
                os.path.join(run_dir, "predict.csv"),
                "--scores",
                scores,
                "--threads",
                self.o.threads,
            ],
            ctx + " cross-check predict",
        )
        sc = read_scores(scores)
        json_file = os.path.join(
            run_dir, "eval_test_best.json" if split == "test" else "eval_heldout_best.json"
        )
        with open(json_file) as f:
            graphs = json.load(f)["graphs"]
        worst = 0.0
        checked = 0
        for g in graphs:
            t = npz_targets(os.path.join(truth_coll, split, g["graph"] + ".npz"))
            py = tau_b_of_order(predicted_order(sc[f"{coll}:{g['graph']}"]), t)
            seg = g["kendall_tau"]
            if seg is None or math.isnan(py):
                continue
            worst = max(worst, abs(py - seg))
            checked += 1
        if worst > 1e-9:
            raise BenchError(
                f"{ctx}: internal cross-check failed: Kendall computed here differs from "
                f"`segrank evaluate` by {worst}"
            )
        self.crosschecks.append(
            f"{ctx}: Kendall of {checked} graphs equal to segrank evaluate (max diff {worst:.1e})"
        )

    def tile_regression(self, case, per, kernels, in_mean, hw_scores, coll_dir):
        """The real_tile regression row: per seed, the means over the 15 held-out kernels of the
        MAPE and median APE `segrank evaluate` reports (the mse scores de-standardized with the
        kernel's measured log mean and std), beside hwmodel's on the same configs: its estimates in
        ns as they are, and anchored the same way (docs/metrics.md#runtime-regression)."""
        per_seed = []
        for seed in self.seeds:
            e = per[("regression", seed)]
            if sorted(e["best"]) != kernels:
                raise BenchError(
                    f"case {case} regression seed {seed}: the 5 folds held out "
                    f"{sorted(e['best'])}, "
                    f"expected every kernel once: {kernels}"
                )
            missing = [k for k in kernels if e["best"][k]["mape"] is None]
            if missing:
                raise BenchError(
                    f"case {case} regression seed {seed}: `segrank evaluate` reported no mape for "
                    f"{missing} (a tile model with an mse term should have one)"
                )
            m = aggregate([e["best"][k] for k in kernels], "tile", in_mean)
            m["mape"] = statistics.fmean(e["best"][k]["mape"] for k in kernels)
            m["median_ape"] = statistics.fmean(e["best"][k]["median_ape"] for k in kernels)
            per_seed.append(m)
        model = {}
        for key in ("mape", "median_ape", "kendall", "slowdown_5"):
            vals = [r[key] for r in per_seed]
            model[key] = dict(mean_std(vals), per_seed=vals)
        raw_m, raw_med, anc_m, anc_med, invalid = [], [], [], [], 0
        for k in kernels:
            est = hw_scores["tile:xla:" + k]
            ns = [float(x) for x in npz_runtimes(os.path.join(coll_dir, "train", k + ".npz"))]
            keep = [i for i, x in enumerate(est) if math.isfinite(x) and x > 0]
            invalid += len(est) - len(keep)
            p, t = [est[i] for i in keep], [ns[i] for i in keep]
            a, b = ape_stats(p, t)
            raw_m.append(a)
            raw_med.append(b)
            a, b = ape_stats(anchored(p, t), t)
            anc_m.append(a)
            anc_med.append(b)
        hw = {
            "mape": statistics.fmean(raw_m),
            "median_ape": statistics.fmean(raw_med),
            "anchored_mape": statistics.fmean(anc_m),
            "anchored_median_ape": statistics.fmean(anc_med),
            "configs_without_estimate": invalid,
        }
        log(
            f"{case}: regression row: model MAPE {pm(model['mape'], True)} (median APE "
            f"{pm(model['median_ape'], True)}), hwmodel anchored "
            f"{fmt(hw['anchored_mape'], pct=True)} "
            f"(absolute {fmt(hw['mape'], pct=True)})"
        )
        return {
            "model": model,
            "hwmodel": hw,
            "settings": {
                "overrides": REGRESSION_SETS,
                "over": "means over the 15 held-out kernels of the per-kernel values; model: "
                "mean ± sample std over seeds; hwmodel anchored: its log estimates standardized "
                "per kernel and mapped through the measured log mean and std, as the model's mse "
                "scores (docs/metrics.md#runtime-regression)",
            },
        }

    # --- real tile: 15 kernels, 5 folds
    def case_real_tile(self, case):
        size = SIZES[self.mode][case]
        base = self.case_dir(case)
        self.cur_dir = base
        pb = os.path.join(self.shared, "xla_tuning", "op_tuning_data.pb")
        data = os.path.join(base, "data")
        self.r.run(["ingest", pb, "--out", data, "--force"], f"case {case} ingest")
        coll_dir = os.path.join(data, "npz", "tile", "xla")
        kernels = list_graphs(os.path.join(coll_dir, "train"))
        config = "configs/xla_fixture_tile.toml"
        folds = 5
        overrides = [
            f"data.root={data}",
            "data.ingest=[]",
            f"data.holdout_folds={folds}",
            f"train.steps={size['steps']}",
            f"train.eval_every={size['eval_every']}",
        ]

        def fold_job(vname, extra, seed, fold):
            ctx = f"case {case} {vname} seed {seed} fold {fold}"
            run_dir = os.path.join(base, "runs", f"{vname}_seed{seed}_fold{fold}")
            info, _ = self.train(
                case,
                vname,
                seed,
                config,
                overrides + extra + [f"data.holdout_fold={fold}"],
                run_dir,
                ctx,
            )
            gb, _ = self.r.evaluate(
                os.path.join(run_dir, "best.ckpt.h5"),
                "heldout",
                os.path.join(run_dir, "eval_heldout_best.json"),
                ctx + " evaluate best",
            )
            gl, _ = self.r.evaluate(
                os.path.join(run_dir, "last.ckpt.h5"),
                "heldout",
                os.path.join(run_dir, "eval_heldout_last.json"),
                ctx + " evaluate last",
            )
            info.update(seed=seed, fold=fold, run_dir=run_dir)
            return gb, gl, info

        tasks, keys = [], []
        # The regression row trains beside the variants (docs/metrics.md#runtime-regression).
        reg_rows = (
            [] if self.o.no_regression else [("regression", list(self.o.set) + REGRESSION_SETS)]
        )
        for vname, extra in self.variants() + reg_rows:
            for seed in self.seeds:
                for fold in range(folds):
                    tasks.append(lambda v=vname, e=extra, s=seed, f=fold: fold_job(v, e, s, f))
                    keys.append((vname, seed))
        log(
            f"{case}: training {len(tasks)} runs ({len(self.variants()) + len(reg_rows)} rows x "
            f"{len(self.seeds)} seeds x {folds} folds), {size['steps']} steps each"
        )
        results = self.parallel(tasks)

        def to_gm(g):
            return {
                "num_configs": g["num_configs"],
                "targets_constant": g["targets_constant"],
                "kendall": float("nan") if g["kendall_tau"] is None else g["kendall_tau"],
                "slowdown_1": g["slowdown_1"],
                "slowdown_5": g["slowdown_5"],
                "slowdown_10": g["slowdown_10"],
                "mape": g.get("mape"),
                "median_ape": g.get("median_ape"),
            }

        per = {}
        for (vname, seed), (gb, gl, info) in zip(keys, results):
            e = per.setdefault((vname, seed), {"best": {}, "last": {}, "runs": [], "run_of": {}})
            for g in gb:
                e["best"][g["graph"]] = to_gm(g)
                e["run_of"][g["graph"]] = info["run_dir"]
            for g in gl:
                e["last"][g["graph"]] = to_gm(g)
            e["runs"].append(info)
        # hwmodel first: the Kendall mean is over the kernels where hwmodel's tau-b is defined and
        # meaningful, as in the README's `hwmodel validate` table: >= 3 configs, varying runtimes,
        # estimates not all equal (hwmodel gives every config of the 3 reshape kernels one time).
        ctx = f"case {case}"
        _, hw_lb = self.hwmodel(data, "train", coll_dir, ctx, scores=True)
        targets = {k: npz_targets(os.path.join(coll_dir, "train", k + ".npz")) for k in kernels}
        hs = read_scores(os.path.join(base, "hwmodel.scores.csv"))
        hw_g = {k: graph_metrics(predicted_order(hs["tile:xla:" + k]), targets[k]) for k in kernels}
        in_mean = [
            len(targets[k]) >= 3 and len(set(targets[k])) > 1 and len(set(hs["tile:xla:" + k])) > 1
            for k in kernels
        ]
        kendall_kernels = [k for k, ok in zip(kernels, in_mean) if ok]
        hw = aggregate([hw_g[k] for k in kernels], "tile", in_mean)
        raw = [tau_b_raw(hs["tile:xla:" + k], targets[k]) for k in kendall_kernels]
        hw["kendall_raw"] = statistics.fmean(raw)
        self.check(ctx + " hwmodel", hw, hw_lb)
        rows = {}
        per_kernel = {}
        for vname, _ in self.variants():
            for seed in self.seeds:
                e = per[(vname, seed)]
                if sorted(e["best"]) != kernels:
                    raise BenchError(
                        f"case {case} {vname} seed {seed}: the 5 folds held out "
                        f"{sorted(e['best'])}, expected every kernel once: {kernels}"
                    )
                m = aggregate([e["best"][k] for k in kernels], "tile", in_mean)
                ml = aggregate([e["last"][k] for k in kernels], "tile", in_mean)
                rows.setdefault(vname, []).append(
                    {"metrics": m, "metrics_last": ml, "run": {"seed": seed, "folds": e["runs"]}}
                )
                if vname == "model":
                    for k in kernels:
                        per_kernel.setdefault(
                            k, {"num_configs": e["best"][k]["num_configs"], "model": []}
                        )
                        per_kernel[k]["model"].append(
                            {x: e["best"][k][x] for x in ("kendall", "slowdown_1", "slowdown_5")}
                        )
        res = self.assemble(case, rows)
        if reg_rows:
            res["regression"] = self.tile_regression(case, per, kernels, in_mean, hs, coll_dir)
        # random on exactly the same kernels
        rnd_lb = self.random_baseline(data, "train", coll_dir, ctx, scores=True)
        rnd = []
        for s, lb in zip(self.random_seeds, rnd_lb):
            rs = read_scores(os.path.join(base, f"random{s}.scores.csv"))
            r = aggregate(
                [graph_metrics(predicted_order(rs["tile:xla:" + k]), targets[k]) for k in kernels],
                "tile",
                in_mean,
            )
            self.check(f"{ctx} random seed {s}", r, lb)
            rnd.append(r)
        # Python Kendall == segrank evaluate's, on one held-out fold of the model.
        first = rows["model"][0]["run"]["folds"][0]
        self.check_model_kendall_heldout(ctx, first["run_dir"], coll_dir)

        def tile_ensemble(vname):
            # Each kernel is held out by one fold per seed: its ensemble is the best checkpoints of
            # those folds. Kernels with the same set of models share one `segrank predict`.
            groups = {}
            for k in kernels:
                groups.setdefault(
                    tuple(per[(vname, s)]["run_of"][k] for s in self.seeds), []
                ).append(k)
            gms = {}
            for i, (run_dirs, ks) in enumerate(sorted(groups.items())):
                ectx = f"{ctx} {vname} ensemble {i}"
                sub = os.path.join(base, f"ensemble_{vname}_{i}.csv")
                sc = os.path.join(base, f"ensemble_{vname}_{i}.scores.csv")
                self.predict_ensemble(
                    [os.path.join(d, "best.ckpt.h5") for d in run_dirs],
                    data,
                    "train",
                    sub,
                    ectx,
                    scores=sc,
                )
                es = read_scores(sc)
                for k in ks:
                    gms[k] = graph_metrics(predicted_order(es["tile:xla:" + k]), targets[k])
            return aggregate([gms[k] for k in kernels], "tile", in_mean)

        self.add_ensembles(res, tile_ensemble)
        for k in kernels:
            pk = per_kernel[k]
            pk["model_mean"] = {
                x: mean_std([r[x] for r in pk["model"]])["mean"]
                for x in ("kendall", "slowdown_1", "slowdown_5")
            }
            pk["hwmodel"] = {x: hw_g[k][x] for x in ("kendall", "slowdown_1", "slowdown_5")}
            pk["in_kendall_mean"] = k in kendall_kernels
        res["per_kernel"] = per_kernel
        res["hwmodel"] = {"metrics": hw}
        res["random"] = self.baseline_summary(rnd)
        res["ceiling"] = None
        res["settings"] = {
            "config": config,
            "overrides": overrides,
            "folds": folds,
            "kendall_kernels": kendall_kernels,
            "kendall_over": "kendall: kernels with >= 3 configs, varying runtimes and hwmodel "
            "estimates not all equal (README hwmodel table); kendall_all: every kernel with "
            "varying runtimes (segrank's collection mean); slowdowns over all",
            "checkpoint": "best per fold (selected on the held-out kernels); "
            "metrics_last = last",
        }
        return self.finish_case(case, res)

    def check_model_kendall_heldout(self, ctx, run_dir, coll_dir):
        ckpt = os.path.join(run_dir, "best.ckpt.h5")
        scores = os.path.join(run_dir, "predict.scores.csv")
        self.r.run(
            [
                "predict",
                "--checkpoint",
                ckpt,
                "--split",
                "train",
                "--out",
                os.path.join(run_dir, "predict.csv"),
                "--scores",
                scores,
                "--threads",
                self.o.threads,
            ],
            ctx + " cross-check predict",
        )
        sc = read_scores(scores)
        with open(os.path.join(run_dir, "eval_heldout_best.json")) as f:
            graphs = json.load(f)["graphs"]
        worst, checked = 0.0, 0
        for g in graphs:
            t = npz_targets(os.path.join(coll_dir, "train", g["graph"] + ".npz"))
            o = predicted_order(sc["tile:xla:" + g["graph"]])
            py = graph_metrics(o, t)
            for key, seg in (
                ("kendall", g["kendall_tau"]),
                ("slowdown_1", g["slowdown_1"]),
                ("slowdown_5", g["slowdown_5"]),
            ):
                if seg is None or math.isnan(py[key]):
                    continue
                worst = max(worst, abs(py[key] - seg))
            checked += 1
        if worst > 1e-9:
            raise BenchError(
                f"{ctx}: internal cross-check failed: metrics computed here differ from "
                f"`segrank evaluate --heldout` by {worst}"
            )
        self.crosschecks.append(
            f"{ctx}: Kendall/slowdown of {checked} held-out kernels equal to segrank evaluate "
            f"(max diff {worst:.1e})"
        )

    # --- real layout: U-Net fixture, 5 folds over config groups
    def case_real_layout_fixture(self, case):
        size = SIZES[self.mode][case]
        base = self.case_dir(case)
        self.cur_dir = base
        pb = os.path.join(self.shared, "xla_tuning", "module_tuning_data_layout.pb")
        data = os.path.join(base, "data")
        self.r.run(["ingest", pb, "--out", data, "--force"], f"case {case} ingest")
        src_dir = os.path.join(data, "npz", "layout", "xla", "random", "train")
        names = list_graphs(src_dir)
        if len(names) != 1:
            raise BenchError(f"case {case}: expected one layout module in {src_dir}, found {names}")
        name = names[0]
        m = read_npz(os.path.join(src_dir, name + ".npz"))
        feat = m["node_config_feat"]
        c = feat[2][0]
        row = len(feat[3]) // c
        groups = {}  # identical rows (by value: -0 == +0, as config_groups in sampling/dedupe.h)
        for j in range(c):
            raw = feat[3][j * row : (j + 1) * row]
            key = tuple(array("f", raw)) if feat[0] == "<f4" else raw
            groups.setdefault(key, []).append(j)
        glist = sorted(groups.values())  # by first config index: deterministic
        random.Random(FOLD_SEED).shuffle(glist)
        folds = size["folds"]
        fold_of = {}
        for pos, g in enumerate(glist):
            for j in g:
                fold_of[j] = pos % folds
        score_root = os.path.join(base, "score")
        shutil.rmtree(score_root, ignore_errors=True)
        fold_info = []
        for f in range(folds):
            held = [j for j in range(c) if fold_of[j] == f]
            train = [j for j in range(c) if fold_of[j] != f]
            root = os.path.join(base, f"fold{f}")
            shutil.rmtree(root, ignore_errors=True)
            for split, rows_ in (("train", train), ("valid", held)):
                mem = dict(m)
                mem["node_config_feat"] = take_rows(m["node_config_feat"], rows_, name)
                mem["config_runtime"] = take_rows(m["config_runtime"], rows_, name)
                # The held-out configs go under another graph name: segrank refuses a graph listed
                # in both splits under one name (it would usually mean validating on training
                # data); here the two files hold disjoint configs of the one graph, on purpose.
                # Evaluation does not depend on the name.
                fname = name if split == "train" else f"{name}_fold{f}"
                write_npz(
                    os.path.join(root, "npz", "layout", "xla", "random", split, fname + ".npz"), mem
                )
                if split == "valid":
                    write_npz(
                        os.path.join(
                            score_root,
                            "npz",
                            "layout",
                            "xla",
                            "random",
                            "valid",
                            f"{name}_fold{f}.npz",
                        ),
                        mem,
                    )
            fold_info.append(
                {"heldout_configs": held, "heldout_groups": sum(1 for g in glist[f::folds])}
            )
        config = "configs/xla_fixture_layout.toml"
        common = [
            "data.ingest=[]",
            'data.holdout="graphs"',
            'data.collections=["layout:xla:random"]',
            f"train.steps={size['steps']}",
            f"train.eval_every={size['eval_every']}",
        ]

        def fold_job(vname, extra, seed, fold):
            ctx = f"case {case} {vname} seed {seed} fold {fold}"
            run_dir = os.path.join(base, "runs", f"{vname}_seed{seed}_fold{fold}")
            root = os.path.join(base, f"fold{fold}")
            info, la = self.train(
                case, vname, seed, config, [f"data.root={root}"] + common + extra, run_dir, ctx
            )
            b = self.evaluate_best(info, la, run_dir, "valid", ctx)
            info.update(seed=seed, fold=fold, run_dir=run_dir)
            return b, la, info

        tasks, keys = [], []
        for vname, extra in self.variants():
            for seed in self.seeds:
                for fold in range(folds):
                    tasks.append(lambda v=vname, e=extra, s=seed, f=fold: fold_job(v, e, s, f))
                    keys.append((vname, seed))
        log(
            f"{case}: training {len(tasks)} runs ({len(self.variants())} rows x "
            f"{len(self.seeds)} seeds x {folds} folds), {size['steps']} steps each"
        )
        results = self.parallel(tasks)
        per = {}
        for (vname, seed), (b, la, info) in zip(keys, results):
            e = per.setdefault((vname, seed), {"best": [], "last": [], "runs": []})
            e["best"].append(b)
            e["last"].append(la)
            e["runs"].append(info)

        def fold_mean(ms):
            return {
                k: statistics.fmean(x[k] for x in ms) for k in METRICS if all(k in x for x in ms)
            }

        rows = {}
        for vname, _ in self.variants():
            for seed in self.seeds:
                e = per[(vname, seed)]
                rows.setdefault(vname, []).append(
                    {
                        "metrics": fold_mean(e["best"]),
                        "metrics_last": fold_mean(e["last"]),
                        "run": {
                            "seed": seed,
                            "folds": e["runs"],
                            "per_fold_kendall": [x["kendall"] for x in e["best"]],
                        },
                    }
                )
        res = self.assemble(case, rows)
        ctx = f"case {case}"

        def fixture_ensemble(vname):
            per_fold = []
            for f in range(folds):
                ectx = f"{ctx} {vname} ensemble fold {f}"
                root = os.path.join(base, f"fold{f}")
                sub = os.path.join(base, f"ensemble_{vname}_fold{f}.csv")
                self.predict_ensemble(
                    [
                        os.path.join(base, "runs", f"{vname}_seed{s}_fold{f}", "best.ckpt.h5")
                        for s in self.seeds
                    ],
                    root,
                    "valid",
                    sub,
                    ectx,
                )
                per_fold.append(
                    self.r.leaderboard(
                        os.path.join(root, "npz", "layout", "xla", "random"), "valid", sub, ectx
                    )
                )
            return fold_mean(per_fold)

        self.add_ensembles(res, fixture_ensemble)
        score_coll = os.path.join(score_root, "npz", "layout", "xla", "random")
        _, hw = self.hwmodel(score_root, "valid", score_coll, ctx)
        rnd = self.random_baseline(score_root, "valid", score_coll, ctx)
        res["hwmodel"] = {
            "metrics": hw,
            "note": "leaderboard mean over the 5 held-out folds (one graph each)",
        }
        res["random"] = self.baseline_summary(rnd)
        res["ceiling"] = None
        res["settings"] = {
            "config": config,
            "overrides": ["data.root=<fold root>"] + common,
            "folds": folds,
            "fold_seed": FOLD_SEED,
            "configs": c,
            "config_groups": len(glist),
            "fold_sizes": [len(x["heldout_configs"]) for x in fold_info],
            "heldout_configs": [x["heldout_configs"] for x in fold_info],
            "metric_per_seed": "mean over the 5 folds of the held-out Kendall",
            "checkpoint": "best per fold (selected on its held-out configs); metrics_last = last",
        }
        return self.finish_case(case, res)

    # --- real layout, TpuGraphs paper protocol (1000 official indices)
    def case_real_layout_official(self, case, search):
        size = SIZES[self.mode][case]
        base = self.case_dir(case)
        self.cur_dir = base
        npz = os.path.join(self.shared, "tpugraphs_npz", "npz", "layout", "xla", search)
        train_name = "unet3d" if search == "default" else "openai_v0_rnn_optimized"
        valid_name = "unet_3d.4x4.bf16"
        idx_file = os.path.join(self.shared, "tpugraphs_npz", "eval_indices", f"xla_{search}.json")
        with open(idx_file) as f:
            indices = json.load(f)[valid_name]
        # Checkpoint selection must not see the scored configs: training evaluates (and keeps its
        # best checkpoint on) the same graph's default-search configs that are not scored and
        # duplicate no scored row; the scored rows live in a second root that only the final
        # evaluation reads.
        root = os.path.join(base, "data")  # train graph + selection configs (the run's valid split)
        scored_root = os.path.join(
            base, "scored"
        )  # the listed rows, scored by model, hwmodel and random
        shutil.rmtree(root, ignore_errors=True)
        shutil.rmtree(scored_root, ignore_errors=True)
        coll_dir = os.path.join(root, "npz", "layout", "xla", search)
        scored_dir = os.path.join(scored_root, "npz", "layout", "xla", search)
        os.makedirs(os.path.join(coll_dir, "train"))
        shutil.copyfile(
            os.path.join(npz, "train", train_name + ".npz"),
            os.path.join(coll_dir, "train", train_name + ".npz"),
        )
        m = read_npz(os.path.join(npz, "valid", valid_name + ".npz"))
        mem = dict(m)
        mem["node_config_feat"] = take_rows(m["node_config_feat"], indices, valid_name)
        mem["config_runtime"] = take_rows(m["config_runtime"], indices, valid_name)
        write_npz(os.path.join(scored_dir, "valid", valid_name + ".npz"), mem)
        sel_src = os.path.join(
            self.shared,
            "tpugraphs_npz",
            "npz",
            "layout",
            "xla",
            "default",
            "valid",
            valid_name + ".npz",
        )
        sm = m if search == "default" else read_npz(sel_src)
        scored_rows = set(npz_rows(mem["node_config_feat"]))
        listed = set(indices) if search == "default" else set()
        sel_rows = [
            i
            for i, r in enumerate(npz_rows(sm["node_config_feat"]))
            if i not in listed and r not in scored_rows
        ]
        if len(sel_rows) < 2:
            raise BenchError(f"case {case}: fewer than 2 selection configs outside the scored ones")
        smem = dict(sm)
        smem["node_config_feat"] = take_rows(sm["node_config_feat"], sel_rows, valid_name)
        smem["config_runtime"] = take_rows(sm["config_runtime"], sel_rows, valid_name)
        write_npz(os.path.join(coll_dir, "valid", valid_name + ".npz"), smem)
        coll = f"layout:xla:{search}"
        config = "configs/xla_fixture_layout.toml"
        overrides = [
            f"data.root={root}",
            "data.ingest=[]",
            'data.holdout="graphs"',
            f'data.collections=["{coll}"]',
            f"train.steps={size['steps']}",
            f"train.eval_every={size['eval_every']}",
        ]

        def job(vname, extra, seed):
            ctx = f"case {case} {vname} seed {seed}"
            run_dir = os.path.join(base, "runs", f"{vname}_seed{seed}")
            info, _ = self.train(case, vname, seed, config, overrides + extra, run_dir, ctx)
            res = {}
            for which in ("best", "last"):
                res[which] = self.r.evaluate(
                    os.path.join(run_dir, f"{which}.ckpt.h5"),
                    "valid",
                    os.path.join(run_dir, f"eval_scored_{which}.json"),
                    f"{ctx} evaluate {which} on the scored configs",
                    data=scored_root,
                )[1]
            info.update(seed=seed, run_dir=run_dir)
            return {"metrics": res["best"], "metrics_last": res["last"], "run": info}

        log(
            f"{case}: training {len(self.variants())} x {len(self.seeds)} runs, "
            f"{size['steps']} steps each"
        )
        rows = self.model_rows(case, job)
        res = self.assemble(case, rows)
        ctx = f"case {case}"

        def official_ensemble(vname):
            sub = os.path.join(base, f"ensemble_{vname}.csv")
            self.predict_ensemble(
                [
                    os.path.join(base, "runs", f"{vname}_seed{s}", "best.ckpt.h5")
                    for s in self.seeds
                ],
                scored_root,
                "valid",
                sub,
                f"{ctx} {vname} ensemble",
            )
            return self.r.leaderboard(scored_dir, "valid", sub, f"{ctx} {vname} ensemble")

        self.add_ensembles(res, official_ensemble)
        _, hw = self.hwmodel(scored_root, "valid", scored_dir, ctx)
        rnd = self.random_baseline(scored_root, "valid", scored_dir, ctx)
        res["hwmodel"] = {"metrics": hw}
        res["random"] = self.baseline_summary(rnd)
        res["ceiling"] = None
        res["settings"] = {
            "config": config,
            "overrides": overrides,
            "train_graph": f"{search}/train/{train_name}.npz",
            "scored_graph": f"{search}/valid/{valid_name}.npz",
            "indices": os.path.relpath(idx_file, REPO),
            "num_indices": len(indices),
            "distinct_indices": len(set(indices)),
            "scoring": "the listed rows (repeats kept) written as one npz; model, hwmodel and "
            "random score that file",
            "selection_graph": f"default/valid/{valid_name}.npz",
            "num_selection_configs": len(sel_rows),
            "checkpoint": "best, selected on the selection configs (the same graph's "
            "default-search configs outside the scored indices whose rows duplicate no scored "
            "row); "
            "metrics_last = last",
        }
        return self.finish_case(case, res)

    def run_case(self, case):
        if case == "synth_layout":
            return self.case_synth(case, "layout", "configs/quickstart.toml", [])
        if case == "synth_tile":
            return self.case_synth(
                case,
                "tile",
                "configs/xla_fixture_tile.toml",
                ["data.ingest=[]", "data.holdout_folds=0"],
            )
        if case == "real_tile":
            return self.case_real_tile(case)
        if case == "real_layout_fixture":
            return self.case_real_layout_fixture(case)
        if case == "real_layout_official":
            return self.case_real_layout_official(case, "default")
        if case == "real_layout_official_random":
            return self.case_real_layout_official(case, "random")
        if case in TRANSFER_CASES:
            return TransferCase(self, case).run()
        raise BenchError(f"internal: unknown case {case}")


# ------------------------------------------------------------------------------------------------
# transfer: leave one cost family out (docs/benchmarks.md#transfer)

# Cost families of `segrank synth --cost` (docs/hwmodel.md#cost-families). Every fold trains on the
# collections of tpu_v3 and of the other families of its task and scores the held-out family.
TRANSFER_FAMILIES = {
    "layout": ["propagate", "copy_bound", "mxu_padded", "memory_v5", "fusion_aware"],
    "tile": ["vmem_spill", "pipeline", "step_overhead"],
}
TRANSFER_ALWAYS_TRAIN = (
    "tpu_v3"  # a training family of every fold, never held out (docs/benchmarks.md#transfer)
)
TRANSFER_SEED = (
    100  # family i (tpu_v3 first) is synthesized with seed TRANSFER_SEED + i: its own graphs
)


class TransferCase:
    """One transfer case (transfer_layout / transfer_tile): per family one collection (synth
    --cost F --seed TRANSFER_SEED + i, noisy; and noise-free for the held-out families), then per
    held-out family F a fold whose train / valid splits are the other families' train / valid
    splits and whose test split is F's test split (symbolic links named FAMILY__GRAPH.npz), N seeds
    of training, the best checkpoint (chosen on the other families' valid split) scored on F's test
    graphs beside hwmodel (tpu_v3 estimates), random and the ceiling (F's noise-free labels)."""

    def __init__(self, bench, case):
        self.b = bench
        self.r = bench.r
        self.case = case
        self.task = "layout" if case == "transfer_layout" else "tile"
        self.size = SIZES[bench.mode][case]
        self.base = bench.case_dir(case)
        self.heldout = TRANSFER_FAMILIES[self.task]
        self.families = [TRANSFER_ALWAYS_TRAIN] + self.heldout
        self.coll = "tile:xla" if self.task == "tile" else "layout:xla:random"
        self.rel = (
            os.path.join("npz", "tile", "xla")
            if self.task == "tile"
            else os.path.join("npz", "layout", "xla", "random")
        )
        if self.task == "layout":
            self.config, self.extra = "configs/quickstart.toml", []
        else:
            self.config, self.extra = "configs/xla_fixture_tile.toml", [
                "data.ingest=[]",
                "data.holdout_folds=0",
            ]

    def data_dir(self, family, clean=False):
        return os.path.join(self.base, "data", f"{family}_{'clean' if clean else 'noisy'}")

    def synthesize(self):
        jobs = []
        for i, fam in enumerate(self.families):
            seed = TRANSFER_SEED + i
            for clean in [False, True] if fam != TRANSFER_ALWAYS_TRAIN else [False]:
                out = self.data_dir(fam, clean)
                noise = 0 if clean else SYNTH_NOISE

                def job(out=out, noise=noise, fam=fam, seed=seed, clean=clean):
                    s = self.size
                    self.r.run(
                        [
                            "synth",
                            "--out",
                            out,
                            "--collections",
                            self.task,
                            "--cost",
                            fam,
                            "--graphs",
                            s["graphs"],
                            "--nodes",
                            s["nodes"],
                            "--configs",
                            s["configs"],
                            "--seed",
                            seed,
                            "--noise",
                            noise,
                            "--splits",
                            s["splits"],
                            "--force",
                            "-q",
                        ],
                        f"{self.case} synth {fam}{' clean' if clean else ''}",
                    )

                jobs.append(job)
        self.b.parallel(jobs)

    def fold_root(self, heldout):
        """Data root of the fold holding `heldout` out (symbolic links, rebuilt every run)."""
        root = os.path.join(self.base, "folds", heldout)
        coll_dir = os.path.join(root, self.rel)
        if os.path.isdir(coll_dir):
            shutil.rmtree(coll_dir)
        for split in ("train", "valid", "test"):
            os.makedirs(os.path.join(coll_dir, split))
        for fam in self.families:
            splits = ["test"] if fam == heldout else ["train", "valid"]
            for split in splits:
                src = os.path.join(self.data_dir(fam), self.rel, split)
                for g in list_graphs(src):
                    os.symlink(
                        os.path.join(src, g + ".npz"),
                        os.path.join(coll_dir, split, f"{fam}__{g}.npz"),
                    )
        return root, coll_dir

    def baselines(self, heldout, root, coll_dir, fdir):
        """hwmodel / random / ceiling Kendall (and slowdowns) on the held-out test graphs, computed
        here from full score files (a tile submission lists only 5 configs)."""
        ctx = f"case {self.case} held-out {heldout}"
        test = os.path.join(coll_dir, "test")
        names = list_graphs(test)
        noisy_t = {n: npz_targets(os.path.join(test, n + ".npz")) for n in names}
        clean_dir = os.path.join(self.data_dir(heldout, clean=True), self.rel, "test")
        clean_t = {
            n: npz_targets(os.path.join(clean_dir, n.split("__", 1)[1] + ".npz")) for n in names
        }
        pid = lambda n: f"{self.coll}:{n}"  # noqa: E731
        out = {}
        hw_sub, hw_sc = os.path.join(fdir, "hwmodel.csv"), os.path.join(fdir, "hwmodel.scores.csv")
        self.r.run(
            ["hwmodel", "--data", root, "--split", "test", "--out", hw_sub, "--scores", hw_sc],
            ctx + " hwmodel",
        )
        hs = read_scores(hw_sc)
        out["hwmodel"] = aggregate(
            [graph_metrics(predicted_order(hs[pid(n)]), noisy_t[n]) for n in names], self.task
        )
        self.b.check(
            ctx + " hwmodel",
            out["hwmodel"],
            self.r.leaderboard(coll_dir, "test", hw_sub, ctx + " hwmodel"),
        )
        rnd = []
        for s in self.b.random_seeds:
            sub, sc = os.path.join(fdir, f"random{s}.csv"), os.path.join(
                fdir, f"random{s}.scores.csv"
            )
            self.r.run(
                [
                    "predict",
                    "--random",
                    s,
                    "--data",
                    root,
                    "--split",
                    "test",
                    "--out",
                    sub,
                    "--scores",
                    sc,
                ],
                f"{ctx} random seed {s}",
            )
            rs = read_scores(sc)
            rnd.append(
                aggregate(
                    [graph_metrics(predicted_order(rs[pid(n)]), noisy_t[n]) for n in names],
                    self.task,
                )
            )
        out["random"] = summarize(rnd)
        out["ceiling"] = aggregate(
            [graph_metrics(predicted_order(clean_t[n]), noisy_t[n]) for n in names], self.task
        )
        out["graphs"] = len(names)
        return out

    def run(self):
        log(
            f"{self.case}: synthesizing {len(self.families)} families x "
            f"{self.size['graphs']} graphs "
            f"(noise {SYNTH_NOISE}; noise-free for the held-out families)"
        )
        self.synthesize()
        folds = {}
        for fam in self.heldout:
            root, coll_dir = self.fold_root(fam)
            folds[fam] = (root, coll_dir, self.b.case_dir(self.case, "folds", fam, "out"))
        size = self.size
        variants = self.b.variants()  # the model row and one per --ablate (--set in every row)

        def job(vname, extra, fam, seed):
            root, coll_dir, fdir = folds[fam]
            ctx = f"case {self.case} {vname} held-out {fam} seed {seed}"
            run_dir = os.path.join(fdir, "runs", f"{vname}_seed{seed}")
            overrides = (
                [
                    f"data.root={root}",
                    f'data.collections=["{self.coll}"]',
                    f"train.steps={size['steps']}",
                    f"train.eval_every={size['eval_every']}",
                ]
                + self.extra
                + list(extra)
            )
            info, _ = self.b.train(
                self.case, f"{vname}.{fam}", seed, self.config, overrides, run_dir, ctx
            )
            _, best = self.r.evaluate(
                os.path.join(run_dir, "best.ckpt.h5"),
                "test",
                os.path.join(run_dir, "eval_test_best.json"),
                ctx + " evaluate best",
            )
            info.update(seed=seed, run_dir=run_dir)
            return {"metrics": best, "run": info}

        log(
            f"{self.case}: training {len(variants)} x {len(self.heldout)} folds x "
            f"{len(self.b.seeds)} seeds, {size['steps']} steps each"
        )
        tasks, keys = [], []
        for vname, extra in variants:
            for fam in self.heldout:
                for seed in self.b.seeds:
                    tasks.append(
                        lambda vname=vname, extra=extra, fam=fam, seed=seed: job(
                            vname, extra, fam, seed
                        )
                    )
                    keys.append((vname, fam, seed))
        results = dict(zip(keys, self.b.parallel(tasks)))
        log(f"{self.case}: baselines")
        base = dict(
            zip(
                self.heldout,
                self.b.parallel(
                    [
                        lambda fam=fam: self.baselines(
                            fam, folds[fam][0], folds[fam][1], folds[fam][2]
                        )
                        for fam in self.heldout
                    ]
                ),
            )
        )
        rows = {}
        for vname, extra in variants:
            per_family = {}
            for fam in self.heldout:
                runs = [results[(vname, fam, s)] for s in self.b.seeds]
                ceil_k = base[fam]["ceiling"]["kendall"]
                per_family[fam] = {
                    "metrics": summarize([r["metrics"] for r in runs]),
                    "runs": [r["run"] for r in runs],
                    "fraction_of_ceiling_per_seed": [
                        (r["metrics"]["kendall"] / ceil_k) if ceil_k else None for r in runs
                    ],
                }
            rows[vname] = {
                "overrides": list(extra),
                "families": per_family,
                "fraction_of_ceiling": self.headline(per_family),
            }
        return self.summary(rows, base)

    def headline(self, per_family):
        """Per seed, the mean over held-out families of model Kendall / ceiling Kendall; then the
        mean and sample sd over seeds."""
        per_seed = []
        for i in range(len(self.b.seeds)):
            vals = [per_family[f]["fraction_of_ceiling_per_seed"][i] for f in self.heldout]
            ok = all(v is not None and not math.isnan(v) for v in vals)
            per_seed.append(statistics.fmean(vals) if ok else None)
        out = mean_std(per_seed)
        out["per_seed"] = per_seed
        return out

    def summary(self, rows, base):
        fams = self.heldout
        model = rows["model"]
        families = {}
        for fam in fams:
            ceil = base[fam]["ceiling"]["kendall"]
            hw_k = base[fam]["hwmodel"]["kendall"]
            families[fam] = {
                "model": {k: model["families"][fam][k] for k in ("metrics", "runs")},
                "fraction_of_ceiling_per_seed": model["families"][fam][
                    "fraction_of_ceiling_per_seed"
                ],
                "hwmodel": base[fam]["hwmodel"],
                "random": base[fam]["random"],
                "ceiling": base[fam]["ceiling"],
                "test_graphs": base[fam]["graphs"],
                "hwmodel_fraction_of_ceiling": (hw_k / ceil) if ceil else None,
            }
        hw_vals = [families[f]["hwmodel_fraction_of_ceiling"] for f in fams]
        rnd_vals = [
            families[f]["random"]["kendall"]["mean"] / families[f]["ceiling"]["kendall"]
            if families[f]["ceiling"]["kendall"]
            and families[f]["random"]["kendall"]["mean"] is not None
            else None
            for f in fams
        ]
        res = {
            "kind": "transfer",
            "metric": "kendall",
            "families": families,
            "fraction_of_ceiling": model["fraction_of_ceiling"],
            "hwmodel_fraction_of_ceiling": statistics.fmean(hw_vals)
            if None not in hw_vals
            else None,
            "random_fraction_of_ceiling": statistics.fmean(rnd_vals)
            if None not in rnd_vals
            else None,
            "settings": {
                "synth": dict(
                    self.size,
                    noise=SYNTH_NOISE,
                    seeds={f: TRANSFER_SEED + i for i, f in enumerate(self.families)},
                ),
                "train_families": "the other held-out families and " + TRANSFER_ALWAYS_TRAIN,
                "config": self.config,
                "overrides": self.extra + list(model["overrides"]),
                "checkpoint": "best, selected on the training families' valid split",
            },
            "definition": "per held-out family F: Kendall tau-b on F's test graphs (noisy labels) "
            "of the model trained on the other families; fraction = model Kendall / ceiling "
            "Kendall (F's "
            "noise-free labels scored against its noisy labels); headline = mean over held-out "
            "families, per seed, then mean and sample sd over seeds",
        }
        if len(rows) > 1:
            res["ablations"] = {}
            for vname, row in rows.items():
                if vname == "model":
                    continue
                diffs = [
                    a - b
                    for a, b in zip(
                        row["fraction_of_ceiling"]["per_seed"],
                        model["fraction_of_ceiling"]["per_seed"],
                    )
                    if a is not None and b is not None
                ]
                row["delta_vs_model"] = mean_std(diffs)
                res["ablations"][vname] = row
        return res


def transfer_markdown(doc):
    """The transfer table: one row per held-out family and one headline row per case."""
    lines = []
    for name, c in doc["cases"].items():
        if c.get("kind") != "transfer":
            continue
        if not lines:
            lines += [
                "",
                "| case | held-out family | model Kendall | hwmodel | random | ceiling "
                "| model / ceiling | hwmodel / ceiling | test graphs |",
                "|---|---|---|---|---|---|---|---|---|",
            ]
        for fam, f in c["families"].items():
            fr = mean_std(f["fraction_of_ceiling_per_seed"])
            lines.append(
                "| "
                + " | ".join(
                    [
                        name,
                        fam,
                        pm(f["model"]["metrics"].get("kendall")),
                        fmt(f["hwmodel"]["kendall"]),
                        pm(f["random"].get("kendall")),
                        fmt(f["ceiling"]["kendall"]),
                        pm(fr),
                        fmt(f["hwmodel_fraction_of_ceiling"]),
                        str(f["test_graphs"]),
                    ]
                )
                + " |"
            )
        lines.append(
            "| "
            + " | ".join(
                [
                    f"**{name}**",
                    "mean over families",
                    "",
                    "",
                    "",
                    "",
                    f"**{pm(c['fraction_of_ceiling'])}**",
                    fmt(c["hwmodel_fraction_of_ceiling"]),
                    f"{c['wall_s']:.0f} s wall",
                ]
            )
            + " |"
        )
        for an, a in c.get("ablations", {}).items():
            for fam, f in a["families"].items():
                lines.append(
                    "| "
                    + " | ".join(
                        [
                            f"{name} `{an}`",
                            fam,
                            pm(f["metrics"].get("kendall")),
                            "",
                            "",
                            "",
                            pm(mean_std(f["fraction_of_ceiling_per_seed"])),
                            "",
                            "",
                        ]
                    )
                    + " |"
                )
            lines.append(
                "| "
                + " | ".join(
                    [
                        f"**{name} `{an}`**",
                        "mean over families",
                        "",
                        "",
                        "",
                        "",
                        f"**{pm(a['fraction_of_ceiling'])}**",
                        f"paired delta {pm(a['delta_vs_model'])}",
                        "",
                    ]
                )
                + " |"
            )
    if lines:
        lines.append("")
        lines.append(
            "Transfer: train on the other cost families (and tpu_v3), score the held-out one "
            "(docs/benchmarks.md#transfer); model: mean ± sd over seeds; model / ceiling of a "
            "case: mean over held-out families per seed, then mean ± sd over seeds."
        )
    return "\n".join(lines) + ("\n" if lines else "")


REAL_INPUTS = {
    "real_tile": ["xla_tuning/op_tuning_data.pb"],
    "real_layout_fixture": ["xla_tuning/module_tuning_data_layout.pb"],
    "real_layout_official": [
        "tpugraphs_npz/npz/layout/xla/default/train/unet3d.npz",
        "tpugraphs_npz/npz/layout/xla/default/valid/unet_3d.4x4.bf16.npz",
        "tpugraphs_npz/eval_indices/xla_default.json",
    ],
    "real_layout_official_random": [
        "tpugraphs_npz/npz/layout/xla/random/train/openai_v0_rnn_optimized.npz",
        "tpugraphs_npz/npz/layout/xla/random/valid/unet_3d.4x4.bf16.npz",
        "tpugraphs_npz/npz/layout/xla/default/valid/unet_3d.4x4.bf16.npz",
        "tpugraphs_npz/eval_indices/xla_random.json",
    ],
}


# ------------------------------------------------------------------------------------------------
# output


def fmt(v, digits=3, pct=False):
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "-"
    return f"{100 * v:.{max(0, digits - 2)}f} %" if pct else f"{v:.{digits}f}"


def pm(d, pct=False):
    if not d or d.get("mean") is None:
        return "-"
    s = fmt(d["mean"], pct=pct)
    if d.get("std") is not None:
        s += " ± " + fmt(d["std"], pct=pct)
    return s


def markdown(doc):
    m = doc["machine"]
    lines = [
        f"Learning-quality benchmark: {doc['mode']}, {doc['seeds']} seeds, segrank "
        f"{doc['segrank']['source_commit'] or doc['segrank']['sha256'][:12]}, "
        f"{m['cpu_model']} x {m['nproc']}, "
        f"load average {m['load_start'][0]:.2f} -> {m['load_end'][0]:.2f}, "
        f"wall {doc['wall_s']:.0f} s, "
        f"segrank CPU {doc.get('cpu_s', 0):.0f} s",
        "",
        "| case | metric | model (best ckpt) | model (last ckpt) | hwmodel | random | ceiling "
        "| model / ceiling | wall (CPU) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for name, c in doc["cases"].items():
        if c.get("kind") == "transfer":  # its own table (transfer_markdown)
            continue
        if "skipped" in c:
            lines.append(f"| {name} | skipped: {c['skipped']} | | | | | | | |")
            continue
        show = ["kendall"] + (["slowdown_1", "slowdown_5", "score"] if c["task"] == "tile" else [])
        for i, key in enumerate(show):
            pct = key.startswith("slowdown")
            hw = (c.get("hwmodel") or {}).get("metrics", {}).get(key)
            ceil = (c.get("ceiling") or {}).get("metrics", {}).get(key)
            first = i == 0
            frac = (
                fmt(c.get("fraction_of_ceiling"))
                if first and c.get("fraction_of_ceiling") is not None
                else ""
            )
            if first and c.get(
                "ceiling_trip_blind"
            ):  # layout: also the ceiling without trip counts
                ceil_txt = f"{fmt(ceil)} (trip-blind {fmt(c['ceiling_trip_blind']['value'])})"
                frac += f" ({fmt(c.get('fraction_of_trip_blind_ceiling'))})"
            else:
                ceil_txt = fmt(ceil, pct=pct)
            lines.append(
                "| "
                + " | ".join(
                    [
                        name if first else "",
                        key,
                        pm(c["model"]["metrics"].get(key), pct),
                        pm(c["model"]["metrics_last"].get(key), pct),
                        fmt(hw, pct=pct),
                        pm(c["random"]["metrics"].get(key), pct),
                        ceil_txt,
                        frac,
                        f"{c['wall_s']:.0f} s ({c.get('cpu_s', 0):.0f} s)" if first else "",
                    ]
                )
                + " |"
            )

        def ensemble_lines(label, row):
            ens = row.get("ensemble")
            if not ens:
                return
            for key in show:
                pct = key.startswith("slowdown")
                gain = ""
                if key == c["metric"] and ens.get("gain_vs_seed_mean") is not None:
                    sd = ens.get("gain_in_seed_sd")
                    gain = f"vs seed mean {ens['gain_vs_seed_mean']:+.3f}" + (
                        f" ({sd:+.1f} sd)" if sd is not None else ""
                    )
                lines.append(
                    "| "
                    + " | ".join(
                        [
                            f"{label} ensemble of {ens['members']}",
                            key,
                            fmt(ens["metrics"].get(key), pct=pct),
                            "",
                            "",
                            "",
                            "",
                            "",
                            gain,
                        ]
                    )
                    + " |"
                )

        ensemble_lines(name, c["model"])
        for an, a in c.get("ablations", {}).items():
            for key in show:
                pct = key.startswith("slowdown")
                d = a["delta_vs_model"] if key == c["metric"] else None
                lines.append(
                    "| "
                    + " | ".join(
                        [
                            f"{name} `{an}`",
                            key,
                            pm(a["metrics"].get(key), pct),
                            pm(a["metrics_last"].get(key), pct),
                            "",
                            "",
                            "",
                            "",
                            f"paired delta {pm(d)}" if d else "",
                        ]
                    )
                    + " |"
                )
            ensemble_lines(f"{name} `{an}`", a)
        reg = c.get("regression")
        if reg:  # real_tile: kernel-runtime regression (docs/metrics.md#runtime-regression)
            hw = reg["hwmodel"]
            for key in ("mape", "median_ape"):
                lines.append(
                    "| "
                    + " | ".join(
                        [
                            f"{name} `regression`" if key == "mape" else "",
                            key,
                            pm(reg["model"][key], True),
                            "",
                            f"{fmt(hw['anchored_' + key], pct=True)} anchored "
                            f"({fmt(hw[key], pct=True)} absolute)",
                            "",
                            "",
                            "",
                            "",
                        ]
                    )
                    + " |"
                )
    lines.append("")
    lines.append(
        "Kendall: tau-b of the predicted order (docs/metrics.md); model and random: mean ± sample "
        "std over seeds; hwmodel and ceiling are deterministic; slowdowns in percent; tile score = "
        "1 - slowdown@5."
    )
    if all(c.get("kind") == "transfer" for c in doc["cases"].values()):
        lines = lines[:1]  # only transfer cases: no rows for the main table
    return "\n".join(lines) + "\n" + transfer_markdown(doc)


def clean_json(x):
    if isinstance(x, float):
        return None if (math.isnan(x) or math.isinf(x)) else x
    if isinstance(x, dict):
        return {k: clean_json(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [clean_json(v) for v in x]
    return x


# ------------------------------------------------------------------------------------------------
# machine / provenance


def cpu_model():
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


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


# ------------------------------------------------------------------------------------------------
# arguments


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
            "--overwrite",
            "--set",
            "train.run_dir=" + os.path.join(o.work, "set-check"),
        ]
        for kv in kvs:
            cmd += ["--set", kv]
        r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if r.returncode != 0:
            p.error(f"{what}: {r.stdout.strip()}")


def parse_args(argv):
    doc = __doc__
    p = argparse.ArgumentParser(
        prog=PROG,
        description=doc.split("\n\n")[0],
        epilog="\n\n".join(doc.split("\n\n")[1:]),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    default_bin = os.path.join(REPO, "build", "cli", "segrank")
    if not os.path.exists(default_bin):
        default_bin = os.path.join(REPO, "build", "trainer", "segrank")
    p.add_argument(
        "--segrank",
        default=default_bin,
        help="segrank binary (default: build/cli/segrank if it exists, "
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
        help="model seeds per case, >= 2 (default 3): train.seed = " "sampling.seed = 0..N-1",
    )
    p.add_argument(
        "--random-seeds", type=int, default=5, help="seeds of the random baseline (default 5)"
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
        default=os.path.join("runs", "bench_quality"),
        help="scratch directory (default runs/bench_quality, relative to the repository root)",
    )
    p.add_argument(
        "--shared-data",
        default=os.path.join("..", "shared", "data"),
        help="real data root (default ../shared/data, relative to the repository root)",
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
        "same (stamp files beside each run); the JSON marks them reused",
    )
    p.add_argument(
        "--json-out", help="also write the JSON to this file (only when every case succeeded)"
    )
    p.add_argument("--markdown", help="also write the Markdown table to this file")
    o = p.parse_args(argv)
    if o.seeds < 2:
        p.error(f"--seeds must be >= 2 (a standard deviation needs two runs), got {o.seeds}")
    if o.random_seeds < 2:
        p.error(f"--random-seeds must be >= 2, got {o.random_seeds}")
    if o.quick and o.tiny:
        p.error("--quick and --tiny exclude each other")
    if not 0 <= o.layout_choices <= 1000:
        p.error(f"--layout-choices must be in [0, 1000], got {o.layout_choices}")
    o.mode = "tiny" if o.tiny else "quick" if o.quick else "full"
    o.cases_explicit = o.cases is not None
    cases = [
        c.strip()
        for c in (o.cases if o.cases is not None else ",".join(DEFAULT_CASES)).split(",")
        if c.strip()
    ]
    bad = [c for c in cases if c not in CASES]
    if bad or not cases:
        p.error(
            f"--cases: unknown case(s) {', '.join(bad) or '(none given)'}; "
            f"known: {', '.join(CASES)}"
        )
    if len(set(cases)) != len(cases):
        p.error("--cases: a case is listed twice")
    o.cases = cases
    names = [n for n, _ in o.ablate]
    if len(set(names)) != len(names):
        p.error("--ablate: row names must be unique")
    nproc = os.cpu_count() or 1
    if o.jobs < 0:
        p.error(f"--jobs must be >= 0, got {o.jobs}")
    o.jobs = o.jobs or nproc
    o.threads = max(1, nproc // o.jobs)
    o.segrank = os.path.abspath(o.segrank)
    if not (os.path.isfile(o.segrank) and os.access(o.segrank, os.X_OK)):
        p.error(
            f"--segrank: '{o.segrank}' is not an executable file "
            "(build it: cmake --build build --target segrank)"
        )
    o.work = o.work if os.path.isabs(o.work) else os.path.join(REPO, o.work)
    check_overrides(o, p)
    # The nearest existing ancestor of --work must be a directory (makedirs would raise otherwise).
    probe = o.work
    while not os.path.exists(probe) and os.path.dirname(probe) != probe:
        probe = os.path.dirname(probe)
    if not os.path.isdir(probe):
        p.error(f"--work: '{probe}' is not a directory")
    o.shared_data = (
        o.shared_data
        if os.path.isabs(o.shared_data)
        else os.path.normpath(os.path.join(REPO, o.shared_data))
    )
    for flag, path in (("--json-out", o.json_out), ("--markdown", o.markdown)):
        if path and not os.path.isdir(os.path.dirname(os.path.abspath(path))):
            p.error(f"{flag}: output directory of '{path}' does not exist")
        if path and os.path.lexists(path):
            try:
                check_output(path)  # a directory, FIFO or socket is refused before any work
            except OutputError as e:
                p.error(f"{flag}: {e}")
    return o


def main(argv):
    o = parse_args(argv)
    os.makedirs(os.path.join(o.work, "logs"), exist_ok=True)
    env = dict(os.environ)
    env.setdefault("GOMP_SPINCOUNT", "20000")
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
    except (
        Exception
    ) as e:  # noqa: BLE001 - every failure ends the same way: message, exit 1, no JSON
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
    doc = clean_json(doc)
    text = json.dumps(doc, indent=1)
    md = markdown(doc)
    try:  # the binary's output rules (scripts/atomic_output.py)
        if o.json_out:
            write_text_atomically(o.json_out, text + "\n")
        if o.markdown:
            write_text_atomically(o.markdown, md)
    except OutputError as e:
        sys.stderr.write(f"{PROG}: error: {e}\n")
        return 1
    sys.stderr.write("\n" + md)
    sys.stdout.write(text + "\n")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except KeyboardInterrupt:
        sys.stderr.write(f"{PROG}: interrupted\n")
        sys.exit(130)
