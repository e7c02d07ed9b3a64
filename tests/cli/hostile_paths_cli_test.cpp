// Hostile input paths end to end (ctest label `hostile`): symbolic link loops and broken links,
// output folders inside input folders, folders given where a file was expected.
#include <doctest/doctest.h>

#include <filesystem>
#include <string>

#include "tests/support/test_paths.h"
#include "tests/support/tiny_layout_data.h"

using namespace segrank::test;
namespace fs = std::filesystem;

namespace {

CommandResult run_segrank(const std::string& args) { return run_segrank_in_source(args, 1); }

}  // namespace

TEST_SUITE("hostile") {
    TEST_CASE(
        "a symbolic link loop given as an input path is named as a loop (ELOOP) by every "
        "command") {
        const fs::path dir = scratch_dir("hostile_paths_loop");
        // loop_a -> loop_b -> loop_a
        fs::create_symlink("loop_b", dir / "loop_a");
        fs::create_symlink("loop_a", dir / "loop_b");
        const std::string loop = (dir / "loop_a").string();
        const std::string out = (dir / "out").string();
        for (const std::string& args :
             {"train --config " + sq(loop), "pack " + sq(loop) + " --out " + sq(out),
              "stats " + sq(loop), "report " + sq(loop),
              "evaluate --checkpoint " + sq(loop) + " --split valid",
              "leaderboard --truth " + sq(loop) + " " + sq(loop)}) {
            const auto r = run_segrank(args);
            INFO(args);
            INFO(r.output);
            CHECK(r.exit_code == 1);
            CHECK(contains_text(r.output, loop + ": is a symbolic link loop (ELOOP"));
        }
        CHECK_FALSE(fs::exists(dir / "out"));
        // A broken link is named with its target, not as a missing file.
        fs::create_symlink("nowhere", dir / "dangling");
        const auto b = run_segrank("pack " + sq((dir / "dangling").string()) + " --out " + sq(out));
        INFO(b.output);
        CHECK(b.exit_code == 1);
        CHECK(contains_text(b.output, "dangling: is a broken symbolic link (to 'nowhere'"));
    }

    TEST_CASE("segrank pack refuses an --out inside its input folder naming both paths") {
        const fs::path dir = scratch_dir("hostile_paths_pack_inside");
        segrank::test::write_tiny_layout_collection(dir / "data");
        const std::string data = (dir / "data").string();
        for (const std::string& out :
             {data + "/h5", data + "/", data + "/npz/layout/x.h5", data + "/../data/h5"}) {
            const auto r = run_segrank("pack " + sq(data) + " --out " + sq(out));
            INFO(r.output);
            CHECK(r.exit_code == 1);
            CHECK(contains_text(r.output, "--out " + out + ": is inside the input folder " + data));
            CHECK(contains_text(r.output, "pack would write its stores into the folder it reads"));
        }
        CHECK_FALSE(fs::exists(dir / "data/h5"));
        CHECK_FALSE(fs::exists(dir / "data/npz/layout/x.h5"));
        // Beside it is fine; a sibling whose name starts like the input is not inside it.
        CHECK(run_segrank("pack " + sq(data) + " --out " + sq(data + "_h5")).exit_code == 0);
    }

    TEST_CASE(
        "segrank stats on a folder with both stores and npz collections says which it shows") {
        const fs::path dir = scratch_dir("hostile_paths_stats_both");
        segrank::test::write_tiny_layout_collection(dir / "data");
        const std::string data = (dir / "data").string();
        REQUIRE(run_segrank("pack " + sq(data) + " --out " + sq((dir / "h5").string())).exit_code ==
                0);
        for (const auto& e : fs::directory_iterator(dir / "h5"))
            fs::copy_file(e.path(), dir / "data" / e.path().filename());
        const auto r = run_segrank("stats " + sq(data) + " --json");
        INFO(r.output);
        CHECK(r.exit_code == 0);
        CHECK(
            contains_text(r.output, "segrank stats: note: " + data +
                                        " holds both 1 HDF5 graph store(s) and npz collections (" +
                                        data + "/npz); showing the stores only"));
        // The npz folder alone, or the stores alone: no note.
        const auto npz = run_segrank("stats " + sq(data + "/npz"));
        CHECK(npz.exit_code == 0);
        CHECK_FALSE(contains_text(npz.output, "note:"));
        const auto h5 = run_segrank("stats " + sq((dir / "h5").string()));
        CHECK(h5.exit_code == 0);
        CHECK_FALSE(contains_text(h5.output, "note:"));
    }
}
