// Hostile inputs of `segrank report` on a run (ctest label `hostile`): an --eval JSON, report.json
// or metrics.jsonl holding a number no segrank command writes is refused naming the file (and
// line) and the field, before any page is rendered.
#include <doctest/doctest.h>

#include <optional>
#include <string>
#include <vector>

#include "gnn/core/check.h"
#include "report/report.h"
#include "report/run_checks.h"
#include "tests/support/test_paths.h"

using namespace segrank;
namespace fs = std::filesystem;

namespace {

const std::string kCollection =
    R"({"collection":"layout:xla:random","task":"layout","num_graphs":1,"num_uninformative":0,)"
    R"("kendall_tau":0.39,"kendall_raw":0.39,"opa":0.69,"slowdown_1":0.23,"slowdown_5":0.0,)"
    R"("slowdown_10":0.0,"score":0.39})";
const std::string kMetrics = R"({"overall":0.39,"collections":[)" + kCollection + "]}";
// As segrank evaluate --json writes it.
const std::string kEval =
    R"({"kind":"segrank evaluate","checkpoint":"run/best.ckpt.h5","graphs":[{"graph":"g1",)"
    R"("num_configs":12,"targets_constant":false,"kendall_tau":0.39,"kendall_raw":0.39,)"
    R"("opa":0.69,"slowdown_1":0.23,"slowdown_5":0.0,"slowdown_10":0.0}],"metrics":)" +
    kMetrics + "}\n";
// As segrank train writes them.
const std::string kTrain1 =
    R"({"phase":"train","step":5,"epoch":1,"loss":1.32,"lr":0.0025,"steps_per_s":230.8,)"
    R"("peak_rss_mb":30.3,"history_entries":131,"history_hits":0,"history_misses":64})";
const std::string kEval1 =
    R"({"phase":"eval","step":5,"selection":0.39,"metrics":)" + kMetrics + "}";
const std::string kTrain2 =
    R"({"phase":"train","step":10,"epoch":3,"loss":1.31,"lr":0.0001,"steps_per_s":176.3,)"
    R"("peak_rss_mb":35.0,"history_entries":185,"history_hits":45,"history_misses":91})";
// The evaluation train writes at its last step.
const std::string kEval2 =
    R"({"phase":"eval","step":10,"selection":0.39,"metrics":)" + kMetrics + "}";
const std::string kReport = R"({"steps":10,"stopped_early":false,"steps_per_s":175.9,)"
                            R"("best_step":10,"best_selection":0.39,"peak_rss_mb":35.0,)"
                            R"("world_size":1,"final":)" +
                            kMetrics + R"(,"random_baseline":)" + kMetrics + "}\n";

// kEval as `segrank evaluate --checkpoint DIR --json` writes it (its "checkpoint" DIR's).
std::string eval_of(const fs::path& dir) {
    return test::replaced_first(kEval, "run/best.ckpt.h5", (dir / "best.ckpt.h5").string());
}

fs::path good_run(const std::string& name) {
    const fs::path dir = test::scratch_dir(name);
    test::write_file_text(dir / "config.toml", "[train]\nsteps = 10\n");
    test::write_file_text(dir / "metrics.jsonl",
                          kTrain1 + "\n" + kEval1 + "\n" + kTrain2 + "\n" + kEval2 + "\n");
    test::write_file_text(dir / "report.json", kReport);
    test::write_file_text(dir / "best.ckpt.h5", "");  // the checkpoint the evaluation records
    test::write_file_text(dir / "eval.json", eval_of(dir));
    return dir;
}

// The message of render_report_html's refusal ("" when it renders).
std::string refusal(const fs::path& dir, bool with_eval, const std::string& metric = "",
                    bool other_run = false, std::vector<std::string>* notes = nullptr,
                    std::optional<Task> task = std::nullopt) {
    ReportOptions opt;
    opt.run_dir = dir;
    opt.task = task;
    if (with_eval) opt.eval_json = dir / "eval.json";
    opt.selection_metric = metric;
    opt.eval_of_other_run = other_run;
    try {
        (void)render_report_html(opt, notes);
    } catch (const Error& e) {
        return e.what();
    }
    return "";
}

}  // namespace

