#!/usr/bin/python3
"""Autotuning benchmark: how fast `segrank tune` finds fast configurations, against the compiler
default, random search, hwmodel's order and model-free searches, at budgets of 1, 2, 5, 10, 20,
50 and 100 measurements.

Prints ONE JSON object on stdout and a Markdown table on stderr (and in --markdown FILE); progress
goes to stderr. Python 3 standard library only; every runtime comes from the segrank binary (train,
predict, hwmodel, tune) or from the recorded runtimes of the graph files. docs/benchmarks.md
("Autotuning") explains the table, docs/tune.md the tuner.

Strategies (budget n = measurements taken):
  default        the compiler default alone (the reference of every speedup).
  random         recorded pools: the exact expectation of the best of n configs drawn uniformly
                 without replacement from the pool (closed form, no sampling);
                 search mode: `segrank tune --strategy random` (the default, then uniform draws of
                 the search space), --random-seeds seeds.
  anneal         search mode only: `segrank tune --strategy anneal` (simulated annealing from the
                 default, tune/search.h), --random-seeds seeds.
  hwmodel        recorded pools: the n configs `segrank hwmodel --scores` estimates fastest.
  X+default      recorded pools, X = random, hwmodel, model_oneshot: the default first, then X's
                 order without it (as every `segrank tune` run measures the default first).
  model_oneshot  recorded pools: the n configs `segrank predict --scores` ranks fastest (one shot,
                 no measurement feedback).
  model_norefit  search mode: `segrank tune --refit none --batch 5` (the generator still breeds
                 from the measured configs; the model is not refit).
  model_refit    `segrank tune --refit head --batch 5`: the default first, then rounds of 5 (4 best
                 ranked + 1 explored), the head refit on the measured runtimes before each round.
Model strategies run once per model seed (train.seed = sampling.seed = 0..N-1, --seeds).

A recorded pool is the graph's distinct config rows, each with its first recorded runtime (what
`--measure recorded` answers; a repeated row is one candidate of `segrank tune`).
Per graph and budget: best found / best known - 1 (slowdown, %), default / best found (speedup),
and the measurements needed to come within 1 % of the best known (recorded pools: the pool's
best; search mode: the best any run of any strategy found on that graph). Means over graphs per
seed, then mean +- sd over seeds.

Cases (default: all; --cases a,b,...). Sizes are "full / --quick":
  real_tile     the 15 TPU tile kernels of ../shared/data/xla_tuning/op_tuning_data.pb (`segrank
                ingest`); configs/xla_fixture_tile.toml, 5 folds over kernels, 300 / 100 steps:
                each kernel is tuned by the models of the fold that held it out (the model never
                saw it); `--measure recorded`.
  real_layout   the U-Net layout module of ../shared/data/xla_tuning/module_tuning_data_layout.pb
                (3163 nodes, 112 configs measured on TPU v3); configs/xla_fixture_layout.toml,
                300 / 100 steps, 5 folds over groups of identical config rows (the partition of
                bench_quality.py's real_layout_fixture): each fold's model tunes the pool of its
                held-out configs (`--measure recorded`). The file records no all-default layout,
                so the reference is the pool's config 0 (tune's rule, best.json's default_rule).
  synth_tile    `segrank synth --collections tile` (tpu_v3 labels, noise 0.03), configs/
                xla_fixture_tile.toml, 600 / 200 steps; the first 16 / 6 test kernels tuned over
                their recorded configs.
  synth_layout  `segrank synth --collections layout`, configs/quickstart.toml, 600 / 150 steps;
                the first 8 / 4 test graphs tuned over their recorded configs.
  search_tile   the synth_tile models (trained on tpu_v3 labels) tune the same test kernels in
                `--candidates search` mode measured by `--measure hwmodel:pipeline` (noise 0), a
                cost family they never saw.
  search_layout the same for the synth_layout graphs, measured by `hwmodel:propagate`.
--tiny: seconds-sized smoke test (the numbers mean nothing), budgets up to 10, 3 real kernels
tuned. (The kernels a fold holds out depend on the seed, so every fold is trained per seed.)

Examples:
  scripts/bench_tune.py --quick --markdown runs/bench_tune/table.md
  scripts/bench_tune.py --cases real_tile,search_layout --json-out runs/bench_tune/result.json
"""

import argparse
import concurrent.futures
import random
import shutil
import datetime
import json
import math
import os
import shlex
import statistics
import subprocess
import sys
import threading
import time


from bench.atomic_output import OutputError, check_output, write_text_atomically
from bench_quality import (
    FOLD_SEED,
    cpu_model,
    git_commit,
    list_graphs,
    npz_runtimes,
    read_npz,
    read_scores,
    take_rows,
    write_npz,
)

PROG = "bench_tune.py"
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCHEMA_VERSION = 1
CASES = ["real_tile", "real_layout", "synth_tile", "synth_layout", "search_tile", "search_layout"]
BUDGETS = [1, 2, 5, 10, 20, 50, 100]
WITHIN = 0.01  # "within 1 % of the best known"
BATCH = 5  # model strategies: configs per round
FOLDS = 5  # real_tile: configs/xla_fixture_tile.toml's folds over kernels
SEARCH_FAMILY = {"tile": "pipeline", "layout": "propagate"}
SYNTH_SEED = 0
SYNTH_NOISE = 0.03

