// model.loop_depth (docs/model.md#loop-depth): prepared layout graphs append each node's
// while-loop depth to its normalized features as one more column, on the range-partition path
// (no structure kept) and through prune_hops (depths follow source_node), and a model over
// F' + 1 columns trains and scores on them.
#include "data/loop_depth.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <numeric>

#include "data/collection.h"
#include "data/hlo/featurizer.h"
#include "gst/gst.h"
#include "hwmodel/synth/synth.h"
#include "tests/gst/gst_test_util.h"
#include "tests/support/test_paths.h"

namespace segrank::test {

TEST_CASE("model.loop_depth appends each node's while-loop depth as the last feature column") {
    // A synthetic layout graph with while loops (the generator puts them in ~15 % of its blocks).
    synth::SynthOptions so;
    so.min_nodes = 300;
    so.max_nodes = 600;
    so.configs = 12;
    LayoutGraph g;
    for (int64_t i = 0;; ++i) {
        REQUIRE(i < 40);
        g = synth::synth_layout(so, i).graph;
        if (std::count(g.node_opcode.begin(), g.node_opcode.end(), hlo::opcode_id("while")) > 0)
            break;
    }
    const std::vector<uint8_t> depth = while_loop_depth(g);
    REQUIRE(std::count_if(depth.begin(), depth.end(), [](uint8_t d) { return d > 0; }) > 0);

    const auto root = scratch_dir("loop_depth_prepare");
    const auto dir = root / "npz/layout/xla/random/train";
    std::filesystem::create_directories(dir);
    save_layout_npz(g, dir / (g.name + ".npz"));
    auto colls = discover_collections(root);
    REQUIRE(colls.size() == 1);
    NpzGraphSource source(std::move(colls[0]));
    GraphEntry entry;
    entry.source = &source;
    entry.collection = source.collection();
    entry.info = source.info(0);
    entry.name = entry.info.name;

    const Normalizer norm = fit_normalizer(g);
    const int64_t f = norm.output_dim();
    const Tensor whole = norm.apply(g.node_feat.cview(), g.name);
    ModelConfig mc = tiny_model_config(Task::kLayout, f + 1);
    mc.loop_depth = true;
    Model model(mc);
    model.params().initialize(5);
    for (const int32_t prune : {-1, 1}) {
        CAPTURE(prune);
        PrepareOptions po = tiny_prepare_options(120);
        po.prune_hops = prune;
        const auto pg = prepare_graph(entry, norm, model, po);
        REQUIRE(pg->loop_depth.size() == static_cast<size_t>(pg->num_nodes));
        if (prune < 0) CHECK(pg->loop_depth == depth);
        int64_t checked = 0;
        for (int64_t s = 0; s < pg->num_segments(); ++s) {
            BuiltSegment b;
            build_segment(*pg, s, b);
            REQUIRE(b.node_feat.cols() == f + 1);
            const auto nodes = b.segment->nodes();
            for (size_t i = 0; i < nodes.size(); ++i) {
                const int64_t src = pg->source_node.empty()
                                        ? nodes[i]
                                        : pg->source_node[static_cast<size_t>(nodes[i])];
                // The normalized columns as without the option, then the depth.
                CHECK(std::memcmp(b.node_feat.data() + static_cast<int64_t>(i) * (f + 1),
                                  whole.data() + src * f, static_cast<size_t>(f) * 4) == 0);
                CHECK(b.node_feat.at(static_cast<int64_t>(i), f) ==
                      static_cast<float>(depth[static_cast<size_t>(src)]));
                ++checked;
            }
        }
        CHECK(checked >= pg->num_nodes);
        // A model over F' + 1 columns trains and scores on the prepared graph.
        std::vector<int64_t> configs(static_cast<size_t>(pg->num_configs));
        std::iota(configs.begin(), configs.end(), 0);
        std::vector<double> targets(pg->targets.begin(), pg->targets.end());
        HistoryTable table(1, 0);
        model.params().zero_grads();
        const GraphStepResult r =
            gst_train_graph(model, *pg, configs, targets, 0, 1.0, table, tiny_gst_options());
        CHECK(std::isfinite(r.loss));
        const auto scores = score_graph(model, *pg, configs, 5, tiny_gst_options());
        CHECK(scores.size() == configs.size());
    }
    // Without the option nothing is appended.
    Model plain(tiny_model_config(Task::kLayout, f));
    const auto pg = prepare_graph(entry, norm, plain, tiny_prepare_options(120));
    CHECK(pg->loop_depth.empty());
    BuiltSegment b;
    build_segment(*pg, 0, b);
    CHECK(b.node_feat.cols() == f);
}

}  // namespace segrank::test
