// GST training step and streaming inference.
#include "gst/gst.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <utility>

#include "gnn/core/check.h"

namespace segrank {

bool ranking_only(std::span<const LossTerm> terms) {
    for (const auto& t : terms)
        if (t.kind == LossKind::kMse) return false;
    return true;
}

namespace {

// The tile rows the head reads under late join: config_feat [K, 24] and, with
// model.tile_cost_features, the cost features [K, kTileCostFeatures]; empty views for layout.
struct TileView {
    ConstMatrixView config;
    ConstMatrixView cost;
};

// What differs between the two values of model.aggregate, chosen once per call (aggregation_for):
// the value a segment contributes to the combination (its scores [K, 1] under score_sum, its
// readout [K, W] under embedding_mean, W = ModelConfig::readout_width()), how the combined value
// [K, width] becomes the graph scores [K], and the backward of both.
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

// Segment ids taking part: all, or only the config-dependent ones when skipping is exact.
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

// Readout [K, W] of one segment for configs, forward only. Independent segments are computed once
// with K = 1 and broadcast (their readout is the same for every config); dependent ones with
// Model::encode_dedupe when `dedupe` (inference), else densely (training's stale recomputation).
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

// Tile config rows [K, 24] and cost features of configs (held in `tmp` and `cost_tmp`), or empty
// views for layout graphs.
TileView tile_view(const PreparedGraph& g, const ConfigBatch& batch,
                   std::span<const int64_t> configs, Tensor& tmp, Tensor& cost_tmp) {
    if (g.task != Task::kTile) return {};
    tmp = tile_rows(g, batch, configs);
    cost_tmp = tile_cost_rows(g, configs);
    return {tmp.cview(), cost_tmp.cview()};
}

std::string config_list(std::span<const int64_t> configs) {
    std::string s;
    for (size_t i = 0; i < configs.size() && i < 64; ++i) {
        if (i) s += ',';
        s += std::to_string(
            configs[i]);  // appended separately: GCC 12 -Wrestrict false positive on "," + str
    }
    if (configs.size() > 64) s += ",...";
    return s;
}

// What one graph's step works on: the active segments, the segment choice, and the K config rows
// (read once: only these rows' chunks of the source).
struct StepInput {
    const PreparedGraph& g;
    std::span<const int64_t> configs;
    std::vector<int32_t> active;  // [S_eff] segment ids taking part
    SegmentChoice choice;         // over positions in `active`
    ConfigBatch batch;
    Tensor tile_tmp, cost_tmp;
    TileView tile_cfg;  // [K, 24] tile rows and cost features, empty for layout
    int64_t k() const { return static_cast<int64_t>(configs.size()); }
};

// The fresh segments' forward with saved state: values[i] [K, width] of segment
// active[choice.fresh[i]].
struct FreshForward {
    std::vector<SegmentInputBuffers> bufs;  // back the saved inputs until the backward
    std::vector<EncodeSaved> encode;
    std::vector<HeadSaved> head;  // used when the value runs the head (score_sum)
    std::vector<Tensor> values;
};

FreshForward fresh_forward(Model& model, const StepInput& in, const Aggregation& agg, int64_t step,
                           uint64_t seed) {
    const size_t nf = in.choice.fresh.size();
    FreshForward f;
    f.bufs.resize(nf);
    f.encode.resize(nf);
    f.head.resize(nf);
    f.values.resize(nf);
    for (size_t i = 0; i < nf; ++i) {
        const int32_t s = in.active[static_cast<size_t>(in.choice.fresh[i])];
        SegmentInput si = make_segment_input(in.g, s, in.batch, in.configs, f.bufs[i]);
        Rng rng =
            Rng::derive(seed ^ (0x9e37ULL * static_cast<uint64_t>(s + 1)),
                        static_cast<uint64_t>(step), static_cast<uint64_t>(in.g.id), "dropout");
        Tensor readout = model.encode(si, &f.encode[i], /*training=*/true, &rng);
        f.values[i] = agg.value(model, std::move(readout), in.tile_cfg, &f.head[i]);
    }
    return f;
}

// The combined graph value [K, width] of the fresh values and the kept stale sum, and its scores
// [K].
struct Combined {
    CombineWeights weights;
    Tensor scores;
    HeadSaved head;  // used when the scores run the head (embedding_mean)
};

Combined combine_forward(const Model& model, const StepInput& in, const Aggregation& agg,
                         const FreshForward& f, const StaleSum& stale, SegmentAggregate aggregate) {
    Combined c;
    c.weights = combine_weights(in.choice, aggregate);
    std::vector<ConstMatrixView> fresh_views;
    for (const Tensor& v : f.values) fresh_views.push_back(v.cview());
    std::vector<ConstMatrixView> stale_views;
    if (!in.choice.stale_kept.empty())
        stale_views.push_back(stale.sum.cview());  // already summed over kept
    Tensor combined(in.k(), agg.width);
    combine_segments_forward(combined.view(), fresh_views, stale_views, c.weights);
    c.scores = agg.scores(model, combined.cview(), in.tile_cfg, &c.head);
    return c;
}

// Backward from dscores [K] through the combination into the fresh segments only (stale values are
// constants): parameter gradients accumulate in the head (once per fresh segment under score_sum,
// once for the graph under embedding_mean) and in each fresh segment's encoder.
void combine_backward(Model& model, const StepInput& in, const Aggregation& agg, FreshForward& f,
                      const Combined& c, std::span<const float> dscores) {
    Tensor dcombined(in.k(), agg.width);
    agg.scores_backward(model, dscores, c.head, dcombined.view());
    const size_t nf = f.values.size();
    std::vector<Tensor> dvalues(nf);
    std::vector<MatrixView> dviews(nf);
    for (size_t i = 0; i < nf; ++i) {
        dvalues[i] = Tensor(in.k(), agg.width);
        dviews[i] = dvalues[i].view();
    }
    combine_segments_backward(dviews, dcombined.cview(), c.weights);
    for (size_t i = 0; i < nf; ++i) {
        const Tensor dreadout = agg.value_backward(model, std::move(dvalues[i]), f.head[i]);
        model.encode_backward(dreadout.cview(), f.encode[i]);
    }
}

}  // namespace

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

GraphStepResult gst_train_graph(Model& model, const PreparedGraph& g,
                                std::span<const int64_t> configs, std::span<const double> targets,
                                int64_t step, double scale, HistoryTable& table,
                                const GstOptions& opt) {
    GraphStepResult res;
    SEGRANK_ASSERT(targets.size() == configs.size());
    const Aggregation agg = aggregation_for(opt.aggregate, model);
    StepInput in{g, configs, active_segments(g, opt, agg), {}, {}, {}, {}, {}};
    res.active_segments = static_cast<int64_t>(in.active.size());
    res.scores.assign(configs.size(), 0.0f);
    const std::vector<float> prior = prior_values(model, g, configs);  // empty without the prior
    std::vector<float> dscores(configs.size(), 0.0f);
    // The loss on the graph scores [K] (segments combined, then the prior added once).
    auto loss_of = [&](std::span<float> scores) {
        model.add_prior(scores, prior);
        res.loss = compute_loss(opt.loss_terms, opt.loss_options, scores, targets, dscores, scale);
        SEGRANK_CHECK(std::isfinite(res.loss), "non-finite loss at step ", step, " on graph '",
                      g.name, "' (id ", g.id, ") with configs [", config_list(configs), "]");
        std::copy_n(scores.data(), configs.size(), res.scores.begin());
        model.prior_backward(dscores, prior);
    };
    if (in.active.empty()) {  // every segment gives every config the same score
        std::vector<float> scores(configs.size(), 0.0f);
        if (model.has_prior()) loss_of(scores);  // the prior alone ranks them
        return res;
    }
    const auto s_eff = static_cast<int32_t>(in.active.size());
    in.choice = choose_segments(opt.seed, step, g.id, s_eff, std::max<int32_t>(1, opt.fresh),
                                opt.keep_prob);
    in.batch = load_config_batch(g, configs);
    in.tile_cfg = tile_view(g, in.batch, configs, in.tile_tmp, in.cost_tmp);

    // Stale part: kept segments read from the table; absent or too stale ones recomputed
    // forward-only with the current parameters (and stored by the callee).
    SegmentInputBuffers fo_buf;
    auto forward_only = [&](int32_t r, std::span<const int64_t> cfgs, MatrixView out) {
        Tensor tmp, cost_tmp;
        const Tensor v = agg.value(model,
                                   readout_forward_only(model, g, in.active[static_cast<size_t>(r)],
                                                        in.batch, cfgs, fo_buf, false),
                                   tile_view(g, in.batch, cfgs, tmp, cost_tmp), nullptr);
        for (int64_t i = 0; i < out.rows; ++i)
            std::memcpy(out.row(i), v.data() + i * agg.width,
                        static_cast<size_t>(agg.width) * sizeof(float));
    };
    const StaleSum stale = sum_stale_segments(table, g.id, in.choice, configs, step,
                                              opt.max_staleness, opt.history_init, forward_only);
    res.stale_hits = stale.hits;
    res.stale_recomputed = stale.recomputed;

    FreshForward fresh = fresh_forward(model, in, agg, step, opt.seed);
    Combined combined = combine_forward(model, in, agg, fresh, stale, opt.aggregate);
    loss_of(combined.scores.span());
    combine_backward(model, in, agg, fresh, combined, dscores);
    res.fresh_segments = static_cast<int64_t>(fresh.values.size());

    // Only fresh entries are written, with this step's forward values (docs/gst.md#history-table).
    std::vector<ConstMatrixView> fresh_views;
    for (const Tensor& v : fresh.values) fresh_views.push_back(v.cview());
    write_fresh_segments(table, g.id, s_eff, in.choice.fresh, configs, fresh_views, step);
    return res;
}

std::vector<Tensor> segment_readouts(Model& model, const PreparedGraph& g,
                                     std::span<const int64_t> configs, const GstOptions& opt) {
    std::vector<Tensor> out;
    SegmentInputBuffers buf;
    const ConfigBatch batch = load_config_batch(g, configs);
    for (int32_t s : active_segments(g, opt, aggregation_for(opt.aggregate, model)))
        out.push_back(readout_forward_only(model, g, s, batch, configs, buf, opt.dedupe_rows));
    return out;
}

namespace {

// Seed of the config orders of test-time averaging (fixed: the same orders in every run).
constexpr uint64_t kTtaSeed = 0x7474615f6f726472ULL;

// What score_graph keeps of one segment across its chunks (docs/gst.md#inference-cache): the
// readout [1, W] of a config-independent segment, or the rebuilt segment (when g keeps none) and
// its config-independent rows (Model::encode_base) of a dependent one.
struct CachedSegment {
    bool filled = false;
    Tensor readout;      // independent: [1, W]
    BuiltSegment built;  // dependent, g keeps no segments
    EncodeBase base;     // dependent
};

// The per-graph inference cache: one entry per segment, filled on the segment's first chunk while
// the bytes held stay within the bound.
class InferenceCache {
public:
    InferenceCache(const PreparedGraph& g, int64_t bound_bytes, bool dedupe)
        : g_(g),
          left_(bound_bytes),
          dedupe_(dedupe),
          entries_(static_cast<size_t>(g.num_segments())) {}

