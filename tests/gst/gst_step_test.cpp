// The GST step and streaming inference on one tiny npz layout graph (tests/gst/gst_test_util.h):
// S = 1 equals full-graph training, the config-independence skip only shifts scores by a per-graph
// constant, streaming inference equals the full-graph score.
#include <doctest/doctest.h>

#include <numeric>

#include "gst/gst.h"
#include "tests/gst/gst_test_util.h"
#include "tests/gst/gst_util.h"

namespace segrank::test {

TEST_CASE("GST with one segment (max_nodes = 0) gives the gradients of full-graph training") {
    OneGraph o = one_graph("gst_s1", TinyLayoutSpec{});
    const Normalizer norm = fit_normalizer(o.graph);
    Model model(tiny_model_config(Task::kLayout, norm.output_dim()));
    model.params().initialize(7);
    auto pg = prepare_graph(o.entry, norm, model, tiny_prepare_options(0));
    REQUIRE(pg->num_segments() == 1);

    const std::vector<int64_t> configs = {3, 0, 17, 5, 44, 9, 21, 30, 12, 8};
    std::vector<double> targets;
    for (int64_t c : configs) targets.push_back(pg->targets[static_cast<size_t>(c)]);
    GstOptions opt = tiny_gst_options();
    opt.keep_prob = 0.3;
    const double scale = 0.5;

    HistoryTable table(1, 0);
    model.params().zero_grads();
    GraphStepResult r =
        gst_train_graph(model, *pg, configs, targets, /*step=*/4, scale, table, opt);
    std::vector<float> g_gst(model.params().grads().begin(), model.params().grads().end());

    model.params().zero_grads();
    WholeGraphInput whole = whole_graph_input(o.graph, norm, configs);
    std::vector<float> s_full =
        full_graph_step(model, whole, targets, opt.loss_terms, opt.loss_options, scale);
    std::vector<float> g_full(model.params().grads().begin(), model.params().grads().end());

    const double gdiff = max_abs_diff(g_gst, g_full), gmax = max_abs(g_full);
    MESSAGE("S = 1: max |grad diff| = ", gdiff, " (max |grad| ", gmax,
            "), max |score diff| = ", max_abs_diff(r.scores, s_full));
    CHECK(gmax > 1e-4);  // the comparison is not between two zero vectors
    CHECK(gdiff <= 1e-6 * std::max(1.0, gmax));
    CHECK(max_abs_diff(r.scores, s_full) <= 1e-6 * std::max(1.0, max_abs(s_full)));
}

TEST_CASE("the config-independence skip changes gradients and scores only by per-graph constants") {
    TinyLayoutSpec spec;
    spec.min_nodes = 150;
    spec.max_nodes = 160;
    spec.config_nodes = 2;  // sparse: most 25-node segments cannot see a configurable node
    OneGraph o = one_graph("gst_skip", spec);
    const Normalizer norm = fit_normalizer(o.graph);

    struct Side {
        std::unique_ptr<Model> model;
        std::unique_ptr<PreparedGraph> pg;
        GstOptions opt;
    };
    auto make_side = [&](bool independence) {
        Side s;
        s.model = std::make_unique<Model>(
            tiny_model_config(Task::kLayout, norm.output_dim(), independence));
        s.model->params().initialize(11);
        s.pg = prepare_graph(o.entry, norm, *s.model, tiny_prepare_options(25));
        s.opt = tiny_gst_options(independence);
        s.opt.fresh = 100;  // every segment fresh: the comparison is exact, not in expectation
        return s;
    };
    Side skip = make_side(true), naive = make_side(false);
    REQUIRE(skip.opt.skip_independent);
    REQUIRE_FALSE(naive.opt.skip_independent);
    REQUIRE(max_abs_diff(skip.model->params().values(), naive.model->params().values()) == 0.0);

    std::vector<int64_t> configs(16);
    std::iota(configs.begin(), configs.end(), 0);
    std::vector<double> targets;
    for (int64_t c : configs) targets.push_back(skip.pg->targets[static_cast<size_t>(c)]);

    HistoryTable t1(1, 0), t2(1, 0);
    skip.model->params().zero_grads();
    naive.model->params().zero_grads();
    GraphStepResult rs =
        gst_train_graph(*skip.model, *skip.pg, configs, targets, 2, 1.0, t1, skip.opt);
    GraphStepResult rn =
        gst_train_graph(*naive.model, *naive.pg, configs, targets, 2, 1.0, t2, naive.opt);
    MESSAGE("segments: ", naive.pg->num_segments(),
            ", taking part with the skip: ", rs.active_segments, ", without: ", rn.active_segments);
    CHECK(rn.active_segments == naive.pg->num_segments());
    CHECK(rs.active_segments >= 1);
    CHECK(rs.active_segments < rn.active_segments);  // the skip is exercised

    auto gs = skip.model->params().grads();
    auto gn = naive.model->params().grads();
    const double gdiff = max_abs_diff(gs, gn), gmax = max_abs(gn);
    const double sdev = max_dev_from_constant_shift(rs.scores, rn.scores);
    MESSAGE("skip vs naive: max |grad diff| = ", gdiff, " (max |grad| ", gmax,
            "); scores differ by ", rn.scores[0] - rs.scores[0], " +- ", sdev);
    CHECK(gmax > 1e-4);
    CHECK(gdiff <= 1e-5 * gmax);
    CHECK(sdev <= 1e-5 * std::max(1.0, max_abs(rn.scores)));
    CHECK(max_abs_diff(rs.scores, rn.scores) >
          1e-3);  // the constant is real (independent segments were left out)

    // Streaming inference, several chunks: the same constant-shift relation.
    std::vector<float> is = score_graph(*skip.model, *skip.pg, configs, 5, skip.opt);
    std::vector<float> in = score_graph(*naive.model, *naive.pg, configs, 5, naive.opt);
    CHECK(max_dev_from_constant_shift(is, in) <= 1e-5 * std::max(1.0, max_abs(in)));
    // With every segment fresh and dropout off, the training scores equal the inference scores.
    CHECK(max_abs_diff(is, rs.scores) <= 1e-5 * std::max(1.0, max_abs(in)));
}

TEST_CASE(
    "streaming score_graph with max_nodes above the graph size equals the full-graph head score") {
    OneGraph o = one_graph("gst_infer", TinyLayoutSpec{});
    const Normalizer norm = fit_normalizer(o.graph);
    Model model(tiny_model_config(Task::kLayout, norm.output_dim()));
    model.params().initialize(5);
    auto pg = prepare_graph(o.entry, norm, model, tiny_prepare_options(100000));
    REQUIRE(pg->num_segments() == 1);
    std::vector<int64_t> configs(pg->num_configs);
    std::iota(configs.begin(), configs.end(), 0);
    const std::vector<float> streamed =
        score_graph(model, *pg, configs, /*chunk=*/7, tiny_gst_options());

    WholeGraphInput whole = whole_graph_input(o.graph, norm, configs);
    Tensor r = model.encode(whole.input(), nullptr);
    Tensor s = model.head(r.cview(), {}, nullptr);
    const double dev = max_dev_from_constant_shift(streamed, s.span());
    MESSAGE("streamed vs full graph: max |diff| = ", max_abs_diff(streamed, s.span()),
            ", from a constant shift ", dev);
    CHECK(max_abs(s.span()) > 0.0);
    CHECK(dev <= 1e-5 * std::max(1.0, max_abs(s.span())));
    CHECK(max_abs_diff(streamed, s.span()) <= 1e-5 * std::max(1.0, max_abs(s.span())));
}

}  // namespace segrank::test
