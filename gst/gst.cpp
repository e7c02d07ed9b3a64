// GST training step and streaming inference.
#include "gst/gst.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "gnn/core/check.h"

namespace segrank {

bool ranking_only(std::span<const LossTerm> terms) {
    for (const auto& t : terms)
        if (t.kind == LossKind::kMse) return false;
    return true;
}

namespace {

// Segment ids taking part: all, or only the config-dependent ones when skipping is exact.
std::vector<int32_t> active_segments(const PreparedGraph& g, const GstOptions& opt) {
    std::vector<int32_t> ids;
    const bool skip = opt.skip_independent && opt.aggregate == SegmentAggregate::kScoreSum;
    for (int64_t s = 0; s < g.num_segments(); ++s)
        if (!skip || g.segment_dependent[static_cast<size_t>(s)]) ids.push_back(static_cast<int32_t>(s));
    return ids;
}

int64_t hidden2(const Model& m) { return 2 * m.config().hidden; }

// Readout [K, 2H] of one segment for configs, forward only. Independent segments are computed once
// with K = 1 and broadcast (their readout is the same for every config).
Tensor readout_forward_only(Model& model, const PreparedGraph& g, int32_t s, const ConfigBatch& batch,
                            std::span<const int64_t> configs, SegmentInputBuffers& buf) {
    const auto k = static_cast<int64_t>(configs.size());
    if (!g.segment_dependent[static_cast<size_t>(s)] && k > 1) {
        SegmentInput in = make_segment_input(g, s, batch, configs.subspan(0, 1), buf);
        Tensor r1 = model.encode(in, nullptr);
        Tensor r(k, r1.cols());
        for (int64_t i = 0; i < k; ++i)
            std::memcpy(r.data() + i * r1.cols(), r1.data(), static_cast<size_t>(r1.cols()) * sizeof(float));
        return r;
    }
    SegmentInput in = make_segment_input(g, s, batch, configs, buf);
    return model.encode(in, nullptr);
}

// Tile config rows [K, 24] of configs (held in `tmp`), or an empty view for layout graphs.
ConstMatrixView tile_view(const PreparedGraph& g, const ConfigBatch& batch, std::span<const int64_t> configs,
                          Tensor& tmp) {
    if (g.task != Task::kTile) return {};
    tmp = tile_rows(g, batch, configs);
    return tmp.cview();
}

std::string config_list(std::span<const int64_t> configs) {
    std::string s;
    for (size_t i = 0; i < configs.size() && i < 64; ++i) {
        if (i) s += ',';
        s += std::to_string(configs[i]);  // appended separately: GCC 12 -Wrestrict false positive on "," + str
    }
    if (configs.size() > 64) s += ",...";
    return s;
}

}  // namespace

GraphStepResult gst_train_graph(Model& model, const PreparedGraph& g, std::span<const int64_t> configs,
                                std::span<const double> targets, int64_t step, double scale,
                                HistoryTable& table, const GstOptions& opt) {
    GraphStepResult res;
    const auto k = static_cast<int64_t>(configs.size());
    SEGRANK_ASSERT(static_cast<int64_t>(targets.size()) == k);
    const std::vector<int32_t> active = active_segments(g, opt);
    res.active_segments = static_cast<int64_t>(active.size());
    res.scores.assign(static_cast<size_t>(k), 0.0f);
    if (active.empty()) return res;  // every config gets the same score: no ranking signal

    const bool sum = opt.aggregate == SegmentAggregate::kScoreSum;
    const int64_t width = sum ? 1 : hidden2(model);
    const auto s_eff = static_cast<int32_t>(active.size());
    const SegmentChoice choice =
        choose_segments(opt.seed, step, g.id, s_eff, std::max<int32_t>(1, opt.fresh), opt.keep_prob);
    const CombineWeights w = combine_weights(choice, opt.aggregate);
    // The K sampled config rows, read once (streamed graphs: only these rows' chunks).
    const ConfigBatch batch = load_config_batch(g, configs);
    Tensor tile_tmp;
    const ConstMatrixView tile_cfg = tile_view(g, batch, configs, tile_tmp);

    // Stale part (forward-only recomputation of absent / too stale entries, stored by the callee).
    SegmentInputBuffers fo_buf;
    auto forward_only = [&](int32_t r, std::span<const int64_t> cfgs, MatrixView out) {
        Tensor ro = readout_forward_only(model, g, active[static_cast<size_t>(r)], batch, cfgs, fo_buf);
        if (sum) {
            Tensor tmp;
            Tensor sc = model.head(ro.cview(), tile_view(g, batch, cfgs, tmp), nullptr);
            for (int64_t i = 0; i < out.rows; ++i) out.at(i, 0) = sc[i];
        } else {
            for (int64_t i = 0; i < out.rows; ++i)
                std::memcpy(out.row(i), ro.data() + i * width, static_cast<size_t>(width) * sizeof(float));
        }
    };
    StaleSum stale = sum_stale_segments(table, g.id, choice, configs, step, opt.max_staleness, opt.history_init,
                                        forward_only);
    res.stale_hits = stale.hits;
    res.stale_recomputed = stale.recomputed;

    // Fresh segments with saved state.
    const size_t nf = choice.fresh.size();
    std::vector<SegmentInputBuffers> bufs(nf);
    std::vector<EncodeSaved> es(nf);
    std::vector<HeadSaved> hs(nf);
    std::vector<Tensor> readouts(nf), values(nf);
    for (size_t i = 0; i < nf; ++i) {
        const int32_t s = active[static_cast<size_t>(choice.fresh[i])];
        SegmentInput in = make_segment_input(g, s, batch, configs, bufs[i]);
        Rng rng = Rng::derive(opt.seed ^ (0x9e37ULL * static_cast<uint64_t>(s + 1)), static_cast<uint64_t>(step),
                              static_cast<uint64_t>(g.id), "dropout");
        readouts[i] = model.encode(in, &es[i], /*training=*/true, &rng);
        if (sum) {
            Tensor sc = model.head(readouts[i].cview(), tile_cfg, &hs[i]);
            sc.reshape(k, 1);
            values[i] = std::move(sc);
        }
    }
    std::vector<ConstMatrixView> fresh_views(nf);
    for (size_t i = 0; i < nf; ++i) fresh_views[i] = sum ? values[i].cview() : readouts[i].cview();
    Tensor combined(k, width);
    std::vector<ConstMatrixView> stale_views;
    if (!choice.stale_kept.empty()) stale_views.push_back(stale.sum.cview());
    // stale.sum already holds the sum over kept stale segments; weight it with w.stale.
    combine_segments_forward(combined.view(), fresh_views, stale_views, w);

    HeadSaved head_saved;
    Tensor scores;
    if (sum) {
        scores = Tensor(k);
        for (int64_t i = 0; i < k; ++i) scores[i] = combined[i];
    } else {
        scores = model.head(combined.cview(), tile_cfg, &head_saved);
    }
    std::vector<float> dscores(static_cast<size_t>(k), 0.0f);
    res.loss = compute_loss(opt.loss_terms, opt.loss_options, scores.span(), targets, dscores, scale);
    SEGRANK_CHECK(std::isfinite(res.loss), "non-finite loss at step ", step, " on graph '", g.name, "' (id ", g.id,
                  ") with configs [", config_list(configs), "]");
    for (int64_t i = 0; i < k; ++i) res.scores[static_cast<size_t>(i)] = scores[i];

    // Backward through fresh segments only (stale values are constants).
    Tensor dcombined(k, width);
    if (sum) {
        for (int64_t i = 0; i < k; ++i) dcombined[i] = dscores[static_cast<size_t>(i)];
    } else {
        model.head_backward(dscores, head_saved, dcombined.view());
    }
    std::vector<Tensor> dfresh_t(nf);
    std::vector<MatrixView> dfresh(nf);
    for (size_t i = 0; i < nf; ++i) {
        dfresh_t[i] = Tensor(k, width);
        dfresh[i] = dfresh_t[i].view();
    }
    combine_segments_backward(dfresh, dcombined.cview(), w);
    for (size_t i = 0; i < nf; ++i) {
        Tensor dr(k, hidden2(model));
        if (sum) {
            model.head_backward(dfresh_t[i].span(), hs[i], dr.view());
        } else {
            dr = std::move(dfresh_t[i]);
        }
        model.encode_backward(dr.cview(), es[i]);
    }
    res.fresh_segments = static_cast<int64_t>(nf);

    // Only fresh entries are written, with this step's forward values (DESIGN.md 6).
    write_fresh_segments(table, g.id, s_eff, choice.fresh, configs, fresh_views, step);
    return res;
}

std::vector<Tensor> segment_readouts(Model& model, const PreparedGraph& g, std::span<const int64_t> configs,
                                     const GstOptions& opt) {
    std::vector<Tensor> out;
    SegmentInputBuffers buf;
    const ConfigBatch batch = load_config_batch(g, configs);
    for (int32_t s : active_segments(g, opt)) out.push_back(readout_forward_only(model, g, s, batch, configs, buf));
    return out;
}

std::vector<float> score_graph(Model& model, const PreparedGraph& g, std::span<const int64_t> configs,
                               int64_t chunk, const GstOptions& opt, int64_t max_chunk_bytes) {
    std::vector<float> scores(configs.size(), 0.0f);
    const std::vector<int32_t> active = active_segments(g, opt);
    if (active.empty()) return scores;
    const bool sum = opt.aggregate == SegmentAggregate::kScoreSum;
    const int64_t row_bytes = g.task == Task::kLayout ? g.num_config_nodes * kLayoutConfigDim
                                                      : kTileConfigDim * static_cast<int64_t>(sizeof(float));
    chunk = std::clamp<int64_t>(max_chunk_bytes / std::max<int64_t>(1, row_bytes), 1, std::max<int64_t>(1, chunk));
    SegmentInputBuffers buf;
    ConfigBatch batch;
    for (size_t b = 0; b < configs.size(); b += static_cast<size_t>(chunk)) {
        const size_t e = std::min(configs.size(), b + static_cast<size_t>(chunk));
        auto cfgs = configs.subspan(b, e - b);
        const auto k = static_cast<int64_t>(cfgs.size());
        load_config_batch(g, cfgs, batch);  // one chunk of rows at a time, into one buffer
        Tensor tile_tmp;
        const ConstMatrixView tile_cfg = tile_view(g, batch, cfgs, tile_tmp);
        Tensor mean_readout;
        for (int32_t s : active) {
            Tensor r = readout_forward_only(model, g, s, batch, cfgs, buf);  // streamed: freed each iteration
            if (sum) {
                Tensor sc = model.head(r.cview(), tile_cfg, nullptr);
                for (int64_t i = 0; i < k; ++i) scores[b + static_cast<size_t>(i)] += sc[i];
            } else {
                if (mean_readout.size() == 0) mean_readout = Tensor(k, r.cols());
                const float inv = 1.0f / static_cast<float>(active.size());
                for (int64_t i = 0; i < r.size(); ++i) mean_readout[i] += inv * r[i];
            }
        }
        if (!sum) {
            Tensor sc = model.head(mean_readout.cview(), tile_cfg, nullptr);
            for (int64_t i = 0; i < k; ++i) scores[b + static_cast<size_t>(i)] = sc[i];
        }
    }
    return scores;
}

}  // namespace segrank
