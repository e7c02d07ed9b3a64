// `segrank synth` end to end: the standard folder layout, loadable files, summary output,
// overwrite refusal, option errors and --help.
#include <doctest/doctest.h>

#include <filesystem>
#include <string>

#include "data/collection.h"
#include "data/graph.h"
#include "tests/support/test_paths.h"

namespace segrank::test {
namespace {
namespace fs = std::filesystem;

std::string synth_cmd(const fs::path& out, const std::string& extra) {
    std::string cmd = "'";  // built with += : GCC 12 -Wrestrict false positive on "'" + std::string
    cmd += segrank_binary().string() + "' synth --out '" + out.string() +
           "' --graphs 4 --nodes 100:300 --configs 8 --seed 3 -q " + extra + " 2>&1";
    return cmd;
}

}  // namespace

TEST_CASE("segrank synth writes the TpuGraphs layout with loadable, labelled files") {
    const fs::path dir = scratch_dir("synth_cli");
    const auto r = run_command(synth_cmd(dir / "d", "--collections tile,layout"));
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    CHECK(r.output.find("tile:xla:train") != std::string::npos);
    CHECK(r.output.find("layout:xla:random:test") != std::string::npos);
    CHECK(r.output.find("test labels kept") != std::string::npos);
    int files = 0;
    for (const auto& c : discover_collections(dir / "d")) {
        for (const auto& f : c.files) {
            ++files;
            if (c.id.task == Task::kTile)
                CHECK(load_tile_npz(f, LabelPolicy::kRequirePositive).num_configs() == 8);
            else
                CHECK(load_layout_npz(f, LabelPolicy::kRequirePositive).num_configs() == 8);
        }
    }
    CHECK(files == 8);

    const auto again = run_command(synth_cmd(dir / "d", ""));
    CHECK(again.exit_code == 1);
    CHECK(again.output.find("--force") != std::string::npos);
    CHECK(run_command(synth_cmd(dir / "d", "--force --collections layout")).exit_code == 0);
}

TEST_CASE("segrank synth rejects bad options with a message naming the option") {
    const fs::path dir = scratch_dir("synth_cli_bad");
    const auto bad_nodes = run_command(synth_cmd(dir / "a", "--nodes 300"));
    CHECK(bad_nodes.exit_code == 1);
    CHECK(bad_nodes.output.find("--nodes") != std::string::npos);
    const auto bad_coll = run_command(synth_cmd(dir / "b", "--collections tile,graph"));
    CHECK(bad_coll.exit_code == 1);
    CHECK(bad_coll.output.find("tile, layout") != std::string::npos);
    const auto bad_splits = run_command(synth_cmd(dir / "c", "--splits 0.5,0.5,0.5"));
    CHECK(bad_splits.exit_code == 1);
    CHECK(bad_splits.output.find("sum to 1") != std::string::npos);
    const auto bad_format = run_command(synth_cmd(dir / "d", "--format parquet"));
    CHECK(bad_format.exit_code == 1);
    CHECK(bad_format.output.find("unknown store format \"parquet\" (valid: \"npz\", \"hdf5\")") !=
          std::string::npos);
    const auto bad_choices = run_command(synth_cmd(dir / "e", "--layout-choices -1"));
    CHECK(bad_choices.exit_code == 1);
    CHECK(bad_choices.output.find("--layout-choices") != std::string::npos);
    CHECK(bad_choices.output.find("got -1") != std::string::npos);
    for (const std::string v : {"999", "-5", "abc", "2.5", ""}) {
        const auto bad_stage = run_command(synth_cmd(dir / "g", "--stage-nodes '" + v + "'"));
        INFO("--stage-nodes '", v, "': ", bad_stage.output);
        CHECK(bad_stage.exit_code == 1);
        CHECK(bad_stage.output.find("--stage-nodes") != std::string::npos);
    }
    CHECK_FALSE(fs::exists(dir / "g"));
    for (const std::string o : {"--layout-choices 8", "--config-node-fraction 0.1",
                                "--max-config-nodes 5", "--stage-nodes 5000"}) {
        const auto tile_only = run_command(synth_cmd(dir / "f", "--collections tile " + o));
        INFO(o, ": ", tile_only.output);
        CHECK(tile_only.exit_code == 1);
        CHECK(tile_only.output.find(o.substr(0, o.find(' ')) +
                                    ": applies to layout graphs only, but --collections is "
                                    "'tile'") != std::string::npos);
    }
    CHECK_FALSE(fs::exists(dir / "a"));
    CHECK_FALSE(fs::exists(dir / "c"));
    CHECK_FALSE(fs::exists(dir / "e"));
    CHECK_FALSE(fs::exists(dir / "f"));
    const auto help = run_command(sq(segrank_binary().string()) + " synth --help");
    CHECK(help.exit_code == 0);
    CHECK(help.output.find("--hide-test-labels") != std::string::npos);
    CHECK(help.output.find("--layout-choices") != std::string::npos);
    CHECK(help.output.find("--stage-nodes") != std::string::npos);
}

}  // namespace segrank::test
