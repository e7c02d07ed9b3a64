// Hostile uses of `segrank tune`, end to end (ctest label `hostile`): a closing line that must say
// how many measurements failed, exec runtimes below 1 ns, a --checkpoint of the other task in the
// ensemble, and options given for a backend or mode they do nothing in.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "tests/support/test_paths.h"
#include "tests/support/tiny_checkpoint.h"

using namespace segrank::test;
namespace fs = std::filesystem;

namespace {

CommandResult run_segrank(const std::string& args) {
    return run_command("OMP_NUM_THREADS=1 " + sq(segrank_binary().string()) + " " + args);
}

// Occurrences of `what` in `text`.
size_t count_text(const std::string& text, const std::string& what) {
    size_t n = 0;
    for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
    return n;
}

// A harness (the exec protocol, docs/tune.md) whose first reply over all its runs (counted in
// dir/count) is 2000000 ns and every later one 1e-300 ns: a unit bug, below the 1 ns bound.
fs::path tiny_runtime_harness(const fs::path& dir) {
    const fs::path harness = dir / "harness.sh";
    std::ofstream(harness, std::ios::binary | std::ios::trunc)
        << "count=" << sq((dir / "count").string())
        << "\n"
           "while read -r line; do\n"
           "  n=$(( $(cat \"$count\" 2>/dev/null || echo 0) + 1 )); echo \"$n\" > \"$count\"\n"
           "  id=$(printf '%s' \"$line\" | sed 's/^{\"id\": *\\([0-9]*\\).*/\\1/')\n"
           "  if [ \"$n\" -eq 1 ]; then rt=2000000; else rt=1e-300; fi\n"
           "  printf '{\"id\": %s, \"runtime_ns\": %s}\\n' \"$id\" \"$rt\"\n"
           "done\n";
    return harness;
}

}  // namespace

