// Trainer start-up checks (polish task): inputs that would only be read late in a run (eval.indices
// at the first evaluation) are validated by the Trainer constructor, before step 1.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "tests/support/test_paths.h"
#include "tests/trainer/trainer_data_util.h"
#include "trainer/comm.h"
#include "trainer/trainer.h"

namespace segrank::test {
namespace {
namespace fs = std::filesystem;

// Tiny collection with a valid split; graph holdout so evaluation uses eval.indices.
RunConfig eval_indices_config(const fs::path& dir) {
    TinyLayoutSpec spec;
    spec.valid_graphs = 2;
    spec.configs = 24;
    write_tiny_layout_collection(dir / "data", spec);
    RunConfig cfg = tiny_run_config(dir / "data", dir / "run", 2);
    cfg.data.holdout = cfg::Holdout::kGraphs;
    return cfg;
}

void write_file(const fs::path& p, const std::string& text) { std::ofstream(p) << text; }

std::string construction_error(const RunConfig& cfg) {
    LocalCommunicator comm;
    try {
        Trainer t(cfg, comm);
    } catch (const Error& e) {
        return e.what();
    }
    return "";
}

}  // namespace

TEST_CASE("a bad eval.indices file fails at Trainer construction, not at the first evaluation") {
    const fs::path dir = scratch_dir("startup_eval_indices");
    RunConfig cfg = eval_indices_config(dir);

    SUBCASE("missing file names the path") {
        cfg.eval.indices = (dir / "nope.json").string();
        const std::string err = construction_error(cfg);
        CHECK(err.find("nope.json") != std::string::npos);
        CHECK(err.find("nope.json: no such file (expected an eval.indices JSON file)") !=
              std::string::npos);
    }
    SUBCASE("bad JSON names file:line:col") {
        write_file(dir / "bad.json", "{\"tiny_valid_0\": [0, 1],\n \"tiny_valid_1\": [0, }");
        cfg.eval.indices = (dir / "bad.json").string();
        const std::string err = construction_error(cfg);
        CHECK(err.find("bad.json:2:") != std::string::npos);
    }
    SUBCASE("an evaluation graph without an entry is named") {
        write_file(dir / "partial.json", "{\"tiny_valid_0\": [0, 1, 2]}");
        cfg.eval.indices = (dir / "partial.json").string();
        const std::string err = construction_error(cfg);
        CHECK(err.find("partial.json") != std::string::npos);
        CHECK(err.find("tiny_valid_1") != std::string::npos);
    }
    SUBCASE("an index beyond the graph's configs is named") {
        write_file(dir / "range.json", "{\"tiny_valid_0\": [0, 1], \"tiny_valid_1\": [3, 24]}");
        cfg.eval.indices = (dir / "range.json").string();
        const std::string err = construction_error(cfg);
        CHECK(err.find("tiny_valid_1") != std::string::npos);
        CHECK(err.find("24") != std::string::npos);
    }
    SUBCASE("a file covering every evaluation graph is accepted") {
        write_file(dir / "ok.json", "{\"tiny_valid_0\": [0, 1, 5], \"tiny_valid_1\": [2, 3, 23]}");
        cfg.eval.indices = (dir / "ok.json").string();
        CHECK(construction_error(cfg).empty());
    }
}

TEST_CASE(
    "model.config_join = late on layout graphs fails at construction naming the key and the "
    "collection") {
    const fs::path dir = scratch_dir("startup_late_join");
    RunConfig cfg = eval_indices_config(dir);
    cfg.data.collections = {};  // every collection: the task is only known from the data
    cfg.model.config_join = ConfigJoin::kLate;
    const std::string err = construction_error(cfg);
    CHECK(err.find("model.config_join") != std::string::npos);
    CHECK(err.find("layout:xla:random") != std::string::npos);
}

TEST_CASE(
    "truncate_metrics_jsonl keeps lines up to the checkpoint step and drops later and summary "
    "lines") {
    const fs::path dir = scratch_dir("startup_truncate_metrics");
    const fs::path f = dir / "metrics.jsonl";
    write_file(f,
               "{\"phase\":\"train\",\"step\":2,\"loss\":1}\n"
               "{\"phase\":\"eval\",\"step\":4,\"selection\":0.5}\n"
               "{\"phase\":\"train\",\"step\":5,\"loss\":1}\n"
               "{\"phase\":\"random_baseline\",\"seeds\":10}\n"
               "{\"phase\":\"train\",\"st");
    CHECK(truncate_metrics_jsonl(f, 4) == 3);
    std::ifstream in(f);
    std::stringstream ss;
    ss << in.rdbuf();
    CHECK(ss.str() ==
          "{\"phase\":\"train\",\"step\":2,\"loss\":1}\n{\"phase\":\"eval\",\"step\":4,"
          "\"selection\":0.5}\n");
}

TEST_CASE(
    "a resumed Trainer rewrites config.toml with the effective config and trims metrics.jsonl") {
    const fs::path dir = scratch_dir("startup_resume");
    write_tiny_layout_collection(dir / "data");
    RunConfig cfg = tiny_run_config(dir / "data", dir / "run", 6);
    LocalCommunicator comm;
    {
        Trainer t(cfg, comm);
        for (int i = 0; i < 3; ++i) t.step();
        t.save_checkpoint("last");
    }
    write_file(dir / "run" / "metrics.jsonl",
               "{\"phase\":\"train\",\"step\":3}\n{\"phase\":\"train\",\"step\":4}\n");
    cfg.train.steps = 14;
    Trainer resumed(cfg, comm, dir / "run");
    CHECK(resumed.current_step() == 3);
    CHECK(load_config((dir / "run" / "config.toml").string()).train.steps == 14);
    std::ifstream in(dir / "run" / "metrics.jsonl");
    std::stringstream ss;
    ss << in.rdbuf();
    CHECK(ss.str() == "{\"phase\":\"train\",\"step\":3}\n");
}

TEST_CASE(
    "a graph in both the train and the valid split is refused naming it and both files (graph "
    "holdout)") {
    const fs::path dir = scratch_dir("startup_shared_graph");
    RunConfig cfg = eval_indices_config(dir);
    CHECK(construction_error(cfg).empty());
    const fs::path split = dir / "data" / "npz" / "layout" / "xla" / "random";
    const fs::path first_train = split / "train" / "tiny_train_0.npz";
    REQUIRE(fs::exists(first_train));
    fs::copy_file(first_train, split / "valid" / "tiny_train_0.npz");
    const std::string err = construction_error(cfg);
    CHECK(err.find("graph 'tiny_train_0' is in the training split too") != std::string::npos);
    CHECK(err.find(first_train.string()) != std::string::npos);
    CHECK(err.find((split / "valid" / "tiny_train_0.npz").string()) != std::string::npos);
    // Holding out configs of the same files is fine.
    cfg.data.holdout = cfg::Holdout::kConfigs;
    CHECK(construction_error(cfg).empty());
}

}  // namespace segrank::test
