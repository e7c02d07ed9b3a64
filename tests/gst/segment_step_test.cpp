// A graph's GST step in segment pieces (dist.segment_units, docs/distributed.md#segment-units):
// every fresh and kept stale segment computed apart in config ranges, their values summed, the loss
// on the combined scores, each fresh piece's backward with its part of dscores: the gradients,
// loss and history rows of gst_train_graph on the whole graph.
#include "gst/segment_step.h"

#include <doctest/doctest.h>

#include <array>
#include <map>
#include <memory>
#include <utility>
#include <vector>

#include "gst/gst.h"
#include "tests/gst/gst_test_util.h"
#include "tests/gst/gst_util.h"

namespace segrank::test {

namespace {

struct PieceRun {
    std::vector<float> grads;
    double loss = 0.0;
    int64_t fresh = 0, stale = 0;  // pieces run
};

// The step of `configs` whole (pieces = false) or with every segment item cut into config ranges
// at `cut` (a position), on a fresh model (seed 7) and `table`.
PieceRun run_pieces(const OneGraph& o, const Normalizer& norm, const GstOptions& opt,
                    std::span<const int64_t> configs, bool pieces, int64_t cut, HistoryTable& table,
                    int64_t step) {
    Model model(tiny_model_config(Task::kLayout, norm.output_dim()));
    model.params().initialize(7);
    PrepareOptions po = tiny_prepare_options(40);
    auto pg = prepare_graph(o.entry, norm, model, po);
    REQUIRE(pg->num_segments() >= 3);
    std::vector<double> targets;
    for (int64_t c : configs) targets.push_back(pg->targets[static_cast<size_t>(c)]);
    model.params().zero_grads();
    PieceRun out;
    if (!pieces) {
        out.loss = gst_train_graph(model, *pg, configs, targets, step, 0.5, table, opt).loss;
    } else {
        const SegmentStepPlan plan = plan_segment_step(model, *pg, step, opt);
        REQUIRE(!plan.active.empty());
        const ConfigBatch rows = load_config_batch(*pg, configs);
        const auto k = static_cast<int64_t>(configs.size());
        std::vector<float> fresh_sum(static_cast<size_t>(k), 0.0f), stale_sum(fresh_sum);
        const std::array<std::pair<int64_t, int64_t>, 2> ranges = {{{0, cut}, {cut, k}}};
        std::vector<std::pair<int64_t, std::unique_ptr<FreshSegmentSlice>>> fresh;
        for (int32_t pos : plan.choice.stale_kept)
            for (const auto& [b, e] : ranges) {
                const Tensor v = stale_segment_values(
                    model, *pg, plan, pos, rows,
                    configs.subspan(static_cast<size_t>(b), static_cast<size_t>(e - b)), step,
                    table, opt);
                for (int64_t c = b; c < e; ++c) stale_sum[static_cast<size_t>(c)] += v[c - b];
                ++out.stale;
            }
        for (int32_t pos : plan.choice.fresh)
            for (const auto& [b, e] : ranges) {
                fresh.emplace_back(
                    b, std::make_unique<FreshSegmentSlice>(
                           model, *pg, plan, pos, rows,
                           configs.subspan(static_cast<size_t>(b), static_cast<size_t>(e - b)),
                           step, opt));
                const Tensor& v = fresh.back().second->value();
                for (int64_t c = b; c < e; ++c) fresh_sum[static_cast<size_t>(c)] += v[c - b];
                ++out.fresh;
            }
        std::vector<float> scores(static_cast<size_t>(k)), dscores(static_cast<size_t>(k), 0.0f);
        for (size_t c = 0; c < scores.size(); ++c)
            scores[c] = static_cast<float>(plan.weights.fresh * double{fresh_sum[c]} +
                                           plan.weights.stale * double{stale_sum[c]});
        out.loss =
            graph_step_loss(model, *pg, configs, targets, {}, scores, dscores, step, 0.5, opt);
        for (auto& [b, piece] : fresh) {
            const int64_t len = piece->value().rows();
            Tensor d(len, 1);
            for (int64_t c = 0; c < len; ++c)
                d[c] = plan.weights.fresh * dscores[static_cast<size_t>(b + c)];
            piece->backward(d.cview());
            piece->write(table);
        }
    }
    out.grads.assign(model.params().grads().begin(), model.params().grads().end());
    return out;
}

}  // namespace

TEST_CASE(
    "a graph's step in segment pieces gives the whole step's loss, gradients and history rows") {
    OneGraph o = synth_one_graph("gst_segment_pieces", 8);
    const Normalizer norm = fit_normalizer(o.graph);
    const std::vector<int64_t> configs = {3, 0, 17, 5, 14, 9, 21, 23, 12, 8, 19};
    GstOptions opt = tiny_gst_options();
    opt.loss_terms = {LossTerm{LossKind::kListMle, 1.0}};
    opt.keep_prob = 0.9;  // several kept stale segments
    HistoryTable whole_table(1, 0), piece_table(1, 0);
    int64_t stale_pieces = 0;
    // Two steps: the second reads the rows the first wrote (and recomputed).
    for (int64_t step : {2, 3}) {
        const PieceRun whole = run_pieces(o, norm, opt, configs, false, 0, whole_table, step);
        const PieceRun split = run_pieces(o, norm, opt, configs, true, 4, piece_table, step);
        const double gmax = max_abs(whole.grads);
        MESSAGE("step ", step, ": max |grad diff| ", max_abs_diff(whole.grads, split.grads),
                " (max |grad| ", gmax, "), ", split.fresh, " fresh and ", split.stale,
                " stale pieces");
        CHECK(gmax > 1e-4);
        CHECK(split.fresh >= 2);
        CHECK(max_abs_diff(whole.grads, split.grads) <= 1e-5 * std::max(1.0, gmax));
        CHECK(split.loss == doctest::Approx(whole.loss).epsilon(1e-6));
        stale_pieces += split.stale;
    }
    CHECK(stale_pieces > 0);
    const auto rows = [](const HistoryTable& t) {
        const HistoryArrays a = t.export_arrays();
        std::map<std::array<int64_t, 3>, std::pair<int64_t, float>> m;  // key -> step, value
        for (int64_t e = 0; e < a.num_entries(); ++e)
            m[{a.keys[static_cast<size_t>(3 * e)], a.keys[static_cast<size_t>(3 * e + 1)],
               a.keys[static_cast<size_t>(3 * e + 2)]}] = {a.steps[static_cast<size_t>(e)],
                                                           a.values[static_cast<size_t>(e)]};
        return m;
    };
    const auto a = rows(whole_table), b = rows(piece_table);
    REQUIRE(a.size() == b.size());
    CHECK(!a.empty());
    for (auto ia = a.begin(), ib = b.begin(); ia != a.end(); ++ia, ++ib) {
        CHECK(ia->first == ib->first);
        CHECK(ia->second.first == ib->second.first);
        CHECK(ia->second.second == doctest::Approx(ib->second.second).epsilon(1e-5));
    }
}

}  // namespace segrank::test
