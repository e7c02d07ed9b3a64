// Streamed TILE graphs: a tile:xla graph from an HDF5 store (config_feat [c, 24], runtime
// normalizers, targets = runtime / normalizer) read from the store gives the segments, targets, GST
// steps and scores of the same graph held in memory while reading only K config rows at a time.
// Only the public API of gst/prepared_graph.h and gst/gst.h.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "data/graph_store.h"
#include "gnn/core/check.h"
#include "gst/gst.h"
#include "tests/gst/gst_test_util.h"
#include "tests/gst/store_test_util.h"
#include "tests/support/test_paths.h"
#include "tests/support/tiny_tile_data.h"

namespace segrank::test {
namespace {

namespace fs = std::filesystem;

double max_abs_diff(std::span<const float> a, std::span<const float> b) {
    REQUIRE(a.size() == b.size());
    double d = 0.0;
    for (size_t i = 0; i < a.size(); ++i)
        d = std::max(d, static_cast<double>(std::abs(a[i] - b[i])));
    return d;
}

}  // namespace

TEST_CASE(
    "a tile graph from an HDF5 store is streamed and gives the in-memory targets, steps, gradients "
    "and scores") {
    const fs::path dir = scratch_dir("gst_streamed_tile");
    TinyTileSpec spec;
    spec.min_nodes = 300;
    spec.max_nodes = 320;
    spec.configs = 60;
    const GraphStore store(write_tiny_tile_store(dir / "store", Split::kTrain, 1, spec),
                           LabelPolicy::kRequirePositive);
    REQUIRE(store.collection().task == Task::kTile);
    const TileGraph truth = tiny_tile_graph("train_0", 0, spec);
    const Normalizer norm = normalizer_of(store);

    for (const auto join : {ConfigJoin::kEarly, ConfigJoin::kLate}) {
        CAPTURE(join == ConfigJoin::kEarly ? "early" : "late");
        CountingSource counting(store);
        ModelConfig mc = tiny_model_config(Task::kTile, norm.output_dim());
        mc.config_join = join;
        Model model_s(mc);
        Model model_m(mc);
        model_s.params().initialize(5);
        model_m.params().initialize(5);
        PrepareOptions streamed = tiny_prepare_options(64), in_memory = streamed;
        in_memory.stream = false;
        auto gs = prepare_graph(entry_of(counting), norm, model_s, streamed);
        auto gm = prepare_graph(entry_of(store), norm, model_m, in_memory);
        REQUIRE(gs->held == nullptr);  // read from the store
        REQUIRE(gm->held != nullptr);  // stream = false: loaded into memory with every config row
        CHECK(counting.full_loads == 0);  // structure only: no config_feat held
        CHECK(gs->kept_segments.empty());
        CHECK(gm->held->info(0).num_configs == 60);
        CHECK(gm->held->load_configs(0, ConfigRows::all()).tile_feat.cols() == kTileConfigDim);
        CHECK(gs->memory_bytes() < gm->memory_bytes());
        REQUIRE(gs->num_segments() == gm->num_segments());
        REQUIRE(gs->num_segments() >= 4);
        CHECK(gs->segment_dependent == gm->segment_dependent);
        // A tile config is one row for the whole kernel: early join feeds it to every node, late
        // join to the head of every segment, so no segment's score is config-independent.
        const auto dependent =
            std::count(gs->segment_dependent.begin(), gs->segment_dependent.end(), uint8_t{1});
        CHECK(dependent == gs->num_segments());

        // Targets are runtime / normalizer (not raw runtimes), identical in both modes.
        REQUIRE(gs->targets.size() == 60);
        CHECK(gs->targets == gm->targets);
        for (size_t c = 0; c < 60; ++c) {
            CAPTURE(c);
            const double expected = static_cast<double>(truth.config_runtime[c]) /
                                    static_cast<double>(truth.config_runtime_normalizers[c]);
            CHECK(gs->targets[c] == doctest::Approx(expected).epsilon(1e-12));
            CHECK(gs->runtimes_ns[c] == truth.config_runtime[c]);
        }

        // Config rows: the batch of a streamed graph holds exactly the rows of the file.
        const std::vector<int64_t> configs = {7, 0, 59, 31, 44, 12, 5, 18};
        const ConfigBatch bs = load_config_batch(*gs, configs),
                          bm = load_config_batch(*gm, configs);
        REQUIRE(bs.tile.rows() == static_cast<int64_t>(configs.size()));
        for (size_t k = 0; k < configs.size(); ++k)
            for (int64_t d = 0; d < kTileConfigDim; ++d) {
                CHECK(bs.tile.at(bs.position(configs[k]), d) ==
                      truth.config_feat.at(configs[k], d));
                CHECK(bm.tile.at(bm.position(configs[k]), d) ==
                      truth.config_feat.at(configs[k], d));
            }

        std::vector<double> targets;
        for (int64_t c : configs) targets.push_back(gs->targets[static_cast<size_t>(c)]);
        const GstOptions opt = tiny_gst_options();
        HistoryTable ts(1, 0), tm(1, 0);
        counting.max_config_rows = 0;
        for (int64_t step = 0; step < 3; ++step) {
            CAPTURE(step);
            model_s.params().zero_grads();
            model_m.params().zero_grads();
            const GraphStepResult rs =
                gst_train_graph(model_s, *gs, configs, targets, step, 0.5, ts, opt);
            const GraphStepResult rm =
                gst_train_graph(model_m, *gm, configs, targets, step, 0.5, tm, opt);
            CHECK(std::isfinite(rs.loss));
            CHECK(rs.loss == doctest::Approx(rm.loss).epsilon(1e-6));
            CHECK(rs.stale_hits == rm.stale_hits);
            CHECK(rs.fresh_segments == rm.fresh_segments);
            CHECK(max_abs_diff(model_s.params().grads(), model_m.params().grads()) < 1e-6);
        }
        // Each step read its K rows only, and one segment's node rows (with halo) at a time.
        CHECK(counting.max_config_rows == static_cast<int64_t>(configs.size()));
        CHECK(counting.max_node_rows > 0);
        CHECK(counting.max_node_rows <= 64 + 2 * 60);

        counting.max_config_rows = 0;
        const std::vector<float> ss = score_graph(model_s, *gs, gs->configs, /*chunk=*/16, opt);
        const std::vector<float> sm = score_graph(model_m, *gm, gm->configs, 16, opt);
        REQUIRE(ss.size() == 60);
        REQUIRE(sm.size() == 60);
        for (size_t i = 0; i < ss.size(); ++i) CHECK(ss[i] == doctest::Approx(sm[i]).epsilon(1e-5));
        CHECK(counting.max_config_rows == 16);  // inference reads config rows in chunks of 16
        CHECK(counting.full_loads == 0);
    }
}

}  // namespace segrank::test
