// `segrank tune --resume` with other schedule settings than the run it continues (--seed, --batch,
// --refit, --refit-steps): every measurement is kept, and a note names each changed setting; a
// larger --budget is recorded, not noted (cli/tune_files.cpp, docs/tune.md#resume-and-interrupts).
#include <doctest/doctest.h>

#include <filesystem>
#include <sstream>
#include <string>

#include "tests/support/test_paths.h"
#include "tests/support/tiny_checkpoint.h"
#include "util/json.h"

using namespace segrank;
using namespace segrank::test;
namespace fs = std::filesystem;

namespace {
size_t count_lines(const fs::path& p) {
    std::istringstream is(read_file_text(p));
    size_t n = 0;
    for (std::string line; std::getline(is, line);) n += !line.empty();
    return n;
}
}  // namespace

TEST_CASE(
    "segrank tune records its seed, batch, refit and budget in tune.json, and --resume with other "
    "values notes each of them but the budget and keeps every measurement") {
    const fs::path dir = scratch_dir("tune_resume_settings_cli");
    const fs::path run = train_tiny_layout_run(dir, "run", 3);
    TinyLayoutSpec spec;
    spec.configs = 30;
    const fs::path npz = dir / "g.npz";
    save_layout_npz(tiny_layout_graph("tune_resume_settings", 3, spec), npz);
    const fs::path out = dir / "out";
    const std::string base = "OMP_NUM_THREADS=2 " + sq(segrank_binary().string()) +
                             " tune --checkpoint " + sq(run.string()) + " --graph " +
                             sq(npz.string()) + " --measure recorded --quiet --out " +
                             sq(out.string());
    const auto first = run_command(base + " --budget 6 --batch 2 --seed 0");
    INFO(first.output);
    REQUIRE(first.exit_code == 0);
    const Json t = read_json_file(out / "tune.json");
    CHECK(t["seed"] == 0);
    CHECK(t["batch"] == "2");
    CHECK(t["refit"] == "none");
    CHECK(t["refit_steps"] == 200);
    CHECK(t["budget"] == 6);

    const auto same = run_command(base + " --budget 6 --batch 2 --seed 0 --resume");
    INFO(same.output);
    REQUIRE(same.exit_code == 0);
    CHECK_FALSE(contains_text(same.output, "note:"));

    const auto other = run_command(
        base + " --budget 10 --batch grow --seed 5 --refit head --refit-steps 3 --resume");
    INFO(other.output);
    REQUIRE(other.exit_code == 0);
    CHECK(contains_text(other.output, "--seed 5 (the run: 0)"));
    CHECK(contains_text(other.output, "--batch grow:8 (the run: 2)"));
    CHECK(contains_text(other.output, "--refit head (the run: none)"));
    CHECK(contains_text(other.output, "--refit-steps 3 (the run: 200)"));
    CHECK_FALSE(contains_text(other.output, "--budget"));  // measuring more is no change
    CHECK(contains_text(other.output, "the picks from here on differ"));
    CHECK(count_lines(out / "measurements.jsonl") == 10);
    // tune.json keeps the first run's settings.
    CHECK(read_json_file(out / "tune.json")["seed"] == 0);
}
