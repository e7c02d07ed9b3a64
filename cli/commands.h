// Subcommands of the `segrank` binary; each lives in cli/<name>.cpp and parses its own
// options with cxxopts. Each returns the process exit code and throws segrank::Error on bad input.
#pragma once

#include <cstdint>
#include <string_view>

namespace segrank::cli {

/// Upper bound of the step and pass counts of `segrank bench` and `segrank bench --memory`
/// (--steps, --warmup, --peer-steps, --peer-warmup, --eval-passes): far above a useful benchmark.
inline constexpr int64_t kMaxBenchSteps = 100'000;

int run_ingest(int argc, char** argv);       // raw XLA tuning .pb -> TpuGraphs npz
int run_pack(int argc, char** argv);         // npz collection dir -> HDF5 stores
int run_synth(int argc, char** argv);        // synthetic collections labelled by hwmodel
int run_stats(int argc, char** argv);        // per-graph / per-collection statistics
int run_train(int argc, char** argv);        // training (single process or mpirun)
int run_evaluate(int argc, char** argv);     // metrics of a checkpoint on a split
int run_predict(int argc, char** argv);      // Kaggle submission CSV
int run_tune(int argc, char** argv);         // which configs to measure next, measured and fed back
int run_hwmodel(int argc, char** argv);      // analytical-baseline submission / explain
int run_leaderboard(int argc, char** argv);  // score and rank submissions
int run_report(int argc, char** argv);       // HTML report of a run directory
int run_bench(int argc, char** argv);        // benchmarks (JSON)

/// True for the subcommands that run the model's oneDNN matmuls (train, evaluate, predict, tune,
/// bench): their SIGINT/SIGTERM/SIGHUP handlers run on a relay thread (util/signal_relay.h).
bool runs_jit_kernels(std::string_view command);

}  // namespace segrank::cli
