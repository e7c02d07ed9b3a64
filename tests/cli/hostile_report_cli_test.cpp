// Hostile inputs of `segrank report` and `segrank leaderboard` end to end (ctest label `hostile`):
// files of the wrong kind are named with what was expected, and no page is written.
#include <doctest/doctest.h>

#include <filesystem>
#include <string>

#include "tests/eval/leaderboard_fixture.h"
#include "tests/support/test_paths.h"

using namespace segrank::test;
namespace fs = std::filesystem;

namespace {

CommandResult run_segrank(const std::string& args) { return run_segrank_in_source(args, 1); }

}  // namespace

TEST_SUITE("hostile") {
    TEST_CASE("segrank report refuses a run whose config.toml is garbage, naming the file") {
        const fs::path dir = scratch_dir("hostile_report_config");
        fs::create_directories(dir / "run");
        write_text(dir / "run/metrics.jsonl", "");
        write_text(dir / "run/config.toml", std::string("\x01\x02 ][ garbage = = \n", 20));
        const std::string run = (dir / "run").string();
        const auto r = run_segrank("report " + sq(run));
        INFO(r.output);
        CHECK(r.exit_code == 1);
        CHECK(contains_text(r.output, run + "/config.toml: not a run config (expected the "
                                            "config.toml segrank train writes"));
        CHECK_FALSE(fs::exists(dir / "run/report.html"));
        // A valid config renders.
        write_text(dir / "run/config.toml", "[train]\nsteps = 2\n");
        const auto ok = run_segrank("report " + sq(run));
        INFO(ok.output);
        CHECK(ok.exit_code == 0);
        CHECK(fs::exists(dir / "run/report.html"));
    }

    TEST_CASE("segrank report --eval of a file that is not evaluate --json output names it") {
        const fs::path dir = scratch_dir("hostile_report_eval");
        fs::create_directories(dir / "run");
        write_text(dir / "run/metrics.jsonl", "");
        write_text(dir / "notes.md", "# my notes\n\nnot JSON\n");
        const auto r = run_segrank("report " + sq((dir / "run").string()) + " --eval " +
                                   sq((dir / "notes.md").string()));
        INFO(r.output);
        CHECK(r.exit_code == 1);
        CHECK(contains_text(r.output, (dir / "notes.md").string() +
                                          ": not `segrank evaluate --json` output (--eval expects "
                                          "that JSON file): "));
        CHECK_FALSE(fs::exists(dir / "run/report.html"));
    }

    TEST_CASE("segrank leaderboard names a directory given as a submission and expects a CSV") {
        const fs::path dir = scratch_dir("hostile_lb_dir_submission");
        const fs::path root = segrank::test::write_lb_truth(dir / "truth");
        const std::string out = (dir / "lb.md").string();
        const auto r =
            run_command("cd " + sq(dir.string()) + " && " + sq(segrank_binary().string()) +
                        " leaderboard --truth " + sq(root.string()) + " . --out-md " + sq(out));
        INFO(r.output);
        CHECK(r.exit_code == 1);
        CHECK(contains_text(r.output,
                            ".: is a directory, expected a submission CSV file "
                            "(ID,TopConfigs)"));
        CHECK_FALSE(contains_text(r.output, "cannot open for reading"));
    }

    TEST_CASE("segrank report --compare refuses a tune directory of another graph naming both") {
        const fs::path dir = scratch_dir("hostile_report_compare_graph");
        // Two hand-made tune directories: the default measured, nothing else.
        auto tune_dir = [&](const std::string& name, const std::string& graph) {
            fs::create_directories(dir / name);
            write_text(dir / name / "tune.json",
                       "{\"graph\":{\"name\":\"" + graph +
                           "\",\"task\":\"tile\",\"num_nodes\":9,\"num_configs\":30,"
                           "\"num_config_nodes\":1,\"runtimes_fnv1a\":\"abc\"},\"where\":\"k/" +
                           graph +
                           ".npz\",\"measure\":\"recorded\",\"candidates\":"
                           "\"recorded\",\"strategy\":\"model\",\"checkpoints\":[]}\n");
            write_text(dir / name / "measurements.jsonl",
                       "{\"round\":0,\"config\":0,\"predicted\":null,\"measured_ns\":2000,"
                       "\"best_ns\":2000,\"best_config\":0}\n");
            return (dir / name).string();
        };
        const std::string a = tune_dir("a", "fusion.7"), b = tune_dir("b", "fusion.8"),
                          c = tune_dir("c", "fusion.7");
        const auto r =
            run_segrank("report " + sq(a) + " --compare " + sq(c) + " --compare " + sq(b));
        INFO(r.output);
        CHECK(r.exit_code == 1);
        CHECK(contains_text(r.output, "--compare " + b + ": tunes graph fusion.8 ("));
        CHECK(contains_text(r.output, "not the graph of " + a + ", fusion.7 ("));
        CHECK(contains_text(r.output, "the graphs differ"));
        CHECK_FALSE(fs::exists(dir / "a/report.html"));
        // The same graph compares.
        const auto ok = run_segrank("report " + sq(a) + " --compare " + sq(c));
        INFO(ok.output);
        CHECK(ok.exit_code == 0);
    }
}
