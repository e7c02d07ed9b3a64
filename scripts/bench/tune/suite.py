"""bench_tune.py's shared machinery (class TuneBench, on bench_quality.py's job pool): training,
`segrank tune` and hwmodel runs, the fold training of the real cases, every strategy on one
recorded pool, and the summary of a case's per-graph rows. Each case family lives in its own module
(real, synth, search) and is run by TuneBench.run_case."""

import os
import shutil

from ..common import BenchError, log
from ..npz import npz_runtimes
from ..runner import train_args
from ..submission import read_scores
from ..suite import JobPool
from . import real, search, synth
from .curves import (
    best_curve_of_order,
    curve_hits,
    default_first,
    distinct_configs,
    graph_row,
    padded,
    random_expected_curve,
    random_expected_hits,
    summarize,
    tune_curve,
)
from .settings import BUDGETS, FOLDS, SIZES


class TuneBench(JobPool):
    """The state of one bench_tune.py run shared by its cases: options, runner, job pool, sizes and
    budgets, and the synthetic models (trained once for the synth_ and search_ case of a
    collection)."""

    def __init__(self, o, runner):
        super().__init__(runner, o.work, o.jobs)
        self.o = o
        self.shared = o.shared_data  # the real data root (--shared-data)
        self.size = SIZES[o.mode]
        self.budget = self.size["budget"]
        self.budgets = [n for n in BUDGETS if n <= self.budget]
        self.seeds = list(range(o.seeds))
        self.search_seeds = list(range(o.random_seeds))
        self.models = {}  # synth collection -> synth.Models

    # --- segrank runs
    def train(self, config, overrides, run_dir, seed, ctx):
        """`segrank train` of one run (seed: train.seed = sampling.seed); returns its
        best.ckpt.h5."""
        self.r.run(train_args(config, overrides, run_dir, seed, self.r.threads), ctx)
        return os.path.join(run_dir, "best.ckpt.h5")

    def tune(self, out, graph, budget, ctx, checkpoint=None, extra=()):
        """`segrank tune` of one graph into `out` (emptied first); returns (best-so-far curve of
        `budget` values, best.json)."""
        if os.path.exists(out):
            shutil.rmtree(out)
        args = ["tune", "--graph", graph, "--budget", budget, "--out", out, "--quiet"]
        args += ["--threads", self.r.threads]
        if checkpoint:
            args += ["--checkpoint", checkpoint]
        self.r.run(args + list(extra), ctx)
        return tune_curve(out, budget)

    def refit_args(self, mode):
        """The model strategies' tune arguments: rounds of --batch, --refit mode."""
        return ["--batch", self.o.batch, "--refit", mode, "--refit-steps", self.size["refit_steps"]]

    def hwmodel_scores(self, case, data, split):
        """`segrank hwmodel --scores` of a split into the case folder; returns the scores
        ({graph id: [score per config]})."""
        base = self.case_dir(case)
        hw = os.path.join(base, "hwmodel.scores.csv")
        args = ["hwmodel", "--data", data, "--split", split]
        args += ["--out", os.path.join(base, "hwmodel.csv"), "--scores", hw]
        self.r.run(args, f"case {case} hwmodel")
        return read_scores(hw)

    def train_folds(self, case, config, overrides_of, data_of, split, after_train=None):
        """Trains one model per seed and fold (overrides overrides_of(fold)) into
        <case>/runs/seed<S>_fold<F> and scores the split of data_of(fold) with it (`predict
        --scores`). after_train(ckpt, run_dir, ctx), when given, runs between the two. Returns
        [(seed, fold, checkpoint, scores, after_train's result)] in seed-major order."""
        base = self.case_dir(case)

        def fold_job(seed, fold):
            ctx = f"case {case} seed {seed} fold {fold}"
            run_dir = os.path.join(base, "runs", f"seed{seed}_fold{fold}")
            ckpt = self.train(config, overrides_of(fold), run_dir, seed, ctx)
            extra = after_train(ckpt, run_dir, ctx) if after_train else None
            scores = self.r.predict_scores(
                ckpt,
                split,
                os.path.join(run_dir, "predict.csv"),
                os.path.join(run_dir, "predict.scores.csv"),
                ctx + " predict",
                data=data_of(fold),
            )
            return seed, fold, ckpt, scores, extra

        tasks = [lambda s=s, f=f: fold_job(s, f) for s in self.seeds for f in range(FOLDS)]
        log(
            f"{case}: training {len(tasks)} runs ({len(self.seeds)} seeds x {FOLDS} folds), "
            f"{self.size[case]['steps']} steps each"
        )
        return self.parallel(tasks)

    def steps(self, case):
        """The train.steps and train.eval_every overrides of a case's size."""
        size = self.size[case]
        return [f"train.steps={size['steps']}", f"train.eval_every={size['eval_every']}"]

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
            return self.tune(
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

        def row(curve, hits=None):
            return graph_row(curve, default_ns, best_known, self.budgets, hits or curve_hits(curve))

        def order_row(order):  # measuring the pool in this order
            full = best_curve_of_order(rt, order, len(rt))
            return row(padded(full, budget), curve_hits(full))

        strat = {"default": [row([default_ns] * budget)]}
        strat["random"] = [
            row(random_expected_curve(rt, budget), lambda t: random_expected_hits(rt, t))
        ]
        rest = rt[:d] + rt[d + 1 :]
        strat["random+default"] = [
            row(
                [default_ns] + [min(default_ns, v) for v in random_expected_curve(rest, budget - 1)]
                if rest
                else [default_ns] * budget,
                lambda t: 1 if default_ns <= t else 1 + random_expected_hits(rest, t),
            )
        ]
        h_order = order_of(hw_scores)
        strat["hwmodel"] = [order_row(h_order)]
        strat["hwmodel+default"] = [order_row(default_first(h_order, d))]
        strat["model_oneshot"], strat["model_oneshot+default"], strat["model_refit"] = [], [], []
        for (seed, _, scores), (curve, _) in zip(model_runs, refits):
            m_order = order_of(scores)
            strat["model_oneshot"].append(order_row(m_order))
            strat["model_oneshot+default"].append(order_row(default_first(m_order, d)))
            strat["model_refit"].append(row(curve))
        out["strategies"] = strat
        return out

    def assemble(self, graphs):
        """Per strategy: the per-seed graph rows -> summary. Strategies with one row per graph
        (deterministic) have sd 0."""
        first = next(iter(graphs.values()))["strategies"]
        res = {"graphs": graphs, "strategies": {}}
        for name in first:
            k = len(first[name])
            per_seed = [{g: v["strategies"][name][s] for g, v in graphs.items()} for s in range(k)]
            res["strategies"][name] = summarize(per_seed, self.budgets, self.budget)
            res["strategies"][name]["runs"] = k
        return res

    def run_case(self, case):
        """Runs one case (a name of settings.CASES); returns its JSON object."""
        if case == "real_tile":
            return real.run_tile(self, case)
        if case == "real_layout":
            return real.run_layout(self, case)
        collection = case.split("_")[1]
        if case.startswith("synth_"):
            return synth.run(self, case, collection)
        return search.run(self, case, collection)
