// `segrank train` run-directory integrity end to end: a run directory locked by another process is
// refused without writing anything, a --resume that would change the segmentation or has nothing
// left to train fails before touching the run, and a fresh run whose data fails after the run
// directory was created leaves nothing behind.
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

CommandResult run_segrank(const std::string& args, const std::string& prefix = "") {
    return run_segrank_in_source(args, 1, prefix);
}

// Writes the tiny layout collection and its config to dir; returns the config path.
fs::path tiny_setup(const fs::path& dir, int64_t steps,
                    const segrank::test::TinyLayoutSpec& spec = {}) {
    write_tiny_layout_collection(dir / "data", spec);
    segrank::RunConfig cfg = tiny_run_config(dir / "data", dir / "run", steps);
    cfg.segments.max_nodes = 500;
    segrank::save_config(cfg, dir / "tiny.toml");
    return dir / "tiny.toml";
}

}  // namespace

TEST_CASE(
    "segrank train into a run directory locked by another process exits 1 naming the pid and "
    "writes nothing") {
    const fs::path dir = scratch_dir("run_dir_cli_lock");
    const fs::path cfg = tiny_setup(dir, 2);
    fs::create_directories(dir / "run");
    std::ofstream(dir / "run" / ".lock").flush();
    // flock(1) holds an exclusive lock on the file while it runs the second `segrank train`.
    const auto r = run_segrank("train --config " + sq(cfg.string()),
                               "flock -n " + sq((dir / "run" / ".lock").string()) + " ");
    INFO(r.output);
    CHECK(r.exit_code == 1);
    CHECK(r.output.find("run directory " + (dir / "run").string() +
                        " is in use by another segrank train (pid ") != std::string::npos);
    CHECK(r.output.find("pid unknown") == std::string::npos);
    for (const char* f : {"config.toml", "metrics.jsonl", "last.ckpt.h5", "report.json"})
        CHECK_MESSAGE(!fs::exists(dir / "run" / f), f);
}

TEST_CASE(
    "segrank train --resume refuses a changed segmentation key and a step count at the checkpoint, "
    "leaving the run resumable") {
    const fs::path dir = scratch_dir("run_dir_cli_resume");
    const fs::path cfg = tiny_setup(dir, 4);
    const fs::path run = dir / "run";
    const auto first = run_segrank("train --config " + sq(cfg.string()));
    INFO(first.output);
    REQUIRE(first.exit_code == 0);
    CHECK(fs::is_regular_file(run / ".lock"));
    const std::string config_before = read_file_text(run / "config.toml");
    const std::string metrics_before = read_file_text(run / "metrics.jsonl");

    const auto changed = run_segrank("train --resume " + sq(run.string()) +
                                     " --set segments.max_nodes=300 --set train.steps=8");
    INFO(changed.output);
    CHECK(changed.exit_code == 1);
    CHECK(changed.output.find(
              "--resume " + run.string() +
              ": segments.max_nodes was 500 in the run, now 300; resuming cannot change it") !=
          std::string::npos);
    const auto same = run_segrank("train --resume " + sq(run.string()));
    INFO(same.output);
    CHECK(same.exit_code == 1);
    CHECK(same.output.find("the checkpoint is at step 4 and train.steps = 4") != std::string::npos);
    CHECK(read_file_text(run / "config.toml") == config_before);
    CHECK(read_file_text(run / "metrics.jsonl") == metrics_before);

    const auto more = run_segrank("train --resume " + sq(run.string()) +
                                  " --set train.steps=6 --set eval.chunk_configs=64");
    INFO(more.output);
    CHECK(more.exit_code == 0);
    CHECK(more.output.find("resuming from step 4") != std::string::npos);
}

TEST_CASE(
    "a fresh segrank train whose first graph has all-zero runtimes exits 1 and leaves no run "
    "directory") {
    const fs::path dir = scratch_dir("run_dir_cli_cleanup");
    segrank::test::TinyLayoutSpec spec;
    spec.train_graphs = 2;
    const fs::path cfg = tiny_setup(dir, 2, spec);
    // Replace the training graphs by copies with all-zero runtimes: found when the graph is
    // prepared.
    for (int i = 0; i < 2; ++i) {
        const std::string name = "tiny_train_" + std::to_string(i);
        auto g = tiny_layout_graph(name, i, spec);
        std::fill(g.config_runtime.begin(), g.config_runtime.end(), 0);
        segrank::save_layout_npz(g, dir / "data/npz/layout/xla/random/train" / (name + ".npz"));
    }
    const auto r = run_segrank("train --config " + sq(cfg.string()));
    INFO(r.output);
    CHECK(r.exit_code == 1);
    CHECK(r.output.find("tiny_train_") != std::string::npos);
    CHECK(!fs::exists(dir / "run"));

    // An existing directory keeps what was there before; only what the run wrote goes.
    fs::create_directories(dir / "run");
    std::ofstream(dir / "run" / "notes.txt") << "mine";
    const auto again = run_segrank("train --config " + sq(cfg.string()));
    INFO(again.output);
    CHECK(again.exit_code == 1);
    CHECK(fs::exists(dir / "run" / "notes.txt"));
    for (const char* f : {"config.toml", "metrics.jsonl", ".lock", "partitions"})
        CHECK_MESSAGE(!fs::exists(dir / "run" / f), f);
}
