// How segment values become graph scores under model.aggregate (docs/gst.md#aggregate), and the
// forward-only readout of one segment: what the training step (gst/train_step.cpp) and streaming
// inference (gst/inference.cpp) share. Internal to gst/; the public API is gst/gst.h.
#pragma once
#include <cstdint>
#include <span>
#include <vector>

#include "gnn/model.h"
#include "gst/gst.h"
#include "gst/prepared_graph.h"

namespace segrank {

/// The tile rows the head reads under late join: config_feat [K, 24] and, with
/// model.tile_cost_features, the cost features [K, kTileCostFeatures]; empty views for layout.
struct TileView {
    ConstMatrixView config;
    ConstMatrixView cost;
};

/// What differs between the two values of model.aggregate, chosen once per call
/// (aggregation_for): the value a segment contributes to the combination (its scores [K, 1] under
/// score_sum, its readout [K, W] under embedding_mean, W = ModelConfig::readout_width()), how the
/// combined value [K, width] becomes the graph scores [K], and the backward of both.
struct Aggregation {
    int64_t width;  // columns of a segment value (and of the HistoryTable)
    // A config-independent segment adds the same amount to every config's score, so skipping it is
    // exact under ranking losses (score_sum only).
    bool independent_shifts_scores;
    // Value [K, width] of a segment from its readout [K, W]; `saved` records the head when it
    // runs.
    Tensor (*value)(const Model& model, Tensor readout, const TileView& tile, HeadSaved* saved);
    // Graph scores [K] from the combined value [K, width].
    Tensor (*scores)(const Model& model, ConstMatrixView combined, const TileView& tile,
                     HeadSaved* saved);
    // dcombined [K, width] (zero on entry) from dscores [K] and the state of `scores`.
    void (*scores_backward)(Model& model, std::span<const float> dscores, const HeadSaved& saved,
                            MatrixView dcombined);
    // dreadout [K, W] of a fresh segment from dvalue [K, width] and the state of `value`.
    Tensor (*value_backward)(Model& model, Tensor dvalue, const HeadSaved& saved);
    // Weight of each of `s` segments when every one is computed (streaming inference).
    float (*all_weight)(size_t s);
};

/// The Aggregation of `aggregate` for `model` (its width is model's readout width under
/// embedding_mean, 1 under score_sum).
Aggregation aggregation_for(SegmentAggregate aggregate, const Model& model);

/// Segment ids taking part: all, or only the config-dependent ones when skipping is exact
/// (opt.skip_independent under an aggregation whose independent segments shift every score
/// alike).
std::vector<int32_t> active_segments(const PreparedGraph& g, const GstOptions& opt,
                                     const Aggregation& agg);

/// [k, cols] copies of the one row of r1 [1, cols].
Tensor broadcast_row(const Tensor& r1, int64_t k);

/// Readout [K, W] of segment s for configs (rows in batch), forward only. Independent segments are
/// computed once with K = 1 and broadcast (their readout is the same for every config); dependent
/// ones with Model::encode_dedupe when `dedupe` (inference), else densely (training's stale
/// recomputation). Throws segrank::Error for a config not in batch or a source read failure.
Tensor readout_forward_only(Model& model, const PreparedGraph& g, int32_t s,
                            const ConfigBatch& batch, std::span<const int64_t> configs,
                            SegmentInputBuffers& buf, bool dedupe);

/// Tile config rows [K, 24] and cost features [K, kTileCostFeatures] of configs (held in `tmp` and
/// `cost_tmp`, which must outlive the view), or empty views for layout graphs.
TileView tile_view(const PreparedGraph& g, const ConfigBatch& batch,
                   std::span<const int64_t> configs, Tensor& tmp, Tensor& cost_tmp);

}  // namespace segrank
