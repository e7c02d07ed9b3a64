// Pieces of one graph's GST step by segment and config range (see gst/segment_step.h).
#include "gst/segment_step.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "gnn/core/check.h"
#include "gst/aggregation.h"
#include "gst/combine.h"

namespace segrank {

SegmentStepPlan plan_segment_step(const Model& model, const PreparedGraph& g, int64_t step,
                                  const GstOptions& opt) {
    SegmentStepPlan p;
    const Aggregation agg = aggregation_for(opt.aggregate, model);
    p.width = agg.width;
    p.active = active_segments(g, opt, agg);
    if (p.active.empty()) return p;
    p.choice = choose_segments(opt.seed, step, g.id, static_cast<int32_t>(p.active.size()),
                               std::max<int32_t>(1, opt.fresh), opt.keep_prob);
    p.weights = combine_weights(p.choice, opt.aggregate);
    return p;
}

Tensor stale_segment_values(Model& model, const PreparedGraph& g, const SegmentStepPlan& plan,
                            int32_t pos, const ConfigBatch& batch, std::span<const int64_t> configs,
                            int64_t step, HistoryTable& table, const GstOptions& opt) {
    const Aggregation agg = aggregation_for(opt.aggregate, model);
    SegmentInputBuffers buf;
    auto forward_only = [&](int32_t r, std::span<const int64_t> cfgs, MatrixView out) {
        Tensor tmp, cost_tmp;
        const Tensor v =
            agg.value(model,
                      readout_forward_only(model, g, plan.active[static_cast<size_t>(r)], batch,
                                           cfgs, buf, false),
                      tile_view(g, batch, cfgs, tmp, cost_tmp), nullptr);
        for (int64_t i = 0; i < out.rows; ++i)
            std::memcpy(out.row(i), v.data() + i * agg.width,
                        static_cast<size_t>(agg.width) * sizeof(float));
    };
    SegmentChoice one = plan.choice;  // this segment alone among the kept stale ones
    one.stale_kept = {pos};
    StaleSum sum = sum_stale_segments(table, g.id, one, configs, step, opt.max_staleness,
                                      opt.history_init, forward_only);
    return std::move(sum.sum);
}

struct FreshSegmentSlice::State {
    Model& model;
    const PreparedGraph& g;
    Aggregation agg;
    int32_t pos;
    int32_t num_segments;
    std::vector<int64_t> configs;
    int64_t step;
    Tensor tile_tmp, cost_tmp;
    SegmentInputBuffers buf;
    EncodeSaved encode;
    HeadSaved head;
    Tensor value;
    bool backward_done = false;
};

FreshSegmentSlice::FreshSegmentSlice(Model& model, const PreparedGraph& g,
                                     const SegmentStepPlan& plan, int32_t pos,
                                     const ConfigBatch& batch, std::span<const int64_t> configs,
                                     int64_t step, const GstOptions& opt)
    : s_(new State{model,
                   g,
                   aggregation_for(opt.aggregate, model),
                   pos,
                   static_cast<int32_t>(plan.active.size()),
                   {configs.begin(), configs.end()},
                   step,
                   {},
                   {},
                   {},
                   {},
                   {},
                   {},
                   false}) {
    State& st = *s_;
    const int32_t s = plan.active[static_cast<size_t>(pos)];
    const TileView tile = tile_view(g, batch, st.configs, st.tile_tmp, st.cost_tmp);
    SegmentInput si = make_segment_input(g, s, batch, st.configs, st.buf);
    // The dropout stream of gst_train_graph's fresh segment (keyed by segment, not by configs).
    Rng rng = Rng::derive(opt.seed ^ (0x9e37ULL * static_cast<uint64_t>(s + 1)),
                          static_cast<uint64_t>(step), static_cast<uint64_t>(g.id), "dropout");
    Tensor readout = model.encode(si, &st.encode, /*training=*/true, &rng);
    st.value = st.agg.value(model, std::move(readout), tile, &st.head);
}

FreshSegmentSlice::~FreshSegmentSlice() = default;

const Tensor& FreshSegmentSlice::value() const { return s_->value; }

void FreshSegmentSlice::backward(ConstMatrixView dvalue) {
    State& st = *s_;
    SEGRANK_ASSERT(!st.backward_done, "FreshSegmentSlice::backward called twice");
    SEGRANK_ASSERT(dvalue.rows == st.value.rows() && dvalue.cols == st.value.cols());
    st.backward_done = true;
    Tensor d(dvalue.rows, dvalue.cols);
    for (int64_t r = 0; r < dvalue.rows; ++r)
        std::memcpy(d.data() + r * dvalue.cols, dvalue.row(r),
                    static_cast<size_t>(dvalue.cols) * sizeof(float));
    const Tensor dreadout = st.agg.value_backward(st.model, std::move(d), st.head);
    st.model.encode_backward(dreadout.cview(), st.encode);
}

void FreshSegmentSlice::write(HistoryTable& table) const {
    const State& st = *s_;
    const std::vector<int32_t> fresh = {st.pos};
    const std::vector<ConstMatrixView> values = {st.value.cview()};
    write_fresh_segments(table, st.g.id, st.num_segments, fresh, st.configs, values, st.step);
}

}  // namespace segrank
