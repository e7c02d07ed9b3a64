// model.trip_counts (docs/model.md#loop-trip-counts): synth writes node_loop_trips, prepared layout
// graphs append its two columns after the normalized features (and the depth), through prune_hops;
// graphs without the member mark the nodes inside loops unknown; the config-independent path
// scores them as the naive one.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <numeric>

#include "data/collection.h"
#include "data/hlo/featurizer.h"
#include "data/loop_depth.h"
#include "gst/gst.h"
#include "hwmodel/synth/synth.h"
#include "tests/gst/gst_test_util.h"
#include "tests/support/test_paths.h"

namespace segrank::test {
namespace {

// A synthetic layout graph with while loops (the generator puts them in ~15 % of its blocks).
LayoutGraph graph_with_loops() {
    synth::SynthOptions so;
    so.min_nodes = 300;
    so.max_nodes = 600;
    so.configs = 12;
    for (int64_t i = 0; i < 40; ++i) {
        LayoutGraph g = synth::synth_layout(so, i).graph;
        if (std::count(g.node_opcode.begin(), g.node_opcode.end(), hlo::opcode_id("while")) > 0)
            return g;
    }
    FAIL("no synthetic graph with a while loop among 40");
    return {};
}

// One npz layout collection holding g, as a GraphEntry over its source.
struct OneNpz {
    std::unique_ptr<NpzGraphSource> source;
    GraphEntry entry;
};

OneNpz write_one(const LayoutGraph& g, const std::string& name) {
    const auto root = scratch_dir(name);
    const auto dir = root / "npz/layout/xla/random/train";
    std::filesystem::create_directories(dir);
    save_layout_npz(g, dir / (g.name + ".npz"));
    auto colls = discover_collections(root);
    REQUIRE(colls.size() == 1);
    OneNpz o;
    o.source = std::make_unique<NpzGraphSource>(std::move(colls[0]));
    o.entry.source = o.source.get();
    o.entry.collection = o.source->collection();
    o.entry.info = o.source->info(0);
    o.entry.name = o.entry.info.name;
    return o;
}

}  // namespace

TEST_CASE("synth's node_loop_trips give log2 of the loops' trip product inside loops, 0 outside") {
    const LayoutGraph g = graph_with_loops();
    REQUIRE(g.node_loop_trips.size() == static_cast<size_t>(g.num_nodes()) * kLoopTripCols);
    const std::vector<uint8_t> depth = while_loop_depth(g);
    int64_t inside = 0;
    for (int64_t v = 0; v < g.num_nodes(); ++v) {
        const float log2_trips = g.node_loop_trips[static_cast<size_t>(v) * 2];
        const float unknown = g.node_loop_trips[static_cast<size_t>(v) * 2 + 1];
        CAPTURE(v);
        CHECK(unknown == 0.0f);  // synth's loops follow XLA's counted-loop pattern
        // Synth's loops run 2..12 times: inside a loop exactly when the depth says so.
        CHECK((log2_trips > 0) == (depth[static_cast<size_t>(v)] > 0));
        if (depth[static_cast<size_t>(v)] == 1) {
            const double trips = std::exp2(static_cast<double>(log2_trips));
            CHECK(trips == doctest::Approx(std::round(trips)).epsilon(1e-5));
            CHECK(trips >= 2);
            CHECK(trips <= 12);
        }
        inside += depth[static_cast<size_t>(v)] > 0;
    }
    CHECK(inside > 0);
}

TEST_CASE(
    "model.trip_counts appends node_loop_trips after the depth and scores as the naive path") {
    const LayoutGraph g = graph_with_loops();
    const std::vector<uint8_t> depth = while_loop_depth(g);
    const OneNpz one = write_one(g, "loop_trips_prepare");
    const Normalizer norm = fit_normalizer(g);
    const int64_t f = norm.output_dim();
    const Tensor whole = norm.apply(g.node_feat.cview(), g.name);
    ModelConfig mc = tiny_model_config(Task::kLayout, f + 3);
    mc.loop_depth = true;
    mc.trip_counts = true;
    Model model(mc);
    model.params().initialize(7);
    ModelConfig naive_mc = mc;
    naive_mc.exploit_independence = false;
    Model naive(naive_mc);
    naive.params().initialize(7);
    for (const int32_t prune : {-1, 1}) {
        CAPTURE(prune);
        PrepareOptions po = tiny_prepare_options(120);
        po.prune_hops = prune;
        const auto pg = prepare_graph(one.entry, norm, model, po);
        REQUIRE(pg->loop_trips.size() == static_cast<size_t>(pg->num_nodes) * kLoopTripCols);
        if (prune < 0) CHECK(pg->loop_trips == g.node_loop_trips);
        int64_t checked = 0;
        for (int64_t s = 0; s < pg->num_segments(); ++s) {
            BuiltSegment b;
            build_segment(*pg, s, b);
            REQUIRE(b.node_feat.cols() == f + 3);
            const auto nodes = b.segment->nodes();
            for (size_t i = 0; i < nodes.size(); ++i) {
                const auto v = static_cast<int64_t>(i);
                const auto src = static_cast<size_t>(
                    pg->source_node.empty() ? nodes[i]
                                            : pg->source_node[static_cast<size_t>(nodes[i])]);
                CHECK(std::memcmp(b.node_feat.data() + v * (f + 3),
                                  whole.data() + static_cast<int64_t>(src) * f,
                                  static_cast<size_t>(f) * 4) == 0);
                CHECK(b.node_feat.at(v, f) == static_cast<float>(depth[src]));
                CHECK(b.node_feat.at(v, f + 1) == g.node_loop_trips[src * 2]);
                CHECK(b.node_feat.at(v, f + 2) == g.node_loop_trips[src * 2 + 1]);
                ++checked;
            }
        }
        CHECK(checked >= pg->num_nodes);
        // The columns are the same for every config: the config-independent path scores the
        // prepared graph as the naive one (every node with K rows) to 1e-5 relative.
        std::vector<int64_t> configs(static_cast<size_t>(pg->num_configs));
        std::iota(configs.begin(), configs.end(), 0);
        const auto pn = prepare_graph(one.entry, norm, naive, po);
        const auto fast_scores = score_graph(model, *pg, configs, 5, tiny_gst_options());
        const auto naive_scores = score_graph(naive, *pn, configs, 5, tiny_gst_options(false));
        REQUIRE(fast_scores.size() == naive_scores.size());
        for (size_t k = 0; k < fast_scores.size(); ++k)
            CHECK(std::abs(fast_scores[k] - naive_scores[k]) <=
                  1e-5 * std::max(1.0f, std::abs(naive_scores[k])));
        // And it trains on them.
        std::vector<double> targets(pg->targets.begin(), pg->targets.end());
        HistoryTable table(1, 0);
        model.params().zero_grads();
        const GraphStepResult r =
            gst_train_graph(model, *pg, configs, targets, 0, 1.0, table, tiny_gst_options());
        CHECK(std::isfinite(r.loss));
    }
}

TEST_CASE("without node_loop_trips in the file the nodes inside loops are marked unknown") {
    LayoutGraph g = graph_with_loops();
    g.node_loop_trips.clear();  // as the published npz files
    const std::vector<uint8_t> depth = while_loop_depth(g);
    const OneNpz one = write_one(g, "loop_trips_unknown");
    const Normalizer norm = fit_normalizer(g);
    ModelConfig mc = tiny_model_config(Task::kLayout, norm.output_dim() + 2);
    mc.trip_counts = true;
    Model model(mc);
    const auto pg = prepare_graph(one.entry, norm, model, tiny_prepare_options(120));
    REQUIRE(pg->loop_trips.size() == depth.size() * 2);
    CHECK(pg->loop_depth.empty());
    for (size_t v = 0; v < depth.size(); ++v) {
        CHECK(pg->loop_trips[v * 2] == 0.0f);
        CHECK(pg->loop_trips[v * 2 + 1] == (depth[v] > 0 ? 1.0f : 0.0f));
    }
    // Without the option nothing is appended.
    Model plain(tiny_model_config(Task::kLayout, norm.output_dim()));
    const auto pp = prepare_graph(one.entry, norm, plain, tiny_prepare_options(120));
    CHECK(pp->loop_trips.empty());
}

}  // namespace segrank::test
