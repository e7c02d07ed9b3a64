// Model validation on the real tpu_graphs fixtures (docs/hwmodel.md#validation): facts as checks,
// measured quality printed (docs/benchmarks.md#hwmodel-on-the-real-fixtures) with the acceptance
// thresholds (docs/hwmodel.md#validation) as checks.
#include <doctest/doctest.h>

#include <cmath>
#include <iostream>

#include "data/hlo/proto_reader.h"
#include "hwmodel/kernel_cost.h"
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

TEST_CASE("tile fixture: model ranks kernels above the acceptance threshold and prints the table") {
    SEGRANK_REQUIRE_SHARED_DATA(dir);
    const auto& tile = op_file(dir).modules;
    const auto& layout = layout_file(dir).modules;
    const hw::HwParams hw = hw::tpu_v3_core();
    const hw::TileFit fit = hw::fit_tile(tile, hw);
    std::cout << hw::validation_report(tile, layout, hw) << std::endl;
    CHECK(fit.ranked_kernels == 11);
    CHECK(fit.mean_tau >= 0.69);  // acceptance threshold (docs/hwmodel.md#validation)
}
