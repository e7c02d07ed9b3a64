"""The benchmark's output: the JSON document made strict (NaN and inf as null) and the Markdown
tables (one row group per case; the transfer cases in their own table)."""

import math

from .metrics import mean_std


def fmt(v, digits=3, pct=False):
    """A number for the tables: `digits` decimals, or percent (digits - 2); "-" for None, NaN."""
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "-"
    return f"{100 * v:.{max(0, digits - 2)}f} %" if pct else f"{v:.{digits}f}"


def pm(d, pct=False):
    """ "mean ± std" of a mean_std() dict ("-" without a mean)."""
    if not d or d.get("mean") is None:
        return "-"
    s = fmt(d["mean"], pct=pct)
    if d.get("std") is not None:
        s += " ± " + fmt(d["std"], pct=pct)
    return s


def markdown(doc):
    """The Markdown tables of a finished JSON document (clean_json'd), ending with a newline."""
    m = doc["machine"]
    lines = [
        f"Learning-quality benchmark: {doc['mode']}, {doc['seeds']} seeds, segrank "
        f"{doc['segrank']['source_commit'] or doc['segrank']['sha256'][:12]}, "
        f"{m['cpu_model']} x {m['nproc']}, "
        f"load average {m['load_start'][0]:.2f} -> {m['load_end'][0]:.2f}, "
        f"wall {doc['wall_s']:.0f} s, "
        f"segrank CPU {doc.get('cpu_s', 0):.0f} s",
        "",
        "| case | metric | model (best ckpt) | model (last ckpt) | hwmodel | random | ceiling "
        "| model / ceiling | wall (CPU) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for name, c in doc["cases"].items():
        if c.get("kind") == "transfer":  # its own table (transfer_markdown)
            continue
        if "skipped" in c:
            lines.append(f"| {name} | skipped: {c['skipped']} | | | | | | | |")
            continue
        show = ["kendall"] + (["slowdown_1", "slowdown_5", "score"] if c["task"] == "tile" else [])
        for i, key in enumerate(show):
            pct = key.startswith("slowdown")
            hw = (c.get("hwmodel") or {}).get("metrics", {}).get(key)
            ceil = (c.get("ceiling") or {}).get("metrics", {}).get(key)
            first = i == 0
            frac = (
                fmt(c.get("fraction_of_ceiling"))
                if first and c.get("fraction_of_ceiling") is not None
                else ""
            )
            if first and c.get(
                "ceiling_trip_blind"
            ):  # layout: also the ceiling without trip counts
                ceil_txt = f"{fmt(ceil)} (trip-blind {fmt(c['ceiling_trip_blind']['value'])})"
                frac += f" ({fmt(c.get('fraction_of_trip_blind_ceiling'))})"
            else:
                ceil_txt = fmt(ceil, pct=pct)
            lines.append(
                "| "
                + " | ".join(
                    [
                        name if first else "",
                        key,
                        pm(c["model"]["metrics"].get(key), pct),
                        pm(c["model"]["metrics_last"].get(key), pct),
                        fmt(hw, pct=pct),
                        pm(c["random"]["metrics"].get(key), pct),
                        ceil_txt,
                        frac,
                        f"{c['wall_s']:.0f} s ({c.get('cpu_s', 0):.0f} s)" if first else "",
                    ]
                )
                + " |"
            )

        def ensemble_lines(label, row):
            ens = row.get("ensemble")
            if not ens:
                return
            for key in show:
                pct = key.startswith("slowdown")
                gain = ""
                if key == c["metric"] and ens.get("gain_vs_seed_mean") is not None:
                    sd = ens.get("gain_in_seed_sd")
                    gain = f"vs seed mean {ens['gain_vs_seed_mean']:+.3f}" + (
                        f" ({sd:+.1f} sd)" if sd is not None else ""
                    )
                lines.append(
                    "| "
                    + " | ".join(
                        [
                            f"{label} ensemble of {ens['members']}",
                            key,
                            fmt(ens["metrics"].get(key), pct=pct),
                            "",
                            "",
                            "",
                            "",
                            "",
                            gain,
                        ]
                    )
                    + " |"
                )

        ensemble_lines(name, c["model"])
        for an, a in c.get("ablations", {}).items():
            for key in show:
                pct = key.startswith("slowdown")
                d = a["delta_vs_model"] if key == c["metric"] else None
                lines.append(
                    "| "
                    + " | ".join(
                        [
                            f"{name} `{an}`",
                            key,
                            pm(a["metrics"].get(key), pct),
                            pm(a["metrics_last"].get(key), pct),
                            "",
                            "",
                            "",
                            "",
                            f"paired delta {pm(d)}" if d else "",
                        ]
                    )
                    + " |"
                )
            ensemble_lines(f"{name} `{an}`", a)
        reg = c.get("regression")
        if reg:  # real_tile: kernel-runtime regression (docs/metrics.md#runtime-regression)
            hw = reg["hwmodel"]
            for key in ("mape", "median_ape"):
                lines.append(
                    "| "
                    + " | ".join(
                        [
                            f"{name} `regression`" if key == "mape" else "",
                            key,
                            pm(reg["model"][key], True),
                            "",
                            f"{fmt(hw['anchored_' + key], pct=True)} anchored "
                            f"({fmt(hw[key], pct=True)} absolute)",
                            "",
                            "",
                            "",
                            "",
                        ]
                    )
                    + " |"
                )
    lines.append("")
    lines.append(
        "Kendall: tau-b of the predicted order (docs/metrics.md); model and random: mean ± sample "
        "std over seeds; hwmodel and ceiling are deterministic; slowdowns in percent; tile score = "
        "1 - slowdown@5."
    )
    if all(c.get("kind") == "transfer" for c in doc["cases"].values()):
        lines = lines[:1]  # only transfer cases: no rows for the main table
    return "\n".join(lines) + "\n" + transfer_markdown(doc)


def clean_json(x):
    """x with every NaN / inf float as None (strict JSON) and tuples as lists."""
    if isinstance(x, float):
        return None if (math.isnan(x) or math.isinf(x)) else x
    if isinstance(x, dict):
        return {k: clean_json(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [clean_json(v) for v in x]
    return x


def transfer_markdown(doc):
    """The transfer table: one row per held-out family and one headline row per case."""
    lines = []
    for name, c in doc["cases"].items():
        if c.get("kind") != "transfer":
            continue
        if not lines:
            lines += [
                "",
                "| case | held-out family | model Kendall | hwmodel | random | ceiling "
                "| model / ceiling | hwmodel / ceiling | best training cost / ceiling "
                "| training-cost mix / ceiling | test graphs |",
                "|---|---|---|---|---|---|---|---|---|---|---|",
            ]
        for fam, f in c["families"].items():
            fr = mean_std(f["fraction_of_ceiling_per_seed"])
            lines.append(
                "| "
                + " | ".join(
                    [
                        name,
                        fam,
                        pm(f["model"]["metrics"].get("kendall")),
                        fmt(f["hwmodel"]["kendall"]),
                        pm(f["random"].get("kendall")),
                        fmt(f["ceiling"]["kendall"]),
                        pm(fr),
                        fmt(f["hwmodel_fraction_of_ceiling"]),
                        f"{fmt(f['best_training_cost_fraction_of_ceiling'])} "
                        f"({f['training_costs']['best_cost']})",
                        fmt(f["training_cost_mix_fraction_of_ceiling"]),
                        str(f["test_graphs"]),
                    ]
                )
                + " |"
            )
        lines.append(
            "| "
            + " | ".join(
                [
                    f"**{name}**",
                    "mean over families",
                    "",
                    "",
                    "",
                    "",
                    f"**{pm(c['fraction_of_ceiling'])}**",
                    fmt(c["hwmodel_fraction_of_ceiling"]),
                    fmt(c["best_training_cost_fraction_of_ceiling"]),
                    fmt(c["training_cost_mix_fraction_of_ceiling"]),
                    f"{c['wall_s']:.0f} s wall",
                ]
            )
            + " |"
        )
        for an, a in c.get("ablations", {}).items():
            for fam, f in a["families"].items():
                lines.append(
                    "| "
                    + " | ".join(
                        [
                            f"{name} `{an}`",
                            fam,
                            pm(f["metrics"].get("kendall")),
                            "",
                            "",
                            "",
                            pm(mean_std(f["fraction_of_ceiling_per_seed"])),
                            "",
                            "",
                            "",
                            "",
                        ]
                    )
                    + " |"
                )
            lines.append(
                "| "
                + " | ".join(
                    [
                        f"**{name} `{an}`**",
                        "mean over families",
                        "",
                        "",
                        "",
                        "",
                        f"**{pm(a['fraction_of_ceiling'])}**",
                        f"paired delta {pm(a['delta_vs_model'])}",
                        "",
                        "",
                        "",
                    ]
                )
                + " |"
            )
    if lines:
        lines.append("")
        lines.append(
            "Transfer: train on the other cost families (and tpu_v3), score the held-out one "
            "(docs/benchmarks.md#transfer); model: mean ± sd over seeds; model / ceiling of a "
            "case: mean over held-out families per seed, then mean ± sd over seeds; best training "
            "cost: the training family whose noise-free labels of the held-out graphs rank them "
            "best (chosen with hindsight); training-cost mix: their mean standardized log runtime."
        )
    return "\n".join(lines) + ("\n" if lines else "")
