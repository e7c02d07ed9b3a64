"""bench_tune.py's Markdown: per case the slowdown of the best found at each budget with the
measurements to come within 1 % of / to reach the best known, then the speedup over the default."""


def fmt_ms(d, digits=1):
    """ "mean ± sd" of a mean_sd() dict (the mean alone when sd is 0; "-" without a mean)."""
    if d is None or d.get("mean") is None:
        return "-"
    if d.get("sd"):
        return f"{d['mean']:.{digits}f} ± {d['sd']:.{digits}f}"
    return f"{d['mean']:.{digits}f}"


def markdown(doc):
    """The Markdown tables of a finished bench_tune.py JSON document, ending with a newline; the
    first line names the benchmark, its size, commit and machine."""
    m = doc.get("machine", {})
    lines = [
        f"Autotuning benchmark: {doc.get('mode', '?')}, segrank {doc.get('commit') or '?'}, "
        f"{m.get('cpu', '?')} x {m.get('nproc', '?')}"
    ]
    for case, res in doc["cases"].items():
        budgets = [int(b) for b in next(iter(res["strategies"].values()))["speedup"]]
        g = next(iter(res["strategies"].values()))["graphs"]
        what = f", measured by {res['measure']}" if "measure" in res else ""
        lines.append(f"\n### {case} ({g} graphs{what})\n")
        lines.append(
            "Slowdown of the best found vs the best known, % (mean over graphs; ± sd over "
            "seeds); measurements to come within 1 % of / to reach the best known (a graph where "
            "a run never did counts as max n + 1; (k/N): only k graphs reached by every seed):\n"
        )
        head = (
            "| strategy | "
            + " | ".join(f"n={b}" for b in budgets)
            + " | n to within 1 % | n to the best |"
        )
        lines += [head, "|---" * (len(budgets) + 3) + "|"]

        def nfmt(d, graphs):
            reach = f" ({d['reached_min']}/{graphs})" if d["reached_min"] < graphs else ""
            return fmt_ms(d) + reach

        for name, s in res["strategies"].items():
            lines.append(
                f"| {name} | "
                + " | ".join(fmt_ms(s["slowdown_pct"][str(b)], 2) for b in budgets)
                + f" | {nfmt(s['n_within_1pct'], s['graphs'])}"
                + f" | {nfmt(s['n_to_best'], s['graphs'])} |"
            )
        lines.append("\nSpeedup over the default (mean over graphs):\n")
        head = (
            "| strategy | "
            + " | ".join(f"n={b}" for b in budgets)
            + " | worse than default at max n |"
        )
        lines += [head, "|---" * (len(budgets) + 2) + "|"]
        for name, s in res["strategies"].items():
            lines.append(
                f"| {name} | "
                + " | ".join(fmt_ms(s["speedup"][str(b)], 3) for b in budgets)
                + f" | {s['worse_than_default'][str(budgets[-1])]} |"
            )
        if "graphs_with_speedup" in res:
            lines.append(
                f"\nGraphs where some run beat the default: {res['graphs_with_speedup']}"
                f"/{g}; the fewest of these one run (seed) of each strategy beat at "
                f"n={budgets[-1]}: "
                + ", ".join(f"{k} {v}" for k, v in res["speedup_found_at_max_budget"].items())
            )
    return "\n".join(lines).lstrip("\n") + "\n"
