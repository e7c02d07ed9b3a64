"""The metrics computed here, only where segrank cannot give them: the Kendall tau-b of tile
baselines (a tile submission lists only 5 configs) from their full score files, and the means over
seeds. Each follows segrank's definition and tie rules (docs/metrics.md, docs/benchmarks.md); every
run cross-checks them against `segrank leaderboard` and `segrank evaluate` (suite.Bench.check*)."""

import math
import statistics

from .common import BenchError
from .settings import METRICS


def predicted_order(scores):
    """Ascending score, ties by lower config index (data/submission.h top_configs)."""
    return sorted(range(len(scores)), key=lambda i: (scores[i], i))


def tau_b_of_order(order, targets):
    """Kendall tau-b (scipy variant b) between predicted positions (no ties) and targets."""
    n = len(order)
    if n < 2:
        return float("nan")
    t = [targets[i] for i in order]
    conc = disc = tied = 0
    for i in range(n):
        ti = t[i]
        for j in range(i + 1, n):
            tj = t[j]
            if tj > ti:
                conc += 1
            elif tj < ti:
                disc += 1
            else:
                tied += 1
    total = n * (n - 1) // 2
    denom = math.sqrt(float(total) * float(total - tied))
    if denom == 0:
        return float("nan")
    return max(-1.0, min(1.0, (conc - disc) / denom))


def slowdown_of_order(order, targets, k):
    """slowdown@k: (best target among the first k of `order` - best target) / best target."""
    best = min(targets)
    top = min(targets[i] for i in order[: min(k, len(order))])
    return (top - best) / best


def ape_stats(predicted, measured):
    """(MAPE, median APE) as fractions, as segrank's runtime_errors."""
    ape = sorted(abs(p - t) / t for p, t in zip(predicted, measured))
    if not ape:
        return float("nan"), float("nan")
    mid = len(ape) // 2
    return statistics.fmean(ape), (ape[mid] if len(ape) % 2 else 0.5 * (ape[mid - 1] + ape[mid]))


def anchored(predicted, measured):
    """predicted moved onto the measured log mean and std (docs/metrics.md#runtime-regression)."""

    def stats(v):
        logs = [math.log(x) for x in v]
        m = statistics.fmean(logs)
        return m, math.sqrt(statistics.fmean([(x - m) ** 2 for x in logs]))

    pm_, ps = stats(predicted)
    mm, ms = stats(measured)
    return [math.exp(mm + ms * ((math.log(p) - pm_) / ps if ps > 0 else 0.0)) for p in predicted]


def graph_metrics(order, targets):
    """One graph's metrics for a predicted order: Kendall tau-b, slowdown@1/5/10 and what
    aggregate() needs to tell informative graphs (>= 2 configs, targets not all equal)."""
    return {
        "num_configs": len(targets),
        "targets_constant": all(x == targets[0] for x in targets),
        "kendall": tau_b_of_order(order, targets),
        "slowdown_1": slowdown_of_order(order, targets, 1),
        "slowdown_5": slowdown_of_order(order, targets, 5),
        "slowdown_10": slowdown_of_order(order, targets, 10),
    }


def tau_b_raw(x, y):
    """Kendall tau-b of raw values with ties in both (scipy.stats.kendalltau); NaN if either is
    constant."""
    n = len(x)
    conc = disc = tx = ty = txy = 0
    for i in range(n):
        for j in range(i + 1, n):
            dx, dy = x[i] - x[j], y[i] - y[j]
            if dx == 0 and dy == 0:
                txy += 1
            elif dx == 0:
                tx += 1
            elif dy == 0:
                ty += 1
            elif (dx > 0) == (dy > 0):
                conc += 1
            else:
                disc += 1
    n0 = n * (n - 1) // 2
    denom = math.sqrt(float(n0 - tx - txy) * float(n0 - ty - txy))
    return (conc - disc) / denom if denom else float("nan")


def aggregate(graphs, task, kendall_mask=None):
    """segrank's aggregate_collection: tau mean over informative graphs (and, if given, where
    kendall_mask is true: `kendall`; every informative graph: `kendall_all`), slowdowns over all."""
    if not graphs:
        raise BenchError("internal: no graphs to aggregate")
    mask = kendall_mask if kendall_mask is not None else [True] * len(graphs)
    informative = [not g["targets_constant"] and g["num_configs"] >= 2 for g in graphs]

    def tau_mean(sel):
        vals = [g["kendall"] for g, ok in zip(graphs, sel) if ok]
        return (sum(v for v in vals if not math.isnan(v)) / len(vals)) if vals else float(
            "nan"
        ), len(vals)

    out = {}
    out["kendall"], out["kendall_graphs"] = tau_mean([a and b for a, b in zip(informative, mask)])
    if kendall_mask is not None:
        out["kendall_all"], _ = tau_mean(informative)
    out.update(
        {
            "slowdown_1": sum(g["slowdown_1"] for g in graphs) / len(graphs),
            "slowdown_5": sum(g["slowdown_5"] for g in graphs) / len(graphs),
            "slowdown_10": sum(g["slowdown_10"] for g in graphs) / len(graphs),
            "graphs": len(graphs),
        }
    )
    out["score"] = 1.0 - out["slowdown_5"] if task == "tile" else out["kendall"]
    return out


def mean_std(values):
    """{mean, std (sample; None below 2 values), n} of the values that are not None or NaN."""
    vals = [v for v in values if v is not None and not (isinstance(v, float) and math.isnan(v))]
    if not vals:
        return {"mean": None, "std": None, "n": 0}
    return {
        "mean": statistics.fmean(vals),
        "std": statistics.stdev(vals) if len(vals) > 1 else None,
        "n": len(vals),
    }


def summarize(per_seed):
    """per_seed: list of metric dicts -> {metric: {mean, std, n, per_seed}}."""
    out = {}
    for key in METRICS:
        vals = [r.get(key) for r in per_seed]
        if all(v is None for v in vals):
            continue
        s = mean_std(vals)
        s["per_seed"] = vals
        out[key] = s
    return out