    // Readout [K, W] of segment s for cfgs (rows in batch), equal bit for bit to
    // readout_forward_only with the same dedupe choice.
    Tensor readout(Model& model, int32_t s, const ConfigBatch& batch, std::span<const int64_t> cfgs,
                   SegmentInputBuffers& buf) {
        CachedSegment& c = entries_[static_cast<size_t>(s)];
        const auto k = static_cast<int64_t>(cfgs.size());
        const bool dependent = g_.segment_dependent[static_cast<size_t>(s)] != 0;
        if (!dependent) {
            if (c.filled) return broadcast_row(c.readout, k);
            SegmentInput in = make_segment_input(g_, s, batch, cfgs.subspan(0, 1), buf);
            Tensor r1 = model.encode(in, nullptr);
            if (keep(r1.size() * static_cast<int64_t>(sizeof(float)))) {
                c.readout = r1.clone();
                c.filled = true;
            }
            if (k > 1) return broadcast_row(r1, k);
            return r1;
        }
        const bool kept = !g_.kept_segments.empty();
        if (c.filled) {
            const BuiltSegment& built = kept ? g_.kept_segments[static_cast<size_t>(s)] : c.built;
            SegmentInput in = make_segment_input(g_, built, batch, cfgs, buf);
            return dedupe_ ? encode_dedupe(model, in, &c.base)
                           : model.encode(in, nullptr, false, nullptr, &c.base);
        }
        const BuiltSegment& built = built_segment(g_, s, buf.segment);
        SegmentInput in = make_segment_input(g_, built, batch, cfgs, buf);
        // Upper bound of what the entry would hold: the EncodeBase (P, L + 1 base layers,
        // plan) and the rebuilt segment.
        const int64_t bound =
            model.encode_base_bytes(in.num_nodes()) + (kept ? 0 : built.memory_bytes());
        if (bound > left_)  // not kept: computed per chunk
            return dedupe_ ? encode_dedupe(model, in, nullptr) : model.encode(in, nullptr);
        EncodeBase base = model.encode_base(in);
        Tensor r = dedupe_ ? encode_dedupe(model, in, &base)
                           : model.encode(in, nullptr, false, nullptr, &base);
        SEGRANK_ASSERT(keep(base.memory_bytes() + (kept ? 0 : built.memory_bytes())));
        if (!kept) c.built = std::move(buf.segment);  // `built` is buf.segment
        c.base = std::move(base);
        c.filled = true;
        return r;
    }

