"""real_tile: the 15 TPU tile kernels of op_tuning_data.pb, 5 folds over kernels; every kernel
scored by `segrank evaluate --heldout` on the best checkpoint of the fold that held it out, beside
hwmodel and random on the same kernels, and the regression row (listmle + mse; MAPE and median APE
beside hwmodel's, docs/metrics.md#runtime-regression)."""

import math
import os
import statistics

from ..common import BenchError, log
from ..metrics import aggregate, anchored, ape_stats, graph_metrics, mean_std, predicted_order
from ..metrics import tau_b_raw
from ..npz import list_graphs, npz_runtimes, npz_targets
from ..report import fmt, pm
from ..settings import REGRESSION_SETS, SIZES
from ..submission import read_scores


def tile_regression(bench, case, per, kernels, in_mean, hw_scores, coll_dir):
    """The real_tile regression row: per seed, the means over the 15 held-out kernels of the
    MAPE and median APE `segrank evaluate` reports (the mse scores de-standardized with the
    kernel's measured log mean and std), beside hwmodel's on the same configs: its estimates in
    ns as they are, and anchored the same way (docs/metrics.md#runtime-regression)."""
    per_seed = []
    for seed in bench.seeds:
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


def run(bench, case):
    """The real_tile case (module docstring)."""
    size = SIZES[bench.mode][case]
    base = bench.case_dir(case)
    bench.cur_dir = base
    pb = os.path.join(bench.shared, "xla_tuning", "op_tuning_data.pb")
    data = os.path.join(base, "data")
    bench.r.run(["ingest", pb, "--out", data, "--force"], f"case {case} ingest")
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
        info, _ = bench.train(
            case,
            vname,
            seed,
            config,
            overrides + extra + [f"data.holdout_fold={fold}"],
            run_dir,
            ctx,
        )
        gb, _ = bench.r.evaluate(
            os.path.join(run_dir, "best.ckpt.h5"),
            "heldout",
            os.path.join(run_dir, "eval_heldout_best.json"),
            ctx + " evaluate best",
        )
        gl, _ = bench.r.evaluate(
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
        [] if bench.o.no_regression else [("regression", list(bench.o.set) + REGRESSION_SETS)]
    )
    for vname, extra in bench.variants() + reg_rows:
        for seed in bench.seeds:
            for fold in range(folds):
                tasks.append(lambda v=vname, e=extra, s=seed, f=fold: fold_job(v, e, s, f))
                keys.append((vname, seed))
    log(
        f"{case}: training {len(tasks)} runs ({len(bench.variants()) + len(reg_rows)} rows x "
        f"{len(bench.seeds)} seeds x {folds} folds), {size['steps']} steps each"
    )
    results = bench.parallel(tasks)

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
    # meaningful, as in the `hwmodel validate` table of docs/benchmarks.md: >= 3 configs, varying
    # runtimes, estimates not all equal (hwmodel gives every config of the 3 reshape kernels one
    # time).
    ctx = f"case {case}"
    _, hw_lb = bench.hwmodel(data, "train", coll_dir, ctx, scores=True)
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
    bench.check(ctx + " hwmodel", hw, hw_lb)
    rows = {}
    per_kernel = {}
    for vname, _ in bench.variants():
        for seed in bench.seeds:
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
    res = bench.assemble(case, rows)
    if reg_rows:
        res["regression"] = tile_regression(bench, case, per, kernels, in_mean, hs, coll_dir)
    # random on exactly the same kernels
    rnd_lb = bench.random_baseline(data, "train", coll_dir, ctx, scores=True)
    rnd = []
    for s, lb in zip(bench.random_seeds, rnd_lb):
        rs = read_scores(os.path.join(base, f"random{s}.scores.csv"))
        r = aggregate(
            [graph_metrics(predicted_order(rs["tile:xla:" + k]), targets[k]) for k in kernels],
            "tile",
            in_mean,
        )
        bench.check(f"{ctx} random seed {s}", r, lb)
        rnd.append(r)
    # Python Kendall == segrank evaluate's, on one held-out fold of the model.
    first = rows["model"][0]["run"]["folds"][0]
    bench.check_model_kendall_heldout(ctx, first["run_dir"], coll_dir)

    def tile_ensemble(vname):
        # Each kernel is held out by one fold per seed: its ensemble is the best checkpoints of
        # those folds. Kernels with the same set of models share one `segrank predict`.
        groups = {}
        for k in kernels:
            groups.setdefault(tuple(per[(vname, s)]["run_of"][k] for s in bench.seeds), []).append(
                k
            )
        gms = {}
        for i, (run_dirs, ks) in enumerate(sorted(groups.items())):
            ectx = f"{ctx} {vname} ensemble {i}"
            sub = os.path.join(base, f"ensemble_{vname}_{i}.csv")
            sc = os.path.join(base, f"ensemble_{vname}_{i}.scores.csv")
            bench.predict_ensemble(
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

    bench.add_ensembles(res, tile_ensemble)
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
    res["random"] = bench.baseline_summary(rnd)
    res["ceiling"] = None
    res["settings"] = {
        "config": config,
        "overrides": overrides,
        "folds": folds,
        "kendall_kernels": kendall_kernels,
        "kendall_over": "kendall: kernels with >= 3 configs, varying runtimes and hwmodel "
        "estimates not all equal (the hwmodel validate table of docs/benchmarks.md); "
        "kendall_all: every kernel with varying runtimes (segrank's collection mean); "
        "slowdowns over all",
        "checkpoint": "best per fold (selected on the held-out kernels); " "metrics_last = last",
    }
    return bench.finish_case(case, res)
