// `segrank predict --memory-mb` (docs/gst.md#memory-budget): the smallest budget ranks as the
// default one, and a budget out of range or a --cache-mb that does not fit it is refused naming the
// options, with no output; `bench --memory --memory-mb` is range-checked the same way.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "tests/support/test_paths.h"
#include "tests/support/tiny_checkpoint.h"

using namespace segrank::test;
namespace fs = std::filesystem;

namespace {

std::string slurp(const fs::path& p) {
    std::ifstream in(p);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

}  // namespace

TEST_SUITE("hostile") {
    TEST_CASE(
        "segrank predict at --memory-mb 16 writes the submission of the default budget, and a "
        "budget out of range or a --cache-mb over half of it is refused naming the options") {
        const fs::path dir = scratch_dir("predict_memory_cli");
        const fs::path run = train_tiny_layout_run(dir);
        const std::string base = "predict --checkpoint " + sq(run.string()) + " --split train";
        const fs::path def = dir / "def.csv", tiny = dir / "tiny.csv", bad = dir / "bad.csv";
        REQUIRE(run_segrank_in_source(base + " --out " + sq(def.string())).exit_code == 0);
        const CommandResult r =
            run_segrank_in_source(base + " --memory-mb 16 --out " + sq(tiny.string()));
        INFO(r.output);
        REQUIRE(r.exit_code == 0);
        CHECK(slurp(tiny) == slurp(def));

        const CommandResult low =
            run_segrank_in_source(base + " --memory-mb 8 --out " + sq(bad.string()));
        CHECK(low.exit_code != 0);
        CHECK(low.output.find("--memory-mb: expected 16 to 1048576, got 8") != std::string::npos);
        const CommandResult pair =
            run_segrank_in_source(base + " --memory-mb 64 --cache-mb 40 --out " + sq(bad.string()));
        CHECK(pair.exit_code != 0);
        CHECK(pair.output.find("--cache-mb = 40 does not fit --memory-mb = 64") !=
              std::string::npos);
        const CommandResult own =
            run_segrank_in_source(base + " --cache-mb 600 --out " + sq(bad.string()));
        CHECK(own.exit_code != 0);
        CHECK(own.output.find("--cache-mb = 600 does not fit eval.memory_mb of ") !=
              std::string::npos);
        CHECK_FALSE(fs::exists(bad));
    }

    TEST_CASE(
        "segrank bench --memory refuses a --memory-mb out of range before generating a store") {
        const fs::path dir = scratch_dir("bench_memory_budget_cli");
        const CommandResult r = run_segrank_in_source(
            "bench --memory --memory-mb 8 --cases nodes_1e4 --work-dir " + sq(dir.string()));
        CHECK(r.exit_code != 0);
        CHECK(r.output.find("bench --memory: --memory-mb: expected 16 to 1048576") !=
              std::string::npos);
        CHECK((!fs::exists(dir) || fs::directory_iterator(dir) == fs::directory_iterator{}));
    }
}
