// `segrank train` with a bad config: every problem of every kind is printed as file:line:col: key:
// ..., the exit code is 1 and nothing is written (no run directory); model.config_join = "late" on
// layout data found under an unrestricted data.collections names the key's file:line.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "tests/support/test_paths.h"
#include "tests/trainer/trainer_data_util.h"

using namespace segrank::test;
namespace fs = std::filesystem;

namespace {

CommandResult segrank_cmd(const std::string& args) {
    return run_command("cd " + sq(source_dir().string()) + " && OMP_NUM_THREADS=2 " +
                       sq(segrank_binary().string()) + " " + args);
}

}  // namespace

TEST_CASE(
    "segrank train prints an unknown key, a range error and a type error of one file together and "
    "writes nothing") {
    const fs::path dir = scratch_dir("cli_config_all_errors");
    const fs::path toml = dir / "bad.toml";
    std::ofstream(toml) << "[train]\n"
                        << "run_dir = " << sq((dir / "run").string()) << "\n"  // 2
                        << "steps = 3\n"                                       // 3
                        << "[optim]\n"                                         // 4
                        << "lr = -0.5\n"                                       // 5  range
                        << "weight_decy = 0.1\n"                               // 6  unknown key
                        << "[model]\n"                                         // 7
                        << "hidden = \"wide\"\n";                              // 8  type
    const auto r = segrank_cmd("train --config " + sq(toml.string()) + " --set segments.fresh=0");
    INFO(r.output);
    CHECK(r.exit_code == 1);
    const std::string f = toml.string();
    CHECK(r.output.find(f + ":5:1: optim.lr: expected in (0, 1], got -0.5") != std::string::npos);
    CHECK(r.output.find(
              f + ":6:1: optim.weight_decy: unknown key (did you mean 'optim.weight_decay'?)") !=
          std::string::npos);
    CHECK(r.output.find(f + ":8:1: model.hidden: expected an integer, got string \"wide\"") !=
          std::string::npos);
    CHECK(r.output.find("--set segments.fresh=0: segments.fresh: expected >= 1, got 0") !=
          std::string::npos);
    // In file order, the override last.
    CHECK(r.output.find(":5:1:") < r.output.find(":6:1:"));
    CHECK(r.output.find(":6:1:") < r.output.find(":8:1:"));
    CHECK(r.output.find(":8:1:") < r.output.find("--set segments.fresh=0:"));
    CHECK_FALSE(fs::exists(dir / "run"));
}

TEST_CASE(
    "segrank train with config_join = late on layout data under unrestricted collections names the "
    "key's file:line") {
    const fs::path dir = scratch_dir("cli_config_late_join");
    write_tiny_layout_collection(dir / "data");
    const fs::path toml = dir / "late.toml";
    std::ofstream(toml) << "[data]\n"
                        << "root = " << sq((dir / "data").string()) << "\n"
                        << "holdout = \"configs\"\n"
                        << "[model]\n"
                        << "hidden = 8\n"
                        << "config_join = \"late\"\n"  // 6
                        << "[train]\n"
                        << "steps = 2\n"
                        << "progress = false\n"
                        << "run_dir = " << sq((dir / "run").string()) << "\n";
    const auto r = segrank_cmd("train --config " + sq(toml.string()));
    INFO(r.output);
    CHECK(r.exit_code == 1);
    CHECK(r.output.find(toml.string() +
                        ":6:1: model.config_join: \"late\" applies to tile collections only") !=
          std::string::npos);
    CHECK(r.output.find("layout:xla:random") != std::string::npos);
    CHECK_FALSE(fs::exists(dir / "run"));
}

TEST_CASE("segrank train --set takes an array value with commas whole") {
    const fs::path dir = scratch_dir("cli_set_array");
    // The array reaches the config parser in one piece: its second element is checked as a
    // collection name (before, cxxopts split the value at the comma into two broken --set values).
    const auto r = segrank_cmd(
        "train --config configs/tiny.toml --set train.run_dir=" + sq((dir / "run").string()) +
        " --set 'data.collections=[\"layout:xla:random\", \"bogus\"]'");
    INFO(r.output);
    CHECK(r.exit_code == 1);
    CHECK(r.output.find("data.collections: expected \"tile:xla\" or "
                        "\"layout:<xla|nlp>:<default|random>\", got \"bogus\"") !=
          std::string::npos);
    CHECK_FALSE(fs::exists(dir / "run"));
}

TEST_CASE(
    "segrank train --check validates the config and its overrides without reading data or "
    "writing anything") {
    const fs::path dir = scratch_dir("cli_config_check");
    const std::string run = "--set " + sq("train.run_dir=\"" + (dir / "run").string() + "\"");
    // data.ingest creates data.root: it need not exist (without it, --check refuses as the run).
    write_file_text(dir / "t.pb", "");
    const auto ok =
        segrank_cmd("train --config configs/tpugraphs_layout_xla.toml " + run +
                    " --set 'data.root=\"/nonexistent\"' --set " +
                    sq("data.ingest=[\"" + (dir / "t.pb").string() + "\"]") + " --check");
    INFO(ok.output);
    CHECK(ok.exit_code == 0);
    CHECK(ok.output.find("config OK (configs/tpugraphs_layout_xla.toml)") != std::string::npos);
    const auto bad = segrank_cmd("train --config configs/tpugraphs_tile.toml " + run +
                                 " --set 'data.collections=[\"layout:xla:random\"]' --check");
    INFO(bad.output);
    CHECK(bad.exit_code == 1);
    CHECK(bad.output.find("tpugraphs_tile.toml:") != std::string::npos);
    CHECK(bad.output.find("model.tile_cost_features: true applies to tile collections only") !=
          std::string::npos);
    CHECK_FALSE(fs::exists(dir / "run"));
}
