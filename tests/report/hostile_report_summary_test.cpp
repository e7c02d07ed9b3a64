// Hostile report.json summaries (ctest label `hostile`, trial 17 F-1): a best_selection,
// best_step or "final" that the run's own metrics.jsonl contradicts is refused naming report.json,
// the field and the log's value; the logs of resumed and fine-tuned runs still render.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "gnn/core/check.h"
#include "report/report.h"
#include "tests/support/test_paths.h"

using namespace segrank;
namespace fs = std::filesystem;

namespace {

// The metrics of one evaluation of a layout run with one collection whose Kendall tau is `tau`
// (so its score, overall and kaggle selection are `tau` too); `opa` "null" as the writer spells
// a NaN.
std::string metrics_of(double tau, const std::string& opa = "0.6") {
    const std::string t = format_number(tau);
    return str(R"({"overall":)", t, R"(,"collections":[{"collection":"layout:xla:random",)",
               R"("task":"layout","num_graphs":2,"num_uninformative":0,"kendall_tau":)", t,
               R"(,"kendall_raw":)", t, R"(,"opa":)", opa,
               R"(,"slowdown_1":0.2,"slowdown_5":0.0,"slowdown_10":0.0,"score":)", t, "}]}");
}

std::string train_line(int step) {
    return str(R"({"phase":"train","step":)", step, R"(,"epoch":1,"loss":1.3,"lr":0.001,)",
               R"("steps_per_s":200.0,"peak_rss_mb":35.0})", "\n");
}

std::string eval_line(int step, double tau, const char* phase = "eval") {
    return str(R"({"phase":")", phase, R"(","step":)", step, R"(,"selection":)", format_number(tau),
               R"(,"metrics":)", metrics_of(tau), "}\n");
}

std::string baseline_line() {
    return str(R"({"phase":"random_baseline","seeds":10,"metrics":)", metrics_of(0.01), "}\n");
}

// report.json as train writes it at the end of a run of `steps` steps.
std::string report_json(int steps, int best_step, double best, const std::string& final_metrics) {
    return str(R"({"steps":)", steps, R"(,"stopped_early":false,"steps_per_s":200.0,)",
               R"("best_step":)", best_step, R"(,"best_selection":)", format_number(best),
               R"(,"peak_rss_mb":35.0,"world_size":1,"final":)", final_metrics,
               R"(,"random_baseline":)", metrics_of(0.01), "}\n");
}

// The run of the trial: evaluations at step 10 (-0.2) and at its last step 20 (0.1, the best).
const std::string kLog =
    train_line(10) + eval_line(10, -0.2) + train_line(20) + eval_line(20, 0.1) + baseline_line();
const std::string kReport = report_json(20, 20, 0.1, metrics_of(0.1));

fs::path run_dir(const std::string& name, const std::string& log, const std::string& report) {
    const fs::path dir = test::scratch_dir(name);
    test::write_file_text(dir / "config.toml", "[train]\nsteps = 20\n");
    test::write_file_text(dir / "metrics.jsonl", log);
    test::write_file_text(dir / "report.json", report);
    return dir;
}

// The message of load_run's refusal of `report` beside `log` ("" when it loads).
std::string refusal(const std::string& log, const std::string& report,
                    std::vector<std::string>* notes = nullptr) {
    const fs::path dir = run_dir("hostile_report_summary", log, report);
    try {
        const RunRecords r = load_run(dir, "kaggle", Task::kLayout);
        if (notes) *notes = r.notes;
    } catch (const Error& e) {
        return e.what();
    }
    return "";
}

std::string edited(const std::string& report, const std::string& from, const std::string& to) {
    return test::replaced_first(report, from, to);
}

}  // namespace

