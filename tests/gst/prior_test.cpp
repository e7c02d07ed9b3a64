// The analytical prior (model.hwmodel_prior, docs/model.md#analytical-prior): z from the hwmodel
// estimates (the rules for non-finite and constant estimates), prepared for npz and streamed
// graphs, added once per graph score in training and inference, its gradient against finite
// differences, and the exact config-independence skip unchanged with the prior on.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <numeric>

#include "data/graph_store.h"
#include "gst/gst.h"
#include "hwmodel/graph_estimates.h"
#include "hwmodel/hardware.h"
#include "hwmodel/synth/synth.h"
#include "tests/gst/gst_test_util.h"
#include "tests/gst/gst_util.h"
#include "tests/gst/store_test_util.h"
#include "tests/support/grad_check.h"

namespace segrank::test {
namespace {

ModelConfig with_prior(ModelConfig m) {
    m.hwmodel_prior = true;
    return m;
}

std::vector<int64_t> first_configs(int64_t n) {
    std::vector<int64_t> c(static_cast<size_t>(n));
    std::iota(c.begin(), c.end(), 0);
    return c;
}

std::vector<double> targets_of(const PreparedGraph& g, std::span<const int64_t> configs) {
    std::vector<double> t;
    for (int64_t c : configs) t.push_back(g.targets[static_cast<size_t>(c)]);
    return t;
}

// Every segment fresh (deterministic step), listmle (smooth, for finite differences).
GstOptions all_fresh_options(bool independence = true) {
    GstOptions o = tiny_gst_options(independence);
    o.loss_terms = {LossTerm{LossKind::kListMle, 1.0}};
    o.skip_independent = independence;
    o.fresh = 100;
    return o;
}

}  // namespace

TEST_CASE(
    "prior z is the standardized log estimate, with z = 0 for non-finite, non-positive and "
    "constant estimates") {
    const std::vector<double> est = {100.0, 1000.0, 10000.0};
    const std::vector<float> z = prior_values_from_estimates(est);
    const double sd = std::log(10.0) * std::sqrt(2.0 / 3.0);
    REQUIRE(z.size() == 3);
    CHECK(z[0] == doctest::Approx(-std::log(10.0) / sd));
    CHECK(z[1] == doctest::Approx(0.0));
    CHECK(z[2] == doctest::Approx(std::log(10.0) / sd));

    const double inf = std::numeric_limits<double>::infinity();
    const std::vector<float> z2 =
        prior_values_from_estimates(std::vector<double>{100.0, inf, 10000.0, 0.0, std::nan("")});
    CHECK(z2[0] == doctest::Approx(-1.0));  // mean and sd over the two usable estimates
    CHECK(z2[2] == doctest::Approx(1.0));
    CHECK(z2[1] == 0.0f);
    CHECK(z2[3] == 0.0f);
    CHECK(z2[4] == 0.0f);

    for (const auto& flat :
         {std::vector<double>{5.0, 5.0, 5.0}, std::vector<double>{5.0, inf}, std::vector<double>{}})
        for (float v : prior_values_from_estimates(flat)) CHECK(v == 0.0f);
}

TEST_CASE("prepared graphs hold the z of the hwmodel estimates only with the prior on") {
    OneGraph o = synth_one_graph("prior_prep");
    const Normalizer norm = fit_normalizer(o.graph);
    Model off(tiny_model_config(Task::kLayout, norm.output_dim()));
    Model on(with_prior(tiny_model_config(Task::kLayout, norm.output_dim())));
    auto g_off = prepare_graph(o.entry, norm, off, tiny_prepare_options(25));
    auto g_on = prepare_graph(o.entry, norm, on, tiny_prepare_options(25));
    CHECK(g_off->prior_z.empty());
    const std::vector<double> est = hw::layout_estimates_ns(o.graph, hw::tpu_v3_core());
    REQUIRE(static_cast<int64_t>(est.size()) == g_on->num_configs);
    CHECK(g_on->prior_z == prior_values_from_estimates(est));
    CHECK(max_abs(g_on->prior_z) > 0.1);  // the tiny graph is costed, and its configs differ
    // Small chunks give the same estimates as one read of every row.
    CHECK(hwmodel_estimates(*o.source, 0, /*chunk_bytes=*/1) == est);
    // hwmodel.hardware picks the table the prior is costed on; an unknown name is an error.
    const std::vector<double> v2 = hwmodel_estimates(*o.source, 0, int64_t{8} << 20, "tpu_v2_core");
    CHECK(v2 == hw::layout_estimates_ns(o.graph, hw::hardware_by_name("tpu_v2_core")));
    CHECK(v2 != est);
    PrepareOptions v2_opts = tiny_prepare_options(25);
    v2_opts.hardware = "tpu_v2_core";
    CHECK(prepare_graph(o.entry, norm, on, v2_opts)->prior_z == prior_values_from_estimates(v2));
    CHECK_THROWS_AS(hwmodel_estimates(*o.source, 0, int64_t{8} << 20, "tpu_v9"), Error);
    // The option does not change which segments depend on the config.
    CHECK(g_on->segment_dependent == g_off->segment_dependent);
    CHECK(g_on->memory_bytes() ==
          g_off->memory_bytes() + g_on->num_configs * static_cast<int64_t>(sizeof(float)));
    // A model with the prior refuses a graph prepared without it.
    CHECK_THROWS_WITH_AS(score_graph(on, *g_off, first_configs(4), 4, tiny_gst_options()),
                         doctest::Contains("prepared without it"), Error);
}

TEST_CASE("streamed graphs (HDF5 store) get the prior of the same graph held in memory") {
    const std::filesystem::path dir = scratch_dir("prior_streamed");
    SUBCASE("layout") {
        CollectionId id = CollectionId::parse("layout:xla:random");
        id.split = Split::kTrain;
        std::filesystem::create_directories(dir / "layout");
        GraphStoreWriter w(dir / "layout/train.h5", id, dir / "layout");
        w.add(synth::synth_layout(synth_options(40), 0).graph);
        w.finish();
        const GraphStore store(dir / "layout/train.h5", LabelPolicy::kRequirePositive);
        const Normalizer norm = normalizer_of(store);
        Model model(with_prior(tiny_model_config(Task::kLayout, norm.output_dim())));
        PrepareOptions streamed = tiny_prepare_options(25), held = streamed;
        held.stream = false;
        auto gs = prepare_graph(entry_of(store), norm, model, streamed);
        auto gm = prepare_graph(entry_of(store), norm, model, held);
        REQUIRE(gs->held == nullptr);
        REQUIRE(gs->prior_z.size() == 40);
        CHECK(gs->prior_z == gm->prior_z);
        CHECK(max_abs(gs->prior_z) > 0.1);
    }
    SUBCASE("tile") {
        synth::SynthOptions so = synth_options(30);
        so.min_nodes = 20;
        so.max_nodes = 60;
        const TileGraph truth = synth::synth_tile(so, 0).graph;
        CollectionId id = CollectionId::parse("tile:xla");
        id.split = Split::kTrain;
        std::filesystem::create_directories(dir / "tile");
        GraphStoreWriter w(dir / "tile/train.h5", id, dir / "tile");
        w.add(truth);
        w.finish();
        const GraphStore store(dir / "tile/train.h5", LabelPolicy::kRequirePositive);
        const Normalizer norm = normalizer_of(store);
        Model model(with_prior(tiny_model_config(Task::kTile, norm.output_dim())));
        auto gs = prepare_graph(entry_of(store), norm, model, tiny_prepare_options(64));
        REQUIRE(gs->prior_z.size() == 30);
        CHECK(gs->prior_z ==
              prior_values_from_estimates(hw::tile_estimates_ns(truth, hw::tpu_v3_core())));
        CHECK(max_abs(gs->prior_z) > 0.1);
    }
}

TEST_CASE(
    "the prior adds w * z once per graph score, after the segments, in training and "
    "inference") {
    OneGraph o = synth_one_graph("prior_once");
    const Normalizer norm = fit_normalizer(o.graph);
    Model off(tiny_model_config(Task::kLayout, norm.output_dim()));
    Model on(with_prior(tiny_model_config(Task::kLayout, norm.output_dim())));
    off.params().initialize(11);
    on.params().initialize(11);
    const auto w_id = on.params().find("prior.weight");
    REQUIRE(w_id.has_value());
    CHECK_FALSE(off.params().find("prior.weight").has_value());
    CHECK(on.params().value(*w_id).at(0, 0) == 1.0f);  // documented initial value
    // Every other parameter is declared and initialized as without the prior.
    for (const ParamRef& r : off.params().refs()) {
        const auto id = on.params().find(r.name);
        REQUIRE(id.has_value());
        const ConstMatrixView a = off.params().value(*off.params().find(r.name));
        const ConstMatrixView b = on.params().value(*id);
        for (int64_t i = 0; i < a.rows * a.cols; ++i) REQUIRE(a.data[i] == b.data[i]);
    }
    on.params().value(*w_id).at(0, 0) = 0.75f;

    auto g_off = prepare_graph(o.entry, norm, off, tiny_prepare_options(25));
    auto g_on = prepare_graph(o.entry, norm, on, tiny_prepare_options(25));
    REQUIRE(g_on->num_segments() >= 4);
    const std::vector<int64_t> configs = {3, 0, 17, 5, 14, 9, 21, 20, 12, 8, 2, 6};
    const std::vector<double> targets = targets_of(*g_on, configs);
    const GstOptions opt = all_fresh_options();
    HistoryTable t_off(1, 0), t_on(1, 0);
    const GraphStepResult r_off =
        gst_train_graph(off, *g_off, configs, targets, 3, 1.0, t_off, opt);
    const GraphStepResult r_on = gst_train_graph(on, *g_on, configs, targets, 3, 1.0, t_on, opt);
    const std::vector<float> i_off = score_graph(off, *g_off, configs, 5, opt);
    const std::vector<float> i_on = score_graph(on, *g_on, configs, 5, opt);
    const std::vector<float> z = prior_values(on, *g_on, configs);
    for (size_t i = 0; i < configs.size(); ++i) {
        CAPTURE(i);
        CHECK(r_on.scores[i] == doctest::Approx(r_off.scores[i] + 0.75f * z[i]).epsilon(1e-5));
        CHECK(i_on[i] == doctest::Approx(i_off[i] + 0.75f * z[i]).epsilon(1e-5));
        // Inference (streamed, chunks of 5) equals the training forward with every segment fresh.
        CHECK(i_on[i] == doctest::Approx(r_on.scores[i]).epsilon(1e-5));
    }
    CHECK(max_abs(z) > 0.1);
}

TEST_CASE("prior.weight and the parameters under it match finite differences of the GST loss") {
    OneGraph o = synth_one_graph("prior_fd");
    const Normalizer norm = fit_normalizer(o.graph);
    Model model(with_prior(tiny_model_config(Task::kLayout, norm.output_dim())));
    model.params().initialize(3);
    auto pg = prepare_graph(o.entry, norm, model, tiny_prepare_options(25));
    const std::vector<int64_t> configs = first_configs(12);
    const std::vector<double> targets = targets_of(*pg, configs);
    const GstOptions opt = all_fresh_options();
    const double scale = 0.5;
    auto loss = [&]() {
        HistoryTable t(1, 0);
        return gst_train_graph(model, *pg, configs, targets, 1, scale, t, opt).loss;
    };
    model.params().zero_grads();
    loss();
    std::vector<float> grads(model.params().grads().begin(), model.params().grads().end());
    // prior.weight, a head weight (score_sum: head runs per segment) and an input weight.
    int checked = 0;
    for (const std::string name : {"prior.weight", "head2.weight", "input.weight"}) {
        CAPTURE(name);
        const auto id = model.params().find(name);
        REQUIRE(id.has_value());
        const ParamRef& r = model.params().ref(*id);
        for (int64_t j = 0; j < std::min<int64_t>(3, r.size()); ++j) {
            const double fd = central_difference(
                model.params().values()[static_cast<size_t>(r.offset + j)], loss, 1e-3);
            const double an = grads[static_cast<size_t>(r.offset + j)];
            CAPTURE(j);
            MESSAGE(name, "[", j, "]: analytic ", an, ", finite difference ", fd);
            CHECK(an == doctest::Approx(fd).epsilon(2e-2).scale(1e-3));
            ++checked;
        }
    }
    const float dw =
        grads[static_cast<size_t>(model.params().ref(*model.params().find("prior.weight")).offset)];
    CHECK(std::abs(dw) > 1e-4);  // the prior's gradient is not trivially 0
    CHECK(checked == 7);
}

TEST_CASE(
    "with the prior on, the independence skip still equals the naive path up to a per-graph "
    "constant") {
    OneGraph o = synth_one_graph("prior_skip");
    const Normalizer norm = fit_normalizer(o.graph);
    struct Side {
        std::unique_ptr<Model> model;
        std::unique_ptr<PreparedGraph> pg;
        GstOptions opt;
    };
    auto make_side = [&](bool independence) {
        Side s;
        s.model = std::make_unique<Model>(
            with_prior(tiny_model_config(Task::kLayout, norm.output_dim(), independence)));
        s.model->params().initialize(11);
        s.pg = prepare_graph(o.entry, norm, *s.model, tiny_prepare_options(25));
        s.opt = all_fresh_options(independence);
        return s;
    };
    Side skip = make_side(true), naive = make_side(false);
    const std::vector<int64_t> configs = first_configs(16);
    const std::vector<double> targets = targets_of(*skip.pg, configs);
    HistoryTable t1(1, 0), t2(1, 0);
    skip.model->params().zero_grads();
    naive.model->params().zero_grads();
    const GraphStepResult rs =
        gst_train_graph(*skip.model, *skip.pg, configs, targets, 2, 1.0, t1, skip.opt);
    const GraphStepResult rn =
        gst_train_graph(*naive.model, *naive.pg, configs, targets, 2, 1.0, t2, naive.opt);
    CHECK(rs.active_segments < rn.active_segments);  // the skip is exercised
    CHECK(skip.pg->prior_z == naive.pg->prior_z);
    const auto gs = skip.model->params().grads();
    const auto gn = naive.model->params().grads();
    const double gmax = max_abs(gn);
    CHECK(gmax > 1e-4);
    CHECK(max_abs_diff(gs, gn) <= 1e-5 * gmax);
    const ParamRef& w = skip.model->params().ref(*skip.model->params().find("prior.weight"));
    CHECK(std::abs(gn[static_cast<size_t>(w.offset)]) > 1e-5);  // the prior gets a gradient
    CHECK(max_dev_from_constant_shift(rs.scores, rn.scores) <=
          1e-5 * std::max(1.0, max_abs(rn.scores)));
    const std::vector<float> is = score_graph(*skip.model, *skip.pg, configs, 5, skip.opt);
    const std::vector<float> in = score_graph(*naive.model, *naive.pg, configs, 5, naive.opt);
    CHECK(max_dev_from_constant_shift(is, in) <= 1e-5 * std::max(1.0, max_abs(in)));
    CHECK(max_abs_diff(is, rs.scores) <= 1e-5 * std::max(1.0, max_abs(in)));
}

}  // namespace segrank::test