TEST_SUITE("hostile") {
    TEST_CASE("report --eval refuses a Kendall tau, slowdown or count evaluate cannot write") {
        const fs::path dir = good_run("hostile_report_eval_ranges");
        CHECK(refusal(dir, true).empty());
        const std::string file = (dir / "eval.json").string();
        const struct {
            std::string from, to, expected;
        } cases[] = {
            {"\"kendall_tau\":0.39,\"kendall_raw\"", "\"kendall_tau\":9,\"kendall_raw\"",
             file + ": graphs[0] \"kendall_tau\" is 9, expected a number in [-1, 1] or null"},
            {"\"kendall_tau\":0.39,\"kendall_raw\"", "\"kendall_tau\":-5,\"kendall_raw\"",
             "\"kendall_tau\" is -5, expected a number in [-1, 1] or null"},
            {"\"kendall_tau\":0.39,\"kendall_raw\"", "\"kendall_tau\":\"x\",\"kendall_raw\"",
             "graphs[0] \"kendall_tau\" is \"x\", expected a number in [-1, 1] or null"},
            {"\"slowdown_1\":0.23", "\"slowdown_1\":-3",
             "graphs[0] \"slowdown_1\" is -3, expected a number >= 0 or null"},
            {"\"num_configs\":12", "\"num_configs\":-12",
             "graphs[0] \"num_configs\" is -12, expected an integer >= 0"},
            {"\"num_configs\":12", "\"num_configs\":12.5",
             "graphs[0] \"num_configs\" is 12.5, expected an integer >= 0"},
            {"\"overall\":0.39", "\"overall\":3", file + ": metrics \"overall\" is 3"},
        };
        for (const auto& c : cases) {
            test::write_file_text(dir / "eval.json",
                                  test::replaced_first(eval_of(dir), c.from, c.to));
            const std::string msg = refusal(dir, true);
            INFO(c.to, " -> ", msg);
            CHECK(msg.find(c.expected) != std::string::npos);
        }
    }

    TEST_CASE("report refuses report.json and metrics.jsonl numbers train cannot write") {
        const fs::path dir = good_run("hostile_report_run_ranges");
        CHECK(refusal(dir, false).empty());
        const std::string rep = (dir / "report.json").string();
        test::write_file_text(
            dir / "report.json",
            test::replaced_first(kReport, "\"kendall_tau\":0.39", "\"kendall_tau\":9"));
        CHECK(refusal(dir, false).find(rep + ": final collections[0] \"kendall_tau\" is 9") !=
              std::string::npos);
        test::write_file_text(dir / "report.json", test::replaced_first(kReport, "\"world_size\":1",
                                                                        "\"world_size\":0"));
        CHECK(refusal(dir, false).find("\"world_size\" is 0, expected an integer >= 1") !=
              std::string::npos);
        test::write_file_text(dir / "report.json", kReport);

        const std::string met = (dir / "metrics.jsonl").string();
        auto lines = [&](const std::string& a, const std::string& b, const std::string& c) {
            test::write_file_text(dir / "metrics.jsonl",
                                  a + "\n" + b + "\n" + c + "\n" + kEval2 + "\n");
        };
        lines(kTrain1, test::replaced_first(kEval1, "\"selection\":0.39", "\"selection\":7.5"),
              kTrain2);
        CHECK(refusal(dir, false).find(met + ":2: \"selection\" is 7.5, expected <= 1") !=
              std::string::npos);
        // The run's eval.metric gives the range; unknown, the selection is the value of one of
        // the metrics on the line's collections (-0.23: minus their slowdown_1).
        lines(kTrain1, test::replaced_first(kEval1, "\"selection\":0.39", "\"selection\":-0.23"),
              kTrain2);
        CHECK(refusal(dir, false).empty());
        CHECK(refusal(dir, false, "kendall").find("eval.metric = kendall)") != std::string::npos);
        lines(kTrain1, test::replaced_first(kEval1, "\"selection\":0.39", "\"selection\":-2"),
              kTrain2);
        CHECK(refusal(dir, false)
                  .find(met + ":2: \"selection\" is -2, the value of no "
                              "eval.metric on the line's collections (kaggle "
                              "0.39, kendall 0.39, opa 0.69") != std::string::npos);
        lines(kTrain1, kEval1, test::replaced_first(kTrain2, "\"loss\":1.31", "\"loss\":-3"));
        CHECK(
            refusal(dir, false).find(met + ":3: \"loss\" is -3, expected a number >= 0 or null") !=
            std::string::npos);
        lines(test::replaced_first(kTrain1, "\"lr\":0.0025", "\"lr\":-4"), kEval1, kTrain2);
        CHECK(refusal(dir, false).find(met + ":1: \"lr\" is -4, expected a number >= 0 or null") !=
              std::string::npos);
        lines(kTrain1, test::replaced_first(kEval1, "\"kendall_tau\":0.39", "\"kendall_tau\":9"),
              kTrain2);
        CHECK(refusal(dir, false).find(met + ":2: metrics collections[0] \"kendall_tau\" is 9") !=
              std::string::npos);
        lines(kTrain1, test::replaced_first(kEval1, "\"num_graphs\":1", "\"num_graphs\":\"1\""),
              kTrain2);
        CHECK(refusal(dir, false).find("\"num_graphs\" is \"1\", expected an integer >= 0") !=
              std::string::npos);
    }

    TEST_CASE(
        "report bounds a kaggle selection by the run's task, not by the collections the line "
        "lists") {
        const fs::path dir = good_run("hostile_report_run_layout_kaggle");
        const std::string met = (dir / "metrics.jsonl").string();
        auto lines = [&](const std::string& a, const std::string& b, const std::string& c) {
            test::write_file_text(dir / "metrics.jsonl", a + "\n" + b + "\n" + c + "\n");
        };
        // Lines edited here are checked alone: a summary that names no best evaluation.
        const std::string report = test::replaced_first(
            test::replaced_first(kReport, "\"best_step\":10,", ""), "\"best_selection\":0.39,", "");
        test::write_file_text(dir / "report.json", report);
        auto layout = [&](const std::string& metric = "kaggle") {
            return refusal(dir, false, metric, false, nullptr, Task::kLayout);
        };
        // The kaggle score of a layout run is a Kendall tau: below -1 is impossible, whatever the
        // line's own "metrics" say (none, no collections, a collection relabelled tile).
        const std::string low =
            test::replaced_first(kEval1, "\"selection\":0.39", "\"selection\":-7");
        const std::string expected =
            met + ":2: \"selection\" is -7, expected [-1, 1] (the Kendall tau of a layout run)";
        for (const std::string& line :
             {low, test::replaced_first(low, kMetrics, R"({"overall":null,"collections":[]})"),
              test::replaced_first(low, ",\"metrics\":" + kMetrics, "")}) {
            lines(kTrain1, line, kTrain2);
            INFO(line);
            CHECK(layout().find(expected) != std::string::npos);
            // Neither config.toml nor a checkpoint tells the task: the one task the run's
            // evaluations name (here report.json's "final") does.
            CHECK(refusal(dir, false, "kaggle").find(expected) != std::string::npos);
        }
        // Nothing names a task: a kaggle score is at most 1, the bound of either task.
        test::write_file_text(
            dir / "report.json",
            test::replaced_first(
                report, ",\"final\":" + kMetrics + ",\"random_baseline\":" + kMetrics, ""));
        lines(kTrain1, test::replaced_first(low, ",\"metrics\":" + kMetrics, ""), kTrain2);
        CHECK(refusal(dir, false, "kaggle").empty());
        CHECK(refusal(dir, false, "kendall").find("\"selection\" is -7, expected [-1, 1]") !=
              std::string::npos);
        test::write_file_text(dir / "report.json", report);
        // The line's selection is the mean of its collections' selected metric.
        lines(kTrain1, test::replaced_first(kEval1, "\"selection\":0.39", "\"selection\":0.9"),
              kTrain2);
        CHECK(layout().find(met + ":2: \"selection\" is 0.9, expected 0.39 (the mean of the "
                                  "collections' \"score\": eval.metric = kaggle)") !=
              std::string::npos);
        CHECK(layout("opa").find("\"selection\" is 0.9, expected 0.69 (the mean of the "
                                 "collections' \"opa\"") != std::string::npos);
        CHECK(layout("slowdown_1").find("\"selection\" is 0.9, expected <= 0") !=
              std::string::npos);
        lines(kTrain1, test::replaced_first(kEval1, "\"selection\":0.39", "\"selection\":-0.23"),
              kTrain2);
        CHECK(layout("slowdown_1").find(met) == std::string::npos);  // report.json aside
        // A layout collection's score is its kendall_tau.
        lines(kTrain1, test::replaced_first(kEval1, "\"score\":0.39", "\"score\":0.38"), kTrain2);
        CHECK(layout().find("\"score\" is 0.38, expected 0.39 (the kendall_tau of a layout "
                            "collection)") != std::string::npos);
        lines(kTrain1,
              test::replaced_first(kEval1, "\"selection\":0.39", "\"selection\":-1.0000001"),
              kTrain2);
        CHECK_FALSE(layout().empty());
        // A collection of the other task is not one of the run's.
        lines(kTrain1, test::replaced_first(kEval1, "\"task\":\"layout\"", "\"task\":\"tile\""),
              kTrain2);
        CHECK(layout().find(met + ":2: metrics collections[0] \"task\" is \"tile\", expected "
                                  "\"layout\"") != std::string::npos);
        // overall is the mean of the collections' scores, and in [-1, 1] for a layout run even
        // when a collection has no score.
        lines(kTrain1, test::replaced_first(kEval1, "\"overall\":0.39", "\"overall\":-0.5"),
              kTrain2);
        CHECK(layout().find("\"overall\" is -0.5, expected the mean of the collections' "
                            "scores, 0.39") != std::string::npos);
        lines(
            kTrain1,
            test::replaced_first(test::replaced_first(kEval1, "\"overall\":0.39", "\"overall\":-7"),
                                 "\"score\":0.39", "\"score\":null"),
            kTrain2);
        CHECK(layout().find("\"overall\" is -7, expected a number in [-1, 1]") !=
              std::string::npos);
        lines(kTrain1, kEval1, kTrain2);
        CHECK(layout().empty());
        test::write_file_text(
            dir / "report.json",
            test::replaced_first(kReport, "\"best_selection\":0.39", "\"best_selection\":-7"));
        CHECK(layout().find("\"best_selection\" is -7, expected [-1, 1]") != std::string::npos);
    }

    TEST_CASE("a tile run's kaggle selection is 1 - slowdown@5: any number up to 1") {
        const Json low = Json::parse(R"({"selection":-7,"best":1.5})");
        CHECK_NOTHROW(check_selection_json(low, "kaggle", Task::kTile, "f:2:", "selection"));
        CHECK_THROWS_WITH_AS(
            check_selection_json(low, "kaggle", Task::kLayout, "f:2:", "selection"),
            doctest::Contains("f:2: \"selection\" is -7, expected [-1, 1]"), Error);
        CHECK_THROWS_WITH_AS(
            check_selection_json(low, "kaggle", Task::kTile, "f:2:", "best"),
            doctest::Contains("\"best\" is 1.5, expected <= 1 (1 - slowdown@5 of a tile run)"),
            Error);
        CHECK_THROWS_WITH_AS(check_selection_json(low, "opa", Task::kTile, "f:2:", "selection"),
                             doctest::Contains("expected [0, 1] (a fraction of ordered pairs)"),
                             Error);
    }

    TEST_CASE(
        "report drops a report.json an unfinished resume outran, and refuses a best_selection "
        "that no evaluation at its best_step had") {
        const fs::path dir = good_run("hostile_report_stale_summary");
        const std::string later =
            test::replaced_first(test::replaced_first(kTrain2, "\"step\":10", "\"step\":40"),
                                 "\"epoch\":3", "\"epoch\":9");
        test::write_file_text(dir / "metrics.jsonl", kTrain1 + "\n" + kEval1 + "\n" + kTrain2 +
                                                         "\n" + kEval2 + "\n" + later + "\n");
        std::vector<std::string> notes;
        CHECK(refusal(dir, false, "kaggle", false, &notes).empty());
        bool noted = false;
        for (const auto& n : notes)
            noted = noted || n.find(
                                 "describes the run up to step 10, but metrics.jsonl runs to "
                                 "step 40") != std::string::npos;
        CHECK(noted);
        test::write_file_text(dir / "metrics.jsonl",
                              kTrain1 + "\n" + kEval1 + "\n" + kTrain2 + "\n" + kEval2 + "\n");
        test::write_file_text(
            dir / "report.json",
            test::replaced_first(
                test::replaced_first(kReport, "\"best_step\":10", "\"best_step\":5"),
                "\"best_selection\":0.39", "\"best_selection\":0.9"));
        CHECK(refusal(dir, false, "kaggle")
                  .find("\"best_selection\" is 0.9, but the evaluations "
                        "of its best_step 5 in metrics.jsonl have "
                        "selection 0.39 (eval)") != std::string::npos);
        // A best_step without an evaluation, or steps beyond every line (trial 15 F-3).
        test::write_file_text(dir / "report.json",
                              test::replaced_first(kReport, "\"best_step\":10", "\"best_step\":7"));
        CHECK(refusal(dir, false, "kaggle")
                  .find("\"best_step\" is 7, but metrics.jsonl has no evaluation at that step "
                        "(evaluations at steps 5, 10)") != std::string::npos);
        test::write_file_text(dir / "report.json",
                              test::replaced_first(kReport, "\"steps\":10", "\"steps\":999"));
        notes.clear();
        CHECK(refusal(dir, false, "kaggle", false, &notes).empty());
        noted = false;
        for (const auto& n : notes)
            noted = noted || n.find(
                                 "describes the run up to step 999, but metrics.jsonl ends at "
                                 "step 10") != std::string::npos;
        CHECK(noted);
        // best_step -1 beside evaluations; an emptied or cut metrics.jsonl (trial 16).
        test::write_file_text(dir / "report.json", test::replaced_first(kReport, "\"best_step\":10",
                                                                        "\"best_step\":-1"));
        CHECK(refusal(dir, false, "kaggle")
                  .find("\"best_step\" is -1 (no evaluation), but metrics.jsonl has 2 "
                        "evaluation line(s)") != std::string::npos);
        test::write_file_text(dir / "report.json", kReport);
        for (const std::string& log : {std::string(), kTrain1.substr(0, 20)}) {
            test::write_file_text(dir / "metrics.jsonl", log);
            notes.clear();
            CHECK(refusal(dir, false, "kaggle", false, &notes).empty());
            noted = false;
            for (const auto& n : notes)
                noted = noted || n.find(
                                     "describes the run up to step 10, but metrics.jsonl holds "
                                     "no whole line") != std::string::npos;
            CHECK(noted);
        }
    }

    TEST_CASE("report refuses a metrics.jsonl whose steps go back") {
        const fs::path dir = good_run("hostile_report_steps_back");
        const std::string met = (dir / "metrics.jsonl").string();
        test::write_file_text(dir / "metrics.jsonl",
                              kTrain1 + "\n" + kEval1 + "\n" +
                                  test::replaced_first(kTrain2, "\"step\":10", "\"step\":2") +
                                  "\n");
        CHECK(refusal(dir, false).find(met + ":3: field \"step\" is 2, before step 5 of line 2") !=
              std::string::npos);
        test::write_file_text(dir / "metrics.jsonl", kTrain1 + "\n" + kTrain1 + "\n");
        CHECK(refusal(dir, false).find(met + ":2: field \"step\" is 5, expected above 5") !=
              std::string::npos);
    }

    TEST_CASE("report --eval refuses another run's evaluation naming both, unless asked") {
        const fs::path mine = good_run("hostile_report_eval_other_mine");
        const fs::path other = good_run("hostile_report_eval_other_theirs");
        const std::string ev = (mine / "eval.json").string();
        test::write_file_text(mine / "eval.json", eval_of(other));
        const std::string msg = refusal(mine, true);
        INFO(msg);
        CHECK(msg.find(ev + ": \"checkpoint\" is \"" + (other / "best.ckpt.h5").string() +
                       "\", not a checkpoint of " + mine.string()) != std::string::npos);
        CHECK(msg.find("--eval-of-other-run") != std::string::npos);
        std::vector<std::string> notes;
        CHECK(refusal(mine, true, "", true, &notes).empty());
        bool noted = false;
        for (const auto& n : notes) noted = noted || n.find("drawn as asked") != std::string::npos;
        CHECK(noted);
        // Recorded relative to another working directory: the run's own file of that name.
        test::write_file_text(
            mine / "eval.json",
            test::replaced_first(kEval, "run/best.ckpt.h5",
                                 "elsewhere/" + mine.filename().string() + "/best.ckpt.h5"));
        CHECK(refusal(mine, true).empty());
        test::write_file_text(
            mine / "eval.json",
            test::replaced_first(kEval, "run/best.ckpt.h5", "elsewhere/run/best.ckpt.h5"));
        CHECK_FALSE(refusal(mine, true).empty());
    }

    TEST_CASE("report --eval knows a renamed run's own evaluation by the checkpoint's identity") {
        const fs::path dir = good_run("hostile_report_eval_renamed");
        const std::string id = "xxh3_64:0123456789abcdef";
        // Evaluated as runs/old/best.ckpt.h5, then runs/old was renamed: the path names neither.
        const std::string moved = test::replaced_first(
            kEval, R"("checkpoint":"run/best.ckpt.h5")",
            R"("checkpoint":"runs/old/best.ckpt.h5","checkpoint_id":")" + id + "\"");
        test::write_file_text(dir / "eval.json", moved);
        auto render = [&](const std::vector<std::string>& ids) {
            ReportOptions opt;
            opt.run_dir = dir;
            opt.eval_json = dir / "eval.json";
            opt.run_checkpoint_ids = ids;
            try {
                (void)render_report_html(opt, nullptr);
            } catch (const Error& e) {
                return std::string(e.what());
            }
            return std::string();
        };
        CHECK(render({"xxh3_64:1111111111111111", id}).empty());
        // Another model (one the folder held before a retrain, another run's), whatever its path.
        CHECK(render({"xxh3_64:1111111111111111"})
                  .find("\"checkpoint_id\" is \"" + id + "\", the identity of none of") !=
              std::string::npos);
        // best.ckpt.h5 and last.ckpt.h5 of one model: its id is listed once.
        CHECK(render({"xxh3_64:1111111111111111", "xxh3_64:2222222222222222",
                      "xxh3_64:1111111111111111"})
                  .find("'s checkpoints (xxh3_64:1111111111111111, xxh3_64:2222222222222222): ") !=
              std::string::npos);
        test::write_file_text(
            dir / "eval.json",
            test::replaced_first(moved, "runs/old", "x/" + dir.filename().string()));
        CHECK(render({"xxh3_64:1111111111111111"}).find("it evaluated another model") !=
              std::string::npos);
        test::write_file_text(dir / "eval.json", moved);
        // The writer of "evaluated" writes checkpoint_id too: without it, the model is unknown.
        test::write_file_text(dir / "eval.json",
                              test::replaced_first(eval_of(dir), R"("graphs":)",
                                                   R"("evaluated":"split 'valid'","graphs":)"));
        CHECK(render({id}).find("records \"evaluated\" but no \"checkpoint_id\"") !=
              std::string::npos);
        test::write_file_text(dir / "eval.json", moved);
        // A run without readable checkpoints: the recorded path decides.
        CHECK(render({}).find("not a checkpoint of") != std::string::npos);
        test::write_file_text(dir / "eval.json",
                              test::replaced_first(moved, "\"" + id + "\"", "17"));
        CHECK(render({id}).find("\"checkpoint_id\" is 17, expected a checkpoint's identity") !=
              std::string::npos);
    }
}