SIZES = {
    "full": {
        "real_tile": {"steps": 300, "eval_every": 50},
        "real_layout": {"steps": 300, "eval_every": 50},
        "synth_tile": {
            "graphs": 128,
            "nodes": "20:500",
            "configs": 200,
            "splits": "0.625,0.125,0.25",
            "steps": 600,
            "eval_every": 100,
            "tuned": 16,
        },
        "synth_layout": {
            "graphs": 32,
            "nodes": "500:2500",
            "configs": 200,
            "splits": "0.625,0.125,0.25",
            "steps": 600,
            "eval_every": 100,
            "tuned": 8,
        },
        "budget": 100,
        "refit_steps": 200,
    },
    "quick": {
        "real_tile": {"steps": 100, "eval_every": 25},
        "real_layout": {"steps": 100, "eval_every": 25},
        "synth_tile": {
            "graphs": 48,
            "nodes": "20:300",
            "configs": 150,
            "splits": "0.667,0.083,0.25",
            "steps": 200,
            "eval_every": 50,
            "tuned": 6,
        },
        "synth_layout": {
            "graphs": 16,
            "nodes": "300:1000",
            "configs": 120,
            "splits": "0.625,0.125,0.25",
            "steps": 150,
            "eval_every": 50,
            "tuned": 4,
        },
        "budget": 100,
        "refit_steps": 100,
    },
    "tiny": {
        "real_tile": {"steps": 5, "eval_every": 5, "tuned": 3},
        "real_layout": {"steps": 5, "eval_every": 5},
        "synth_tile": {
            "graphs": 12,
            "nodes": "20:60",
            "configs": 16,
            "splits": "0.5,0.25,0.25",
            "steps": 10,
            "eval_every": 5,
            "tuned": 2,
        },
        "synth_layout": {
            "graphs": 8,
            "nodes": "100:300",
            "configs": 16,
            "splits": "0.5,0.25,0.25",
            "steps": 10,
            "eval_every": 5,
            "tuned": 2,
        },
        "budget": 10,
        "refit_steps": 5,
    },
}


class BenchError(Exception):
    pass


def log(msg):
    sys.stderr.write(f"[{time.strftime('%H:%M:%S')}] {msg}\n")
    sys.stderr.flush()


# ------------------------------------------------------------------------------------------------
# curves: best found after n measurements


def distinct_configs(npz):
    """(keep, group): keep = indices of the first config of each distinct row of a graph file (tile
    config_feat, layout node_config_feat; compared by value, -0 = 0, as tune's config_key);
    group[j] = the position in keep of config j's row."""
    m = read_npz(npz)
    feat = m["config_feat"] if "config_feat" in m else m["node_config_feat"]
    if feat.dtype.kind not in "fiu" or feat.ndim == 0:
        raise BenchError(f"{npz}: unexpected config array {feat.dtype.str} {feat.shape}")
    seen, keep, group = {}, [], []
    for j in range(feat.shape[0]):
        key = tuple(feat[j].ravel().tolist())  # by value: -0 == +0
        if key not in seen:
            seen[key] = len(keep)
            keep.append(j)
        group.append(seen[key])
    return keep, group


def default_first(order, d):
    """The order with config d (the default) moved to the front."""
    return [d] + [i for i in order if i != d]


def best_curve_of_order(runtimes, order, budget):
    """best[n-1] = fastest of runtimes[order[:n]], n = 1..budget (the last value repeats once the
    order is exhausted)."""
    out, best = [], math.inf
    for n in range(budget):
        if n < len(order):
            best = min(best, runtimes[order[n]])
        out.append(best)
    return out


def random_expected_curve(runtimes, budget):
    """E[min of n draws without replacement] for n = 1..budget: with the runtimes sorted
    v_1 <= ... <= v_M, P(min = v_i) = C(M - i, n - 1) / C(M, n)."""
    v = sorted(runtimes)
    m = len(v)
    out = []
    for n in range(1, budget + 1):
        k = min(n, m)
        total = math.comb(m, k)
        out.append(sum(v[i] * math.comb(m - 1 - i, k - 1) for i in range(m - k + 1)) / total)
    return out


def random_expected_hits(runtimes, target):
    """Expected draws until the first config within `target` (the position of the first of K good
    configs in a random permutation of M: (M + 1) / (K + 1))."""
    m = len(runtimes)
    k = sum(1 for r in runtimes if r <= target)
    return (m + 1) / (k + 1)


def curve_hits(curve):
    """hits(target) of a best-so-far curve (graph_row)."""
    return lambda target: first_within(curve, target)


def first_within(curve, target):
    """1-based index of the first best-so-far value <= target; None when never."""
    for i, b in enumerate(curve):
        if b <= target:
            return i + 1
    return None


def tune_curve(out_dir, budget):
    """The best-so-far runtime after each measurement of a `segrank tune` run (padded to `budget`
    with its last value when the run ended early: every config measured) and its best.json."""
    curve = []
    path = os.path.join(out_dir, "measurements.jsonl")
    try:
        with open(path) as f:
            for line in f:
                if line.strip():
                    b = json.loads(line).get("best_ns")
                    curve.append(math.inf if b is None else float(b))
        with open(os.path.join(out_dir, "best.json")) as f:
            best = json.load(f)
    except (OSError, ValueError) as e:
        raise BenchError(f"cannot read the tuning run in {out_dir}: {e}")
    if not curve:
        raise BenchError(f"{path}: no measurement")
    curve += [curve[-1]] * (budget - len(curve))
    return curve[:budget], best