    /// The most dep rows per config (sum over layers 0..L of m_l) of any deduplicated encode so
    /// far: what the per-chunk class tables scale with (0 before the first one).
    int64_t max_dep_rows_per_config() const { return max_dep_rows_; }

private:
    Tensor encode_dedupe(Model& model, const SegmentInput& in, const EncodeBase* base) {
        DedupeStats st;
        Tensor r = model.encode_dedupe(in, base, &st);
        int64_t rows = 0;
        for (int64_t d : st.dense_rows) rows += d;
        max_dep_rows_ = std::max(max_dep_rows_, rows / std::max<int64_t>(1, in.k));
        return r;
    }
    bool keep(int64_t bytes) {
        if (bytes > left_) return false;
        left_ -= bytes;
        return true;
    }

    const PreparedGraph& g_;
    int64_t left_;
    int64_t max_dep_rows_ = 0;
    bool dedupe_;
    std::vector<CachedSegment> entries_;
};

}  // namespace

InferenceChunk inference_chunk(const Model& model, const GstOptions& opt, int64_t chunk_configs,
                               int64_t dedupe_chunk_configs) {
    if (opt.dedupe_rows && model.config().task == Task::kLayout && !model.config().config_attention)
        return {dedupe_chunk_configs, kDedupeChunkBytesFactor * kMaxConfigChunkBytes};
    return {chunk_configs, kMaxConfigChunkBytes};
}

int64_t dedupe_chunk_after_probe(int64_t chunk, int64_t dep_rows_per_config) {
    const int64_t lo = std::min(chunk, kDedupeProbeConfigs);
    if (dep_rows_per_config <= 0) return chunk;
    return std::clamp<int64_t>(kDedupeStateBytes / (kDedupeBytesPerDepRow * dep_rows_per_config),
                               lo, std::max(lo, chunk));
}

std::vector<float> score_graph(Model& model, const PreparedGraph& g,
                               std::span<const int64_t> configs, int64_t chunk,
                               const GstOptions& opt, int64_t max_chunk_bytes,
                               int64_t cache_bytes) {
    std::vector<float> scores(configs.size(), 0.0f);
    const Aggregation agg = aggregation_for(opt.aggregate, model);
    const std::vector<int32_t> active = active_segments(g, opt, agg);
    // The analytical prior, added once to each graph score after the segments (docs/model.md).
    const std::vector<float> prior = prior_values(model, g, configs);
    if (active.empty()) {
        model.add_prior(scores, prior);
        return scores;
    }
    const float w = agg.all_weight(active.size());
    const int64_t row_bytes = g.task == Task::kLayout
                                  ? g.num_config_nodes * kLayoutConfigDim
                                  : kTileConfigDim * static_cast<int64_t>(sizeof(float));
    chunk = std::clamp<int64_t>(max_chunk_bytes / std::max<int64_t>(1, row_bytes), 1,
                                std::max<int64_t>(1, chunk));
    SegmentInputBuffers buf;
    ConfigBatch batch;
    InferenceCache cache(g, std::max<int64_t>(0, cache_bytes), opt.dedupe_rows);
    // With deduplicated rows the class tables of a chunk grow with K x (dep rows per config),
    // which the first chunk measures: it has at most kDedupeProbeConfigs configs, and the later
    // chunks as many as keep those tables within kDedupeStateBytes
    // (docs/model.md#row-deduplication).
    const bool dedupe_layout = opt.dedupe_rows && g.task == Task::kLayout;
    // Scores of the configs `list` into out, in chunks of consecutive configs.
    auto score_list = [&](std::span<const int64_t> list, std::span<float> out) {
        int64_t step = dedupe_layout ? std::min(chunk, kDedupeProbeConfigs) : chunk;
        for (size_t b = 0; b < list.size(); b += static_cast<size_t>(step)) {
            if (dedupe_layout && b > 0)
                step = dedupe_chunk_after_probe(chunk, cache.max_dep_rows_per_config());
            const size_t e = std::min(list.size(), b + static_cast<size_t>(step));
            auto cfgs = list.subspan(b, e - b);
            const auto k = static_cast<int64_t>(cfgs.size());
            load_config_batch(g, cfgs, batch);  // one chunk of rows at a time, into one buffer
            Tensor tile_tmp, cost_tmp;
            const TileView tile_cfg = tile_view(g, batch, cfgs, tile_tmp, cost_tmp);
            Tensor acc(k, agg.width);  // sum over segments of w * value
            for (int32_t s : active) {
                // Streamed: each segment's state is freed before the next one is encoded.
                const Tensor v =
                    agg.value(model, cache.readout(model, s, batch, cfgs, buf), tile_cfg, nullptr);
                for (int64_t i = 0; i < v.size(); ++i) acc[i] += w * v[i];
            }
            const Tensor sc = agg.scores(model, acc.cview(), tile_cfg, nullptr);
            for (int64_t i = 0; i < k; ++i) out[b + static_cast<size_t>(i)] = sc[i];
        }
    };
    const int32_t orders = model.config().config_attention ? std::max(1, opt.tta_orders) : 1;
    if (orders == 1) {
        score_list(configs, scores);
    } else {  // test-time averaging over config orders (docs/model.md#test-time-averaging)
        const size_t n = configs.size();
        std::vector<double> sum(n, 0.0);
        std::vector<size_t> perm(n);
        std::vector<int64_t> list(n);
        std::vector<float> part(n);
        for (int32_t t = 0; t < orders; ++t) {
            for (size_t i = 0; i < n; ++i) perm[i] = i;
            Rng rng = Rng::derive(kTtaSeed, static_cast<uint64_t>(t), n, "tta_order");
            for (size_t i = n; t > 0 && i > 1; --i)  // order 0: as given
                std::swap(perm[i - 1], perm[rng.uniform_int(i)]);
            for (size_t i = 0; i < n; ++i) list[i] = configs[perm[i]];
            score_list(list, part);
            for (size_t i = 0; i < n; ++i) sum[perm[i]] += part[i];
        }
        for (size_t i = 0; i < n; ++i) scores[i] = static_cast<float>(sum[i] / orders);
    }
    model.add_prior(scores, prior);
    return scores;
}

}  // namespace segrank
