// Hostile config values end to end (ctest label `hostile`): control characters and line breaks
// given to `segrank train`, and an eval.indices file that leaves nothing to rank.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "tests/support/test_paths.h"
#include "tests/trainer/trainer_data_util.h"

using namespace segrank::test;
namespace fs = std::filesystem;

namespace {

CommandResult run_segrank(const std::string& args) { return run_segrank_in_source(args, 1); }

// The tiny layout collection under dir/data (with `valid` graphs in a valid split) and its config
// dir/tiny.toml (run dir dir/run, held-out configs).
fs::path tiny_setup(const fs::path& dir, int valid = 0) {
    TinyLayoutSpec spec;
    spec.valid_graphs = valid;
    write_tiny_layout_collection(dir / "data", spec);
    segrank::save_config(tiny_run_config(dir / "data", dir / "run", 2), dir / "tiny.toml");
    return dir / "tiny.toml";
}

}  // namespace

TEST_SUITE("hostile") {
    TEST_CASE(
        "segrank train refuses a NUL in a path and a --set holding a line break before anything "
        "is written") {
        const fs::path dir = scratch_dir("hostile_config_cli_nul");
        const std::string cfg = sq(tiny_setup(dir).string());
        for (const char* check : {" --check", ""}) {
            const auto nul =
                run_segrank("train --config " + cfg + " --set " +
                            sq("train.run_dir=\"" + (dir / "x").string() + "\\u0000y\"") + check);
            INFO(nul.output);
            CHECK(nul.exit_code == 1);
            CHECK(contains_text(nul.output,
                                "train.run_dir: contains a NUL character (\\u0000 at "
                                "offset " +
                                    std::to_string((dir / "x").string().size()) +
                                    "); expected a path"));
            CHECK_FALSE(fs::exists(dir / "x"));  // the path cut at the NUL
            const auto lines = run_segrank("train --config " + cfg +
                                           " --set 'model.hidden=16\n[train]\nsteps=1'" + check);
            INFO(lines.output);
            CHECK(lines.exit_code == 1);
            CHECK(contains_text(lines.output,
                                "--set model.hidden=16\\n[train]\\nsteps=1: holds a line break"));
            CHECK_FALSE(fs::exists(dir / "run"));
        }
    }
}
