"""The real cases of bench_tune.py: real_tile (the 15 TPU tile kernels, each tuned by the models of
the folds that held it out) and real_layout (the U-Net layout module, each fold's model tuning the
pool of its held-out configs, folds as bench_quality.py's real_layout_fixture)."""

import os

from ..common import BenchError, log
from ..npz import list_graphs
from ..cases.real_layout_fixture import LAYOUT_REL, ingest_layout_module, write_config_folds
from .settings import FOLDS


def run_tile(bench, case):
    """The real_tile case: 5 folds over kernels per seed (configs/xla_fixture_tile.toml); each
    kernel's recorded pool tuned by the seeds' models of the fold that held it out."""
    size = bench.size[case]
    base = bench.case_dir(case)
    pb = os.path.join(bench.shared, "xla_tuning", "op_tuning_data.pb")
    data = os.path.join(base, "data")
    bench.r.run(["ingest", pb, "--out", data, "--force"], f"case {case} ingest")
    split_dir = os.path.join(data, "npz", "tile", "xla", "train")
    kernels = list_graphs(split_dir)
    overrides = [f"data.root={data}", "data.ingest=[]", "data.holdout_folds=5"] + bench.steps(case)

    def heldout(ckpt, run_dir, ctx):  # the kernels the fold held out
        ev = os.path.join(run_dir, "eval_heldout.json")
        graphs, _ = bench.r.evaluate(ckpt, "heldout", ev, ctx + " evaluate --heldout")
        return [g["graph"] for g in graphs]

    folds = bench.train_folds(
        case,
        "configs/xla_fixture_tile.toml",
        lambda fold: overrides + [f"data.holdout_fold={fold}"],
        lambda fold: data,
        "train",
        heldout,
    )
    hs = bench.hwmodel_scores(case, data, "train")
    runs_of = {}
    for seed, fold, ckpt, scores, held in folds:
        for k in held:
            runs_of.setdefault(k, []).append((seed, ckpt, scores["tile:xla:" + k]))
    if sorted(runs_of) != kernels or any(len(v) != len(bench.seeds) for v in runs_of.values()):
        raise BenchError(
            f"case {case}: the folds of each seed did not hold out every kernel "
            f"once: {sorted((k, len(v)) for k, v in runs_of.items())}"
        )
    graphs = {}
    for k in kernels[: size.get("tuned", len(kernels))]:
        runs = sorted(runs_of[k])
        if [s for s, _, _ in runs] != bench.seeds:
            raise BenchError(
                f"case {case}: kernel {k} held out by seeds "
                f"{[s for s, _, _ in runs]}, expected {bench.seeds}"
            )
        log(f"{case}: tuning {k}")
        graphs[k] = bench.recorded_graph(
            case,
            k,
            os.path.join(split_dir, k + ".npz"),
            hs["tile:xla:" + k],
            runs,
            f"case {case} {k}",
        )
    return bench.assemble(graphs)


def run_layout(bench, case):
    """The real_layout case: the U-Net's config groups in 5 folds (bench_quality.py's
    real_layout_fixture partition), one model per seed and fold
    (configs/xla_fixture_layout.toml); each fold's held-out configs tuned as a recorded pool."""
    base = bench.case_dir(case)
    name, m = ingest_layout_module(bench, case)
    pool_root = os.path.join(base, "pools")
    write_config_folds(name, m, FOLDS, base, pool_root)
    common = [
        "data.ingest=[]",
        'data.holdout="graphs"',
        'data.collections=["layout:xla:random"]',
    ] + bench.steps(case)
    runs = bench.train_folds(
        case,
        "configs/xla_fixture_layout.toml",
        lambda fold: [f"data.root={os.path.join(base, f'fold{fold}')}"] + common,
        lambda fold: os.path.join(base, f"fold{fold}"),
        "valid",
    )
    hs = bench.hwmodel_scores(case, pool_root, "valid")
    graphs = {}
    for f in range(FOLDS):
        gname = f"{name}_fold{f}"
        gid = f"layout:xla:random:{gname}"
        fr = sorted((s, ck, sc[gid]) for s, fo, ck, sc, _ in runs if fo == f)
        log(f"{case}: tuning the held-out configs of fold {f}")
        graphs[gname] = bench.recorded_graph(
            case,
            gname,
            os.path.join(pool_root, *LAYOUT_REL, "valid", gname + ".npz"),
            hs[gid],
            fr,
            f"case {case} fold {f}",
        )
    return bench.assemble(graphs)
