// `segrank train` / `evaluate` / `predict` end to end: the fixture main jobs with small step counts
// (run from the repository root, as data.ingest paths are relative to it), a synthetic run that
// needs no shared data, and the error exits (unknown key with file:line, missing --config, --resume
// of a directory without a checkpoint).
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "tests/support/test_paths.h"
#include "tests/trainer/trainer_data_util.h"

using namespace segrank::test;
namespace fs = std::filesystem;

namespace {

// Runs `segrank <args>` with cwd = the repository root, OMP threads 2.
CommandResult run_segrank(const std::string& args) { return run_segrank_in_source(args, 2); }

int count_lines_with(const std::string& text, const std::string& needle) {
    int n = 0;
    std::istringstream is(text);
    for (std::string line; std::getline(is, line);) n += line.find(needle) != std::string::npos;
    return n;
}

// Trains `config` for 6 steps with evaluations at 3 and 6 into dir/{run,data}; checks the run
// directory, then `evaluate --heldout` and `predict --split train` on it.
void train_evaluate_predict(const std::string& config, const fs::path& dir,
                            const std::string& collection, const std::string& extra = "",
                            const std::string& products = "fp32 products") {
    const fs::path run = dir / "run";
    const auto r = run_segrank(
        "train --config " + config +
        " --set train.steps=6 --set train.eval_every=3 --set train.run_dir='" + run.string() +
        "' --set data.root='" + (dir / "data").string() + "' --set train.progress=false " + extra);
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    CHECK(r.output.find("held-out metrics of the final model") != std::string::npos);
    CHECK(r.output.find("thread(s), " + products + ", ") != std::string::npos);
    CHECK(r.output.find(collection) != std::string::npos);
    CHECK(r.output.find("overall") != std::string::npos);
    for (const char* f :
         {"config.toml", "metrics.jsonl", "best.ckpt.h5", "last.ckpt.h5", "report.json"})
        CHECK_MESSAGE(fs::is_regular_file(run / f), "missing ", f);
    const std::string metrics = read_file_text(run / "metrics.jsonl");
    CHECK(count_lines_with(metrics, "\"phase\":\"eval\"") == 2);  // step 3 and the final one at 6
    CHECK(count_lines_with(metrics, "\"step\":6") >= 1);
    const std::string report = read_file_text(run / "report.json");
    CHECK(report.find("\"steps\":6") != std::string::npos);
    CHECK(report.find(collection) != std::string::npos);
    CHECK(read_file_text(run / "config.toml").find("steps = 6") != std::string::npos);

    const auto ev =
        run_segrank("evaluate --checkpoint '" + run.string() + "' --heldout --threads 2");
    INFO(ev.output);
    CHECK(ev.exit_code == 0);
    CHECK(ev.output.find("held-out set") != std::string::npos);
    CHECK(ev.output.find(collection) != std::string::npos);

    const fs::path sub = dir / "sub.csv";
    const auto pr = run_segrank("predict --checkpoint '" + run.string() +
                                "' --split train --out '" + sub.string() + "' --threads 2");
    INFO(pr.output);
    CHECK(pr.exit_code == 0);
    const std::string csv = read_file_text(sub);
    CHECK(csv.rfind("ID,TopConfigs", 0) == 0);
    CHECK(count_lines_with(csv, ",") >= 2);  // header and at least one graph
}

}  // namespace

TEST_CASE(
    "segrank train runs the layout fixture job, then evaluate --heldout and predict use the run") {
    SEGRANK_REQUIRE_SHARED_DATA(data);
    train_evaluate_predict("configs/xla_fixture_layout.toml", scratch_dir("train_cli_layout"),
                           "layout:xla:random");
}

TEST_CASE(
    "segrank train runs the tile fixture job, then evaluate --heldout and predict use the run") {
    SEGRANK_REQUIRE_SHARED_DATA(data);
    train_evaluate_predict("configs/xla_fixture_tile.toml", scratch_dir("train_cli_tile"),
                           "tile:xla");
}