def capped(n, budget):
    """n, or None (not within the budget) when n > budget."""
    return None if n is None or n > budget else n


def graph_row(curve, default_ns, best_known, budgets, hits):
    """One strategy's numbers on one graph; hits(target) = measurements until the best so far is
    <= target (None: never)."""
    return {
        "slowdown_pct": {
            str(n): 100.0 * (curve[n - 1] / best_known - 1.0) for n in budgets if n <= len(curve)
        },
        "speedup": {str(n): default_ns / curve[n - 1] for n in budgets if n <= len(curve)},
        "n_within_1pct": capped(hits(best_known * (1 + WITHIN)), budgets[-1]),
        "n_to_best": capped(hits(best_known), budgets[-1]),
    }


def mean_sd(values):
    vals = [v for v in values if v is not None and not math.isnan(v)]
    if not vals:
        return {"mean": None, "sd": None, "n": 0}
    return {
        "mean": statistics.fmean(vals),
        "sd": statistics.stdev(vals) if len(vals) > 1 else 0.0,
        "n": len(vals),
    }


def summarize(per_seed_graphs, budgets, cap):
    """per_seed_graphs: [ {graph: row} per seed ] -> per budget mean +- sd over seeds of the mean
    over graphs; n_within_1pct (n_to_best) counts a graph that never came within 1 % of (never
    reached) the best known as `cap` + 1, and `reached_min` says on how many graphs every seed
    did."""
    out = {"slowdown_pct": {}, "speedup": {}, "worse_than_default": {}}
    for n in budgets:
        k = str(n)
        out["slowdown_pct"][k] = mean_sd(
            [statistics.fmean(g["slowdown_pct"][k] for g in s.values()) for s in per_seed_graphs]
        )
        out["speedup"][k] = mean_sd(
            [statistics.fmean(g["speedup"][k] for g in s.values()) for s in per_seed_graphs]
        )
        out["worse_than_default"][k] = max(
            sum(1 for g in s.values() if g["speedup"][k] < 1 - 1e-12) for s in per_seed_graphs
        )
    for key in ("n_within_1pct", "n_to_best"):
        nw = []
        reached = []
        for s in per_seed_graphs:
            vals = [g[key] for g in s.values()]
            reached.append(sum(1 for v in vals if v is not None))
            nw.append(statistics.fmean(cap + 1 if v is None else v for v in vals))
        out[key] = mean_sd(nw)
        out[key]["reached_min"] = min(reached)
    out["graphs"] = len(per_seed_graphs[0])
    return out


# ------------------------------------------------------------------------------------------------
# running segrank


class Runner:
    def __init__(self, segrank, work, threads, env):
        self.segrank = segrank
        self.work = work
        self.threads = threads
        self.env = env
        self.lock = threading.Lock()
        self.log_path = os.path.join(work, "commands.log")
        self.cancelled = threading.Event()

    def run(self, args, ctx):
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
                cwd=REPO,
                env=self.env,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                errors="replace",
            )
        except OSError as e:
            raise BenchError(f"{ctx}: cannot run {text}: {e}")
        wall = time.monotonic() - t0
        if p.returncode != 0:
            tail = "\n".join((p.stderr.strip() or p.stdout.strip()).splitlines()[-15:])
            raise BenchError(
                f"{ctx}: segrank failed (exit {p.returncode}) after {wall:.1f} s\n"
                f"  command: {text}\n  stderr (last lines):\n    " + tail.replace("\n", "\n    ")
            )
        return p

    def train(self, config, overrides, run_dir, seed, ctx):
        args = ["train", "--config", config, "--overwrite"]
        for kv in overrides + [
            f"train.run_dir={run_dir}",
            f"train.seed={seed}",
            f"sampling.seed={seed}",
            "train.progress=false",
            f"train.threads={self.threads}",
        ]:
            args += ["--set", kv]
        self.run(args, ctx)
        return os.path.join(run_dir, "best.ckpt.h5")

    def tune(self, out, graph, budget, ctx, checkpoint=None, extra=()):
        if os.path.exists(out):
            shutil.rmtree(out)
        args = ["tune", "--graph", graph, "--budget", budget, "--out", out, "--quiet"]
        args += ["--threads", self.threads]
        if checkpoint:
            args += ["--checkpoint", checkpoint]
        self.run(args + list(extra), ctx)
        return tune_curve(out, budget)


# ------------------------------------------------------------------------------------------------
# the benchmark


