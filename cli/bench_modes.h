// One timed mode of `segrank bench`: warmup and timed training steps of the layout model on one
// graph (full-graph or segments), reduced to medians.
#pragma once
#include <array>
#include <cstdint>
#include <string>

#include "cli/bench_workload.h"
#include "gnn/core/op_timer.h"
#include "util/json.h"

namespace segrank::bench {

/// Where a mode's steps go (docs/benchmarks.md#where-the-step-goes): per OpCategory the median
/// over the timed steps of its exclusive seconds per step, and of "other" = step wall time minus
/// every category (framework bookkeeping, OpenMP fork/join between ops, loss, sampling).
struct TimeSplit {
    std::array<double, kNumOpCategories> median_s{};  ///< indexed by static_cast<int>(OpCategory)
    double median_other_s = 0;
    double median_scopes = 0;  ///< OpScopes opened per step (each costs two clock reads)
};

/// Medians over the timed steps of one mode (seconds, MB, counts per step).
struct ModeResult {
    double median_step_s = 0, median_fresh_s = 0, median_stale_s = 0, median_optimizer_s = 0;
    double peak_rss_mb = 0, final_loss = 0;
    int64_t stale_forwards = 0, skipped_segments = 0;
    double median_page_faults = 0;   ///< minor faults per timed step (getrusage)
    double median_matmul_flops = 0;  ///< matmul FLOPs per timed step (gnn/ops/matmul.h counter)
    TimeSplit split;                 ///< op timing (gnn/core/op_timer.h) of the timed steps
};

/// Runs `warmup` untimed then `steps` timed steps (full_graph_step, or segment_step when
/// `segments`) of a fresh model of `mc` (parameters and AdamW from `seed`), K = `k` configs per
/// step, printing one line per step on stderr. Op timing (gnn/core/op_timer.h) is on during the
/// steps and off again when run_mode returns. Starts from a cleared tensor cache and peak RSS, so
/// peak_rss_mb is this mode's. Times are medians (util/median.h).
ModeResult run_mode(const BenchGraph& g, const ModelConfig& mc, bool segments, int64_t k,
                    int warmup, int steps, uint64_t seed);

/// The "time_split" object of a mode: {"seconds_per_step": {category: s, ..., "other": s},
/// "fraction_of_step": {category: seconds / median_step_s, ...}, "scopes_per_step": n}.
Json time_split_json(const ModeResult& r);
/// One line of it for the text output: "gemm 48.1 %, spmm 12.0 %, ..., other 9.3 %".
std::string time_split_text(const ModeResult& r);

}  // namespace segrank::bench
