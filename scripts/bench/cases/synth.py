"""synth_layout and synth_tile: `segrank synth` collections with label noise; the model's best
checkpoint (chosen on valid) scored on the test split beside hwmodel, random and the ceiling (the
noise-free labels; for layout also the trip-blind ceiling)."""

import os

from ..common import BenchError, log
from ..metrics import aggregate, graph_metrics, predicted_order
from ..npz import list_graphs, npz_runtimes, npz_targets
from ..settings import SIZES, SYNTH_MEAN_TRIPS, SYNTH_NOISE, SYNTH_SEED, SYNTH_WHILE_TRIPS
from ..submission import read_scores, write_submission


def run(bench, case, collection, config, extra_sets):
    """One synthetic case: `collection` is "layout" or "tile", `config` the training config and
    extra_sets its overrides beside the data's."""
    size = SIZES[bench.mode][case]
    base = bench.case_dir(case)
    bench.cur_dir = base
    noisy, clean = os.path.join(base, "data_noisy"), os.path.join(base, "data_clean")
    choices = bench.o.layout_choices if collection == "layout" else 0
    log(
        f"{case}: synthesizing {size['graphs']} graphs (noise {SYNTH_NOISE} and 0"
        + (f", {choices} layouts per configurable node)" if choices else ")")
    )
    blind = os.path.join(base, "data_trip_blind") if collection == "layout" else None
    jobs = [
        lambda: bench.r.synth(noisy, collection, size, SYNTH_NOISE, f"{case} synth noisy", choices),
        lambda: bench.r.synth(clean, collection, size, 0, f"{case} synth clean", choices),
    ]
    if blind:  # the clean labels with every while loop charged the mean trip count
        jobs.append(
            lambda: bench.r.synth(
                blind,
                collection,
                size,
                0,
                f"{case} synth trip-blind",
                choices,
                ["--cost-off", "trip_counts", "--default-trip-count", repr(SYNTH_MEAN_TRIPS)],
            )
        )
    bench.parallel(jobs)
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
        info, _ = bench.train(case, vname, seed, config, overrides + extra, run_dir, ctx)
        _, best = bench.r.evaluate(
            os.path.join(run_dir, "best.ckpt.h5"),
            "test",
            os.path.join(run_dir, "eval_test_best.json"),
            ctx + " evaluate best",
        )
        if info["best_step"] == info["steps"]:
            last = best
        else:
            _, last = bench.r.evaluate(
                os.path.join(run_dir, "last.ckpt.h5"),
                "test",
                os.path.join(run_dir, "eval_test_last.json"),
                ctx + " evaluate last",
            )
        info.update(seed=seed, run_dir=run_dir)
        return {"metrics": best, "metrics_last": last, "run": info}

    log(
        f"{case}: training {len(bench.variants())} x {len(bench.seeds)} runs, "
        f"{size['steps']} steps each"
    )
    rows = bench.model_rows(case, job)
    log(f"{case}: baselines")
    ctx = f"case {case}"
    res = bench.assemble(case, rows)

    def synth_ensemble(vname):
        ectx = f"{ctx} {vname} ensemble"
        sub = os.path.join(base, f"ensemble_{vname}.csv")
        sc = os.path.join(base, f"ensemble_{vname}.scores.csv") if task == "tile" else None
        bench.predict_ensemble(
            [os.path.join(base, "runs", f"{vname}_seed{s}", "best.ckpt.h5") for s in bench.seeds],
            noisy,
            "test",
            sub,
            ectx,
            scores=sc,
        )
        lb = bench.r.leaderboard(noisy_coll, "test", sub, ectx)
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
            bench.check(ectx, py, lb)
            lb["kendall"] = py["kendall"]
        return lb

    bench.add_ensembles(res, synth_ensemble)
    hw_sub, hw = bench.hwmodel(noisy, "test", noisy_coll, ctx, scores=True)
    hw_vs_clean = bench.r.leaderboard(clean_coll, "test", hw_sub, ctx + " hwmodel vs clean labels")
    rnd = bench.random_baseline(noisy, "test", noisy_coll, ctx, scores=(task == "tile"))
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
    ceiling = bench.r.leaderboard(noisy_coll, "test", ceil_sub, ctx + " ceiling")
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
        blind_ceiling = bench.r.leaderboard(
            noisy_coll, "test", blind_sub, ctx + " trip-blind ceiling"
        )
    if task == "tile":
        # A tile submission has 5 configs: Kendall of the baselines from their full score files.
        pid = lambda n: f"{coll}:{n}"  # noqa: E731
        ceil_py = aggregate(
            [graph_metrics(predicted_order(clean_t[n]), noisy_t[n]) for n in names], task
        )
        bench.check(ctx + " ceiling", ceil_py, ceiling)
        ceiling["kendall"] = ceil_py["kendall"]
        hs = read_scores(os.path.join(base, "hwmodel.scores.csv"))
        hw_py = aggregate(
            [graph_metrics(predicted_order(hs[pid(n)]), noisy_t[n]) for n in names], task
        )
        bench.check(ctx + " hwmodel", hw_py, hw)
        hw["kendall"] = hw_py["kendall"]
        hwc_py = aggregate(
            [graph_metrics(predicted_order(hs[pid(n)]), clean_t[n]) for n in names], task
        )
        bench.check(ctx + " hwmodel vs clean", hwc_py, hw_vs_clean)
        hw_vs_clean["kendall"] = hwc_py["kendall"]
        for s, rm in zip(bench.random_seeds, rnd):
            rs = read_scores(os.path.join(base, f"random{s}.scores.csv"))
            r_py = aggregate(
                [graph_metrics(predicted_order(rs[pid(n)]), noisy_t[n]) for n in names], task
            )
            bench.check(f"{ctx} random seed {s}", r_py, rm)
            rm["kendall"] = r_py["kendall"]
        bench.check_model_kendall(ctx, rows["model"][0]["run"]["run_dir"], "test", noisy_coll, coll)
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
    res["random"] = bench.baseline_summary(rnd)
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
    return bench.finish_case(case, res)