TEST_SUITE("hostile") {
    TEST_CASE(
        "segrank tune's closing line says how many measurements succeeded and failed, also on "
        "--resume, and an exec runtime below 1 ns is a failed measurement") {
        const fs::path dir = scratch_dir("hostile_tune_failed_count");
        const fs::path run = train_tiny_layout_run(dir, "run", 2);
        const std::string graph =
            (dir / "data/npz/layout/xla/random/train/tiny_train_0.npz").string();
        const fs::path out = dir / "tune";
        const fs::path meas = out / "measurements.jsonl";
        const std::string base = "tune --checkpoint " + sq(run.string()) + " --graph " + sq(graph) +
                                 " --batch 2 --quiet --measure " +
                                 sq("exec:sh " + tiny_runtime_harness(dir).string()) + " --out " +
                                 sq(out.string());
        const auto r = run_segrank(base + " --budget 4");
        INFO(r.output);
        REQUIRE(r.exit_code == 0);
        CHECK(contains_text(r.output,
                            "segrank tune: 4 measurements (4 now), 1 succeeded, 3 failed "
                            "(see " +
                                meas.string() + ") -> " + out.string() + "/best.json: config "));
        CHECK(contains_text(r.output, ", 2000000 ns, 1.000x the default"));
        CHECK_FALSE(contains_text(r.output, "1e-300 ns"));
        const std::string lines = read_file_text(meas);
        CHECK(count_text(lines, "is below the plausible minimum 1.0 ns (one clock cycle)") == 3);
        CHECK(count_text(lines, "\"measured_ns\":null") == 3);
        // The counts are over every run in DIR.
        const auto again = run_segrank(base + " --budget 6 --resume");
        INFO(again.output);
        REQUIRE(again.exit_code == 0);
        CHECK(contains_text(again.output,
                            "segrank tune: 6 measurements (2 now), 1 succeeded, 5 "
                            "failed (see " +
                                meas.string() + ") -> "));
        // A run without failures keeps the short line.
        const auto clean =
            run_segrank("tune --checkpoint " + sq(run.string()) + " --graph " + sq(graph) +
                        " --batch 2 --quiet --budget 3 --out " + sq((dir / "clean").string()));
        INFO(clean.output);
        REQUIRE(clean.exit_code == 0);
        CHECK(contains_text(clean.output, "segrank tune: 3 measurements (3 now) -> "));
        CHECK_FALSE(contains_text(clean.output, "succeeded"));
    }

    TEST_CASE(
        "segrank tune refuses a --checkpoint of the other task in the ensemble before any "
        "measurement, naming it, its task and the graph's") {
        const fs::path dir = scratch_dir("hostile_tune_mixed_tasks");
        const fs::path layout = train_tiny_layout_run(dir, "run", 2);
        const fs::path tile = train_tiny_tile_run(dir, 2);
        const std::string graph =
            (dir / "data/npz/layout/xla/random/train/tiny_train_0.npz").string();
        const fs::path out = dir / "tune";
        for (const std::string& cks :
             {" --checkpoint " + sq(layout.string()) + " --checkpoint " + sq(tile.string()),
              " --checkpoint " + sq(tile.string()) + " --checkpoint " + sq(layout.string())}) {
            const auto r = run_segrank("tune" + cks + " --graph " + sq(graph) +
                                       " --budget 3 --out " + sq(out.string()));
            INFO(r.output);
            CHECK(r.exit_code == 1);
            CHECK(contains_text(
                r.output, "--checkpoint " + tile.string() + " was trained on the tile task, but "));
            CHECK(contains_text(r.output,
                                " is a layout graph (its layout --checkpoint: " + layout.string() +
                                    "); tune ranks with checkpoints of the graph's task "
                                    "only: leave it out"));
            CHECK_FALSE(contains_text(r.output, "tune: round"));
            CHECK_FALSE(fs::exists(out));
        }
    }

    TEST_CASE(
        "segrank tune refuses --noise without hwmodel, exec options without exec, --pool "
        "without the model's search and refit options without the model, before any work") {
        const fs::path dir = scratch_dir("hostile_tune_inapplicable");
        const fs::path run = train_tiny_layout_run(dir, "run", 2);
        const std::string graph =
            (dir / "data/npz/layout/xla/random/train/tiny_train_0.npz").string();
        const fs::path out = dir / "tune";
        const std::string base = "tune --checkpoint " + sq(run.string()) + " --graph " + sq(graph) +
                                 " --budget 3 --quiet --out " + sq(out.string());
        const std::string search = "tune --strategy random --graph " + sq(graph) +
                                   " --budget 3 --quiet --out " + sq(out.string());
        const std::pair<std::string, std::string> cases[] = {
            {base + " --noise 1 --measure recorded",
             "--noise: applies to --measure hwmodel or hwmodel:FAMILY only (the simulator's "
             "log-normal noise), not to --measure recorded; leave --noise out"},
            {base + " --noise 0.5", "--noise: applies to --measure hwmodel or hwmodel:FAMILY only"},
            {base + " --noise 1 --measure 'exec:sh x.sh'", "not to --measure exec:sh x.sh"},
            {base + " --timeout 5 --measure hwmodel",
             "--timeout: applies to --measure exec:CMD only (the harness process), not to "
             "--measure hwmodel; leave --timeout out"},
            {base + " --start-timeout 5", "--start-timeout: applies to --measure exec:CMD only"},
            {base + " --max-restarts 1", "--max-restarts: applies to --measure exec:CMD only"},
            {base + " --pool 64",
             "--pool: applies to --strategy model with --candidates search only (the proposals "
             "the cost model scores per round), not to --candidates recorded; leave --pool out"},
            {search + " --pool 64", "not to --strategy random; leave --pool out"},
            {search + " --refit-steps 5",
             "--strategy random: --refit-steps applies to --strategy model only (its --refit)"},
            {search + " --refit-lr 0.01",
             "--strategy random: --refit-lr applies to --strategy model"},
        };
        for (const auto& [args, what] : cases) {
            const auto r = run_segrank(args);
            INFO(args, "\n", r.output);
            CHECK(r.exit_code == 1);
            CHECK(contains_text(r.output, what));
            CHECK_FALSE(fs::exists(out));
        }
        // Where they apply they are taken (hwmodel cannot cost this tiny graph: the measurements
        // fail, after the options were accepted).
        const auto hw = run_segrank(base + " --noise 0.5 --measure hwmodel:default");
        INFO(hw.output);
        CHECK_FALSE(contains_text(hw.output, "applies to"));
        CHECK(contains_text(hw.output, "no measurement succeeded"));
        fs::remove_all(out);
        const auto fresh =
            run_segrank(base + " --timeout 20 --start-timeout 5 --max-restarts 1 " + "--measure " +
                        sq("exec:sh " + tiny_runtime_harness(dir).string()));
        INFO(fresh.output);
        CHECK(fresh.exit_code == 0);
    }

    TEST_CASE("segrank tune --resume with other checkpoints says so, naming both sets") {
        const fs::path dir = scratch_dir("hostile_tune_resume_other_model");
        const fs::path run = train_tiny_layout_run(dir, "run", 2);
        const fs::path other = dir / "other";
        fs::copy(run, other, fs::copy_options::recursive);
        const std::string graph =
            (dir / "data/npz/layout/xla/random/train/tiny_train_0.npz").string();
        const std::string out = sq((dir / "tune").string());
        const auto first = run_segrank("tune --checkpoint " + sq(run.string()) + " --graph " +
                                       sq(graph) + " --budget 3 --quiet --out " + out);
        INFO(first.output);
        REQUIRE(first.exit_code == 0);
        const auto same = run_segrank("tune --checkpoint " + sq(run.string()) + " --graph " +
                                      sq(graph) + " --budget 4 --quiet --resume --out " + out);
        INFO(same.output);
        CHECK(same.exit_code == 0);
        CHECK_FALSE(contains_text(same.output, "note:"));
        const auto again = run_segrank("tune --checkpoint " + sq(other.string()) + " --graph " +
                                       sq(graph) + " --budget 5 --quiet --resume --out " + out);
        INFO(again.output);
        CHECK(again.exit_code == 0);
        CHECK(contains_text(again.output,
                            "segrank tune: note: --resume " + (dir / "tune").string() +
                                ": tune.json names the checkpoints [\"" + run.string()));
        CHECK(contains_text(again.output, "this run ranks with [\"" + other.string()));
    }
}
