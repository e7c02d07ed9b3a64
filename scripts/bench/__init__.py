"""The benchmark harness behind scripts/bench_quality.py (docs/benchmarks.md): npz (numpy),
metrics, runner, suite, cases/ (one module per case), report, cli; atomic_output is shared with
scripts/bench_scale.py. Importing the package imports nothing else, so atomic_output needs no
numpy."""