TEST_CASE("segrank train runs configs/tiny.toml on a synthetic collection without shared data") {
    const fs::path dir = scratch_dir("train_cli_tiny");
    TinyLayoutSpec spec;
    spec.valid_graphs = 2;
    write_tiny_layout_collection(dir / "data", spec);
    // The startup line names the precision the products run at.
    train_evaluate_predict("configs/tiny.toml", dir, "layout:xla:random",
                           "--set model.precision='\"bf16_emulated\"'", "bf16_emulated products");
}

TEST_CASE(
    "segrank train notes an evaluation graph that is a training graph's copy under another "
    "name") {
    const fs::path dir = scratch_dir("train_cli_eval_copy");
    TinyLayoutSpec spec;
    spec.valid_graphs = 1;
    write_tiny_layout_collection(dir / "data", spec);
    const fs::path base = dir / "data/npz/layout/xla/random";
    auto train = [&](const std::string& run, const std::string& extra = "") {
        const auto r = run_segrank_in_source(
            "train --config configs/tiny.toml --set train.steps=1 --set data.root=" +
                sq((dir / "data").string()) + " --set train.run_dir=" + sq((dir / run).string()) +
                extra,
            1);
        INFO(r.output);
        CHECK(r.exit_code == 0);
        return r.output;
    };
    CHECK_FALSE(contains_text(train("run0"), "holds the same data as training graph"));
    // Held-out configs of the training graphs are evaluated on those graphs: not copies.
    CHECK_FALSE(contains_text(train("run_configs",
                                    " --set data.holdout='\"configs\"' --set "
                                    "data.holdout_fraction=0.25"),
                              "holds the same data as training graph"));
    fs::copy_file(base / "train/tiny_train_0.npz", base / "valid/copy.npz");
    CHECK(contains_text(train("run1"),
                        "segrank train: note: evaluation graph 'copy' (layout:xla:random) holds "
                        "the same data as training graph 'tiny_train_0' (layout:xla:random)"));
}

TEST_CASE("segrank train rejects an unknown config key with file:line and exits 1") {
    const fs::path dir = scratch_dir("train_cli_badkey");
    const fs::path toml = dir / "bad.toml";
    std::ofstream(toml) << "[optim]\nlr = 0.01\nweight_decy = 0.1\n";
    const auto r = run_segrank("train --config '" + toml.string() + "'");
    INFO(r.output);
    CHECK(r.exit_code == 1);
    CHECK(r.output.find(toml.string() + ":3") != std::string::npos);
    CHECK(r.output.find("optim.weight_decy") != std::string::npos);
    CHECK(r.output.find("did you mean 'optim.weight_decay'") != std::string::npos);
}

TEST_CASE("segrank train without --config exits 1 naming the option") {
    const auto r = run_segrank("train --set train.steps=3");
    INFO(r.output);
    CHECK(r.exit_code == 1);
    CHECK(r.output.find("--config") != std::string::npos);
}

TEST_CASE(
    "segrank train --resume of a directory without a checkpoint exits 1 with a clear message") {
    const fs::path dir = scratch_dir("train_cli_resume");
    // No config.toml at all.
    fs::create_directories(dir / "empty");
    const auto a = run_segrank("train --resume '" + (dir / "empty").string() + "'");
    INFO(a.output);
    CHECK(a.exit_code == 1);
    CHECK(a.output.find("no config.toml") != std::string::npos);
    // A run directory with its config but no last.ckpt.h5 (e.g. killed before the first
    // checkpoint).
    write_tiny_layout_collection(dir / "data");
    segrank::save_config(tiny_run_config(dir / "data", dir / "run", 4),
                         dir / "run" / "config.toml");
    const auto b = run_segrank("train --resume '" + (dir / "run").string() + "'");
    INFO(b.output);
    CHECK(b.exit_code == 1);
    CHECK(b.output.find("no checkpoint") != std::string::npos);
    CHECK(b.output.find("last.ckpt.h5") != std::string::npos);
}