class Bench:
    def __init__(self, o, runner):
        self.o = o
        self.r = runner
        self.size = SIZES[o.mode]
        self.budget = self.size["budget"]
        self.budgets = [n for n in BUDGETS if n <= self.budget]
        self.seeds = list(range(o.seeds))
        self.search_seeds = list(range(o.random_seeds))
        self.pool = concurrent.futures.ThreadPoolExecutor(max_workers=o.jobs)
        self.models = {}  # synth collection -> (data dir, [checkpoint per seed], tuned graphs)

    def parallel(self, tasks):
        futures = [self.pool.submit(t) for t in tasks]
        try:
            return [f.result() for f in futures]
        except BaseException:
            self.r.cancelled.set()
            for f in futures:
                f.cancel()
            concurrent.futures.wait(futures)
            raise

    def case_dir(self, case, *parts):
        d = os.path.join(self.o.work, case, *parts)
        os.makedirs(d, exist_ok=True)
        return d

    def refit_args(self, mode):
        return [
            "--batch",
            BATCH,
            "--refit",
            mode,
            "--refit-steps",
            self.size["refit_steps"],
        ]

    # --- recorded pools: one graph, every strategy
    def recorded_graph(self, case, gid, npz, hw_scores, model_runs, ctx):
        """Curves of every strategy on one graph's recorded pool. model_runs: [(seed, checkpoint,
        model scores of the graph)]."""
        all_rt = [float(x) for x in npz_runtimes(npz)]
        if not all_rt or min(all_rt) <= 0:
            raise BenchError(f"{ctx}: {npz} has no positive recorded runtimes")
        # The pool: the distinct config rows, each with its first runtime (what `--measure
        # recorded` answers for a repeated row; tune measures such a row once).
        keep, group = distinct_configs(npz)
        rt = [all_rt[i] for i in keep]
        best_known = min(rt)
        budget = self.budget
        base = self.case_dir(case, "tune", gid)
        out = {"num_configs": len(all_rt), "distinct_configs": len(rt), "best_known_ns": best_known}

        def order_of(scores):
            if len(scores) != len(all_rt):
                raise BenchError(f"{ctx}: {len(scores)} scores for {len(all_rt)} configs of {npz}")
            return sorted(range(len(rt)), key=lambda i: (scores[keep[i]], keep[i]))

        def refit_job(seed, ckpt):
            return self.r.tune(
                os.path.join(base, f"model_refit_seed{seed}"),
                npz,
                budget,
                f"{ctx} model_refit seed {seed}",
                ckpt,
                ["--measure", "recorded", "--seed", seed] + self.refit_args("head"),
            )

        refits = self.parallel([lambda s=s, c=c: refit_job(s, c) for s, c, _ in model_runs])
        default_ns = refits[0][1]["default_runtime_ns"]
        if default_ns is None:
            raise BenchError(f"{ctx}: the default of {npz} could not be measured")
        out["default_ns"] = default_ns
        out["default_config"] = refits[0][1]["default_config"]
        d = group[out["default_config"]]
        if rt[d] != default_ns:
            raise BenchError(
                f"{ctx}: tune measured the default {default_ns} ns, the pool has {rt[d]}"
            )
        strat = {}
        d_curve = [default_ns] * budget
        strat["default"] = [
            graph_row(d_curve, default_ns, best_known, self.budgets, curve_hits(d_curve))
        ]
        r_curve = random_expected_curve(rt, budget)
        r_row = graph_row(
            r_curve, default_ns, best_known, self.budgets, lambda t: random_expected_hits(rt, t)
        )
        strat["random"] = [r_row]
        rest = rt[:d] + rt[d + 1 :]
        strat["random+default"] = [
            graph_row(
                [default_ns] + [min(default_ns, v) for v in random_expected_curve(rest, budget - 1)]
                if rest
                else [default_ns] * budget,
                default_ns,
                best_known,
                self.budgets,
                lambda t: 1 if default_ns <= t else 1 + random_expected_hits(rest, t),
            )
        ]
        h_order = order_of(hw_scores)
        h_curve = best_curve_of_order(rt, h_order, budget)
        full = best_curve_of_order(rt, h_order, len(rt))
        strat["hwmodel"] = [
            graph_row(h_curve, default_ns, best_known, self.budgets, curve_hits(full))
        ]
        hd = best_curve_of_order(rt, default_first(h_order, d), len(rt))
        strat["hwmodel+default"] = [
            graph_row(
                hd[:budget] + [hd[-1]] * (budget - len(hd)),
                default_ns,
                best_known,
                self.budgets,
                curve_hits(hd),
            )
        ]
        strat["model_oneshot"], strat["model_oneshot+default"], strat["model_refit"] = [], [], []
        for (seed, _, scores), (curve, _) in zip(model_runs, refits):
            m_order = order_of(scores)
            strat["model_oneshot"].append(
                graph_row(
                    best_curve_of_order(rt, m_order, budget),
                    default_ns,
                    best_known,
                    self.budgets,
                    curve_hits(best_curve_of_order(rt, m_order, len(rt))),
                )
            )
            md = best_curve_of_order(rt, default_first(m_order, d), len(rt))
            strat["model_oneshot+default"].append(
                graph_row(
                    md[:budget] + [md[-1]] * (budget - len(md)),
                    default_ns,
                    best_known,
                    self.budgets,
                    curve_hits(md),
                )
            )
            strat["model_refit"].append(
                graph_row(curve, default_ns, best_known, self.budgets, curve_hits(curve))
            )
        out["strategies"] = strat
        return out

    def assemble(self, case, graphs, search=False):
        """Per strategy: the per-seed graph rows -> summary. Strategies with one row per graph
        (deterministic) have sd 0."""
        names = list(next(iter(graphs.values()))["strategies"])
        res = {"graphs": graphs, "strategies": {}}
        for name in names:
            k = len(next(iter(graphs.values()))["strategies"][name])
            per_seed = [{g: v["strategies"][name][s] for g, v in graphs.items()} for s in range(k)]
            res["strategies"][name] = summarize(per_seed, self.budgets, self.budget)
            res["strategies"][name]["runs"] = k
        return res

    # --- cases
    def case_real_tile(self, case):
        size = self.size[case]
        base = self.case_dir(case)
        pb = os.path.join(self.o.shared_data, "xla_tuning", "op_tuning_data.pb")
        data = os.path.join(base, "data")
        self.r.run(["ingest", pb, "--out", data, "--force"], f"case {case} ingest")
        coll_dir = os.path.join(data, "npz", "tile", "xla")
        split_dir = os.path.join(coll_dir, "train")
        kernels = list_graphs(split_dir)
        overrides = [
            f"data.root={data}",
            "data.ingest=[]",
            "data.holdout_folds=5",
            f"train.steps={size['steps']}",
            f"train.eval_every={size['eval_every']}",
        ]

        def fold_job(seed, fold):
            ctx = f"case {case} seed {seed} fold {fold}"
            run_dir = os.path.join(base, "runs", f"seed{seed}_fold{fold}")
            ckpt = self.r.train(
                "configs/xla_fixture_tile.toml",
                overrides + [f"data.holdout_fold={fold}"],
                run_dir,
                seed,
                ctx,
            )
            ev = os.path.join(run_dir, "eval_heldout.json")
            self.r.run(
                [
                    "evaluate",
                    "--checkpoint",
                    ckpt,
                    "--heldout",
                    "--json",
                    ev,
                    "--threads",
                    self.r.threads,
                ],
                ctx + " evaluate --heldout",
            )
            with open(ev) as f:
                held = [g["graph"] for g in json.load(f)["graphs"]]
            sc = os.path.join(run_dir, "predict.scores.csv")
            self.r.run(
                [
                    "predict",
                    "--checkpoint",
                    ckpt,
                    "--split",
                    "train",
                    "--data",
                    data,
                    "--out",
                    os.path.join(run_dir, "predict.csv"),
                    "--scores",
                    sc,
                    "--threads",
                    self.r.threads,
                ],
                ctx + " predict",
            )
            return seed, fold, ckpt, held, read_scores(sc)

        tasks = [lambda s=s, f=f: fold_job(s, f) for s in self.seeds for f in range(FOLDS)]
        log(
            f"{case}: training {len(tasks)} runs ({len(self.seeds)} seeds x "
            f"{FOLDS} folds), {size['steps']} steps each"
        )
        folds = self.parallel(tasks)
        hw = os.path.join(base, "hwmodel.scores.csv")
        self.r.run(
            [
                "hwmodel",
                "--data",
                data,
                "--split",
                "train",
                "--out",
                os.path.join(base, "hwmodel.csv"),
                "--scores",
                hw,
            ],
            f"case {case} hwmodel",
        )
        hs = read_scores(hw)
        runs_of = {}
        for seed, fold, ckpt, held, scores in folds:
            for k in held:
                runs_of.setdefault(k, []).append((seed, ckpt, scores["tile:xla:" + k]))
        if sorted(runs_of) != kernels or any(len(v) != len(self.seeds) for v in runs_of.values()):
            raise BenchError(
                f"case {case}: the folds of each seed did not hold out every kernel "
                f"once: {sorted((k, len(v)) for k, v in runs_of.items())}"
            )
        tuned = kernels[: size.get("tuned", len(kernels))]
        graphs = {}
        for k in tuned:
            runs = sorted(runs_of[k])
            if [s for s, _, _ in runs] != self.seeds:
                raise BenchError(
                    f"case {case}: kernel {k} held out by seeds "
                    f"{[s for s, _, _ in runs]}, expected {self.seeds}"
                )
            log(f"{case}: tuning {k}")
            graphs[k] = self.recorded_graph(
                case,
                k,
                os.path.join(split_dir, k + ".npz"),
                hs["tile:xla:" + k],
                runs,
                f"case {case} {k}",
            )
        return self.assemble(case, graphs)

    def case_real_layout(self, case):
        size = self.size[case]
        base = self.case_dir(case)
        pb = os.path.join(self.o.shared_data, "xla_tuning", "module_tuning_data_layout.pb")
        data = os.path.join(base, "data")
        self.r.run(["ingest", pb, "--out", data, "--force"], f"case {case} ingest")
        rel = ("npz", "layout", "xla", "random")
        src_dir = os.path.join(data, *rel, "train")
        names = list_graphs(src_dir)
        if len(names) != 1:
            raise BenchError(f"case {case}: expected one layout module in {src_dir}, found {names}")
        name = names[0]
        m = read_npz(os.path.join(src_dir, name + ".npz"))
        feat = m["node_config_feat"]
        c = feat.shape[0]
        # The folds of bench_quality.py's real_layout_fixture: groups of identical rows (by value),
        # sorted by first index, shuffled with FOLD_SEED, dealt round robin.
        groups = {}
        for j in range(c):
            key = tuple(feat[j].ravel().tolist()) if feat.dtype.kind == "f" else feat[j].tobytes()
            groups.setdefault(key, []).append(j)
        glist = sorted(groups.values())
        random.Random(FOLD_SEED).shuffle(glist)
        fold_of = {j: pos % FOLDS for pos, g in enumerate(glist) for j in g}
        pool_root = os.path.join(base, "pools")
        shutil.rmtree(pool_root, ignore_errors=True)
        for f in range(FOLDS):
            root = os.path.join(base, f"fold{f}")
            shutil.rmtree(root, ignore_errors=True)
            for split, rows_ in (
                ("train", [j for j in range(c) if fold_of[j] != f]),
                ("valid", [j for j in range(c) if fold_of[j] == f]),
            ):
                mem = dict(m)
                mem["node_config_feat"] = take_rows(m["node_config_feat"], rows_, name)
                mem["config_runtime"] = take_rows(m["config_runtime"], rows_, name)
                fname = name if split == "train" else f"{name}_fold{f}"
                write_npz(os.path.join(root, *rel, split, fname + ".npz"), mem)
                if split == "valid":
                    write_npz(os.path.join(pool_root, *rel, "valid", fname + ".npz"), mem)
        common = [
            "data.ingest=[]",
            'data.holdout="graphs"',
            'data.collections=["layout:xla:random"]',
            f"train.steps={size['steps']}",
            f"train.eval_every={size['eval_every']}",
        ]

        def fold_job(seed, fold):
            ctx = f"case {case} seed {seed} fold {fold}"
            run_dir = os.path.join(base, "runs", f"seed{seed}_fold{fold}")
            root = os.path.join(base, f"fold{fold}")
            ckpt = self.r.train(
                "configs/xla_fixture_layout.toml",
                [f"data.root={root}"] + common,
                run_dir,
                seed,
                ctx,
            )
            sc = os.path.join(run_dir, "predict.scores.csv")
            self.r.run(
                [
                    "predict",
                    "--checkpoint",
                    ckpt,
                    "--split",
                    "valid",
                    "--data",
                    root,
                    "--out",
                    os.path.join(run_dir, "predict.csv"),
                    "--scores",
                    sc,
                    "--threads",
                    self.r.threads,
                ],
                ctx + " predict",
            )
            return seed, fold, ckpt, read_scores(sc)

        tasks = [lambda s=s, f=f: fold_job(s, f) for s in self.seeds for f in range(FOLDS)]
        log(
            f"{case}: training {len(tasks)} runs ({len(self.seeds)} seeds x {FOLDS} folds), "
            f"{size['steps']} steps each"
        )
        runs = self.parallel(tasks)
        hw = os.path.join(base, "hwmodel.scores.csv")
        self.r.run(
            [
                "hwmodel",
                "--data",
                pool_root,
                "--split",
                "valid",
                "--out",
                os.path.join(base, "hwmodel.csv"),
                "--scores",
                hw,
            ],
            f"case {case} hwmodel",
        )
        hs = read_scores(hw)
        graphs = {}
        for f in range(FOLDS):
            gname = f"{name}_fold{f}"
            gid = f"layout:xla:random:{gname}"
            fr = sorted((s, ck, sc[gid]) for s, fo, ck, sc in runs if fo == f)
            log(f"{case}: tuning the held-out configs of fold {f}")
            graphs[gname] = self.recorded_graph(
                case,
                gname,
                os.path.join(pool_root, *rel, "valid", gname + ".npz"),
                hs[gid],
                fr,
                f"case {case} fold {f}",
            )
        return self.assemble(case, graphs)

    def synth_models(self, collection):
        """Synthesizes the collection, trains one model per seed (tpu_v3 labels), returns
        (data dir, test split dir, [checkpoint per seed], tuned graph names)."""
        if collection in self.models:
            return self.models[collection]
        case = "synth_" + collection
        size = self.size[case]
        base = self.case_dir(case)
        data = os.path.join(base, "data")
        self.r.run(
            [
                "synth",
                "--out",
                data,
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
                SYNTH_NOISE,
                "--splits",
                size["splits"],
                "--force",
                "-q",
            ],
            f"case {case} synth",
        )
        if collection == "tile":
            config, coll, rel = "configs/xla_fixture_tile.toml", "tile:xla", ("tile", "xla")
            extra = ["data.ingest=[]", "data.holdout_folds=0"]
        else:
            config, coll = "configs/quickstart.toml", "layout:xla:random"
            rel, extra = ("layout", "xla", "random"), []
        test_dir = os.path.join(data, "npz", *rel, "test")
        tuned = list_graphs(test_dir)[: size["tuned"]]
        overrides = [
            f"data.root={data}",
            f'data.collections=["{coll}"]',
            f"train.steps={size['steps']}",
            f"train.eval_every={size['eval_every']}",
        ] + extra
        log(f"{case}: training {len(self.seeds)} models, {size['steps']} steps each")
        ckpts = self.parallel(
            [
                lambda s=s: self.r.train(
                    config,
                    overrides,
                    os.path.join(base, "runs", f"seed{s}"),
                    s,
                    f"case {case} seed {s}",
                )
                for s in self.seeds
            ]
        )
        self.models[collection] = (data, test_dir, ckpts, tuned, coll)
        return self.models[collection]

    def case_synth(self, case, collection):
        data, test_dir, ckpts, tuned, coll = self.synth_models(collection)
        base = self.case_dir(case)
        hw = os.path.join(base, "hwmodel.scores.csv")
        self.r.run(
            [
                "hwmodel",
                "--data",
                data,
                "--split",
                "test",
                "--out",
                os.path.join(base, "hwmodel.csv"),
                "--scores",
                hw,
            ],
            f"case {case} hwmodel",
        )
        hs = read_scores(hw)
        ms = []
        for s, ckpt in zip(self.seeds, ckpts):
            sc = os.path.join(base, f"predict_seed{s}.scores.csv")
            self.r.run(
                [
                    "predict",
                    "--checkpoint",
                    ckpt,
                    "--split",
                    "test",
                    "--data",
                    data,
                    "--out",
                    os.path.join(base, f"predict_seed{s}.csv"),
                    "--scores",
                    sc,
                    "--threads",
                    self.r.threads,
                ],
                f"case {case} seed {s} predict",
            )
            ms.append(read_scores(sc))
        graphs = {}
        for g in tuned:
            gid = f"{coll}:{g}"
            if gid not in hs or any(gid not in m for m in ms):
                raise BenchError(f"case {case}: no scores for {gid}")
            log(f"{case}: tuning {g}")
            runs = [(s, c, m[gid]) for s, c, m in zip(self.seeds, ckpts, ms)]
            graphs[g] = self.recorded_graph(
                case, g, os.path.join(test_dir, g + ".npz"), hs[gid], runs, f"case {case} {g}"
            )
        return self.assemble(case, graphs)

    def case_search(self, case, collection):
        data, test_dir, ckpts, tuned, _ = self.synth_models(collection)
        family = SEARCH_FAMILY[collection]
        measure = ["--measure", f"hwmodel:{family}", "--noise", "0"]
        budget = self.budget
        graphs = {}
        for g in tuned:
            ctx = f"case {case} {g}"
            npz = os.path.join(test_dir, g + ".npz")
            base = self.case_dir(case, "tune", g)
            log(f"{case}: tuning {g} (measured by hwmodel:{family})")
            jobs, keys = [], []
            for s, ckpt in zip(self.seeds, ckpts):
                for name, mode in (("model_norefit", "none"), ("model_refit", "head")):
                    jobs.append(
                        lambda s=s, c=ckpt, n=name, m=mode: self.r.tune(
                            os.path.join(base, f"{n}_seed{s}"),
                            npz,
                            budget,
                            f"{ctx} {n} seed {s}",
                            c,
                            measure + ["--candidates", "search", "--seed", s] + self.refit_args(m),
                        )
                    )
                    keys.append((name, s))
            for s in self.search_seeds:
                for name in ("random", "anneal"):
                    jobs.append(
                        lambda s=s, n=name: self.r.tune(
                            os.path.join(base, f"{n}_seed{s}"),
                            npz,
                            budget,
                            f"{ctx} {n} seed {s}",
                            None,
                            measure + ["--strategy", n, "--seed", s, "--batch", BATCH],
                        )
                    )
                    keys.append((name, s))
            results = self.parallel(jobs)
            defaults = {r[1]["default_runtime_ns"] for r in results}
            if len(defaults) != 1 or None in defaults:
                raise BenchError(f"{ctx}: the runs measured the default differently: {defaults}")
            default_ns = defaults.pop()
            best_known = min(min(c) for c, _ in results)
            strat = {
                "default": [
                    graph_row(
                        [default_ns] * budget,
                        default_ns,
                        best_known,
                        self.budgets,
                        curve_hits([default_ns]),
                    )
                ]
            }
            for (name, _), (curve, _) in zip(keys, results):
                strat.setdefault(name, []).append(
                    graph_row(curve, default_ns, best_known, self.budgets, curve_hits(curve))
                )
            graphs[g] = {
                "default_ns": default_ns,
                "best_known_ns": best_known,
                "best_known_speedup": default_ns / best_known,
                "has_speedup": best_known < default_ns * (1 - 1e-9),
                "strategies": {
                    k: strat[k]
                    for k in ("default", "random", "anneal", "model_norefit", "model_refit")
                },
            }
        res = self.assemble(case, graphs, search=True)
        res["measure"] = f"hwmodel:{family}"
        res["graphs_with_speedup"] = sum(1 for v in graphs.values() if v["has_speedup"])
        # Of the graphs where some run beat the default: on how many does each run of a strategy
        # beat it at the largest budget (the fewest over its seeds)?
        last = str(self.budgets[-1])
        found = {}
        for name in res["strategies"]:
            found[name] = min(
                sum(
                    1
                    for v in graphs.values()
                    if v["has_speedup"] and v["strategies"][name][s]["speedup"][last] > 1 + 1e-9
                )
                for s in range(len(next(iter(graphs.values()))["strategies"][name]))
            )
        res["speedup_found_at_max_budget"] = found
        return res

    def run_case(self, case):
        if case == "real_tile":
            return self.case_real_tile(case)
        if case == "real_layout":
            return self.case_real_layout(case)
        if case in ("synth_tile", "synth_layout"):
            return self.case_synth(case, case.split("_")[1])
        return self.case_search(case, case.split("_")[1])


