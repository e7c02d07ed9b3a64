// `segrank train --balance-model WORLDS` (docs/architecture.md#distribution): the step-cost model
// of a config's run as one JSON object, for every dist.ownership mode and world size, without
// training or writing anything; bad world lists and step ranges exit 1 naming the option.
#include <doctest/doctest.h>

#include <filesystem>
#include <string>

#include "tests/support/test_paths.h"
#include "tests/support/tiny_layout_data.h"
#include "util/json.h"

using namespace segrank::test;
namespace fs = std::filesystem;

namespace {

CommandResult run_segrank(const std::string& args) { return run_segrank_in_source(args, 1); }

std::string tiny_train(const fs::path& dir) {
    TinyLayoutSpec spec;
    spec.train_graphs = 7;
    spec.valid_graphs = 2;
    spec.min_nodes = 20;
    spec.max_nodes = 400;
    write_tiny_layout_collection(dir / "data", spec);
    return "train --config configs/tiny.toml --set data.root='" + (dir / "data").string() +
           "' --set train.run_dir='" + (dir / "run").string() +
           "' --set sampling.batch_graphs=4 --set train.steps=30";
}

}  // namespace

TEST_CASE(
    "train --balance-model prints each ownership mode's modelled efficiency per world size "
    "and writes nothing") {
    const fs::path dir = scratch_dir("balance_model_cli");
    const auto r = run_segrank(tiny_train(dir) + " --balance-model 1,2,4,16 --balance-from 3");
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    const segrank::Json j = segrank::read_json(r.output, "stdout");
    CHECK(j["train_graphs"] == 7);
    CHECK(j["batch_graphs"] == 4);
    CHECK(j["steps"] == segrank::Json::array({3, 30}));
    for (const char* mode : {"modulo", "balanced", "per_step"}) {
        const auto& e = j["efficiency"][mode];
        REQUIRE(e.size() == 4);
        CHECK(e["1"].get<double>() == doctest::Approx(1.0));  // one rank never waits
        for (const char* w : {"2", "4", "16"}) {
            CHECK(e[w].get<double>() > 0.0);
            CHECK(e[w].get<double>() <= 1.0);
        }
        // 4 members over 16 ranks: at most 4 / 16 of the ranks are busy.
        CHECK(e["16"].get<double>() <= 0.25 + 1e-12);
    }
    // Segment units (dist.segment_units): one rank whole, more ranks past whole graphs' 4 / 16, and
    // a scaling efficiency (repeated work counted) no higher than the step efficiency.
    const auto& seg = j["efficiency"]["per_step_segment_units"];
    const auto& seg_scaling = j["scaling_efficiency"]["per_step_segment_units"];
    REQUIRE(seg.size() == 4);
    CHECK(seg["1"].get<double>() == doctest::Approx(1.0));
    CHECK(seg_scaling["1"].get<double>() == doctest::Approx(1.0));
    CHECK(seg["16"].get<double>() > j["efficiency"]["per_step"]["16"].get<double>());
    for (const char* w : {"2", "4", "16"}) {
        CHECK(seg_scaling[w].get<double>() > 0.0);
        CHECK(seg_scaling[w].get<double>() <= seg[w].get<double>() + 1e-12);
    }
    CHECK_FALSE(fs::exists(dir / "run"));
}

TEST_CASE("train --balance-model refuses bad world lists and step ranges naming the option") {
    const fs::path dir = scratch_dir("balance_model_cli_bad");
    const std::string base = tiny_train(dir);
    for (const char* list : {"2,x", "0", "2,2", "", "70000"}) {
        const auto r = run_segrank(base + " --balance-model '" + list + "'");
        INFO(list, r.output);
        CHECK(r.exit_code == 1);
        CHECK(r.output.find("--balance-model") != std::string::npos);
    }
    const auto r = run_segrank(base + " --balance-model 2 --balance-from 30");
    INFO(r.output);
    CHECK(r.exit_code == 1);
    CHECK(r.output.find("--balance-from 30: expected a step in [0, 30)") != std::string::npos);
    CHECK_FALSE(fs::exists(dir / "run"));
}
