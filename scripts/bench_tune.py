#!/usr/bin/python3
"""Autotuning benchmark: how fast `segrank tune` finds fast configurations, against the compiler
default, random search, hwmodel's order and model-free searches, at budgets of 1, 2, 5, 10, 20,
50 and 100 measurements.

Prints ONE JSON object on stdout and a Markdown table on stderr (and in --markdown FILE); progress
goes to stderr. Python 3 and numpy (npz files); every runtime comes from the segrank binary (train,
predict, hwmodel, tune) or from the recorded runtimes of the graph files. docs/benchmarks.md
("Autotuning") explains the table, docs/tune.md the tuner.

Strategies (budget n = measurements taken):
  default        the compiler default alone (the reference of every speedup).
  random         recorded pools: the exact expectation of the best of n configs drawn uniformly
                 without replacement from the pool (closed form, no sampling);
                 search mode: `segrank tune --strategy random` (the default, then uniform draws of
                 the search space), --random-seeds seeds.
  anneal         search mode only: `segrank tune --strategy anneal` (simulated annealing from the
                 default, tune/search.h), --random-seeds seeds.
  hwmodel        recorded pools: the n configs `segrank hwmodel --scores` estimates fastest.
  X+default      recorded pools, X = random, hwmodel, model_oneshot: the default first, then X's
                 order without it (as every `segrank tune` run measures the default first).
  model_oneshot  recorded pools: the n configs `segrank predict --scores` ranks fastest (one shot,
                 no measurement feedback).
  model_norefit  search mode: `segrank tune --refit none --batch B` (the generator still breeds
                 from the measured configs; the model is not refit).
  model_refit    `segrank tune --refit head --batch B`: the default first, then rounds of B (B = 5:
                 4 best ranked + 1 explored), the head refit on the measured runtimes before each
                 round. B = --batch (default 5), also the rounds of random / anneal;
                 --batch grow[:CAP]: rounds growing with the measurements taken (`segrank tune
                 --batch`, docs/tune.md#choosing-the-batch).
Model strategies run once per model seed (train.seed = sampling.seed = 0..N-1, --seeds).

A recorded pool is the graph's distinct config rows, each with its first recorded runtime (what
`--measure recorded` answers; a repeated row is one candidate of `segrank tune`).
Per graph and budget: best found / best known - 1 (slowdown, %), default / best found (speedup),
and the measurements needed to come within 1 % of the best known (recorded pools: the pool's
best; search mode: the best any run of any strategy found on that graph). Means over graphs per
seed, then mean +- sd over seeds.

Cases (default: all; --cases a,b,...). Sizes are "full / --quick":
  real_tile     the 15 TPU tile kernels of ../shared/data/xla_tuning/op_tuning_data.pb (`segrank
                ingest`); configs/xla_fixture_tile.toml, 5 folds over kernels, 300 / 100 steps:
                each kernel is tuned by the models of the fold that held it out (the model never
                saw it); `--measure recorded`.
  real_layout   the U-Net layout module of ../shared/data/xla_tuning/module_tuning_data_layout.pb
                (3163 nodes, 112 configs measured on TPU v3); configs/xla_fixture_layout.toml,
                300 / 100 steps, 5 folds over groups of identical config rows (the partition of
                bench_quality.py's real_layout_fixture): each fold's model tunes the pool of its
                held-out configs (`--measure recorded`). The file records no all-default layout,
                so the reference is the pool's config 0 (tune's rule, best.json's default_rule).
  synth_tile    `segrank synth --collections tile` (tpu_v3 labels, noise 0.03), configs/
                xla_fixture_tile.toml, 600 / 200 steps; the first 16 / 6 test kernels tuned over
                their recorded configs.
  synth_layout  `segrank synth --collections layout`, configs/quickstart.toml, 600 / 150 steps;
                the first 8 / 4 test graphs tuned over their recorded configs.
  search_tile   the synth_tile models (trained on tpu_v3 labels) tune the same test kernels in
                `--candidates search` mode measured by `--measure hwmodel:pipeline` (noise 0), a
                cost family they never saw.
  search_layout the same for the synth_layout graphs, measured by `hwmodel:propagate`.
--models DIR: the synth_ cases use the models an earlier run of the same size and --seeds trained
in its --work DIR (DIR/synth_COLLECTION/runs/seedS/best.ckpt.h5, each of a finished training)
instead of training them again (training is deterministic: the same sizes and seeds give the same
models); the data is synthesized again into --work. Not given: the models are trained.
--tiny: seconds-sized smoke test (the numbers mean nothing), budgets up to 10, 3 real kernels
tuned. (The kernels a fold holds out depend on the seed, so every fold is trained per seed.)

Paths: a relative path given to --segrank, --work, --shared-data, --json-out or --markdown is
relative to the current directory (the defaults are relative to the repository). --work must be
new, empty or a work folder of this script (holding its mark .bench_tune_made), else exit 2.
--segrank must be a segrank binary (its --help prints segrank's usage), else exit 2. --json-out and
--markdown must name two different files.

Examples:
  scripts/bench_tune.py --quick --markdown runs/bench_tune/table.md
  scripts/bench_tune.py --cases real_tile,search_layout --json-out runs/bench_tune/result.json
"""

# This file is the entry point and --help text; the code is the package scripts/bench/tune/ on the
# bench package it shares with bench_quality.py (docs/benchmarks.md). The closed forms of random
# search are importable from here (`from bench_tune import random_expected_curve, ...`).

from bench.cli import run_script
from bench.tune import cli
from bench.tune.curves import random_expected_curve, random_expected_hits  # noqa: F401
from bench.tune.settings import PROG


def parse_args(argv):
    """The checked options of argv (bench.tune.cli.parse_args with this file's --help text)."""
    return cli.parse_args(argv, __doc__)


def main(argv):
    """Runs the benchmark; returns the exit code (0 done, 1 a failure, 2 bad arguments)."""
    return cli.main(argv, __doc__)


if __name__ == "__main__":
    run_script(main, PROG)
