// Fresh/stale combination and the HistoryTable glue of a GST step.
#include "gst/combine.h"

#include <algorithm>

#include "gnn/core/check.h"

namespace segrank {

CombineWeights combine_weights(const SegmentChoice& choice, SegmentAggregate aggregate) {
    SEGRANK_CHECK(choice.num_segments >= 1, "combine_weights: choice has no segments");
    switch (aggregate) {
        case SegmentAggregate::kScoreSum:
            return {static_cast<float>(choice.alpha), 1.0f};
        case SegmentAggregate::kEmbeddingMean: {
            const double inv = 1.0 / choice.num_segments;
            return {static_cast<float>(choice.alpha * inv), static_cast<float>(inv)};
        }
    }
    SEGRANK_ASSERT(false, "unhandled SegmentAggregate");
    return {};
}

namespace {
void check_same_shape(ConstMatrixView x, int64_t rows, int64_t cols, const char* what, size_t i) {
    SEGRANK_CHECK(x.rows == rows && x.cols == cols, "combine_segments: ", what, "[", i, "] is [",
                  x.rows, ", ", x.cols, "], expected [", rows, ", ", cols, "]");
}
}  // namespace

void combine_segments_forward(MatrixView out, std::span<const ConstMatrixView> fresh,
                              std::span<const ConstMatrixView> stale_kept, CombineWeights w) {
    for (size_t i = 0; i < fresh.size(); ++i)
        check_same_shape(fresh[i], out.rows, out.cols, "fresh", i);
    for (size_t i = 0; i < stale_kept.size(); ++i)
        check_same_shape(stale_kept[i], out.rows, out.cols, "stale_kept", i);
    for (int64_t r = 0; r < out.rows; ++r) {
        float* o = out.row(r);
        for (int64_t c = 0; c < out.cols; ++c) {
            // Sum each group in double, then weight: the result does not depend on the group order.
            double fs = 0.0, ss = 0.0;
            for (const auto& x : fresh) fs += x.at(r, c);
            for (const auto& x : stale_kept) ss += x.at(r, c);
            o[c] = static_cast<float>(w.fresh * fs + w.stale * ss);
        }
    }
}

void combine_segments_backward(std::span<const MatrixView> dfresh, ConstMatrixView dout,
                               CombineWeights w) {
    for (size_t i = 0; i < dfresh.size(); ++i)
        check_same_shape(dfresh[i], dout.rows, dout.cols, "dfresh", i);
    for (const auto& d : dfresh)
        for (int64_t r = 0; r < dout.rows; ++r)
            for (int64_t c = 0; c < dout.cols; ++c) d.at(r, c) += w.fresh * dout.at(r, c);
}

StaleSum sum_stale_segments(HistoryTable& table, int64_t graph, const SegmentChoice& choice,
                            std::span<const int64_t> configs, int64_t step, int64_t max_staleness,
                            HistoryInit init, const SegmentForwardOnly& forward_only) {
    table.set_num_segments(graph, choice.num_segments);
    const int64_t k_cfg = static_cast<int64_t>(configs.size());
    const int64_t width = table.width();
    StaleSum out;
    out.sum = Tensor(k_cfg, width);
    std::vector<double> acc(static_cast<size_t>(k_cfg * width), 0.0);
    Tensor got(k_cfg, width);
    std::vector<uint8_t> found(static_cast<size_t>(k_cfg));
    std::vector<int64_t> redo_cfg, redo_row;
    for (int32_t s : choice.stale_kept) {
        out.hits += table.gather(graph, configs, s, step, max_staleness, got.view(), found);
        redo_cfg.clear();
        redo_row.clear();
        for (int64_t k = 0; k < k_cfg; ++k) {
            if (found[k]) continue;
            // Present but too stale: always recomputed. Absent: per history_init.
            if (init == HistoryInit::kFresh || table.contains(graph, configs[k], s)) {
                redo_cfg.push_back(configs[k]);
                redo_row.push_back(k);
            } else {
                ++out.zeros;  // `got` row is already 0
            }
        }
        if (!redo_cfg.empty()) {
            SEGRANK_CHECK(static_cast<bool>(forward_only), "sum_stale_segments: graph ", graph,
                          " segment ", s,
                          " needs a forward-only recomputation but no function was given");
            Tensor fresh_vals(static_cast<int64_t>(redo_cfg.size()), width);
            forward_only(s, redo_cfg, fresh_vals.view());
            table.scatter(graph, redo_cfg, s, fresh_vals.view(), step);
            for (size_t i = 0; i < redo_row.size(); ++i)
                std::copy_n(fresh_vals.view().row(static_cast<int64_t>(i)), width,
                            got.view().row(redo_row[i]));
            out.recomputed += static_cast<int64_t>(redo_cfg.size());
        }
        for (int64_t i = 0; i < got.size(); ++i) acc[static_cast<size_t>(i)] += got[i];
    }
    for (int64_t i = 0; i < out.sum.size(); ++i)
        out.sum[i] = static_cast<float>(acc[static_cast<size_t>(i)]);
    return out;
}

void write_fresh_segments(HistoryTable& table, int64_t graph, int32_t num_segments,
                          std::span<const int32_t> fresh, std::span<const int64_t> configs,
                          std::span<const ConstMatrixView> values, int64_t step) {
    SEGRANK_CHECK(fresh.size() == values.size(), "write_fresh_segments: ", fresh.size(),
                  " fresh segments but ", values.size(), " value matrices");
    table.set_num_segments(graph, num_segments);
    for (size_t i = 0; i < fresh.size(); ++i)
        table.scatter(graph, configs, fresh[i], values[i], step);
}

}  // namespace segrank
