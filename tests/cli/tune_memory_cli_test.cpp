// `segrank tune --memory-mb` (docs/tune.md, docs/gst.md#memory-budget): the cost model's scoring
// budget, range-checked as predict's before any work, and at 16 MiB the tuning run of the default
// budget.
#include <doctest/doctest.h>

#include <filesystem>
#include <string>

#include "tests/support/test_paths.h"
#include "tests/support/tiny_checkpoint.h"

using namespace segrank::test;
namespace fs = std::filesystem;

TEST_SUITE("hostile") {
    TEST_CASE(
        "segrank tune --memory-mb 16 measures what the default budget measures, and a budget out "
        "of range or given to a model-free strategy is refused before --out is created") {
        const fs::path dir = scratch_dir("tune_memory_cli");
        const fs::path run = train_tiny_layout_run(dir, "run", 2);
        const std::string graph =
            (dir / "data/npz/layout/xla/random/train/tiny_train_0.npz").string();
        const std::string base = "tune --checkpoint " + sq(run.string()) + " --graph " + sq(graph) +
                                 " --budget 9 --batch 2 --quiet --out ";
        REQUIRE(run_segrank_in_source(base + sq((dir / "def").string())).exit_code == 0);
        const CommandResult r =
            run_segrank_in_source(base + sq((dir / "tiny").string()) + " --memory-mb 16");
        INFO(r.output);
        REQUIRE(r.exit_code == 0);
        CHECK(read_file_text(dir / "tiny/measurements.jsonl") ==
              read_file_text(dir / "def/measurements.jsonl"));

        for (const char* bad : {"8", "1048577", "-1"}) {
            const CommandResult low =
                run_segrank_in_source(base + sq((dir / "bad").string()) + " --memory-mb " + bad);
            INFO(bad, low.output);
            CHECK(low.exit_code == 1);
            CHECK(contains_text(low.output,
                                std::string("--memory-mb: expected 16 to 1048576, got ") + bad));
        }
        const CommandResult free = run_segrank_in_source(
            "tune --strategy random --graph " + sq(graph) + " --budget 3 --quiet --out " +
            sq((dir / "bad").string()) + " --memory-mb 64");
        INFO(free.output);
        CHECK(free.exit_code == 1);
        CHECK(contains_text(free.output,
                            "--strategy random: --memory-mb applies to --strategy "
                            "model only"));
        CHECK_FALSE(fs::exists(dir / "bad"));
    }
}
