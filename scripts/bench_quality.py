#!/usr/bin/python3
"""Learning-quality benchmark: how well the segrank GNN ranks configurations,
with random, the hwmodel baseline and the reachable ceiling side by side, over several seeds.

Prints ONE JSON object on stdout (the schema is in docs/benchmarks.md) and a Markdown table on
stderr (and in --markdown FILE). Progress goes to stderr. Python 3 and numpy (npz files); every
number comes from the segrank binary (train, evaluate, predict, hwmodel, leaderboard), except the
Kendall tau of tile baselines (a tile submission lists only 5 configs), which is computed here from
`--scores` files and cross-checked against `segrank evaluate` on a model (see docs/benchmarks.md).

Cases (default: all but the transfer cases; --cases a,b,...). Model runs vary
train.seed = sampling.seed = 0..N-1 (--seeds, default 3); the data is fixed. Steps and sizes
below are "full / --quick".
  synth_layout          segrank synth --collections layout: 64 / 32 graphs of 500-5000 / 500-2500
                        nodes, 200 configs, --noise 0.03, seed 0, splits 40/8/16 (/ 20/4/8) graphs;
                        configs/quickstart.toml, 600 / 150 steps; best checkpoint (on valid) scored
                        on test. Ceiling: the noise-free labels (synth --noise 0, same seed: same
                        graphs and configs, the noise has its own RNG stream) as a submission.
                        Trip-blind ceiling beside it: the same with every while loop charged the
                        generator's mean trip count (synth --cost-off trip_counts
                        --default-trip-count 5.8333), since no node feature carries trip counts.
  synth_tile            segrank synth --collections tile: 256 / 128 kernels of 20-500 nodes, 200
                        configs, --noise 0.03, splits 160/32/64 (/ 80/16/32); configs/
                        xla_fixture_tile.toml with the valid split, 600 / 200 steps; ceiling as
                        above.
  real_tile             configs/xla_fixture_tile.toml (15 TPU tile kernels), all 5 folds over
                        kernels, 300 / 100 steps; every held-out kernel scored by `segrank evaluate
                        --heldout` on its fold's best checkpoint; hwmodel on the same 15 kernels.
                        Regression row: the same folds and seeds trained with an mse term beside
                        listmle; the MAPE and median APE `segrank evaluate` reports for the held-out
                        kernels, beside hwmodel's on the same configs (absolute and anchored on the
                        measured log mean and spread, docs/metrics.md#runtime-regression);
                        --no-regression skips it.
  real_layout_fixture   configs/xla_fixture_layout.toml (U-Net, 112 configs), 5-fold config holdout:
                        groups of identical config rows split into 5 fixed folds (Python, seed 0),
                        each fold written as a train / valid npz pair; 300 / 100 steps; hwmodel and
                        random on the same held-out configs.
  real_layout_official  train unet3d.npz (layout:xla:default), score unet_3d.4x4.bf16 (valid) on the
                        1000 indices of eval_indices/xla_default.json;
                        configs/xla_fixture_layout.toml with graph holdout, 600 / 150 steps; the
                        best checkpoint is chosen on 699
                        of the graph's 965 unlisted configs (none equal to a scored row), never on
                        the scored ones.
  real_layout_official_random
                        the same for layout:xla:random: train openai_v0_rnn_optimized.npz, score
                        unet_3d.4x4.bf16 on xla_random.json (1000 indices, 481 distinct); checkpoint
                        chosen on 1922 default-search configs of unet_3d.4x4.bf16.
  transfer_layout       (only when listed in --cases) leave one cost family out
  transfer_tile         (docs/benchmarks.md#transfer): per family (`segrank synth --cost F`,
                        seed 100 + i) 40 / 20 layout graphs of 500-2500 / 300-1500 nodes (tile:
                        160 / 80 kernels), 200 / 100 configs, splits 0.6/0.15/0.25, 600 steps
                        at both sizes; beside them the training costs' own labels of F's graphs
                        (best with hindsight, and their mix) as references; for each
                        held-out family F, train on tpu_v3 and the other families (their train
                        splits; best checkpoint on their valid splits), score F's test graphs;
                        model / hwmodel / random / ceiling per family; headline = mean over
                        families of model Kendall / ceiling Kendall (sd over seeds).
Random: --random-seeds (default 5) seeds of `segrank predict --random`. Runs execute --jobs at a
time (default: nproc), each with nproc / jobs OpenMP threads (train.threads); GOMP_SPINCOUNT=20000
unless set.

Paths: a relative path given to --segrank, --work, --shared-data, --json-out or --markdown is
relative to the current directory (the defaults are relative to the repository). --work must be
new, empty or a work folder of this script (holding its mark .bench_quality_made), else exit 2;
with --resume it must be such a work folder (else exit 2: nothing to resume). --segrank must be a
segrank binary (its --help prints segrank's usage), else exit 2. --json-out and --markdown must
name two different files.

Examples:
  scripts/bench_quality.py --json-out runs/bench_quality/result.json \\
      --markdown runs/bench_quality/table.md
  scripts/bench_quality.py --quick --cases synth_tile,real_tile
  scripts/bench_quality.py --cases synth_layout \\
      --ablate hinge:loss.terms='[{name="listmle",weight=1.0}]'
"""

# This file is the entry point and --help text; the code is the package scripts/bench/
# (docs/benchmarks.md). Its helpers are importable from here too, as other scripts do
# (`from bench_quality import Runner, npz_targets, ...`): the names below are re-exported.


from bench import cli
from bench.atomic_output import OutputError, check_output, write_text_atomically  # noqa: F401
from bench.cases.transfer import (  # noqa: F401
    TRANSFER_ALWAYS_TRAIN,
    TRANSFER_FAMILIES,
    TRANSFER_SEED,
    TransferCase,
)
from bench.cli import check_kv, check_overrides, parse_ablate, split_top_level  # noqa: F401
from bench.common import PROG, REPO, BenchError, log, sha256  # noqa: F401
from bench.machine import children_cpu_s, cpu_model, git_commit  # noqa: F401
from bench.metrics import (  # noqa: F401
    aggregate,
    anchored,
    ape_stats,
    graph_metrics,
    mean_std,
    predicted_order,
    slowdown_of_order,
    summarize,
    tau_b_of_order,
    tau_b_raw,
)
from bench.npz import (  # noqa: F401
    int64_values,
    list_graphs,
    npz_rows,
    npz_runtimes,
    npz_targets,
    read_npz,
    take_rows,
    write_npz,
)
from bench.report import clean_json, fmt, markdown, pm, transfer_markdown  # noqa: F401
from bench.runner import Runner, collection_metrics  # noqa: F401
from bench.settings import (  # noqa: F401
    CASES,
    DEFAULT_CASES,
    FOLD_SEED,
    METRICS,
    REAL_INPUTS,
    REGRESSION_SETS,
    SCHEMA_VERSION,
    SIZES,
    SYNTH_MEAN_TRIPS,
    SYNTH_NOISE,
    SYNTH_SEED,
    SYNTH_WHILE_TRIPS,
    TRANSFER_CASES,
)
from bench.submission import read_scores, write_submission  # noqa: F401
from bench.suite import Bench  # noqa: F401


def parse_args(argv):
    """The checked options of argv (bench.cli.parse_args with this file's --help text)."""
    return cli.parse_args(argv, __doc__)


def main(argv):
    """Runs the benchmark; returns the exit code (0 done, 1 a failure, 2 bad arguments)."""
    return cli.main(argv, __doc__)


if __name__ == "__main__":
    cli.run_script(main, PROG)
