// PreparedGraph over an npz graph: held in a MemoryGraphSource and read through the same calls as a
// store; its kept segments are exactly what a rebuild returns (node features normalized row by row
// as the whole graph would be), so keeping them or rebuilding on every use gives bit-identical
// steps and scores; a byte bound turns keeping off; prune_hops reads node rows through source_node.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <numeric>
#include <ranges>

#include "data/graph_store.h"
#include "gst/gst.h"
#include "tests/gst/gst_test_util.h"
#include "tests/gst/store_test_util.h"
#include "tests/support/test_paths.h"
#include "tests/support/tiny_layout_data.h"

namespace segrank::test {
namespace {

namespace fs = std::filesystem;

bool same_bits(std::span<const float> a, std::span<const float> b) {
    return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

void check_same_segment(const Segment& x, const Segment& y) {
    CHECK(x.num_pooled() == y.num_pooled());
    CHECK(std::ranges::equal(x.nodes(), y.nodes()));
    CHECK(std::ranges::equal(x.edge_user(), y.edge_user()));
    CHECK(std::ranges::equal(x.edge_producer(), y.edge_producer()));
    CHECK(std::ranges::equal(x.config_local(), y.config_local()));
    CHECK(std::ranges::equal(x.config_index(), y.config_index()));
}

}  // namespace

TEST_CASE(
    "an npz graph is held in memory and its kept segments give the steps and scores of rebuilding "
    "bit for bit") {
    TinyLayoutSpec spec;
    spec.min_nodes = 150;
    spec.max_nodes = 160;
    spec.config_nodes = 5;
    OneGraph o = one_graph("prepared_kept", spec);
    const Normalizer norm = fit_normalizer(o.graph);
    Model model_k(tiny_model_config(Task::kLayout, norm.output_dim()));
    Model model_r(tiny_model_config(Task::kLayout, norm.output_dim()));
    model_k.params().initialize(13);
    model_r.params().initialize(13);
    PrepareOptions keep = tiny_prepare_options(40), rebuild = keep;
    rebuild.max_kept_segment_bytes = 0;
    const auto gk = prepare_graph(o.entry, norm, model_k, keep);
    const auto gr = prepare_graph(o.entry, norm, model_r, rebuild);
    REQUIRE(gk->held != nullptr);  // npz: no partial reads, so the graph is loaded once
    CHECK(gk->source == gk->held.get());
    CHECK(gk->held->where(0) == o.entry.source->where(0));
    REQUIRE(gk->num_segments() >= 4);
    REQUIRE(gk->kept_segments.size() == static_cast<size_t>(gk->num_segments()));
    CHECK(gr->kept_segments.empty());
    CHECK(gk->memory_bytes() > gr->memory_bytes());

    // Kept segments equal a rebuild; their features are the whole graph's normalized rows.
    const Tensor whole = norm.apply(o.graph.node_feat.cview(), o.graph.name);
    for (int64_t s = 0; s < gk->num_segments(); ++s) {
        CAPTURE(s);
        BuiltSegment b;
        build_segment(*gr, s, b);
        const BuiltSegment& k = gk->kept_segments[static_cast<size_t>(s)];
        check_same_segment(*k.segment, *b.segment);
        CHECK(k.opcode == b.opcode);
        CHECK(same_bits(k.node_feat.span(), b.node_feat.span()));
        const auto nodes = b.segment->nodes();
        for (size_t i = 0; i < nodes.size(); ++i)
            CHECK(same_bits(
                {b.node_feat.data() + i * static_cast<size_t>(whole.cols()),
                 static_cast<size_t>(whole.cols())},
                {whole.data() + nodes[i] * whole.cols(), static_cast<size_t>(whole.cols())}));
        BuiltSegment scratch;
        CHECK(&built_segment(*gk, s, scratch) == &k);
        CHECK(&built_segment(*gr, s, scratch) == &scratch);
    }

    const std::vector<int64_t> configs = {4, 90, 13, 0, 57, 21};
    std::vector<double> targets;
    for (int64_t c : configs) targets.push_back(gk->targets[static_cast<size_t>(c)]);
    GstOptions opt = tiny_gst_options();
    opt.fresh = 2;
    opt.max_staleness = 2;
    HistoryTable tk(1, 0), tr(1, 0);
    for (int64_t step = 0; step < 5; ++step) {
        CAPTURE(step);
        model_k.params().zero_grads();
        model_r.params().zero_grads();
        const GraphStepResult rk =
            gst_train_graph(model_k, *gk, configs, targets, step, 0.5, tk, opt);
        const GraphStepResult rr =
            gst_train_graph(model_r, *gr, configs, targets, step, 0.5, tr, opt);
        CHECK(rk.loss == rr.loss);
        CHECK(same_bits(rk.scores, rr.scores));
        CHECK(same_bits(model_k.params().grads(), model_r.params().grads()));
    }
    std::vector<int64_t> all(static_cast<size_t>(gk->num_configs));
    std::iota(all.begin(), all.end(), 0);
    CHECK(
        same_bits(score_graph(model_k, *gk, all, 7, opt), score_graph(model_r, *gr, all, 7, opt)));
}

TEST_CASE("a held graph whose rebuilt segments pass max_kept_segment_bytes keeps none") {
    OneGraph o = one_graph("prepared_bound", TinyLayoutSpec{});
    const Normalizer norm = fit_normalizer(o.graph);
    Model model(tiny_model_config(Task::kLayout, norm.output_dim()));
    PrepareOptions opt = tiny_prepare_options(16);
    const auto all = prepare_graph(o.entry, norm, model, opt);
    REQUIRE(all->kept_segments.size() == static_cast<size_t>(all->num_segments()));
    int64_t bytes = 0;
    for (const BuiltSegment& b : all->kept_segments) bytes += b.memory_bytes();
    opt.max_kept_segment_bytes = bytes;  // exactly fits
    CHECK(prepare_graph(o.entry, norm, model, opt)->kept_segments.size() ==
          all->kept_segments.size());
    opt.max_kept_segment_bytes = bytes - 1;
    const auto none = prepare_graph(o.entry, norm, model, opt);
    CHECK(none->held != nullptr);
    CHECK(none->kept_segments.empty());
    CHECK(none->num_segments() == all->num_segments());
}

TEST_CASE(
    "prune_hops reads the kept nodes' rows through source_node, from a store as from memory") {
    const fs::path dir = scratch_dir("prepared_prune");
    TinyLayoutSpec spec;
    spec.min_nodes = 300;
    spec.max_nodes = 300;
    spec.config_nodes = 3;
    const GraphStore store(write_tiny_layout_store(dir, spec), LabelPolicy::kRequirePositive);
    const Normalizer norm = normalizer_of(store);
    Model model_s(tiny_model_config(Task::kLayout, norm.output_dim()));
    Model model_m(tiny_model_config(Task::kLayout, norm.output_dim()));
    model_s.params().initialize(2);
    model_m.params().initialize(2);
    PrepareOptions streamed = tiny_prepare_options(30), in_memory = streamed;
    streamed.prune_hops = 4;
    in_memory.prune_hops = 4;
    in_memory.stream = false;
    const auto gs = prepare_graph(entry_of(store), norm, model_s, streamed);
    const auto gm = prepare_graph(entry_of(store), norm, model_m, in_memory);
    REQUIRE(gs->held == nullptr);
    REQUIRE(gm->held != nullptr);
    CHECK(gs->num_nodes < 300);
    CHECK(gs->num_nodes == gm->num_nodes);
    CHECK(gs->source_node == gm->source_node);
    REQUIRE(gs->source_node.size() == static_cast<size_t>(gs->num_nodes));
    REQUIRE(gs->num_segments() == gm->num_segments());
    CHECK(gs->segment_dependent == gm->segment_dependent);
    const LayoutGraph full = store.load_layout(0, ConfigRows::none());
    const Tensor whole = norm.apply(full.node_feat.cview(), full.name);
    BuiltSegment b;
    for (int64_t s = 0; s < gs->num_segments(); ++s) {
        CAPTURE(s);
        check_same_segment(gs->segment(s), gm->segment(s));
        build_segment(*gs, s, b);
        CHECK(same_bits(b.node_feat.span(),
                        gm->kept_segments[static_cast<size_t>(s)].node_feat.span()));
        const auto nodes = b.segment->nodes();
        for (size_t i = 0; i < nodes.size(); ++i) {
            const int64_t v = gs->source_node[static_cast<size_t>(nodes[i])];
            CHECK(same_bits({b.node_feat.data() + i * static_cast<size_t>(whole.cols()),
                             static_cast<size_t>(whole.cols())},
                            {whole.data() + v * whole.cols(), static_cast<size_t>(whole.cols())}));
        }
    }
    const std::vector<int64_t> configs = {1, 8, 30, 77};
    std::vector<double> targets;
    for (int64_t c : configs) targets.push_back(gs->targets[static_cast<size_t>(c)]);
    const GstOptions opt = tiny_gst_options();
    HistoryTable ts(1, 0), tm(1, 0);
    const GraphStepResult rs = gst_train_graph(model_s, *gs, configs, targets, 0, 1.0, ts, opt);
    const GraphStepResult rm = gst_train_graph(model_m, *gm, configs, targets, 0, 1.0, tm, opt);
    CHECK(rs.loss == rm.loss);
    CHECK(same_bits(model_s.params().grads(), model_m.params().grads()));
}

}  // namespace segrank::test
