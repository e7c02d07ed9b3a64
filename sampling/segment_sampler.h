// Segment sampling for Graph Segment Training (DESIGN.md 6): which k segments of a graph are fresh
// (forward with saved state + backward) in a step, the Stale Embedding Dropout (SED) keep mask of the
// others, the fresh weight alpha, the combination of fresh and stale segment outputs, and the glue
// between a step and the HistoryTable (stale sums with history_init / max_staleness, fresh writes).
// All randomness comes from Rng::derive(seed, step, graph_id, "segments" / "sed") (STYLE.md R6).
//
// Intended GST step for one owned graph g with S segments and K sampled configs `cfgs` at step t:
//   choice = choose_segments(seed, t, g, S, segments.fresh, segments.keep_prob);
//   stale  = sum_stale_segments(table, g, choice, cfgs, t, max_staleness, init, forward_only);  // pre-update params
//   y[i]   = forward of segment choice.fresh[i] for cfgs with saved state          // [K, width] each
//   w      = combine_weights(choice, aggregate);
//   combine_segments_forward(out, y, {stale.sum}, w);   // scores [K,1], or readout [K,2H] -> head
//   loss -> dout; combine_segments_backward(dy, dout, w); backward of each fresh segment
//   allreduce + optimizer step; then write_fresh_segments(table, g, S, choice.fresh, cfgs, y, t).
// The table width is 1 for score_sum and 2H for embedding_mean.
#pragma once
#include <cstdint>
#include <functional>
#include <span>
#include <string_view>
#include <vector>

#include "gnn/core/enum_names.h"
#include "gnn/core/tensor.h"
#include "segments/history_table.h"

namespace segrank {

/// `model.aggregate` as it concerns segments: sum of per-segment scores, or mean of per-segment
/// readouts [2H] followed by the head.
enum class SegmentAggregate { kScoreSum, kEmbeddingMean };

/// Names: "score_sum", "embedding_mean".
std::span<const EnumName<SegmentAggregate>> enum_names(SegmentAggregate);
/// Parses "score_sum" | "embedding_mean"; throws segrank::Error listing the valid names.
SegmentAggregate parse_segment_aggregate(std::string_view name);
std::string_view to_string(SegmentAggregate aggregate);

/// The segments of one graph in one step. Shared by all K configs of the graph in that step.
struct SegmentChoice {
    int32_t num_segments = 0;            ///< S
    std::vector<int32_t> fresh;          ///< [k] ascending fresh segment ids, k = min(fresh, S)
    std::vector<int32_t> stale_kept;     ///< ascending stale ids kept by SED (read from the history)
    std::vector<int32_t> stale_dropped;  ///< ascending stale ids dropped by SED (not read at all)
    double keep_prob = 1.0;              ///< p
    double alpha = 1.0;                  ///< (S(1-p) + p k) / k, the weight of the fresh outputs
};

/// Draws the choice for (seed, step, graph_id): k = min(num_fresh, S) fresh segments uniformly
/// without replacement (partial Fisher-Yates on stream "segments"), and one keep draw per segment
/// (stream "sed", uniform < keep_prob, drawn for all S in id order so segment s always uses the
/// s-th draw; fresh segments ignore theirs). With S = 1 the result is {fresh = {0}, alpha = 1}.
/// Throws segrank::Error when num_segments < 1, num_fresh < 1 or keep_prob is outside [0, 1].
SegmentChoice choose_segments(uint64_t seed, int64_t step, int64_t graph_id, int32_t num_segments,
                              int32_t num_fresh, double keep_prob);

/// Weights of the combination: graph value = fresh * sum_fresh x_s + stale * sum_kept_stale x_s.
struct CombineWeights {
    float fresh = 1.0f;
    float stale = 1.0f;
};

/// score_sum: {alpha, 1}, so score_k = alpha * sum_fresh y_s,k + sum_kept_stale y_s,k
/// (DESIGN.md 6). embedding_mean: {alpha / S, 1 / S}: the same estimator of the sum divided by S,
/// i.e. an unbiased estimate of the mean readout (1/S) sum_s r_s,k, which then goes through the head
/// (the head's output is not unbiased, being nonlinear; GST on MalNet does the same).
/// Both are unbiased over the fresh choice and the SED mask when the stale values are current.
CombineWeights combine_weights(const SegmentChoice& choice, SegmentAggregate aggregate);

/// out [K, D] = w.fresh * sum_i fresh[i] + w.stale * sum_j stale_kept[j]; every input is [K, D]
/// (D = 1 for scores, 2H for readouts). Overwrites `out`. Throws segrank::Error on a shape mismatch.
void combine_segments_forward(MatrixView out, std::span<const ConstMatrixView> fresh,
                              std::span<const ConstMatrixView> stale_kept, CombineWeights w);

/// dfresh[i] [K, D] += w.fresh * dout [K, D]. Stale values are constants: they get no gradient.
void combine_segments_backward(std::span<const MatrixView> dfresh, ConstMatrixView dout, CombineWeights w);

/// `segments.history_init`: what a kept stale segment without a stored value contributes.
enum class HistoryInit {
    kFresh,  ///< computed forward-only with the current parameters, then stored (default)
    kZero,   ///< read as 0 and not stored (as the reference GST code)
};

/// Names: "fresh", "zero".
std::span<const EnumName<HistoryInit>> enum_names(HistoryInit);
/// Parses "fresh" | "zero"; throws segrank::Error listing the valid names.
HistoryInit parse_history_init(std::string_view name);
std::string_view to_string(HistoryInit init);

/// Forward-only evaluation of one segment for some configs: fills out [configs.size(), width] with
/// the segment's outputs (score or readout) under the current parameters, without saved state.
using SegmentForwardOnly =
    std::function<void(int32_t segment, std::span<const int64_t> configs, MatrixView out)>;

/// The stale part of one graph in one step.
struct StaleSum {
    Tensor sum;              ///< [K, width] sum over choice.stale_kept of the values per config
    int64_t hits = 0;        ///< values read from the table
    int64_t recomputed = 0;  ///< values computed by forward_only (absent with kFresh, or too stale)
    int64_t zeros = 0;       ///< absent values read as 0 (kZero)
};

/// Sums the history values of the kept stale segments of `choice` for the K `configs` (indices in
/// the graph's file). A value older than max_staleness steps (> 0) is recomputed with forward_only;
/// an absent one is recomputed (kFresh) or read as 0 (kZero). Recomputed values are written to the
/// table at `step` (they would otherwise be recomputed every step). Dropped stale segments are not
/// read at all. Call before the optimizer step so recomputed values come from the same parameters
/// as the fresh forward. Throws segrank::Error when the table's graph segment count differs from
/// choice.num_segments (the table is declared here on first use).
StaleSum sum_stale_segments(HistoryTable& table, int64_t graph, const SegmentChoice& choice,
                            std::span<const int64_t> configs, int64_t step, int64_t max_staleness,
                            HistoryInit init, const SegmentForwardOnly& forward_only);

/// Writes the fresh segments' forward values after the step: values[i] [K, width] is segment
/// fresh[i] for configs [K]. Only fresh entries are written (DESIGN.md 6).
void write_fresh_segments(HistoryTable& table, int64_t graph, int32_t num_segments, std::span<const int32_t> fresh,
                          std::span<const int64_t> configs, std::span<const ConstMatrixView> values, int64_t step);

}  // namespace segrank
