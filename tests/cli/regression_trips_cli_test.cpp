// End to end: `segrank evaluate` reports the kernel-runtime MAPE of a tile model trained with an
// mse term (docs/metrics.md#runtime-regression), and a layout model with model.trip_counts trains,
// evaluates and predicts from its checkpoint (docs/model.md#loop-trip-counts).
#include <doctest/doctest.h>

#include <filesystem>
#include <string>

#include "tests/support/test_paths.h"
#include "tests/trainer/trainer_data_util.h"

using namespace segrank::test;
namespace fs = std::filesystem;

namespace {

CommandResult run_segrank(const std::string& args) { return run_segrank_in_source(args, 2); }

}  // namespace

TEST_CASE("evaluate reports mape and median APE for a tile model with an mse term, none without") {
    SEGRANK_REQUIRE_SHARED_DATA(data);
    const fs::path dir = scratch_dir("evaluate_mape");
    for (const bool mse : {true, false}) {
        CAPTURE(mse);
        const fs::path run = dir / (mse ? "mse" : "listmle");
        std::string args = "train --config configs/xla_fixture_tile.toml --set train.steps=4 ";
        args += "--set train.eval_every=4 --set train.progress=false --set train.run_dir='" +
                run.string() + "' --set data.root='" + (dir / "data").string() + "'";
        args +=
            " --set 'data.ingest=[\"" + (data / "xla_tuning/op_tuning_data.pb").string() + "\"]'";
        if (mse)
            args += " --set 'loss.terms=[{name=\"listmle\",weight=1.0},{name=\"mse\",weight=1.0}]'";
        const auto t = run_segrank(args);
        INFO(t.output);
        REQUIRE(t.exit_code == 0);
        const fs::path json = dir / (mse ? "mse.json" : "listmle.json");
        const auto ev = run_segrank("evaluate --checkpoint '" + run.string() +
                                    "' --heldout --threads 2 --json '" + json.string() + "'");
        INFO(ev.output);
        REQUIRE(ev.exit_code == 0);
        const std::string doc = read_file_text(json);
        // Every held-out kernel and the collection carry both keys with an mse term.
        CHECK(contains_text(ev.output, "medape") == mse);
        CHECK(contains_text(doc, "\"mape\":") == mse);
        CHECK(contains_text(doc, "\"median_ape\":") == mse);
        CHECK(contains_text(read_file_text(run / "metrics.jsonl"), "\"mape\":") == mse);
    }
}

TEST_CASE(
    "a layout model with model.trip_counts trains, evaluates and predicts from its checkpoint") {
    const fs::path dir = scratch_dir("trip_counts_cli");
    TinyLayoutSpec spec;
    spec.valid_graphs = 2;
    write_tiny_layout_collection(dir / "data", spec);
    const fs::path run = dir / "run";
    const auto t = run_segrank(
        "train --config configs/tiny.toml --set train.steps=4 --set train.eval_every=4 "
        "--set model.trip_counts=true --set model.loop_depth=true --set train.run_dir='" +
        run.string() + "' --set data.root='" + (dir / "data").string() + "'");
    INFO(t.output);
    REQUIRE(t.exit_code == 0);
    CHECK(contains_text(t.output, "+ the loop depth + the loop trip counts"));
    const auto ev =
        run_segrank("evaluate --checkpoint '" + run.string() + "' --split valid --threads 2");
    INFO(ev.output);
    CHECK(ev.exit_code == 0);
    CHECK_FALSE(contains_text(ev.output, "medape"));  // layout: no runtime regression
    const auto pr =
        run_segrank("predict --checkpoint '" + run.string() + "' --split valid --out '" +
                    (dir / "sub.csv").string() + "' --threads 2");
    INFO(pr.output);
    CHECK(pr.exit_code == 0);
}
