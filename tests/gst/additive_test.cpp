// The additive readout under Graph Segment Training (docs/model.md#additive-head): a segment's
// value is an exact partial sum of per-node contributions, so with a halo of L hops (every pooled
// node's receptive field inside its segment) the segments' sums are the full graph's score:
// fresh, stale from the HistoryTable, streamed and deduplicated alike.
#include <doctest/doctest.h>

#include <numeric>

#include "gst/gst.h"
#include "tests/gst/gst_test_util.h"
#include "tests/gst/gst_util.h"

namespace segrank::test {

namespace {

ModelConfig additive_config(int64_t feat_dim) {
    ModelConfig m = tiny_model_config(Task::kLayout, feat_dim);
    m.readout = Readout::kAdditive;
    m.validate();
    return m;
}

// Contiguous segments of at most 15 nodes with a halo of L = 2 hops: 3-5 segments of the tiny
// 40-70 node graph, each pooled node's last-layer row exact.
PrepareOptions halo_prepare_options() {
    PrepareOptions p = tiny_prepare_options(15);
    p.halo_hops = 2;
    return p;
}

}  // namespace

TEST_CASE(
    "additive readout: with every segment fresh and a halo of L hops, the GST step equals "
    "full-graph training in scores and gradients, and streamed and deduplicated inference give the "
    "same scores") {
    OneGraph o = one_graph("gst_additive_fresh", TinyLayoutSpec{});
    const Normalizer norm = fit_normalizer(o.graph);
    Model model(additive_config(norm.output_dim()));
    model.params().initialize(7);
    auto pg = prepare_graph(o.entry, norm, model, halo_prepare_options());
    REQUIRE(pg->num_segments() >= 3);

    const std::vector<int64_t> configs = {3, 0, 17, 5, 44, 9, 21, 30, 12, 8};
    std::vector<double> targets;
    for (int64_t c : configs) targets.push_back(pg->targets[static_cast<size_t>(c)]);
    GstOptions opt = tiny_gst_options();
    opt.skip_independent = false;  // every segment's partial sum, as the full graph has them
    opt.fresh = 100;               // every segment fresh: alpha = 1, no stale value
    const double scale = 0.5;

    HistoryTable table(1, 0);
    model.params().zero_grads();
    const GraphStepResult r =
        gst_train_graph(model, *pg, configs, targets, /*step=*/4, scale, table, opt);
    CHECK(r.fresh_segments == pg->num_segments());
    const std::vector<float> g_gst(model.params().grads().begin(), model.params().grads().end());

    model.params().zero_grads();
    const WholeGraphInput whole = whole_graph_input(o.graph, norm, configs);
    const std::vector<float> s_full =
        full_graph_step(model, whole, targets, opt.loss_terms, opt.loss_options, scale);
    const std::vector<float> g_full(model.params().grads().begin(), model.params().grads().end());

    const double gdiff = max_abs_diff(g_gst, g_full), gmax = max_abs(g_full);
    const double stol = 1e-5 * std::max(1.0, max_abs(s_full));
    MESSAGE("additive, ", pg->num_segments(), " segments: max |grad diff| = ", gdiff,
            " (max |grad| ", gmax, "), max |score diff| = ", max_abs_diff(r.scores, s_full));
    CHECK(gmax > 1e-4);
    CHECK(gdiff <= 1e-5 * std::max(1.0, gmax));
    CHECK(max_abs_diff(r.scores, s_full) <= stol);

    // Streaming inference (several chunks), dense and deduplicated, with and without the cache.
    for (bool dedupe : {false, true})
        for (int64_t cache : {int64_t{0}, kDefaultInferenceCacheBytes}) {
            INFO("dedupe=", dedupe, " cache=", cache);
            GstOptions io = opt;
            io.dedupe_rows = dedupe;
            const std::vector<float> s =
                score_graph(model, *pg, configs, /*chunk=*/4, io, kMaxConfigChunkBytes, cache);
            CHECK(max_abs_diff(s, s_full) <= stol);
        }
    // With the skip the independent segments' constant drops out of every score alike.
    GstOptions skip = opt;
    skip.skip_independent = true;
    const std::vector<float> s_skip = score_graph(model, *pg, configs, 4, skip);
    CHECK(max_dev_from_constant_shift(s_skip, s_full) <= stol);
}

TEST_CASE(
    "additive readout: stale segments contribute the partial sums stored in the HistoryTable, so "
    "with every stale segment kept the combined score is the full graph's") {
    OneGraph o = one_graph("gst_additive_stale", TinyLayoutSpec{});
    const Normalizer norm = fit_normalizer(o.graph);
    Model model(additive_config(norm.output_dim()));
    model.params().initialize(9);
    auto pg = prepare_graph(o.entry, norm, model, halo_prepare_options());
    const int64_t s = pg->num_segments();
    REQUIRE(s >= 3);

    std::vector<int64_t> configs(12);
    std::iota(configs.begin(), configs.end(), 20);
    std::vector<double> targets;
    for (int64_t c : configs) targets.push_back(pg->targets[static_cast<size_t>(c)]);
    GstOptions opt = tiny_gst_options();
    opt.skip_independent = false;
    opt.fresh = 1;
    opt.keep_prob = 1.0;  // every stale segment kept: alpha = (S (1 - 1) + 1) / 1 = 1

    const WholeGraphInput whole = whole_graph_input(o.graph, norm, configs);
    const Tensor rf = model.encode(whole.input(), nullptr);
    const Tensor sf = model.head(rf.cview(), {}, nullptr);
    const std::vector<float> s_full(sf.span().begin(), sf.span().end());
    const double stol = 1e-5 * std::max(1.0, max_abs(s_full));

    HistoryTable table(1, 0);
    // Step 1: the stale segments are missing and computed forward-only, then stored; step 2 reads
    // them back (the parameters did not move): both combine to the full graph's scores.
    model.params().zero_grads();
    const GraphStepResult r1 = gst_train_graph(model, *pg, configs, targets, 1, 1.0, table, opt);
    const auto k = static_cast<int64_t>(configs.size());  // counts are per (config, segment)
    CHECK(r1.stale_recomputed == (s - 1) * k);
    CHECK(max_abs_diff(r1.scores, s_full) <= stol);
    const GraphStepResult r2 = gst_train_graph(model, *pg, configs, targets, 2, 1.0, table, opt);
    CHECK(r2.stale_hits == (s - 1) * k);
    CHECK(r2.stale_recomputed == 0);
    CHECK(max_abs_diff(r2.scores, s_full) <= stol);

    // The table holds one float per (config, segment): the segment's partial sum.
    double sum = 0.0;
    for (int32_t seg = 0; seg < s; ++seg) {
        const auto v = table.lookup(pg->id, configs[0], seg);
        REQUIRE(v.has_value());
        REQUIRE(v->value.size() == 1);
        sum += v->value[0];
    }
    CHECK(std::abs(sum - s_full[0]) <= stol);

    // embedding_mean has no meaning for per-node sums: refused, naming the option.
    GstOptions mean = opt;
    mean.aggregate = SegmentAggregate::kEmbeddingMean;
    CHECK_THROWS_WITH_AS(score_graph(model, *pg, configs, 4, mean), doctest::Contains("additive"),
                         Error);
    CHECK_THROWS_WITH_AS(gst_train_graph(model, *pg, configs, targets, 3, 1.0, table, mean),
                         doctest::Contains("additive"), Error);
}

}  // namespace segrank::test
