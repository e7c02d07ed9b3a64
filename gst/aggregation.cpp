// model.aggregate's segment values and graph scores, the segments taking part, and the
// forward-only segment readout shared by the training step and inference (see aggregation.h).
#include "gst/aggregation.h"

#include <cstring>

#include "gnn/core/check.h"

namespace segrank {

bool ranking_only(std::span<const LossTerm> terms) {
    for (const auto& t : terms)
        if (t.kind == LossKind::kMse) return false;
    return true;
}

std::vector<float> prior_values(const Model& model, const PreparedGraph& g,
                                std::span<const int64_t> configs) {
    if (!model.has_prior()) return {};
    SEGRANK_CHECK(static_cast<int64_t>(g.prior_z.size()) == g.num_configs, "graph '", g.name,
                  "': the model has the analytical prior (model.hwmodel_prior) but the graph was "
                  "prepared without it (",
                  g.prior_z.size(), " prior values for ", g.num_configs, " configs)");
    std::vector<float> z(configs.size());
    for (size_t i = 0; i < configs.size(); ++i) {
        SEGRANK_CHECK(configs[i] >= 0 && configs[i] < g.num_configs, "graph '", g.name,
                      "': config index ", configs[i], " out of range [0, ", g.num_configs, ")");
        z[i] = g.prior_z[static_cast<size_t>(configs[i])];
    }
    return z;
}

namespace {

Tensor score_value(const Model& model, Tensor readout, const TileView& tile, HeadSaved* saved) {
    Tensor sc = model.head(readout.cview(), tile.config, saved, tile.cost);
    sc.reshape(sc.size(), 1);
    return sc;
}
Tensor scores_of_sum(const Model&, ConstMatrixView combined, const TileView&, HeadSaved*) {
    Tensor sc(combined.rows);
    for (int64_t i = 0; i < combined.rows; ++i) sc[i] = combined.at(i, 0);
    return sc;
}
void scores_of_sum_backward(Model&, std::span<const float> dscores, const HeadSaved&,
                            MatrixView dcombined) {
    for (int64_t i = 0; i < dcombined.rows; ++i)
        dcombined.at(i, 0) = dscores[static_cast<size_t>(i)];
}
Tensor score_value_backward(Model& model, Tensor dvalue, const HeadSaved& saved) {
    Tensor dr(dvalue.rows(), model.config().readout_width());
    model.head_backward(dvalue.span(), saved, dr.view());
    return dr;
}
float unit_weight(size_t) { return 1.0f; }

Tensor readout_value(const Model&, Tensor readout, const TileView&, HeadSaved*) { return readout; }
Tensor scores_of_mean(const Model& model, ConstMatrixView combined, const TileView& tile,
                      HeadSaved* saved) {
    return model.head(combined, tile.config, saved, tile.cost);
}
void scores_of_mean_backward(Model& model, std::span<const float> dscores, const HeadSaved& saved,
                             MatrixView dcombined) {
    model.head_backward(dscores, saved, dcombined);
}
Tensor readout_value_backward(Model&, Tensor dvalue, const HeadSaved&) { return dvalue; }
float mean_weight(size_t s) { return 1.0f / static_cast<float>(s); }

}  // namespace

Aggregation aggregation_for(SegmentAggregate aggregate, const Model& model) {
    switch (aggregate) {
        case SegmentAggregate::kScoreSum:
            return {1,
                    true,
                    score_value,
                    scores_of_sum,
                    scores_of_sum_backward,
                    score_value_backward,
                    unit_weight};
        case SegmentAggregate::kEmbeddingMean:
            return {model.config().readout_width(),
                    false,
                    readout_value,
                    scores_of_mean,
                    scores_of_mean_backward,
                    readout_value_backward,
                    mean_weight};
    }
    SEGRANK_ASSERT(false, "unhandled SegmentAggregate");
    return {};
}

std::vector<int32_t> active_segments(const PreparedGraph& g, const GstOptions& opt,
                                     const Aggregation& agg) {
    std::vector<int32_t> ids;
    const bool skip = opt.skip_independent && agg.independent_shifts_scores;
    for (int64_t s = 0; s < g.num_segments(); ++s)
        if (!skip || g.segment_dependent[static_cast<size_t>(s)])
            ids.push_back(static_cast<int32_t>(s));
    return ids;
}

// [k, cols] copies of the one row of r1 [1, cols].
Tensor broadcast_row(const Tensor& r1, int64_t k) {
    Tensor r(k, r1.cols());
    for (int64_t i = 0; i < k; ++i)
        std::memcpy(r.data() + i * r1.cols(), r1.data(),
                    static_cast<size_t>(r1.cols()) * sizeof(float));
    return r;
}

Tensor readout_forward_only(Model& model, const PreparedGraph& g, int32_t s,
                            const ConfigBatch& batch, std::span<const int64_t> configs,
                            SegmentInputBuffers& buf, bool dedupe) {
    const auto k = static_cast<int64_t>(configs.size());
    if (!g.segment_dependent[static_cast<size_t>(s)] && k > 1) {
        SegmentInput in = make_segment_input(g, s, batch, configs.subspan(0, 1), buf);
        return broadcast_row(model.encode(in, nullptr), k);
    }
    SegmentInput in = make_segment_input(g, s, batch, configs, buf);
    return dedupe ? model.encode_dedupe(in) : model.encode(in, nullptr);
}

TileView tile_view(const PreparedGraph& g, const ConfigBatch& batch,
                   std::span<const int64_t> configs, Tensor& tmp, Tensor& cost_tmp) {
    if (g.task != Task::kTile) return {};
    tmp = tile_rows(g, batch, configs);
    cost_tmp = tile_cost_rows(g, configs);
    return {tmp.cview(), cost_tmp.cview()};
}

}  // namespace segrank
