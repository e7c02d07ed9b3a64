"""The autotuning benchmark (scripts/bench_tune.py) on the bench package: settings, curves (the
numbers), suite (the job pool, training and tuning runs, recorded pools), one module per case
family (real: tile / layout, synth: recorded pools, search), report (Markdown) and cli."""
