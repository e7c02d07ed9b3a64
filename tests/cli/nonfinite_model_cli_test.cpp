// A checkpoint whose parameters hold NaN (an edited file) is refused on load naming the dataset;
// one whose finite parameters overflow (every one 3e38) makes `predict` and `evaluate` stop with an
// error naming the checkpoint, the graph and the config. Both exit 1 and write none of their
// outputs.
#include <doctest/doctest.h>

#include <filesystem>
#include <string>

#include "tests/support/test_paths.h"
#include "tests/support/tiny_cli_run.h"

using namespace segrank::test;
namespace fs = std::filesystem;

namespace {

CommandResult run_segrank(const std::string& args) { return run_segrank_in_source(args, 2); }

// Sets every parameter of run/best.ckpt.h5 to `value` (a numpy expression) with h5py and re-signs
// the file.
void set_params(const fs::path& run, const std::string& value) {
    const auto py = run_command("/usr/bin/python3 -c \"import h5py, numpy as np; f=h5py.File('" +
                                (run / "best.ckpt.h5").string() +
                                "','r+'); [f['params'][k].__setitem__(Ellipsis, " + value +
                                ") for k in f['params']]\"");
    INFO(py.output);
    REQUIRE(py.exit_code == 0);
    // A deliberate edit: new checksums, so the load reaches the non-finite checks under test.
    const auto sign = run_command("/usr/bin/python3 " +
                                  sq((source_dir() / "tests/support/ckpt_resign.py").string()) +
                                  " " + sq((run / "best.ckpt.h5").string()));
    INFO(sign.output);
    REQUIRE(sign.exit_code == 0);
}

// Trains configs/tiny.toml for 2 steps on the tiny layout collection under dir. Returns the run
// directory.
fs::path trained_run(const fs::path& dir) { return segrank_tiny_layout_run(dir, 2, 2); }

// trained_run(dir) with every parameter of its best.ckpt.h5 set to `value`.
fs::path edited_run(const fs::path& dir, const std::string& value) {
    const fs::path run = trained_run(dir);
    set_params(run, value);
    return run;
}

}  // namespace

TEST_CASE(
    "segrank predict and evaluate refuse a checkpoint with NaN or infinite parameters on load "
    "naming the file, the dataset and the entry, and write nothing" *
    doctest::test_suite("hostile")) {
    const fs::path dir = scratch_dir("cli_nan_params");
    const fs::path trained = trained_run(dir);
    for (const std::string value : {"np.nan", "-np.inf"}) {
        const fs::path run = dir / (value == "np.nan" ? "run_nan" : "run_inf");
        fs::copy(trained, run, fs::copy_options::recursive);
        set_params(run, value);
        const std::string expected = (run / "best.ckpt.h5").string() + ": dataset /params/";
        const auto p = run_segrank("predict --checkpoint " + sq(run.string()) +
                                   " --split valid --out " + sq((dir / "sub.csv").string()));
        INFO(p.output);
        CHECK(p.exit_code == 1);
        CHECK(p.output.find(expected) != std::string::npos);
        CHECK(p.output.find(" entry 0 is ") != std::string::npos);
        CHECK(p.output.find("(parameters must be finite)") != std::string::npos);
        CHECK_FALSE(fs::exists(dir / "sub.csv"));
        const auto e = run_segrank("evaluate --checkpoint " + sq(run.string()) + " --json " +
                                   sq((dir / "eval.json").string()));
        INFO(e.output);
        CHECK(e.exit_code == 1);
        CHECK(e.output.find(expected) != std::string::npos);
        CHECK_FALSE(fs::exists(dir / "eval.json"));
    }
}

TEST_CASE(
    "segrank predict with an overflowing checkpoint exits 1 naming graph and config and writes "
    "nothing") {
    const fs::path dir = scratch_dir("cli_huge_predict");
    const fs::path run = edited_run(dir, "3e38");
    const auto r = run_segrank("predict --checkpoint " + sq(run.string()) +
                               " --split valid --out " + sq((dir / "sub.csv").string()) +
                               " --scores " + sq((dir / "scores.csv").string()));
    INFO(r.output);
    CHECK(r.exit_code == 1);
    CHECK(r.output.find("score of config 0 of graph 'layout:xla:random:") != std::string::npos);
    CHECK(r.output.find(run.string()) != std::string::npos);
    CHECK_FALSE(fs::exists(dir / "sub.csv"));
    CHECK_FALSE(fs::exists(dir / "scores.csv"));
    for (const auto& e : fs::directory_iterator(dir))
        CHECK_MESSAGE(e.path().filename().string().find(".tmp") == std::string::npos,
                      e.path().string());
}

TEST_CASE(
    "segrank evaluate with an overflowing checkpoint exits 1 naming the checkpoint, the graph and "
    "the score and writes no --json" *
    doctest::test_suite("hostile")) {
    const fs::path dir = scratch_dir("cli_huge_evaluate");
    const fs::path run = edited_run(dir, "3e38");
    const auto r = run_segrank("evaluate --checkpoint " + sq(run.string()) + " --json " +
                               sq((dir / "eval.json").string()));
    INFO(r.output);
    CHECK(r.exit_code == 1);
    CHECK(r.output.find((run / "best.ckpt.h5").string() +
                        ": the checkpoint's model gives a non-finite score: ") !=
          std::string::npos);
    CHECK(r.output.find(": score of config 0 is ") != std::string::npos);
    CHECK(r.output.find("(its parameters are finite but overflow)") != std::string::npos);
    CHECK_FALSE(fs::exists(dir / "eval.json"));
}
