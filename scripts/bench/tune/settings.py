"""bench_tune.py's cases, budgets, sizes and fixed settings; the JSON records them ("settings")
so that a before/after diff can tell. The synthetic data's seed and noise and the layout folds'
seed are bench_quality.py's (bench/settings.py)."""

from ..settings import synth_size

PROG = "bench_tune.py"
SCHEMA_VERSION = 1
CASES = ["real_tile", "real_layout", "synth_tile", "synth_layout", "search_tile", "search_layout"]
BUDGETS = [1, 2, 5, 10, 20, 50, 100]
WITHIN = 0.01  # "within 1 % of the best known"
BATCH = 5  # default --batch: configs per round of every strategy
FOLDS = (
    5  # real_tile: configs/xla_fixture_tile.toml's folds over kernels; real_layout: config folds
)
SEARCH_FAMILY = {"tile": "pipeline", "layout": "propagate"}


def tuned_synth(graphs, nodes, configs, splits, steps, eval_every, tuned):
    """A synthetic case's size (settings.synth_size) and the number of its test graphs tuned."""
    return {**synth_size(graphs, nodes, configs, splits, steps, eval_every), "tuned": tuned}


# Sizes per mode: full / quick / tiny (smoke tests: seconds, the numbers mean nothing).
SIZES = {
    "full": {
        "real_tile": {"steps": 300, "eval_every": 50},
        "real_layout": {"steps": 300, "eval_every": 50},
        "synth_tile": tuned_synth(128, "20:500", 200, "0.625,0.125,0.25", 600, 100, 16),
        "synth_layout": tuned_synth(32, "500:2500", 200, "0.625,0.125,0.25", 600, 100, 8),
        "budget": 100,
        "refit_steps": 200,
    },
    "quick": {
        "real_tile": {"steps": 100, "eval_every": 25},
        "real_layout": {"steps": 100, "eval_every": 25},
        "synth_tile": tuned_synth(48, "20:300", 150, "0.667,0.083,0.25", 200, 50, 6),
        "synth_layout": tuned_synth(16, "300:1000", 120, "0.625,0.125,0.25", 150, 50, 4),
        "budget": 100,
        "refit_steps": 100,
    },
    "tiny": {
        "real_tile": {"steps": 5, "eval_every": 5, "tuned": 3},
        "real_layout": {"steps": 5, "eval_every": 5},
        "synth_tile": tuned_synth(12, "20:60", 16, "0.5,0.25,0.25", 10, 5, 2),
        "synth_layout": tuned_synth(8, "100:300", 16, "0.5,0.25,0.25", 10, 5, 2),
        "budget": 10,
        "refit_steps": 5,
    },
}
