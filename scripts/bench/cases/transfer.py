"""transfer_layout and transfer_tile (only when listed in --cases): leave one cost family of
`segrank synth --cost` out, train on the others, score the held-out family's test graphs beside
hwmodel, random and its ceiling (docs/benchmarks.md#transfer)."""

import math
import os
import shutil
import statistics

from ..common import log
from ..metrics import aggregate, graph_metrics, mean_std, predicted_order, summarize
from ..npz import list_graphs, npz_targets
from ..settings import SIZES, SYNTH_NOISE
from ..submission import read_scores

# Cost families of `segrank synth --cost` (docs/hwmodel.md#cost-families). Every fold trains on the
# collections of tpu_v3 and of the other families of its task and scores the held-out family.
TRANSFER_FAMILIES = {
    "layout": ["propagate", "copy_bound", "mxu_padded", "memory_v5", "fusion_aware"],
    "tile": ["vmem_spill", "pipeline", "step_overhead"],
}
# A training family of every fold, never held out (docs/benchmarks.md#transfer).
TRANSFER_ALWAYS_TRAIN = "tpu_v3"
# Family i (tpu_v3 first) is synthesized with seed TRANSFER_SEED + i: its own graphs.
TRANSFER_SEED = 100


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

    def cross_dir(self, heldout, cost):
        """The held-out family's graphs (its seed) labelled noise-free by another family's cost."""
        return os.path.join(self.base, "data", f"{heldout}_as_{cost}")

    def synthesize(self):
        jobs = []
        for i, fam in enumerate(self.families):
            seed = TRANSFER_SEED + i
            outs = []
            for clean in [False, True] if fam != TRANSFER_ALWAYS_TRAIN else [False]:
                outs.append((self.data_dir(fam, clean), fam, 0 if clean else SYNTH_NOISE, clean))
            if fam != TRANSFER_ALWAYS_TRAIN:
                # The training costs' own labels of this family's graphs: the reference
                # "best training cost" (docs/benchmarks.md#transfer).
                outs += [(self.cross_dir(fam, c), c, 0, True) for c in self.families if c != fam]
            for out, cost, noise, clean in outs:

                def job(out=out, noise=noise, cost=cost, seed=seed, clean=clean, fam=fam):
                    s = self.size
                    self.r.run(
                        [
                            "synth",
                            "--out",
                            out,
                            "--collections",
                            self.task,
                            "--cost",
                            cost,
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
                        f"{self.case} synth {fam}"
                        + (f" as {cost}" if cost != fam else "")
                        + (" clean" if clean else ""),
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
        out["training_costs"] = self.training_costs(heldout, names, noisy_t)
        out["graphs"] = len(names)
        return out

    def training_costs(self, heldout, names, noisy_t):
        """What the training costs themselves say about the held-out family: the Kendall on its
        test graphs (noisy labels) of each training family's noise-free labels of the same graphs,
        and of their mix (per config the mean over training families of the graph-standardized
        log runtime). A model that learned every training cost exactly and picked the one closest
        to the held-out cost with hindsight would score `best`; one that learned their average
        would score `mix`. References, not bounds: a model may combine features differently."""
        costs = [c for c in self.families if c != heldout]
        labels = {}
        for c in costs:
            d = os.path.join(self.cross_dir(heldout, c), self.rel, "test")
            labels[c] = {
                n: npz_targets(os.path.join(d, n.split("__", 1)[1] + ".npz")) for n in names
            }

        def score(pred):
            return aggregate(
                [graph_metrics(predicted_order(pred[n]), noisy_t[n]) for n in names], self.task
            )["kendall"]

        per_cost = {c: score(labels[c]) for c in costs}

        def standardized_log(v):
            logs = [math.log(x) if x > 0 else 0.0 for x in v]
            mu = statistics.fmean(logs)
            sd = statistics.pstdev(logs)
            return [(x - mu) / sd if sd > 0 else 0.0 for x in logs]

        mix = {
            n: [
                statistics.fmean(col)
                for col in zip(*[standardized_log(labels[c][n]) for c in costs])
            ]
            for n in names
        }
        best = max(costs, key=lambda c: (-math.inf if math.isnan(per_cost[c]) else per_cost[c]))
        return {"per_cost": per_cost, "best": per_cost[best], "best_cost": best, "mix": score(mix)}

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
            # Runs and baselines beside the fold's data root, not in it (segrank train refuses a
            # run directory inside data.root).
            folds[fam] = (root, coll_dir, self.b.case_dir(self.case, "out", fam))
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
                "training_costs": base[fam]["training_costs"],
                "best_training_cost_fraction_of_ceiling": (
                    base[fam]["training_costs"]["best"] / ceil
                )
                if ceil
                else None,
                "training_cost_mix_fraction_of_ceiling": (base[fam]["training_costs"]["mix"] / ceil)
                if ceil
                else None,
            }
        hw_vals = [families[f]["hwmodel_fraction_of_ceiling"] for f in fams]
        rnd_vals = [
            families[f]["random"]["kendall"]["mean"] / families[f]["ceiling"]["kendall"]
            if families[f]["ceiling"]["kendall"]
            and families[f]["random"]["kendall"]["mean"] is not None
            else None
            for f in fams
        ]

        def family_mean(key):
            vals = [families[f][key] for f in fams]
            return statistics.fmean(vals) if None not in vals else None

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
            "best_training_cost_fraction_of_ceiling": family_mean(
                "best_training_cost_fraction_of_ceiling"
            ),
            "training_cost_mix_fraction_of_ceiling": family_mean(
                "training_cost_mix_fraction_of_ceiling"
            ),
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
