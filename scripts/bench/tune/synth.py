"""The synthetic recorded-pool cases of bench_tune.py (synth_tile, synth_layout): `segrank synth`
data (tpu_v3 labels), one model per seed, and the first test graphs tuned over their recorded
configs. The models are trained once per collection and shared with the search_ cases."""

import collections
import os

from ..common import BenchError, log
from ..npz import list_graphs
from ..settings import SYNTH_NOISE

# A collection's synthetic data and models: the data root, its test split folder, the best
# checkpoint per seed, the tuned test graphs and the collection id.
Models = collections.namedtuple("Models", "data test_dir ckpts tuned coll")


def models(bench, collection):
    """Synthesizes the collection (the synth_<collection> size), trains one model per seed and
    returns its Models (made once per collection)."""
    if collection in bench.models:
        return bench.models[collection]
    case = "synth_" + collection
    size = bench.size[case]
    base = bench.case_dir(case)
    data = os.path.join(base, "data")
    bench.r.synth(data, collection, size, SYNTH_NOISE, f"case {case} synth")
    if collection == "tile":
        config, coll, rel = "configs/xla_fixture_tile.toml", "tile:xla", ("tile", "xla")
        extra = ["data.ingest=[]", "data.holdout_folds=0"]
    else:
        config, coll = "configs/quickstart.toml", "layout:xla:random"
        rel, extra = ("layout", "xla", "random"), []
    test_dir = os.path.join(data, "npz", *rel, "test")
    tuned = list_graphs(test_dir)[: size["tuned"]]
    overrides = [f"data.root={data}", f'data.collections=["{coll}"]'] + bench.steps(case) + extra
    if bench.o.models:
        ckpts = earlier_models(bench, case)
        bench.models[collection] = Models(data, test_dir, ckpts, tuned, coll)
        return bench.models[collection]
    log(f"{case}: training {len(bench.seeds)} models, {size['steps']} steps each")
    ckpts = bench.parallel(
        [
            lambda s=s: bench.train(
                config,
                overrides,
                os.path.join(base, "runs", f"seed{s}"),
                s,
                f"case {case} seed {s}",
            )
            for s in bench.seeds
        ]
    )
    bench.models[collection] = Models(data, test_dir, ckpts, tuned, coll)
    return bench.models[collection]


def earlier_models(bench, case):
    """The best checkpoint of each seed of `case` in --models (an earlier run's --work), which a
    finished training left there (its report.json); BenchError naming the first one missing."""
    ckpts = []
    for s in bench.seeds:
        run_dir = os.path.join(bench.o.models, case, "runs", f"seed{s}")
        for name in ("best.ckpt.h5", "report.json"):
            if not os.path.isfile(os.path.join(run_dir, name)):
                raise BenchError(
                    f"case {case}: --models: no {os.path.join(run_dir, name)} (expected the "
                    f"finished training of seed {s} of an earlier run's --work)"
                )
        ckpts.append(os.path.join(run_dir, "best.ckpt.h5"))
    log(f"{case}: using the {len(ckpts)} models of {bench.o.models} (--models), no training")
    return ckpts


def run(bench, case, collection):
    """A synth_ case: every strategy on the recorded pools of the tuned test graphs, ranked by
    hwmodel and by each seed's model."""
    m = models(bench, collection)
    base = bench.case_dir(case)
    hs = bench.hwmodel_scores(case, m.data, "test")
    ms = [
        bench.r.predict_scores(
            ckpt,
            "test",
            os.path.join(base, f"predict_seed{s}.csv"),
            os.path.join(base, f"predict_seed{s}.scores.csv"),
            f"case {case} seed {s} predict",
            data=m.data,
        )
        for s, ckpt in zip(bench.seeds, m.ckpts)
    ]
    graphs = {}
    for g in m.tuned:
        gid = f"{m.coll}:{g}"
        if gid not in hs or any(gid not in sc for sc in ms):
            raise BenchError(f"case {case}: no scores for {gid}")
        log(f"{case}: tuning {g}")
        runs = [(s, c, sc[gid]) for s, c, sc in zip(bench.seeds, m.ckpts, ms)]
        graphs[g] = bench.recorded_graph(
            case, g, os.path.join(m.test_dir, g + ".npz"), hs[gid], runs, f"case {case} {g}"
        )
    return bench.assemble(graphs)
