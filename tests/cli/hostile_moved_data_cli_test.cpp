// A run whose data folder moved after training (ctest label `hostile`): evaluate, predict and
// train --resume name the checkpoint or run the stored data.root came from and what to do, not a
// bare "data.root ... does not exist".
#include <doctest/doctest.h>

#include <filesystem>
#include <string>

#include "tests/support/test_paths.h"
#include "tests/trainer/trainer_data_util.h"

using namespace segrank::test;
namespace fs = std::filesystem;

TEST_SUITE("hostile") {
    TEST_CASE(
        "evaluate, predict and train --resume after the data moved name the checkpoint or run and "
        "what to give") {
        const fs::path dir = scratch_dir("hostile_cli_moved_data");
        TinyLayoutSpec spec;
        spec.valid_graphs = 1;
        write_tiny_layout_collection(dir / "data", spec);
        const fs::path run = dir / "run";
        const auto t = run_segrank_in_source(
            "train --config configs/tiny.toml --set train.steps=2 --set train.eval_every=0 "
            "--set train.run_dir=" +
                sq(run.string()) + " --set data.root=" + sq((dir / "data").string()),
            1);
        INFO(t.output);
        REQUIRE(t.exit_code == 0);
        fs::rename(dir / "data", dir / "data2");
        const std::string old_root = "data.root '" + (dir / "data").string() + "'";
        const std::string ckpt = (run / "best.ckpt.h5").string();  // the final evaluation wrote it
        for (const std::string& cmd :
             {"evaluate --checkpoint " + sq(run.string()),
              "predict --checkpoint " + sq(run.string()) + " --split valid --out " +
                  sq((dir / "p.csv").string())}) {
            const auto r = run_segrank_in_source(cmd, 1);
            INFO(cmd);
            INFO(r.output);
            CHECK(r.exit_code == 1);
            CHECK(contains_text(r.output, "error: " + ckpt + ": " + old_root +
                                              " (from the checkpoint's config) does not exist "
                                              "(the data moved? give --data DIR, the folder it "
                                              "is in now)"));
            // --data is the way out.
            const auto again =
                run_segrank_in_source(cmd + " --data " + sq((dir / "data2").string()), 1);
            INFO(again.output);
            CHECK(again.exit_code == 0);
        }
        for (const char* check : {"", " --check"}) {
            const auto r = run_segrank_in_source(
                "train --resume " + sq(run.string()) + " --set train.steps=4" + std::string(check),
                1);
            INFO(r.output);
            CHECK(r.exit_code == 1);
            CHECK(contains_text(r.output, "error: --resume " + run.string() + ": " + old_root +
                                              " (from " + (run / "config.toml").string() +
                                              ") does not exist (the data moved? a resumed run "
                                              "reads its data where it was trained: move the data "
                                              "back there or link that path to it (ln -s NEW_DIR "
                                              "OLD_PATH))"));
        }
    }
}
