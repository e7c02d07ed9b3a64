"""real_layout_fixture: the U-Net module of module_tuning_data_layout.pb (112 configs); its groups
of identical config rows dealt into 5 fixed folds, each fold written as a train / valid npz pair;
the best checkpoint per fold scored on its held-out configs beside hwmodel and random."""

import os
import random
import shutil
import statistics

from ..common import BenchError, log
from ..npz import config_groups, list_graphs, read_npz, take_rows, write_npz
from ..settings import FOLD_SEED, METRICS, SIZES


LAYOUT_REL = ("npz", "layout", "xla", "random")  # the collection's folder under a data root


def ingest_layout_module(bench, case):
    """Ingests module_tuning_data_layout.pb into <case>/data; returns (its one graph name, the
    graph's npz members)."""
    pb = os.path.join(bench.shared, "xla_tuning", "module_tuning_data_layout.pb")
    data = os.path.join(bench.case_dir(case), "data")
    bench.r.run(["ingest", pb, "--out", data, "--force"], f"case {case} ingest")
    src_dir = os.path.join(data, *LAYOUT_REL, "train")
    names = list_graphs(src_dir)
    if len(names) != 1:
        raise BenchError(f"case {case}: expected one layout module in {src_dir}, found {names}")
    return names[0], read_npz(os.path.join(src_dir, names[0] + ".npz"))


def write_config_folds(name, m, folds, base, score_root):
    """The fold partition of one layout graph's configs: its groups of identical config rows (by
    value: -0 == +0, as config_groups in sampling/dedupe.h), sorted by first index, shuffled with
    FOLD_SEED and dealt round robin into `folds` folds. Fold f is written as the data root
    base/fold<f> (train: the other folds' configs under `name`; valid: its own as <name>_fold<f>)
    and its valid file again under score_root. Returns (the groups in dealt order, per fold the
    held-out config indices)."""
    feat = m["node_config_feat"]  # (configs, configurable nodes, features)
    c = feat.shape[0]
    glist = config_groups(feat, name)  # by first config index: deterministic
    random.Random(FOLD_SEED).shuffle(glist)
    fold_of = {}
    for pos, g in enumerate(glist):
        for j in g:
            fold_of[j] = pos % folds
    shutil.rmtree(score_root, ignore_errors=True)
    held_of = []
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
            write_npz(os.path.join(root, *LAYOUT_REL, split, fname + ".npz"), mem)
            if split == "valid":
                write_npz(os.path.join(score_root, *LAYOUT_REL, "valid", fname + ".npz"), mem)
        held_of.append(held)
    return glist, held_of


def run(bench, case):
    """The real_layout_fixture case (module docstring)."""
    size = SIZES[bench.mode][case]
    base = bench.case_dir(case)
    bench.cur_dir = base
    name, m = ingest_layout_module(bench, case)
    folds = size["folds"]
    score_root = os.path.join(base, "score")
    glist, held_of = write_config_folds(name, m, folds, base, score_root)
    fold_info = [
        {"heldout_configs": held, "heldout_groups": sum(1 for g in glist[f::folds])}
        for f, held in enumerate(held_of)
    ]
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
        info, la = bench.train(
            case, vname, seed, config, [f"data.root={root}"] + common + extra, run_dir, ctx
        )
        b = bench.evaluate_best(info, la, run_dir, "valid", ctx)
        info.update(seed=seed, fold=fold, run_dir=run_dir)
        return b, la, info

    tasks, keys = [], []
    for vname, extra in bench.variants():
        for seed in bench.seeds:
            for fold in range(folds):
                tasks.append(lambda v=vname, e=extra, s=seed, f=fold: fold_job(v, e, s, f))
                keys.append((vname, seed))
    log(
        f"{case}: training {len(tasks)} runs ({len(bench.variants())} rows x "
        f"{len(bench.seeds)} seeds x {folds} folds), {size['steps']} steps each"
    )
    results = bench.parallel(tasks)
    per = {}
    for (vname, seed), (b, la, info) in zip(keys, results):
        e = per.setdefault((vname, seed), {"best": [], "last": [], "runs": []})
        e["best"].append(b)
        e["last"].append(la)
        e["runs"].append(info)

    def fold_mean(ms):
        return {k: statistics.fmean(x[k] for x in ms) for k in METRICS if all(k in x for x in ms)}

    rows = {}
    for vname, _ in bench.variants():
        for seed in bench.seeds:
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
    res = bench.assemble(case, rows)
    ctx = f"case {case}"

    def fixture_ensemble(vname):
        per_fold = []
        for f in range(folds):
            ectx = f"{ctx} {vname} ensemble fold {f}"
            root = os.path.join(base, f"fold{f}")
            sub = os.path.join(base, f"ensemble_{vname}_fold{f}.csv")
            bench.predict_ensemble(
                [
                    os.path.join(base, "runs", f"{vname}_seed{s}_fold{f}", "best.ckpt.h5")
                    for s in bench.seeds
                ],
                root,
                "valid",
                sub,
                ectx,
            )
            per_fold.append(
                bench.r.leaderboard(
                    os.path.join(root, "npz", "layout", "xla", "random"), "valid", sub, ectx
                )
            )
        return fold_mean(per_fold)

    bench.add_ensembles(res, fixture_ensemble)
    score_coll = os.path.join(score_root, "npz", "layout", "xla", "random")
    _, hw = bench.hwmodel(score_root, "valid", score_coll, ctx)
    rnd = bench.random_baseline(score_root, "valid", score_coll, ctx)
    res["hwmodel"] = {
        "metrics": hw,
        "note": "leaderboard mean over the 5 held-out folds (one graph each)",
    }
    res["random"] = bench.baseline_summary(rnd)
    res["ceiling"] = None
    res["settings"] = {
        "config": config,
        "overrides": ["data.root=<fold root>"] + common,
        "folds": folds,
        "fold_seed": FOLD_SEED,
        "configs": m["node_config_feat"].shape[0],
        "config_groups": len(glist),
        "fold_sizes": [len(x["heldout_configs"]) for x in fold_info],
        "heldout_configs": [x["heldout_configs"] for x in fold_info],
        "metric_per_seed": "mean over the 5 folds of the held-out Kendall",
        "checkpoint": "best per fold (selected on its held-out configs); metrics_last = last",
    }
    return bench.finish_case(case, res)


# --- real layout, TpuGraphs paper protocol (1000 official indices)
