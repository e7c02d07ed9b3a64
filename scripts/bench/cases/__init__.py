"""The benchmark's cases, one module each (synth: synth_layout and synth_tile; real_layout_official:
its default and random searches): a run(bench, case, ...) function, or transfer.TransferCase,
that trains, scores and returns the case's JSON object (schema in docs/benchmarks.md)."""