# ------------------------------------------------------------------------------------------------
# output


def fmt_ms(d, digits=1):
    if d is None or d.get("mean") is None:
        return "-"
    if d.get("sd"):
        return f"{d['mean']:.{digits}f} ± {d['sd']:.{digits}f}"
    return f"{d['mean']:.{digits}f}"


def markdown(doc):
    lines = []
    for case, res in doc["cases"].items():
        budgets = [int(b) for b in next(iter(res["strategies"].values()))["speedup"]]
        g = next(iter(res["strategies"].values()))["graphs"]
        what = f", measured by {res['measure']}" if "measure" in res else ""
        lines.append(f"\n### {case} ({g} graphs{what})\n")
        lines.append(
            "Slowdown of the best found vs the best known, % (mean over graphs; ± sd over "
            "seeds); measurements to come within 1 % of / to reach the best known (a graph where "
            "a run never did counts as max n + 1; (k/N): only k graphs reached by every seed):\n"
        )
        head = (
            "| strategy | "
            + " | ".join(f"n={b}" for b in budgets)
            + " | n to within 1 % | n to the best |"
        )
        lines += [head, "|---" * (len(budgets) + 3) + "|"]

        def nfmt(d, graphs):
            reach = f" ({d['reached_min']}/{graphs})" if d["reached_min"] < graphs else ""
            return fmt_ms(d) + reach

        for name, s in res["strategies"].items():
            lines.append(
                f"| {name} | "
                + " | ".join(fmt_ms(s["slowdown_pct"][str(b)], 2) for b in budgets)
                + f" | {nfmt(s['n_within_1pct'], s['graphs'])}"
                + f" | {nfmt(s['n_to_best'], s['graphs'])} |"
            )
        lines.append("\nSpeedup over the default (mean over graphs):\n")
        head = (
            "| strategy | "
            + " | ".join(f"n={b}" for b in budgets)
            + " | worse than default at max n |"
        )
        lines += [head, "|---" * (len(budgets) + 2) + "|"]
        for name, s in res["strategies"].items():
            lines.append(
                f"| {name} | "
                + " | ".join(fmt_ms(s["speedup"][str(b)], 3) for b in budgets)
                + f" | {s['worse_than_default'][str(budgets[-1])]} |"
            )
        if "graphs_with_speedup" in res:
            lines.append(
                f"\nGraphs where some run beat the default: {res['graphs_with_speedup']}"
                f"/{g}; the fewest of these one run (seed) of each strategy beat at "
                f"n={budgets[-1]}: "
                + ", ".join(f"{k} {v}" for k, v in res["speedup_found_at_max_budget"].items())
            )
    return "\n".join(lines).lstrip("\n") + "\n"