TEST_SUITE("hostile") {
    TEST_CASE("report refuses a best_selection no evaluation has when best_step is absent") {
        REQUIRE(refusal(kLog, kReport).empty());
        const std::string no_step = edited(edited(kReport, R"("best_step":20,)", ""),
                                           R"("best_selection":0.1)", R"("best_selection":0.9)");
        const std::string msg = refusal(kLog, no_step);
        CHECK(test::contains_text(msg,
                                  "report.json: \"best_selection\" is 0.9, but the highest "
                                  "selection in metrics.jsonl is 0.1 (step(s) 20; "));
        // Without best_step, the log's best selection is the one report.json may name.
        CHECK(refusal(kLog, edited(kReport, R"("best_step":20,)", "")).empty());
    }

    TEST_CASE(
        "report refuses a best_step and best_selection of an evaluation that is not the best") {
        // Step 10's own selection: consistent with its step, but step 20's is higher.
        const std::string earlier =
            edited(edited(kReport, R"("best_step":20)", R"("best_step":10)"),
                   R"("best_selection":0.1)", R"("best_selection":-0.2)");
        CHECK(test::contains_text(refusal(kLog, earlier),
                                  "report.json: \"best_selection\" is -0.2, but the highest "
                                  "selection in metrics.jsonl is 0.1 (step(s) 20; best.ckpt.h5 "
                                  "is the model of the evaluation with the highest selection"));
        const std::string step_only =
            edited(edited(kReport, R"("best_step":20)", R"("best_step":10)"),
                   R"(,"best_selection":0.1)", "");
        CHECK(test::contains_text(refusal(kLog, step_only),
                                  "report.json: \"best_step\" is 10, but the highest selection in "
                                  "metrics.jsonl, 0.1, is at step(s) 20"));
        // A fine-tuning evaluation counts like the others: here it is the best.
        const std::string tuned = train_line(10) + eval_line(10, -0.2) + train_line(20) +
                                  eval_line(20, 0.1) + eval_line(22, 0.3, "finetune_eval") +
                                  baseline_line();
        CHECK(test::contains_text(
            refusal(tuned, report_json(22, 20, 0.1, metrics_of(0.3))),
            "\"best_selection\" is 0.1, but the highest selection in metrics.jsonl is 0.3 "
            "(step(s) 22;"));
        CHECK(refusal(tuned, report_json(22, 22, 0.3, metrics_of(0.3))).empty());
        // On a tie either step may be the best (eval.select_later_on_ties, changeable on resume).
        const std::string tie = train_line(10) + eval_line(10, 0.1) + train_line(20) +
                                eval_line(20, 0.1) + baseline_line();
        CHECK(refusal(tie, report_json(20, 10, 0.1, metrics_of(0.1))).empty());
        CHECK(refusal(tie, report_json(20, 20, 0.1, metrics_of(0.1))).empty());
    }

    TEST_CASE("report refuses final metrics that differ from the run's last evaluation line") {
        // The trial's self-consistent edit: kendall_tau, score and overall all 0.5.
        CHECK(test::contains_text(
            refusal(kLog, report_json(20, 20, 0.1, metrics_of(0.5))),
            "report.json: \"final\" \"overall\" is 0.5, but the last evaluation line of "
            "metrics.jsonl (step 20, eval) has 0.1 (\"final\" is the metrics of the run's last "
            "evaluation)"));
        // An earlier evaluation's metrics.
        CHECK(test::contains_text(refusal(kLog, report_json(20, 20, 0.1, metrics_of(-0.2))),
                                  "\"final\" \"overall\" is -0.2, but the last evaluation line"));
        // A field the overall is not made of.
        const std::string slowdown = edited(kReport, R"("slowdown_1":0.2)", R"("slowdown_1":0.4)");
        CHECK(test::contains_text(refusal(kLog, slowdown),
                                  "report.json: \"final\" collections[0] \"slowdown_1\" is 0.4, "
                                  "but the last evaluation line of metrics.jsonl (step 20, eval) "
                                  "has 0.2"));
        CHECK(test::contains_text(refusal(kLog, edited(kReport, R"("opa":0.6,)", "")),
                                  "\"final\" collections[0] has no \"opa\", but the last "
                                  "evaluation line of metrics.jsonl (step 20, eval) has 0.6"));
        CHECK(test::contains_text(
            refusal(kLog, report_json(20, 20, 0.1, metrics_of(0.1, "null"))),
            "\"final\" collections[0] \"opa\" is null, but the last evaluation line"));
        CHECK(test::contains_text(
            refusal(kLog, report_json(20, 20, 0.1, R"({"overall":0.1,"collections":[]})")),
            "\"final\" lists 0 collection(s), but the last evaluation line of metrics.jsonl (step "
            "20, eval) has 1"));
        CHECK(test::contains_text(
            refusal(kLog, edited(kReport, "layout:xla:random", "layout:xla:default")),
            "\"final\" collections[0] is layout:xla:default (layout), but the last evaluation "
            "line of metrics.jsonl (step 20, eval) has layout:xla:random (layout) there"));
        // With fine-tuning, "final" is the finetune_eval line, not the eval before it.
        const std::string tuned = train_line(10) + eval_line(10, -0.2) + train_line(20) +
                                  eval_line(20, 0.1) + eval_line(22, 0.05, "finetune_eval") +
                                  baseline_line();
        CHECK(test::contains_text(refusal(tuned, report_json(22, 20, 0.1, metrics_of(0.1))),
                                  "\"final\" \"overall\" is 0.1, but the last evaluation line of "
                                  "metrics.jsonl (step 22, finetune_eval) has 0.05"));
        CHECK(refusal(tuned, report_json(22, 20, 0.1, metrics_of(0.05))).empty());
    }

    TEST_CASE("report notes and leaves out a summary the log does not hold") {
        std::vector<std::string> notes;
        // An evaluation beyond "steps" (a resume logging without train lines): not drawn.
        CHECK(refusal(kLog + eval_line(30, 0.2), kReport, &notes).empty());
        REQUIRE(notes.size() == 1);
        CHECK(test::contains_text(notes[0],
                                  "report.json: describes the run up to step 20, but "
                                  "metrics.jsonl runs to step 30 (a resume that has "
                                  "not ended?): its summary is not drawn"));
        // No evaluation line at all (a run's end logs one before report.json).
        CHECK(refusal(train_line(10) + train_line(20), kReport, &notes).empty());
        REQUIRE(notes.size() == 1);
        CHECK(test::contains_text(notes[0],
                                  "report.json: metrics.jsonl holds no evaluation line, "
                                  "but a run logs its last evaluation before it writes "
                                  "report.json (lines lost, or report.json edited?): "
                                  "its summary is not drawn"));
    }

    TEST_CASE("report draws the summary of a resumed, fine-tuned run whose log has two segments") {
        // Segment 1 ended at step 20 (its random_baseline dropped by the resume); segment 2
        // trained to 40, evaluated, fine-tuned to 42; the best is segment 1's, tied later.
        const std::string log = train_line(10) + eval_line(10, 0.1) + train_line(20) +
                                eval_line(20, 0.3) + eval_line(22, 0.2, "finetune_eval") +
                                train_line(30) + eval_line(30, 0.3) + train_line(40) +
                                eval_line(40, 0.25) + eval_line(42, 0.28, "finetune_eval") +
                                baseline_line();
        const std::string report = report_json(42, 30, 0.3, metrics_of(0.28));
        std::vector<std::string> notes;
        CHECK(refusal(log, report, &notes).empty());
        CHECK(notes.empty());
        ReportOptions opt;
        opt.run_dir = run_dir("report_summary_resumed", log, report);
        opt.selection_metric = "kaggle";
        const std::string html = render_report_html(opt, nullptr);
        CHECK(test::contains_text(html, "final overall score"));
        CHECK(test::contains_text(html, "0.280000"));
        CHECK(test::contains_text(html, "best selection metric"));
        CHECK_FALSE(test::contains_text(html, "not drawn"));
    }
}
