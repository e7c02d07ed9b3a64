// Hostile config values end to end (ctest label `hostile`): control characters and line breaks
// given to `segrank train`, a data folder of two tasks under `--check`, and an eval.indices file
// that leaves nothing to rank.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "data/graph.h"
#include "tests/support/test_paths.h"
#include "tests/support/tiny_tile_data.h"
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

    TEST_CASE(
        "segrank train --check refuses data.collections = [] on a folder of tile and layout "
        "collections as the run does") {
        const fs::path dir = scratch_dir("hostile_config_cli_task_mix");
        const std::string cfg = sq(tiny_setup(dir).string());
        const std::string all = " --set 'data.collections=[]'";
        // Only layout collections: OK, also with data.collections = [].
        CHECK(run_segrank("train --config " + cfg + all + " --check").exit_code == 0);
        const fs::path tile = dir / "data/npz/tile/xla/train";
        fs::create_directories(tile);
        segrank::save_tile_npz(tiny_tile_graph("t0", 0, TinyTileSpec{}), tile / "t0.npz");
        const std::string refused =
            "data.collections: one run trains one task; found both 'layout:xla:random' and "
            "'tile:xla' (select collections of one task)";
        for (const char* check : {" --check", ""}) {
            const auto r = run_segrank("train --config " + cfg + all + check);
            INFO(r.output);
            CHECK(r.exit_code == 1);
            CHECK(contains_text(r.output, refused));
        }
        CHECK_FALSE(fs::exists(dir / "run"));
        // A collection of one task selected: OK. A data.root that does not exist: refused as the
        // run refuses it, unless data.ingest creates it: then the OK line says what was not
        // checked.
        CHECK(run_segrank("train --config " + cfg + " --check").exit_code == 0);
        const std::string nothing =
            " --set " + sq("data.root=\"" + (dir / "nothing").string() + "\"");
        const std::string missing = "data.root: '" + (dir / "nothing").string() +
                                    "' does not exist (expected a TpuGraphs npz folder";
        for (const char* check : {" --check", ""}) {
            const auto r = run_segrank("train --config " + cfg + all + nothing + check);
            INFO(check, r.output);
            CHECK(r.exit_code == 1);
            CHECK(contains_text(r.output, missing));
            CHECK_FALSE(contains_text(r.output, "config OK"));
        }
        write_file_text(dir / "t.pb", "");
        const auto later =
            run_segrank("train --config " + cfg + all + nothing + " --set " +
                        sq("data.ingest=[\"" + (dir / "t.pb").string() + "\"]") + " --check");
        INFO(later.output);
        CHECK(later.exit_code == 0);
        CHECK(contains_text(later.output, "config OK ("));
        CHECK(contains_text(later.output, "data.root was not listed (data.ingest adds to it)"));
        // --data-later: a script that checks its --set before it makes the data.
        const auto script =
            run_segrank("train --config " + cfg + all + nothing + " --check --data-later");
        INFO(script.output);
        CHECK(script.exit_code == 0);
        CHECK(contains_text(script.output,
                            "data.root was not listed (--data-later: it does not "
                            "exist yet)"));
        const auto run_later =
            run_segrank("train --config " + cfg + all + nothing + " --data-later");
        CHECK(run_later.exit_code == 1);
        CHECK(contains_text(run_later.output, "--data-later applies to --check only"));
    }

    TEST_CASE(
        "an eval.indices file listing one config per evaluation graph is refused before training "
        "naming the file") {
        const fs::path dir = scratch_dir("hostile_config_cli_eval_indices");
        const std::string cfg = sq(tiny_setup(dir, 1).string());
        const fs::path one = dir / "one.json";
        std::ofstream(one) << "{\"tiny_valid_0\": [3]}\n";
        const auto r =
            run_segrank("train --config " + cfg + " --set data.holdout=\\\"graphs\\\" --set " +
                        sq("eval.indices=\"" + one.string() + "\""));
        INFO(r.output);
        CHECK(r.exit_code == 1);
        CHECK(contains_text(r.output, one.string() +
                                          ": eval.indices lists fewer than 2 configs for every "
                                          "evaluation graph (e.g. 1 for 'tiny_valid_0')"));
        CHECK(contains_text(r.output, "eval.metric = \"kendall\" is undefined"));
        CHECK_FALSE(fs::exists(dir / "run"));
        // One config listed twice is still one config (repeats are kept, not counted as two).
        std::ofstream(one) << "{\"tiny_valid_0\": [3, 3]}\n";
        const auto twice =
            run_segrank("train --config " + cfg + " --set data.holdout=\\\"graphs\\\" --set " +
                        sq("eval.indices=\"" + one.string() + "\""));
        INFO(twice.output);
        CHECK(twice.exit_code == 1);
        CHECK(contains_text(twice.output, "eval.indices lists fewer than 2 configs"));
        CHECK_FALSE(fs::exists(dir / "run"));
        // Two configs of the graph: the run trains.
        std::ofstream(one) << "{\"tiny_valid_0\": [3, 4]}\n";
        const std::string two_configs = "train --config " + cfg +
                                        " --set data.holdout=\\\"graphs\\\" --set " +
                                        sq("eval.indices=\"" + one.string() + "\"");
        const auto two = run_segrank(two_configs);
        INFO(two.output);
        CHECK(two.exit_code == 0);
        // Two configs of equal runtime: the evaluation's error names eval.indices and the file.
        const fs::path npz = dir / "data/npz/layout/xla/random/valid/tiny_valid_0.npz";
        segrank::LayoutGraph g =
            segrank::load_layout_npz(npz, segrank::LabelPolicy::kRequirePositive);
        g.config_runtime[4] = g.config_runtime[3];
        segrank::save_layout_npz(g, npz);
        const auto tied = run_segrank(two_configs + " --overwrite");
        INFO(tied.output);
        CHECK(tied.exit_code == 1);
        CHECK(contains_text(tied.output, "among the configs eval.indices (--set eval.indices=\"" +
                                             one.string() + "\") lists for it: " + one.string() +
                                             " leaves fewer than 2 configs"));
    }

    TEST_CASE("data.holdout_fold with data.holdout_folds = 0 is refused naming both keys") {
        const fs::path dir = scratch_dir("hostile_config_cli_holdout_fold");
        const std::string cfg = sq(tiny_setup(dir).string());
        for (const char* check : {" --check", ""}) {
            const auto r =
                run_segrank("train --config " + cfg + " --set data.holdout_fold=99" + check);
            INFO(r.output);
            CHECK(r.exit_code == 1);
            CHECK(contains_text(r.output,
                                "--set data.holdout_fold=99: data.holdout_fold: applies "
                                "with data.holdout_folds >= 2 (k-fold) or -1"));
            CHECK(contains_text(r.output, "but data.holdout_folds = 0"));
            CHECK_FALSE(fs::exists(dir / "run"));
        }
        // With k folds it selects one of them.
        const auto k = run_segrank("train --config " + cfg +
                                   " --set data.holdout=\\\"graphs\\\" --set data.holdout_folds=3 "
                                   "--set data.holdout_fold=2 --check");
        INFO(k.output);
        CHECK(k.exit_code == 0);
    }

    TEST_CASE("a 100 kB --set value is echoed cut and a too long data.root is refused by --check") {
        const fs::path dir = scratch_dir("hostile_config_cli_long_values");
        const std::string cfg = sq(tiny_setup(dir).string());
        const std::string big(100000, 'x');
        const auto hidden =
            run_segrank("train --check --config " + cfg + " --set model.hidden=" + big);
        CHECK(hidden.exit_code == 1);
        CHECK(hidden.output.size() < 2000);
        CHECK(contains_text(hidden.output, "model.hidden: expected an integer, got string"));
        CHECK(contains_text(hidden.output, "more bytes)"));
        const auto twice = run_segrank("train --check --config " + cfg +
                                       " --set model.hidden=" + big + " --set model.hidden=16");
        CHECK(twice.exit_code == 1);
        CHECK(twice.output.size() < 2000);
        CHECK(contains_text(twice.output, "model.hidden is set twice"));
        for (const char* check : {" --check", ""}) {
            const auto root = run_segrank("train --config " + cfg + " --set " +
                                          sq("data.root=\"" + (dir / big).string() + "\"") + check);
            INFO(root.output.substr(0, 3000));
            CHECK(root.exit_code == 1);
            CHECK(root.output.size() < 2000);
            CHECK(contains_text(root.output, "data.root: the path component 'xxx"));
            CHECK(contains_text(root.output, "is 100000 bytes long, more than the 255 bytes"));
            CHECK_FALSE(contains_text(root.output, "config OK"));
            // Many short components over PATH_MAX.
            std::string deep = dir.string();
            while (deep.size() < 5000) deep += "/" + std::string(200, 'd');
            const auto path_max = run_segrank("train --config " + cfg + " --set " +
                                              sq("data.root=\"" + deep + "\"") + check);
            CHECK(path_max.exit_code == 1);
            CHECK(contains_text(path_max.output, "data.root: the path is "));
            CHECK(contains_text(path_max.output, "(PATH_MAX) a path may have"));
        }
        CHECK_FALSE(fs::exists(dir / "run"));
    }
}
