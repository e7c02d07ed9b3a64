// An evaluation set in which no graph has distinct runtimes leaves the selection metric undefined:
// `segrank train` stops at the first evaluation with an error naming eval.metric (instead of a
// "best kendall -1e+300" and an arbitrary best checkpoint) and removes what the fresh run created.
#include <doctest/doctest.h>

#include <filesystem>
#include <string>

#include "data/graph.h"
#include "tests/support/test_paths.h"
#include "tests/trainer/trainer_data_util.h"

using namespace segrank::test;
namespace fs = std::filesystem;

TEST_CASE(
    "segrank train with constant runtimes in every validation graph exits 1 naming eval.metric and "
    "leaves no run directory") {
    const fs::path dir = scratch_dir("cli_constant_eval");
    TinyLayoutSpec spec;
    spec.valid_graphs = 2;
    write_tiny_layout_collection(dir / "data", spec);
    int rewritten = 0;
    for (const auto& e : fs::recursive_directory_iterator(dir / "data")) {
        if (e.path().parent_path().filename() != "valid") continue;
        segrank::LayoutGraph g =
            segrank::load_layout_npz(e.path(), segrank::LabelPolicy::kRequirePositive);
        for (auto& r : g.config_runtime) r = 1000;
        segrank::save_layout_npz(g, e.path());
        ++rewritten;
    }
    REQUIRE(rewritten == 2);
    const fs::path run = dir / "run";
    const auto r = run_command(
        "cd " + sq(source_dir().string()) + " && OMP_NUM_THREADS=2 " +
        sq(segrank_binary().string()) +
        " train --config configs/tiny.toml --set train.steps=4 --set train.eval_every=2 "
        "--set eval.metric=\"kendall\" --set train.run_dir=" +
        sq(run.string()) + " --set data.root=" + sq((dir / "data").string()));
    INFO(r.output);
    CHECK(r.exit_code == 1);
    CHECK(r.output.find("eval.metric = \"kendall\" is undefined on the evaluation set: none of its "
                        "2 graphs has two configs with distinct runtimes") != std::string::npos);
    CHECK(r.output.find("1e+300") == std::string::npos);
    CHECK_FALSE(fs::exists(run));
}
