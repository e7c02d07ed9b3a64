// The segrank binary: dispatches to subcommands; the top-level catch turns errors into a message
// and a non-zero exit code (library code never exits). Option errors arrive as segrank::Error
// from parse_or_help (cli/options.h).
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>
#include <string_view>

#include "cli/commands.h"
#include "cli/mpi_launch.h"
#include "gnn/core/check.h"
#include "util/exit_status.h"
#include "util/signal_relay.h"

namespace {

struct Command {
    const char* name;
    int (*run)(int, char**);
    const char* help;
};

constexpr Command kCommands[] = {
    {"ingest", segrank::cli::run_ingest, "raw XLA tuning .pb -> TpuGraphs npz files"},
    {"pack", segrank::cli::run_pack, "npz collection dir -> one HDF5 store per split"},
    {"synth", segrank::cli::run_synth, "synthetic collections with hwmodel labels"},
    {"stats", segrank::cli::run_stats, "per-graph and per-collection statistics"},
    {"train", segrank::cli::run_train, "train a model: --config configs/X.toml"},
    {"evaluate", segrank::cli::run_evaluate, "metrics of a checkpoint on a split"},
    {"predict", segrank::cli::run_predict, "write a Kaggle-format submission CSV"},
    {"tune", segrank::cli::run_tune, "choose configs to measure, measure, refit, repeat"},
    {"hwmodel", segrank::cli::run_hwmodel, "analytical TPU baseline submission / explain"},
    {"leaderboard", segrank::cli::run_leaderboard, "validate, score and rank submissions"},
    {"report", segrank::cli::run_report, "self-contained HTML report of a run directory"},
    {"bench", segrank::cli::run_bench, "benchmarks (JSON lines)"},
};

void print_usage(FILE* out) {
    std::fprintf(out,
                 "segrank: train GNNs that rank compiler configurations (TpuGraphs, GST, MPI)\n\n"
                 "usage: segrank <command> [options]   (segrank <command> --help for details)\n\n"
                 "commands:\n");
    for (const auto& c : kCommands) std::fprintf(out, "  %-12s %s\n", c.name, c.help);
}

}  // namespace

namespace segrank::cli {

bool runs_jit_kernels(std::string_view command) {
    for (std::string_view c : {"train", "evaluate", "predict", "tune", "bench"})
        if (command == c) return true;
    return false;
}

}  // namespace segrank::cli

int main(int argc, char** argv) {
    if (argc < 2 || std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0 ||
        std::strcmp(argv[1], "help") == 0) {
        print_usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    const std::string_view name = argv[1];
    for (const auto& c : kCommands) {
        if (name != c.name) continue;
        // A single-process command under `mpirun -np N` would run N times over the same outputs:
        // every rank ends with exit 1, rank 0 says why (docs/distributed.md).
        const auto launched = segrank::cli::launched_rank_from_environment();
        if (launched && launched->size > 1 && !segrank::cli::runs_across_ranks(name)) {
            if (launched->rank == 0)
                std::fprintf(stderr, "segrank %s: error: %s\n", c.name,
                             segrank::cli::single_process_refusal(name, *launched).c_str());
            return 1;
        }
        try {
            // Before any thread exists: the commands that run the model's oneDNN GEMMs take
            // their signals on a relay thread, never on a thread inside a JIT kernel. The others
            // (ingest, pack, synth, ...) keep their handlers on the thread that writes, so a
            // removal of partial output on SIGTERM does not race the writer.
            if (segrank::cli::runs_jit_kernels(name)) segrank::start_signal_relay();
            return c.run(argc - 1, argv + 1);
        } catch (...) {
            const segrank::ExitReport r = segrank::classify_exception(std::current_exception());
            std::fprintf(stderr, "segrank %s: %s\n", c.name, r.message.c_str());
            return r.code;
        }
    }
    std::fprintf(stderr, "segrank: unknown command '%s'\n\n", argv[1]);
    print_usage(stderr);
    return 2;
}
