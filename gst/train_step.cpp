// The GST training step of one graph (docs/gst.md#training-step): fresh segments forward with
// saved state, kept stale ones from the HistoryTable, the loss on the combined graph scores, the
// backward through the fresh segments only, and the fresh values written back.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <utility>

#include "gnn/core/check.h"
#include "gst/aggregation.h"
#include "gst/gst.h"

namespace segrank {

namespace {

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

// Everything one graph's step holds between its forward and its backward.
struct GstGraphStep::State {
    Model& model;
    HistoryTable& table;
    const GstOptions& opt;
    int64_t step;
    Aggregation agg;
    StepInput in;
    GraphStepResult res;
    StaleSum stale;
    FreshForward fresh;
    Combined combined;
    bool backward_done = false;
};

GstGraphStep::GstGraphStep(Model& model, const PreparedGraph& g, std::span<const int64_t> configs,
                           int64_t step, HistoryTable& table, const GstOptions& opt)
    : s_(new State{model,
                   table,
                   opt,
                   step,
                   aggregation_for(opt.aggregate, model),
                   {g, configs, {}, {}, {}, {}, {}, {}},
                   {},
                   {},
                   {},
                   {}}) {
    State& st = *s_;
    StepInput& in = st.in;
    in.active = active_segments(g, opt, st.agg);
    st.res.active_segments = static_cast<int64_t>(in.active.size());
    st.res.scores.assign(configs.size(), 0.0f);
    if (in.active.empty()) return;  // every segment gives every config the same score
    const auto s_eff = static_cast<int32_t>(in.active.size());
    in.choice = choose_segments(opt.seed, step, g.id, s_eff, std::max<int32_t>(1, opt.fresh),
                                opt.keep_prob);
    in.batch = load_config_batch(g, configs);
    in.tile_cfg = tile_view(g, in.batch, configs, in.tile_tmp, in.cost_tmp);

    // Stale part: kept segments read from the table; absent or too stale ones recomputed
    // forward-only with the current parameters (and stored by the callee).
    SegmentInputBuffers fo_buf;
    const Aggregation& agg = st.agg;
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
    st.stale = sum_stale_segments(table, g.id, in.choice, configs, step, opt.max_staleness,
                                  opt.history_init, forward_only);
    st.res.stale_hits = st.stale.hits;
    st.res.stale_recomputed = st.stale.recomputed;

    st.fresh = fresh_forward(model, in, agg, step, opt.seed);
    st.combined = combine_forward(model, in, agg, st.fresh, st.stale, opt.aggregate);
    std::copy_n(st.combined.scores.data(), configs.size(), st.res.scores.begin());
}

GstGraphStep::~GstGraphStep() = default;

bool GstGraphStep::trains() const { return !s_->in.active.empty(); }

std::span<float> GstGraphStep::scores() {
    return s_->in.active.empty() ? std::span<float>(s_->res.scores) : s_->combined.scores.span();
}

void GstGraphStep::backward(std::span<const float> dscores) {
    State& st = *s_;
    SEGRANK_ASSERT(!st.backward_done, "GstGraphStep::backward called twice");
    SEGRANK_ASSERT(dscores.size() == st.in.configs.size());
    st.backward_done = true;
    if (st.in.active.empty()) return;
    combine_backward(st.model, st.in, st.agg, st.fresh, st.combined, dscores);
    st.res.fresh_segments = static_cast<int64_t>(st.fresh.values.size());

    // Only fresh entries are written, with this step's forward values (docs/gst.md#history-table).
    std::vector<ConstMatrixView> fresh_views;
    for (const Tensor& v : st.fresh.values) fresh_views.push_back(v.cview());
    write_fresh_segments(st.table, st.in.g.id, static_cast<int32_t>(st.in.active.size()),
                         st.in.choice.fresh, st.in.configs, fresh_views, st.step);
}

const GraphStepResult& GstGraphStep::result() const { return s_->res; }

GraphStepResult gst_train_graph(Model& model, const PreparedGraph& g,
                                std::span<const int64_t> configs, std::span<const double> targets,
                                int64_t step, double scale, HistoryTable& table,
                                const GstOptions& opt) {
    SEGRANK_ASSERT(targets.size() == configs.size());
    const std::vector<float> prior = prior_values(model, g, configs);  // empty without the prior
    GstGraphStep half(model, g, configs, step, table, opt);
    std::vector<float> dscores(configs.size(), 0.0f);
    double loss = 0.0;
    // The loss on the graph scores [K] (segments combined, then the prior added once).
    std::span<float> scores = half.scores();
    if (half.trains() || model.has_prior()) {  // without either, no loss: nothing is trained
        loss =
            graph_step_loss(model, g, configs, targets, prior, scores, dscores, step, scale, opt);
        model.prior_backward(dscores, prior);
        half.backward(dscores);
    }
    GraphStepResult res = half.result();
    res.loss = loss;
    std::copy_n(scores.data(), configs.size(), res.scores.begin());
    return res;
}

double graph_step_loss(Model& model, const PreparedGraph& g, std::span<const int64_t> configs,
                       std::span<const double> targets, std::span<const float> prior,
                       std::span<float> scores, std::span<float> dscores, int64_t step,
                       double scale, const GstOptions& opt) {
    model.add_prior(scores, prior);
    const double loss =
        compute_loss(opt.loss_terms, opt.loss_options, scores, targets, dscores, scale);
    SEGRANK_CHECK(std::isfinite(loss), "non-finite loss at step ", step, " on graph '", g.name,
                  "' (id ", g.id, ") with configs [", config_list(configs), "]",
                  opt.nonfinite_hint);
    return loss;
}

}  // namespace segrank
