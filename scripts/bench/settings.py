"""The quality benchmark's cases, sizes and fixed settings. Changing any value here changes what
the numbers mean: the JSON records them ("sizes", "settings") so that a before/after diff can
tell."""

SCHEMA_VERSION = 1

DEFAULT_CASES = [
    "synth_layout",
    "synth_tile",
    "real_tile",
    "real_layout_fixture",
    "real_layout_official",
    "real_layout_official_random",
]
# Run only when listed in --cases (they train one model per held-out cost family and seed).
TRANSFER_CASES = ["transfer_layout", "transfer_tile"]
CASES = DEFAULT_CASES + TRANSFER_CASES


def synth_size(graphs, nodes, configs, splits, steps, eval_every):
    """The size of a synthetic case: `segrank synth` --graphs, --nodes (min:max), --configs and
    --splits (train,valid,test fractions), then train.steps and train.eval_every."""
    return {
        "graphs": graphs,
        "nodes": nodes,
        "configs": configs,
        "splits": splits,
        "steps": steps,
        "eval_every": eval_every,
    }


# Sizes and steps per case: full / quick / tiny; synthetic cases:
# synth_size(graphs, nodes, configs, splits, steps, eval_every).
SIZES = {
    "full": {
        "synth_layout": synth_size(64, "500:5000", 200, "0.625,0.125,0.25", 600, 100),
        "synth_tile": synth_size(256, "20:500", 200, "0.625,0.125,0.25", 600, 100),
        "real_tile": {"steps": 300, "eval_every": 50},
        "real_layout_fixture": {"steps": 300, "eval_every": 50, "folds": 5},
        "real_layout_official": {"steps": 600, "eval_every": 100},
        "real_layout_official_random": {"steps": 600, "eval_every": 100},
        # graphs per cost family; its test split is scored when the family is held out
        "transfer_layout": synth_size(40, "500:2500", 200, "0.6,0.15,0.25", 600, 100),
        "transfer_tile": synth_size(160, "20:500", 200, "0.6,0.15,0.25", 600, 100),
    },
    "quick": {
        "synth_layout": synth_size(32, "500:2500", 200, "0.625,0.125,0.25", 150, 50),
        "synth_tile": synth_size(128, "20:500", 200, "0.625,0.125,0.25", 200, 50),
        "real_tile": {"steps": 100, "eval_every": 25},
        "real_layout_fixture": {"steps": 100, "eval_every": 25, "folds": 5},
        "real_layout_official": {"steps": 150, "eval_every": 50},
        "real_layout_official_random": {"steps": 150, "eval_every": 50},
        "transfer_layout": synth_size(20, "300:1500", 100, "0.6,0.15,0.25", 600, 100),
        "transfer_tile": synth_size(80, "20:300", 100, "0.6,0.15,0.25", 600, 100),
    },
    # Smoke tests only (tests/cli/bench_quality_test.cpp): seconds, the numbers mean nothing.
    "tiny": {
        "synth_layout": synth_size(8, "100:300", 16, "0.5,0.25,0.25", 10, 5),
        "synth_tile": synth_size(16, "20:60", 16, "0.5,0.25,0.25", 10, 5),
        "real_tile": {"steps": 5, "eval_every": 5},
        "real_layout_fixture": {"steps": 5, "eval_every": 5, "folds": 5},
        "real_layout_official": {"steps": 5, "eval_every": 5},
        "real_layout_official_random": {"steps": 5, "eval_every": 5},
        "transfer_layout": synth_size(4, "60:120", 8, "0.5,0.25,0.25", 4, 2),
        "transfer_tile": synth_size(4, "20:40", 8, "0.5,0.25,0.25", 4, 2),
    },
}
SYNTH_NOISE = 0.03
SYNTH_SEED = 0
# The trip counts a synthetic while loop draws from, uniformly (while_block in
# hwmodel/synth/families_layout.cpp). The 140 node features carry no literals, so no model can see a
# loop's count: the trip-blind ceiling charges every loop their mean (docs/benchmarks.md).
SYNTH_WHILE_TRIPS = (2, 3, 4, 6, 8, 12)
SYNTH_MEAN_TRIPS = sum(SYNTH_WHILE_TRIPS) / len(SYNTH_WHILE_TRIPS)
FOLD_SEED = 0  # real_layout_fixture: the fold partition of the config groups (fixed: data fixed)
# The real_tile regression row's loss (docs/metrics.md#runtime-regression): listmle for the ranking
# plus an mse term of equal weight, which makes the scores standardized log runtimes.
REGRESSION_SETS = ['loss.terms=[{name="listmle",weight=1.0},{name="mse",weight=1.0}]']
METRICS = ["kendall", "kendall_all", "opa", "slowdown_1", "slowdown_5", "slowdown_10", "score"]

# The files under --shared-data each real case reads: a case missing one is skipped (an error when
# --cases lists it).
REAL_INPUTS = {
    "real_tile": ["xla_tuning/op_tuning_data.pb"],
    "real_layout_fixture": ["xla_tuning/module_tuning_data_layout.pb"],
    "real_layout_official": [
        "tpugraphs_npz/npz/layout/xla/default/train/unet3d.npz",
        "tpugraphs_npz/npz/layout/xla/default/valid/unet_3d.4x4.bf16.npz",
        "tpugraphs_npz/eval_indices/xla_default.json",
    ],
    "real_layout_official_random": [
        "tpugraphs_npz/npz/layout/xla/random/train/openai_v0_rnn_optimized.npz",
        "tpugraphs_npz/npz/layout/xla/random/valid/unet_3d.4x4.bf16.npz",
        "tpugraphs_npz/npz/layout/xla/default/valid/unet_3d.4x4.bf16.npz",
        "tpugraphs_npz/eval_indices/xla_random.json",
    ],
}
