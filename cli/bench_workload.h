// The `segrank bench` workload: one layout training step on one graph, full-graph or
// with contiguous segments, plus GEMM/SpMM micro-measurements. Kept apart from the CLI so the timed
// code is readable. Single graph, K sampled configs, pairwise hinge loss, AdamW.
#pragma once
#include <cstdint>
#include <filesystem>
#include <vector>

#include "gnn/core/csr.h"
#include "gnn/model.h"
#include "gnn/optim.h"

namespace segrank::bench {

/// One (sub)graph ready for the model: normalized features, opcodes, both Csr directions, and the
/// configurable nodes (local ids) with their column in the file's node_config_feat.
struct BenchPart {
    Tensor feat;                  ///< [n, F'] z-scored signed-log features
    std::vector<int32_t> opcode;  ///< [n]
    GraphCsr graph;
    std::vector<int32_t> config_local;  ///< [nc_s] local ids
    std::vector<int32_t> config_col;    ///< [nc_s] index into the file's nc configurable nodes
};

/// The loaded graph: the whole graph as one part, and its contiguous segments.
struct BenchGraph {
    BenchPart full;
    std::vector<BenchPart> segments;  ///< bounds floor(i n / S), S = ceil(n / max_nodes)
    std::vector<int8_t> config_feat;  ///< [c, nc, 18]
    std::vector<int64_t> runtime;     ///< [c] ns
    int64_t num_configs = 0;
    int64_t num_config_nodes = 0;
    int64_t num_edges = 0;
};

/// Loads a layout npz (data/graph.h), normalizes node_feat (drop constant columns, signed log,
/// population z-score over this graph, as the peer), and cuts contiguous segments of <= max_nodes.
/// Throws segrank::Error naming the file for a tile npz ("bench needs a layout graph (this is a
/// tile npz: ...)") and for whatever load_layout_npz refuses.
BenchGraph load_bench_graph(const std::filesystem::path& npz, int64_t max_nodes);

/// Seconds spent in the parts of one step.
struct StepTimes {
    double total_s = 0, fresh_s = 0, stale_s = 0, optimizer_s = 0;
    int64_t stale_forwards = 0;  ///< segments run forward-only
    int64_t skipped_segments =
        0;  ///< config-independent segments skipped (docs/model.md#config-independence)
    double loss = 0;
};

/// One training step on the whole graph (K configs sampled with rng).
StepTimes full_graph_step(Model& model, AdamW& opt, const BenchGraph& g, int64_t k, Rng& rng);
/// One segment-mode step: one fresh segment forward+backward, the other segments forward-only for
/// the same K configs (history_init = fresh on a cold table, the peer's dominant cost), skipping
/// config-independent segments when the model exploits independence; loss on the summed scores.
StepTimes segment_step(Model& model, AdamW& opt, const BenchGraph& g, int64_t k, Rng& rng);

/// GFLOP/s of y[m, n] = x[m, kd] w^T (forward) and dW[n, kd] += dy^T x (weight gradient), median of
/// reps.
struct GemmRate {
    double forward_gflops = 0, weight_grad_gflops = 0;
};
GemmRate measure_gemm(int64_t m, int64_t kd, int64_t n, int reps);
/// SpMM mean aggregation over the full graph with a [n, width] operand: GB/s of gathered + written
/// floats (nnz * width + n * width) * 4 bytes, median of reps.
double measure_spmm_gbps(const Csr& adj, int64_t width, int reps);

}  // namespace segrank::bench
