"""The benchmark's shared machinery (class Bench): the job pool, one training run and its stamps,
the baselines (hwmodel, random), the seed ensembles, the rows of a case's JSON, and the internal
cross-checks of the Python metrics against `segrank leaderboard` and `segrank evaluate`. Each case
lives in its own module under cases/ and is run by Bench.run_case."""

import concurrent.futures
import json
import math
import os

from .cases import real_layout_fixture, real_layout_official, real_tile, synth, transfer
from .common import BenchError
from .metrics import graph_metrics, mean_std, predicted_order, summarize, tau_b_of_order
from .npz import npz_targets
from .runner import collection_metrics, train_args
from .settings import TRANSFER_CASES


class JobPool:
    """What every benchmark (bench_quality.py, bench_tune.py) runs its cases with: the runner, the
    scratch folder `work` and a pool of `jobs` threads, each running one segrank command at a
    time."""

    def __init__(self, runner, work, jobs):
        self.r = runner
        self.work = work
        self.pool = concurrent.futures.ThreadPoolExecutor(max_workers=jobs)

    def case_dir(self, case, *parts):
        """<work>/case/parts..., created."""
        d = os.path.join(self.work, case, *parts)
        os.makedirs(d, exist_ok=True)
        return d

    def parallel(self, tasks):
        """Runs callables on the job pool; returns their results in order. The first failure
        cancels the rest (and every later segrank run: runner.cancelled) and is raised."""
        futures = [self.pool.submit(t) for t in tasks]
        try:
            return [f.result() for f in futures]
        except BaseException:
            self.r.cancelled.set()
            for f in futures:
                f.cancel()
            concurrent.futures.wait(futures)
            raise


class Bench(JobPool):
    """The state of one benchmark run shared by its cases: options, runner, job pool, the real
    data root and the cross-checks done so far (listed in the JSON)."""

    def __init__(self, opts, runner, shared):
        super().__init__(runner, opts.work, opts.jobs)
        self.o = opts
        self.shared = shared
        self.mode = opts.mode
        self.seeds = list(range(opts.seeds))
        self.random_seeds = list(range(opts.random_seeds))
        self.crosschecks = []
        self.cur_dir = (
            None  # the running case's folder: hwmodel() and random_baseline() write there
        )

    def variants(self):
        """The model row plus one row per --ablate: (name, extra overrides)."""
        out = [("model", list(self.o.set))]
        for name, kv in self.o.ablate:
            out.append((name, list(self.o.set) + kv))
        return out

    def train(self, case, variant, seed, config, overrides, run_dir, ctx):
        """`segrank train` of one row and seed into run_dir (stamped for --resume); returns (run
        info for the JSON: wall_s, reused, steps, steps_per_s, best_step, peak_rss_mb; the
        collection_metrics of report.json's final evaluation)."""
        args = train_args(config, overrides, run_dir, seed, self.o.threads)
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
        """`segrank hwmodel` submission (and --scores file) in the case folder; returns (its path,
        its leaderboard metrics)."""
        sub = os.path.join(self.cur_dir, "hwmodel.csv")
        args = ["hwmodel", "--data", data_root, "--split", split, "--out", sub]
        if scores:
            args += ["--scores", os.path.join(self.cur_dir, "hwmodel.scores.csv")]
        self.r.run(args, f"{ctx} hwmodel")
        return sub, self.r.leaderboard(truth, split, sub, f"{ctx} hwmodel")

    def baseline_summary(self, random_runs):
        """The random row: summarize() over the random seeds."""
        return summarize(random_runs)

    def finish_case(self, case, res, model_key="kendall"):
        """Adds the headline numbers of a case's JSON: each row's mean / std / per_seed of
        model_key, the baselines' values, fraction_of_ceiling and gap_to_ceiling, the ablations'
        paired deltas and the ensembles' gains."""
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
        """One row of the JSON from its per-seed runs."""
        return {
            "overrides": overrides,
            "metrics": summarize([r["metrics"] for r in runs]),
            "metrics_last": summarize([r["metrics_last"] for r in runs]),
            "runs": [r["run"] for r in runs],
        }

    def assemble(self, case, rows):
        """{"model": row, "ablations": {name: row}} from model_rows()' per-variant runs."""
        res = {}
        variants = dict(self.variants())
        res["model"] = self.row_of(rows["model"], variants["model"])
        if len(rows) > 1:
            res["ablations"] = {
                k: self.row_of(v, variants[k]) for k, v in rows.items() if k != "model"
            }
        return res

    def check(self, ctx, py, seg):
        """Python slowdowns against segrank leaderboard's (same graphs)."""
        for k in ("slowdown_1", "slowdown_5"):
            if abs(py[k] - seg[k]) > 1e-9 * max(1.0, abs(seg[k])):
                raise BenchError(
                    f"{ctx}: internal cross-check failed: {k} computed here {py[k]!r}, "
                    f"segrank leaderboard {seg[k]!r}"
                )
        self.crosschecks.append(f"{ctx}: slowdown_1/5 equal to segrank leaderboard")

    def predict_best(self, run_dir, split, ctx):
        """The scores of run_dir's best.ckpt.h5 on a split of its data (predict.csv and
        predict.scores.csv in run_dir), for the cross-checks."""
        return self.r.predict_scores(
            os.path.join(run_dir, "best.ckpt.h5"),
            split,
            os.path.join(run_dir, "predict.csv"),
            os.path.join(run_dir, "predict.scores.csv"),
            ctx + " cross-check predict",
        )

    def check_model_kendall(self, ctx, run_dir, split, truth_coll, coll, heldout_names=None):
        """Python Kendall on `predict --scores` of a model against `segrank evaluate`'s per
        graph."""
        sc = self.predict_best(run_dir, split, ctx)
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

    def check_model_kendall_heldout(self, ctx, run_dir, coll_dir):
        """Python Kendall and slowdown@1/5 on `predict --scores` of a real_tile fold's model
        against `segrank evaluate --heldout`'s, per held-out kernel."""
        sc = self.predict_best(run_dir, "train", ctx)
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

    def run_case(self, case):
        """Runs one case (a name of settings.CASES); returns its JSON object."""
        if case == "synth_layout":
            return synth.run(self, case, "layout", "configs/quickstart.toml", [])
        if case == "synth_tile":
            return synth.run(
                self,
                case,
                "tile",
                "configs/xla_fixture_tile.toml",
                ["data.ingest=[]", "data.holdout_folds=0"],
            )
        if case == "real_tile":
            return real_tile.run(self, case)
        if case == "real_layout_fixture":
            return real_layout_fixture.run(self, case)
        if case == "real_layout_official":
            return real_layout_official.run(self, case, "default")
        if case == "real_layout_official_random":
            return real_layout_official.run(self, case, "random")
        if case in TRANSFER_CASES:
            return transfer.TransferCase(self, case).run()
        raise BenchError(f"internal: unknown case {case}")
