// Tile cost features (model.tile_cost_features, docs/model.md#tile-cost-features) through GST:
// prepared once per graph (streamed and held alike), refused when a graph was prepared without
// them, fed to the config code in training and inference for early and late join and both
// aggregates, and their weight's gradient against finite differences of the GST loss.
#include <doctest/doctest.h>

#include <cmath>
#include <numeric>

#include "data/graph_store.h"
#include "gst/gst.h"
#include "hwmodel/hardware.h"
#include "hwmodel/synth/synth.h"
#include "hwmodel/tile_cost_features.h"
#include "tests/gst/gst_test_util.h"
#include "tests/gst/gst_util.h"
#include "tests/gst/store_test_util.h"
#include "tests/support/grad_check.h"

namespace segrank::test {
namespace {

// One synthetic tile kernel (which the hwmodel costs; the tiny random graphs are not valid HLO),
// 20-60 nodes, 30 configs, in a store under scratch_dir(name).
struct TileFixture {
    TileGraph truth;
    std::unique_ptr<GraphStore> store;
};

TileFixture tile_fixture(const std::string& name) {
    synth::SynthOptions o;
    o.seed = 5;
    o.min_nodes = 20;
    o.max_nodes = 60;
    o.configs = 30;
    TileFixture f;
    f.truth = synth::synth_tile(o, 2).graph;
    const auto dir = scratch_dir(name);
    CollectionId id = CollectionId::parse("tile:xla");
    id.split = Split::kTrain;
    GraphStoreWriter w(dir / "train.h5", id, dir);
    w.add(f.truth);
    w.finish();
    f.store = std::make_unique<GraphStore>(dir / "train.h5", LabelPolicy::kRequirePositive);
    return f;
}

ModelConfig cost_model(int64_t feat_dim, ConfigJoin join = ConfigJoin::kEarly, bool on = true) {
    ModelConfig m = tiny_model_config(Task::kTile, feat_dim);
    m.config_join = join;
    m.tile_cost_features = on;
    return m;
}

std::vector<int64_t> first_configs(int64_t n) {
    std::vector<int64_t> c(static_cast<size_t>(n));
    std::iota(c.begin(), c.end(), 0);
    return c;
}

GstOptions all_fresh_options(SegmentAggregate aggregate = SegmentAggregate::kScoreSum) {
    GstOptions o = tiny_gst_options();
    o.aggregate = aggregate;
    o.loss_terms = {LossTerm{LossKind::kListMle, 1.0}};
    o.fresh = 100;
    return o;
}

std::vector<double> targets_of(const PreparedGraph& g, std::span<const int64_t> configs) {
    std::vector<double> t;
    for (int64_t c : configs) t.push_back(g.targets[static_cast<size_t>(c)]);
    return t;
}

}  // namespace

TEST_CASE(
    "prepared tile graphs hold the kernel model's cost features only with the option, streamed "
    "and held alike") {
    const TileFixture fx = tile_fixture("tile_cost_prep");
    const Normalizer norm = normalizer_of(*fx.store);
    Model off(cost_model(norm.output_dim(), ConfigJoin::kEarly, false));
    Model on(cost_model(norm.output_dim()));
    PrepareOptions streamed = tiny_prepare_options(16), held = streamed;
    held.stream = false;
    auto g_off = prepare_graph(entry_of(*fx.store), norm, off, streamed);
    auto gs = prepare_graph(entry_of(*fx.store), norm, on, streamed);
    auto gm = prepare_graph(entry_of(*fx.store), norm, on, held);
    REQUIRE(gs->held == nullptr);
    CHECK(g_off->tile_cost.empty());
    const std::vector<float> want = hw::tile_cost_features(fx.truth, hw::tpu_v3_core());
    REQUIRE(want.size() == 30 * kTileCostFeatures);
    CHECK(gs->tile_cost == want);
    CHECK(gm->tile_cost == want);
    CHECK(max_abs(want) > 0.5);
    CHECK(gs->segment_dependent == g_off->segment_dependent);
    CHECK(gs->memory_bytes() == g_off->memory_bytes() + static_cast<int64_t>(want.size()) * 4);
    const std::vector<int64_t> some = {7, 0, 29};
    const Tensor rows = tile_cost_rows(*gs, some);
    REQUIRE(rows.rows() == 3);
    REQUIRE(rows.cols() == kTileCostFeatures);
    for (int64_t i = 0; i < 3; ++i)
        for (int64_t c = 0; c < kTileCostFeatures; ++c)
            CHECK(rows.at(i, c) == want[static_cast<size_t>(some[i] * kTileCostFeatures + c)]);
    CHECK(tile_cost_rows(*g_off, some).size() == 0);
    CHECK_THROWS_AS(tile_cost_rows(*gs, std::vector<int64_t>{30}), Error);
    // A model with the option refuses a graph prepared without it, in inference and training.
    on.params().initialize(1);
    for (ConfigJoin join : {ConfigJoin::kEarly, ConfigJoin::kLate}) {
        Model m(cost_model(norm.output_dim(), join));
        m.params().initialize(1);
        CHECK_THROWS_WITH_AS(score_graph(m, *g_off, first_configs(4), 4, all_fresh_options()),
                             doctest::Contains("tile_cost_features"), Error);
        HistoryTable t(1, 0);
        const auto cfgs = first_configs(4);
        CHECK_THROWS_WITH_AS(gst_train_graph(m, *g_off, cfgs, targets_of(*g_off, cfgs), 1, 1.0, t,
                                             all_fresh_options()),
                             doctest::Contains("tile_cost_features"), Error);
    }
}

TEST_CASE(
    "the cost features reach the scores in training and inference alike, early and late join, "
    "both aggregates, and a zero config_cost.weight gives the model without the option") {
    const TileFixture fx = tile_fixture("tile_cost_scores");
    const Normalizer norm = normalizer_of(*fx.store);
    const std::vector<int64_t> configs = {3, 0, 17, 5, 14, 9, 21, 20, 12, 8, 2, 6};
    for (ConfigJoin join : {ConfigJoin::kEarly, ConfigJoin::kLate})
        for (SegmentAggregate agg :
             {SegmentAggregate::kScoreSum, SegmentAggregate::kEmbeddingMean}) {
            CAPTURE(join == ConfigJoin::kLate);
            CAPTURE(agg == SegmentAggregate::kEmbeddingMean);
            Model off(cost_model(norm.output_dim(), join, false));
            Model on(cost_model(norm.output_dim(), join));
            off.params().initialize(11);
            on.params().initialize(11);
            auto g_off = prepare_graph(entry_of(*fx.store), norm, off, tiny_prepare_options(16));
            auto g_on = prepare_graph(entry_of(*fx.store), norm, on, tiny_prepare_options(16));
            REQUIRE(g_on->num_segments() >= 2);
            const GstOptions opt = all_fresh_options(agg);
            const std::vector<double> targets = targets_of(*g_on, configs);
            HistoryTable t_on(static_cast<int32_t>(
                                  agg == SegmentAggregate::kScoreSum ? 1 : 2 * on.config().hidden),
                              0);
            const GraphStepResult r_on =
                gst_train_graph(on, *g_on, configs, targets, 3, 1.0, t_on, opt);
            const std::vector<float> i_on = score_graph(on, *g_on, configs, 5, opt);
            // Inference (streamed, chunks of 5) equals the training forward with every segment
            // fresh.
            CHECK(max_abs_diff(i_on, r_on.scores) <= 1e-5 * std::max(1.0, max_abs(i_on)));
            const ParamRef& w = on.params().ref(*on.params().find("config_cost.weight"));
            double gw = 0;
            for (int64_t i = w.offset; i < w.offset + w.size(); ++i)
                gw = std::max(gw, std::abs(static_cast<double>(on.params().grads()[i])));
            CHECK(gw > 1e-5);  // the training step back-propagates into the cost weight
            const std::vector<float> i_off = score_graph(off, *g_off, configs, 5, opt);
            CHECK(max_abs_diff(i_on, i_off) > 1e-4);  // the features move the scores
            std::fill_n(on.params().values().begin() + w.offset, w.size(), 0.0f);
            const std::vector<float> i_zero = score_graph(on, *g_on, configs, 5, opt);
            CHECK(max_abs_diff(i_zero, i_off) <= 1e-6 * std::max(1.0, max_abs(i_off)));
        }
}

TEST_CASE("config_cost.weight matches finite differences of the GST loss, early and late join") {
    const TileFixture fx = tile_fixture("tile_cost_fd");
    const Normalizer norm = normalizer_of(*fx.store);
    for (ConfigJoin join : {ConfigJoin::kEarly, ConfigJoin::kLate}) {
        CAPTURE(join == ConfigJoin::kLate);
        Model model(cost_model(norm.output_dim(), join));
        model.params().initialize(3);
        auto pg = prepare_graph(entry_of(*fx.store), norm, model, tiny_prepare_options(16));
        const std::vector<int64_t> configs = first_configs(12);
        const std::vector<double> targets = targets_of(*pg, configs);
        const GstOptions opt = all_fresh_options();
        auto loss = [&]() {
            HistoryTable t(1, 0);
            return gst_train_graph(model, *pg, configs, targets, 1, 0.5, t, opt).loss;
        };
        model.params().zero_grads();
        loss();
        const std::vector<float> grads(model.params().grads().begin(),
                                       model.params().grads().end());
        const ParamRef& r = model.params().ref(*model.params().find("config_cost.weight"));
        int nonzero = 0;
        // Columns 0 (z of the total), 9 (steps), 5 (MXU fraction) and 7 (HBM fraction) of rows 0,
        // 0, 2 and the last (column 13, the invalid flag, is 0 on these configs: no gradient).
        for (int64_t j : {int64_t{0}, int64_t{9}, int64_t{2 * kTileCostFeatures + 5},
                          r.size() - kTileCostFeatures + 7}) {
            const double fd = central_difference(
                model.params().values()[static_cast<size_t>(r.offset + j)], loss, 1e-3);
            const double an = grads[static_cast<size_t>(r.offset + j)];
            CAPTURE(j);
            CHECK(an == doctest::Approx(fd).epsilon(2e-2).scale(1e-3));
            nonzero += std::abs(an) > 1e-5;
        }
        CHECK(nonzero >= 3);
    }
}

}  // namespace segrank::test
