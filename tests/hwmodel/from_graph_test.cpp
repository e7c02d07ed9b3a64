// npz records -> approximate modules (docs/hwmodel.md#graphs-from-npz): the model on featurized
// fixtures must rank configurations like the model on the full modules, and the npz samples must be
// scorable.
#include "hwmodel/from_graph.h"

#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>

#include "data/graph.h"
#include "data/hlo/featurizer.h"
#include "data/hlo/proto_reader.h"
#include "hwmodel/kernel_cost.h"
#include "hwmodel/module_cost.h"
#include "hwmodel/validation.h"
#include "tests/support/test_paths.h"

using namespace segrank;

TEST_CASE("tile config features decode to the bounds they were built from") {
    hlo::TileSizeConfig t;
    t.kernel_bounds = {3, 1, 24, 3};
    t.output_bounds = {12, 4, 4, 3};
    const auto f = hlo::tile_config_features(t);
    const auto back = hw::tile_config_from_features(f.data());
    CHECK(back.kernel_bounds == t.kernel_bounds);
    CHECK(back.output_bounds == t.output_bounds);
    CHECK(back.input_bounds.empty());
}

TEST_CASE("on featurized tile kernels the npz path ranks configs like the full module") {
    SEGRANK_REQUIRE_SHARED_DATA(dir);
    const auto file = hlo::read_tuning_file(dir / "xla_tuning/op_tuning_data.pb");
    const auto hw = hw::tpu_v3_core();
    int compared = 0;
    for (const auto& mt : file.modules) {
        const auto f = hlo::featurize_tile(mt, "op_tuning_data.pb");
        if (!f.graph || f.graph->num_configs() < 3) continue;
        const TileGraph& g = *f.graph;
        const hlo::HloModule rebuilt = hw::module_from_graph(g);
        CHECK(rebuilt.num_instructions() == g.num_nodes());
        const hw::KernelModel full(mt.module, hw), approx(rebuilt, hw);
        std::vector<double> a, b, meas;
        size_t j = 0;
        for (const auto& run : mt.runs) {
            if (run.error || run.compute_time_ns <= 1) continue;
            a.push_back(full.evaluate(run.tile).total_ns);
            b.push_back(approx
                            .evaluate(hw::tile_config_from_features(g.config_feat.data() +
                                                                    j * kTileConfigDim))
                            .total_ns);
            ++j;
        }
        const double tau = hw::kendall_tau_b_simple(a, b);
        if (std::isnan(tau)) continue;
        CAPTURE(mt.module.name);
        CHECK(tau > 0.9);
        ++compared;
    }
    CHECK(compared >= 10);
}

TEST_CASE(
    "on the featurized layout module the npz path scores every run and separates the slow "
    "cluster") {
    SEGRANK_REQUIRE_SHARED_DATA(dir);
    const auto file = hlo::read_tuning_file(dir / "xla_tuning/module_tuning_data_layout.pb");
    const auto& mt = file.modules.at(0);
    const auto f = hlo::featurize_layout(mt, "module_tuning_data_layout.pb");
    REQUIRE(f.graph);
    const LayoutGraph& g = *f.graph;
    const hlo::HloModule rebuilt = hw::module_from_graph(g);
    const auto hw = hw::tpu_v3_core();
    hw::LayoutModel model(rebuilt, g.node_config_ids, hw);
    std::vector<double> pred, meas;
    const size_t stride = static_cast<size_t>(g.num_config_nodes()) * kLayoutConfigDim;
    for (int64_t j = 0; j < g.num_configs(); ++j) {
        pred.push_back(
            model.evaluate_ns(g.node_config_feat.data() + static_cast<size_t>(j) * stride));
        meas.push_back(static_cast<double>(g.config_runtime[static_cast<size_t>(j)]));
    }
    CHECK(pred.size() == 112);
    for (double p : pred) CHECK(std::isfinite(p));
    const double tau = hw::kendall_tau_b_simple(pred, meas);
    MESSAGE("npz-path layout tau-b over 112 runs: ", tau);
    CHECK(tau > 0.0);
}

TEST_CASE("the public tile npz samples (test split, no labels) get scores, most configs fit VMEM") {
    SEGRANK_REQUIRE_SHARED_DATA(dir);
    const auto hw = hw::tpu_v3_core();
    int files = 0;
    for (const auto& e : std::filesystem::directory_iterator(dir / "npz_samples/tile_xla_test")) {
        if (e.path().extension() != ".npz") continue;
        const TileGraph g = load_tile_npz(e.path(), LabelPolicy::kAllowTestZeros);
        const hlo::HloModule m = hw::module_from_graph(g);
        const hw::KernelModel model(m, hw);
        int64_t finite = 0;
        for (int64_t j = 0; j < g.num_configs(); ++j) {
            const auto b = model.evaluate(
                hw::tile_config_from_features(g.config_feat.data() + j * kTileConfigDim));
            if (std::isfinite(b.total_ns) && b.total_ns > 0) ++finite;
        }
        CAPTURE(e.path().filename().string());
        // Measured configs all compiled; the VMEM estimate still flags 17 % of 0a3585's configs
        // (a known gap of the block-size estimate, see the report).
        CHECK(finite * 10 >= g.num_configs() * 8);
        ++files;
    }
    CHECK(files == 5);
}
