// One timed mode of `segrank bench`: warmup and timed training steps of the layout model on one
// graph (full-graph or segments), reduced to medians.
#pragma once
#include <cstdint>

#include "cli/bench_workload.h"

namespace segrank::bench {

/// Medians over the timed steps of one mode (seconds, MB, counts per step).
struct ModeResult {
    double median_step_s = 0, median_fresh_s = 0, median_stale_s = 0, median_optimizer_s = 0;
    double peak_rss_mb = 0, final_loss = 0;
    int64_t stale_forwards = 0, skipped_segments = 0;
    double median_page_faults = 0;   ///< minor faults per timed step (getrusage)
    double median_matmul_flops = 0;  ///< matmul FLOPs per timed step (gnn/ops/matmul.h counter)
};

/// Runs `warmup` untimed then `steps` timed steps (full_graph_step, or segment_step when
/// `segments`) of a fresh model of `mc` (parameters and AdamW from `seed`), K = `k` configs per
/// step, printing one line per step on stderr. Starts from a cleared tensor cache and peak RSS, so
/// peak_rss_mb is this mode's. Times are medians (util/median.h).
ModeResult run_mode(const BenchGraph& g, const ModelConfig& mc, bool segments, int64_t k,
                    int warmup, int steps, uint64_t seed);

}  // namespace segrank::bench