def clean_json(x):
    if isinstance(x, float):
        return None if (math.isnan(x) or math.isinf(x)) else x
    if isinstance(x, dict):
        return {k: clean_json(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [clean_json(v) for v in x]
    return x


def parse_args(argv):
    doc = __doc__
    p = argparse.ArgumentParser(
        prog=PROG,
        description=doc.split("\n\n")[0],
        epilog="\n\n".join(doc.split("\n\n")[1:]),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "--segrank",
        default=os.path.join(REPO, "build", "cli", "segrank"),
        help="segrank binary (default build/cli/segrank)",
    )
    p.add_argument("--quick", action="store_true", help="smaller sizes (minutes on 2 cores)")
    p.add_argument(
        "--tiny", action="store_true", help="smoke-test sizes (seconds; the numbers mean nothing)"
    )
    p.add_argument(
        "--seeds",
        type=int,
        default=3,
        help="model seeds, >= 2 (default 3): train.seed = sampling.seed = 0..N-1",
    )
    p.add_argument(
        "--random-seeds",
        type=int,
        default=3,
        help="search mode: seeds of --strategy random / anneal, >= 2 (default 3)",
    )
    p.add_argument(
        "--cases", default=None, help="comma list of cases (default: all: " + ", ".join(CASES) + ")"
    )
    p.add_argument(
        "--work",
        default=os.path.join("runs", "bench_tune"),
        help="scratch directory (default runs/bench_tune, relative to the repository)",
    )
    p.add_argument(
        "--shared-data",
        default=os.path.join("..", "shared", "data"),
        help="real data root (default ../shared/data, relative to the repository)",
    )
    p.add_argument("--jobs", type=int, default=0, help="segrank runs at a time (default: nproc)")
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
    o.mode = "tiny" if o.tiny else "quick" if o.quick else "full"
    cases = [c.strip() for c in (o.cases or ",".join(CASES)).split(",") if c.strip()]
    bad = [c for c in cases if c not in CASES]
    if bad or not cases:
        p.error(
            f"--cases: unknown case(s) {', '.join(bad) or '(none given)'}; "
            f"known: {', '.join(CASES)}"
        )
    if len(set(cases)) != len(cases):
        p.error("--cases: a case is listed twice")
    o.cases = cases
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
    for path in (o.json_out, o.markdown):
        if path and not os.path.isdir(os.path.dirname(os.path.abspath(path))):
            p.error(f"output directory of '{path}' does not exist")
        if path and os.path.lexists(path):
            try:
                check_output(path)
            except OutputError as e:
                p.error(str(e))
    return o


def main(argv):
    o = parse_args(argv)
    os.makedirs(o.work, exist_ok=True)
    env = dict(os.environ)
    env.setdefault("GOMP_SPINCOUNT", "20000")
    runner = Runner(o.segrank, o.work, o.threads, env)
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
            "batch": BATCH,
            "within": WITHIN,
            "sizes": SIZES[o.mode],
            "search_family": SEARCH_FAMILY,
            "seeds": o.seeds,
            "random_seeds": o.random_seeds,
        },
        "cases": {},
    }
    bench = Bench(o, runner)
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
    doc = clean_json(doc)
    text = json.dumps(doc, indent=1)
    md = markdown(doc)
    try:
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
