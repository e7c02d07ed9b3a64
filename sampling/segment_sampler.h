// Segment sampling for Graph Segment Training (docs/gst.md#stale-embedding-dropout): which k
// segments of a graph are fresh (forward with saved state + backward) in a step, the Stale
// Embedding Dropout (SED) keep mask of the others and the fresh weight alpha. The combination of
// fresh and stale outputs and the HistoryTable glue that use this choice are in gst/combine.h. All
// randomness comes from
// Rng::derive(seed, step, graph_id, "segments" / "sed").
#pragma once
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "gnn/core/enum_names.h"

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
    int32_t num_segments = 0;         ///< S
    std::vector<int32_t> fresh;       ///< [k] ascending fresh segment ids, k = min(fresh, S)
    std::vector<int32_t> stale_kept;  ///< ascending stale ids kept by SED (read from the history)
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

}  // namespace segrank
