// `segrank report` on real runs of `segrank train` (trial 17 F-1): report.json's best_step,
// best_selection and "final" agree with metrics.jsonl for a fine-tuned run with evaluations
// during training and after --resume (a log of two segments), so the summary is drawn without a
// note; an edited "final" is refused naming report.json.
#include <doctest/doctest.h>

#include <filesystem>
#include <string>

#include "tests/support/test_paths.h"
#include "tests/support/tiny_layout_data.h"

using namespace segrank::test;
namespace fs = std::filesystem;

namespace {

// The "steps" of run's report.json (what train ran, fine-tuning steps included).
int report_steps(const fs::path& run) {
    const std::string text = read_file_text(run / "report.json");
    const auto at = text.find("\"steps\":");
    REQUIRE(at != std::string::npos);
    return std::stoi(text.substr(at + 8));
}

// `segrank report run`: exit 0, the summary drawn, no note that leaves it out.
void check_report_draws_summary(const fs::path& run) {
    const auto r = run_segrank_in_source("report " + sq(run.string()), 1);
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    const std::string html = read_file_text(run / "report.html");
    CHECK(contains_text(html, "final overall score"));
    CHECK(contains_text(html, "best selection metric"));
    CHECK_FALSE(contains_text(html, "not drawn"));
}

}  // namespace

TEST_CASE(
    "segrank report draws the summary of a fine-tuned run with evaluations, before and after "
    "--resume, and refuses an edited final") {
    const fs::path dir = scratch_dir("report_summary_resumed_run");
    TinyLayoutSpec spec;
    spec.valid_graphs = 2;
    write_tiny_layout_collection(dir / "data", spec);
    const fs::path run = dir / "run";
    const auto trained = run_segrank_in_source(
        "train --config configs/tiny.toml --set train.steps=6 --set train.eval_every=2 --set "
        "segments.finetune_epochs=1 --set train.run_dir=" +
            sq(run.string()) + " --set data.root=" + sq((dir / "data").string()),
        1);
    INFO(trained.output);
    REQUIRE(trained.exit_code == 0);
    check_report_draws_summary(run);
    const int steps = report_steps(run);
    const auto resumed = run_segrank_in_source(
        "train --resume " + sq(run.string()) + " --set train.steps=" + std::to_string(steps + 4),
        1);
    INFO(resumed.output);
    REQUIRE(resumed.exit_code == 0);
    CHECK(report_steps(run) > steps + 4);  // trained on, then fine-tuned again
    check_report_draws_summary(run);
    // The final metrics are the last evaluation line's: an edited slowdown is refused.
    const std::string text = read_file_text(run / "report.json");
    const auto at = text.find("\"slowdown_1\":", text.find("\"final\":"));
    REQUIRE(at != std::string::npos);
    const auto from = at + 13, to = text.find(',', from);
    write_file_text(run / "report.json", text.substr(0, from) + "0.987" + text.substr(to));
    fs::remove(run / "report.html");
    const auto r = run_segrank_in_source("report " + sq(run.string()), 1);
    INFO(r.output);
    CHECK(r.exit_code == 1);
    CHECK(contains_text(r.output, (run / "report.json").string() +
                                      ": \"final\" collections[0] \"slowdown_1\" is 0.987, but "
                                      "the last evaluation line of metrics.jsonl (step "));
    CHECK(contains_text(r.output, ", finetune_eval) has "));
    CHECK_FALSE(fs::exists(run / "report.html"));
}
