// Model validation on the real tpu_graphs fixtures (docs/hwmodel.md#validation): facts as checks,
// measured quality printed (docs/benchmarks.md#hwmodel-on-the-real-fixtures) with the acceptance
// thresholds (docs/hwmodel.md#validation) as checks.
#include <doctest/doctest.h>

#include <cmath>
#include <iostream>

#include "data/hlo/featurizer.h"
#include "data/hlo/proto_reader.h"
#include "data/loop_depth.h"
#include "hwmodel/kernel_cost.h"
#include "hwmodel/loop_trips.h"
#include "hwmodel/module_cost.h"
#include "hwmodel/module_index.h"
#include "hwmodel/trip_count.h"
#include "hwmodel/validation.h"
#include "tests/support/test_paths.h"

using namespace segrank;

namespace {

const hlo::TuningFile& op_file(const std::filesystem::path& dir) {
    static const hlo::TuningFile f = hlo::read_tuning_file(dir / "xla_tuning/op_tuning_data.pb");
    return f;
}
const hlo::TuningFile& layout_file(const std::filesystem::path& dir) {
    static const hlo::TuningFile f =
        hlo::read_tuning_file(dir / "xla_tuning/module_tuning_data_layout.pb");
    return f;
}

}  // namespace

TEST_CASE("the three while loops of the layout fixture have trip count 2 (i < 2 from 0)") {
    SEGRANK_REQUIRE_SHARED_DATA(dir);
    const auto& mt = layout_file(dir).modules.at(0);
    const hw::ModuleIndex idx(mt.module);
    int whiles = 0;
    for (const auto& comp : mt.module.computations)
        for (const auto& ins : comp.instructions)
            if (ins.opcode == "while") {
                ++whiles;
                const auto t = hw::find_trip_count(idx, ins);
                REQUIRE(t.has_value());
                CHECK(*t == 2);
            }
    CHECK(whiles == 3);
}

TEST_CASE("layout fixture: node_loop_trips gives the 67 nodes in its 3 loops log2(2), known") {
    SEGRANK_REQUIRE_SHARED_DATA(dir);
    const auto& mt = layout_file(dir).modules.at(0);
    const auto res = hlo::featurize_layout(mt, "fixture");
    REQUIRE(res.graph);
    const std::vector<float> trips = hw::node_loop_trips(mt.module);
    const std::vector<uint8_t> depth = while_loop_depth(*res.graph);
    REQUIRE(trips.size() == depth.size() * 2);
    int64_t inside = 0;
    for (size_t v = 0; v < depth.size(); ++v) {
        CAPTURE(v);
        // Depth from the featurized structure, trips from the module's call graph: they agree.
        CHECK(trips[2 * v] == (depth[v] > 0 ? 1.0f : 0.0f));
        CHECK(trips[2 * v + 1] == 0.0f);
        inside += depth[v] > 0;
    }
    CHECK(inside == 67);
}

TEST_CASE("tile fixture: model ranks kernels above the acceptance threshold and prints the table") {
    SEGRANK_REQUIRE_SHARED_DATA(dir);
    const auto& tile = op_file(dir).modules;
    const auto& layout = layout_file(dir).modules;
    const hw::HwParams hw = hw::tpu_v3_core();
    const hw::TileFit fit = hw::fit_tile(tile, hw);
    std::cout << hw::validation_report(tile, layout, hw) << std::endl;
    CHECK(fit.ranked_kernels == 11);
    CHECK(fit.mean_tau >= 0.69);  // acceptance threshold (docs/hwmodel.md#validation)
    // Kernel-runtime regression on every kernel (docs/metrics.md#runtime-regression).
    CHECK(fit.regressed_kernels == 15);
    for (const auto& k : fit.kernels) {
        CAPTURE(k.name);
        CHECK(std::isfinite(k.mape));
        CHECK(k.median_ape <= k.mape * 10);
        CHECK(std::isfinite(k.anchored_mape));
    }
    CHECK(fit.mean_mape > 0);
}

TEST_CASE("ape_stats and anchored_predictions: percentage errors and the measured log scale") {
    const auto [mape, median] = hw::ape_stats({11, 10, 30, 50}, {10, 20, 30, 40});
    CHECK(mape == doctest::Approx(0.2125));
    CHECK(median == doctest::Approx(0.175));
    // Predictions off by a constant factor, anchored on the measurements: exact.
    const std::vector<double> meas = {100, 300, 200, 800};
    const std::vector<double> anchored = hw::anchored_predictions({1, 3, 2, 8}, meas);
    for (size_t i = 0; i < meas.size(); ++i)
        CHECK(anchored[i] == doctest::Approx(meas[i]).epsilon(1e-9));
    // Constant predictions land on the geometric mean of the measurements.
    const std::vector<double> flat = hw::anchored_predictions({5, 5}, {100, 400});
    CHECK(flat[0] == doctest::Approx(200.0));
    CHECK(flat[1] == doctest::Approx(200.0));
}
