// The fresh/stale combination of Graph Segment Training and its glue with the HistoryTable, given
// the segment choice of sampling/segment_sampler.h:
//   choice = choose_segments(seed, t, g, S, segments.fresh, segments.keep_prob);
//   stale  = sum_stale_segments(table, g, choice, cfgs, t, max_staleness, init, forward_only);  //
//   pre-update params y[i]   = forward of segment choice.fresh[i] for cfgs with saved state // [K,
//   width] each w      = combine_weights(choice, aggregate); combine_segments_forward(out, y,
//   {stale.sum}, w);   // scores [K,1], or readout [K,W] -> head loss -> dout;
//   combine_segments_backward(dy, dout, w); backward of each fresh segment
//   write_fresh_segments(table, g, S, choice.fresh, cfgs, y, t).
// The table width is 1 for score_sum and W (2H, or H with model.readout = "mean") for
// embedding_mean. gst/gst.h runs this step.
#pragma once
#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "gnn/core/tensor.h"
#include "sampling/segment_sampler.h"
#include "segments/history_table.h"

namespace segrank {

/// Weights of the combination: graph value = fresh * sum_fresh x_s + stale * sum_kept_stale x_s.
struct CombineWeights {
    float fresh = 1.0f;
    float stale = 1.0f;
};

/// score_sum: {alpha, 1}, so score_k = alpha * sum_fresh y_s,k + sum_kept_stale y_s,k
/// (docs/gst.md). embedding_mean: {alpha / S, 1 / S}: the same estimator of the sum divided by S,
/// i.e. an unbiased estimate of the mean readout (1/S) sum_s r_s,k, which then goes through the
/// head (the head's output is not unbiased, being nonlinear; GST on MalNet does the same). Both are
/// unbiased over the fresh choice and the SED mask when the stale values are current.
CombineWeights combine_weights(const SegmentChoice& choice, SegmentAggregate aggregate);

/// out [K, D] = w.fresh * sum_i fresh[i] + w.stale * sum_j stale_kept[j]; every input is [K, D]
/// (D = 1 for scores, W for readouts). Overwrites `out`. Throws segrank::Error on a shape
/// mismatch.
void combine_segments_forward(MatrixView out, std::span<const ConstMatrixView> fresh,
                              std::span<const ConstMatrixView> stale_kept, CombineWeights w);

/// dfresh[i] [K, D] += w.fresh * dout [K, D]. Stale values are constants: they get no gradient.
void combine_segments_backward(std::span<const MatrixView> dfresh, ConstMatrixView dout,
                               CombineWeights w);

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
/// fresh[i] for configs [K]. Only fresh entries are written (docs/gst.md).
void write_fresh_segments(HistoryTable& table, int64_t graph, int32_t num_segments,
                          std::span<const int32_t> fresh, std::span<const int64_t> configs,
                          std::span<const ConstMatrixView> values, int64_t step);

}  // namespace segrank
