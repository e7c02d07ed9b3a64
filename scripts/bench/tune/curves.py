"""The numbers of bench_tune.py: best-so-far curves of a measurement order, the closed forms of
random search, one strategy's row on one graph (slowdown, speedup, measurements to come within 1 %
of / to reach the best known) and the mean +- sd over seeds of the mean over graphs."""

import json
import math
import os
import statistics

from ..common import BenchError
from ..npz import config_groups, read_npz
from .settings import WITHIN


def distinct_configs(npz):
    """(keep, group): keep = indices of the first config of each distinct row of a graph file (tile
    config_feat, layout node_config_feat; compared by value, -0 = 0, as tune's config_key);
    group[j] = the position in keep of config j's row."""
    m = read_npz(npz)
    groups = config_groups(m["config_feat"] if "config_feat" in m else m["node_config_feat"], npz)
    keep, group = [g[0] for g in groups], [0] * sum(len(g) for g in groups)
    for pos, g in enumerate(groups):
        for j in g:
            group[j] = pos
    return keep, group


def padded(curve, budget):
    """The first `budget` values of a curve, its last value repeated when it is shorter."""
    return curve[:budget] + [curve[-1]] * (budget - len(curve))


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
    return padded(curve, budget), best


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
