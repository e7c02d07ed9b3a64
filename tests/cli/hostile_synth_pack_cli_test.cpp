// Hostile uses of the commands that write collections (synth, pack, ingest): --force must never
// remove a user's files, and concurrent runs into one --out must not both claim success.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "tests/support/test_paths.h"

using namespace segrank::test;
namespace fs = std::filesystem;

namespace {

CommandResult run_segrank(const std::string& args, const std::string& prefix = "") {
    return run_segrank_in_source(args, 1, prefix);
}

}  // namespace

TEST_SUITE("hostile") {
    TEST_CASE("segrank synth --force keeps a user's files in a split folder it replaces") {
        const fs::path dir = scratch_dir("hostile_synth_force_user_files");
        const fs::path out = dir / "sf";
        const fs::path train = out / "npz/tile/xla/train";
        const std::string synth = "synth --out " + sq(out.string()) +
                                  " --graphs 3 --nodes 20:30 --configs 4 -q --collections ";
        REQUIRE(run_segrank(synth + "tile,layout").exit_code == 0);
        // The user's own graph and notes beside synth's graphs.
        const fs::path ours = fs::directory_iterator(train)->path();
        fs::copy_file(ours, train / "my_real.npz");
        std::ofstream(train / "notes.txt") << "mine\n";
        const auto r = run_segrank(synth + "layout --force");
        INFO(r.output);
        REQUIRE(r.exit_code == 0);
        CHECK(fs::exists(train / "my_real.npz"));
        CHECK(read_file_text(train / "notes.txt") == "mine\n");
        CHECK_FALSE(fs::exists(ours));
        CHECK_FALSE(fs::exists(out / "npz/tile/xla/valid"));  // synth's only: removed whole
        CHECK(contains_text(r.output, "the files synth did not write stay there"));
        // Rewriting a split folder that holds the user's files is refused, naming them.
        const auto again = run_segrank(synth + "tile --force");
        INFO(again.output);
        CHECK(again.exit_code == 1);
        CHECK(contains_text(again.output, train.string() + " holds 2 file(s) segrank synth did "
                                                           "not write"));
        CHECK(contains_text(again.output, "my_real.npz, notes.txt"));
        CHECK(fs::exists(train / "my_real.npz"));
        CHECK(fs::exists(train / "notes.txt"));
        CHECK(fs::is_directory(out / "npz/layout/xla/random/train"));
    }
}
