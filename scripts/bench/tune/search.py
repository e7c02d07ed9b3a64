"""The search-mode cases of bench_tune.py (search_tile, search_layout): the synth_ models (trained
on tpu_v3 labels) tune the same test graphs in `--candidates search` mode, measured by a hwmodel
cost family they never saw (settings.SEARCH_FAMILY, noise 0), beside the model-free random and
anneal searches."""

import os

from ..common import BenchError, log
from . import synth
from .curves import curve_hits, graph_row
from .settings import SEARCH_FAMILY

STRATEGIES = ("default", "random", "anneal", "model_norefit", "model_refit")


def run(bench, case, collection):
    """A search_ case: per tuned graph, the model strategies per model seed and random / anneal
    per search seed; the best known is the best any run found on the graph."""
    m = synth.models(bench, collection)
    family = SEARCH_FAMILY[collection]
    measure = ["--measure", f"hwmodel:{family}", "--noise", "0"]
    budget = bench.budget
    graphs = {}
    for g in m.tuned:
        ctx = f"case {case} {g}"
        npz = os.path.join(m.test_dir, g + ".npz")
        base = bench.case_dir(case, "tune", g)
        log(f"{case}: tuning {g} (measured by hwmodel:{family})")
        runs = []  # (strategy, seed, checkpoint, tune arguments before / after --seed)
        for s, ckpt in zip(bench.seeds, m.ckpts):
            for name, mode in (("model_norefit", "none"), ("model_refit", "head")):
                runs.append((name, s, ckpt, ["--candidates", "search"], bench.refit_args(mode)))
        for s in bench.search_seeds:
            for name in ("random", "anneal"):
                runs.append((name, s, None, ["--strategy", name], ["--batch", bench.o.batch]))

        def job(name, s, ckpt, before, after):
            out = os.path.join(base, f"{name}_seed{s}")
            extra = measure + before + ["--seed", s] + after
            return bench.tune(out, npz, budget, f"{ctx} {name} seed {s}", ckpt, extra)

        results = bench.parallel([lambda r=r: job(*r) for r in runs])
        defaults = {r[1]["default_runtime_ns"] for r in results}
        if len(defaults) != 1 or None in defaults:
            raise BenchError(f"{ctx}: the runs measured the default differently: {defaults}")
        default_ns = defaults.pop()
        best_known = min(min(c) for c, _ in results)

        def row(curve):
            return graph_row(curve, default_ns, best_known, bench.budgets, curve_hits(curve))

        strat = {"default": [row([default_ns] * budget)]}
        for (name, *_), (curve, _) in zip(runs, results):
            strat.setdefault(name, []).append(row(curve))
        graphs[g] = {
            "default_ns": default_ns,
            "best_known_ns": best_known,
            "best_known_speedup": default_ns / best_known,
            "has_speedup": best_known < default_ns * (1 - 1e-9),
            "strategies": {k: strat[k] for k in STRATEGIES},
        }
    res = bench.assemble(graphs)
    res["measure"] = f"hwmodel:{family}"
    res["graphs_with_speedup"] = sum(1 for v in graphs.values() if v["has_speedup"])
    # Of the graphs where some run beat the default: on how many does each run of a strategy
    # beat it at the largest budget (the fewest over its seeds)?
    last = str(bench.budgets[-1])
    res["speedup_found_at_max_budget"] = {
        name: min(
            sum(
                1
                for v in graphs.values()
                if v["has_speedup"] and v["strategies"][name][s]["speedup"][last] > 1 + 1e-9
            )
            for s in range(summary["runs"])
        )
        for name, summary in res["strategies"].items()
    }
    return res
