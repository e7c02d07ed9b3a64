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

TEST_SUITE("hostile") {
    TEST_CASE(
        "segrank report refuses a report.json world_size or stopped_early and a config.toml key "
        "that the run's checkpoint and config contradict, and draws throughput and memory from "
        "metrics.jsonl") {
        const fs::path dir = scratch_dir("report_summary_facts");
        TinyLayoutSpec spec;
        spec.valid_graphs = 1;
        write_tiny_layout_collection(dir / "data", spec);
        const fs::path run = dir / "run";
        const auto trained = run_segrank_in_source(
            "train --config configs/tiny.toml --set train.steps=4 --set train.eval_every=2 --set "
            "train.log_every=2 --set train.run_dir=" +
                sq(run.string()) + " --set data.root=" + sq((dir / "data").string()),
            1);
        INFO(trained.output);
        REQUIRE(trained.exit_code == 0);
        const std::string report = read_file_text(run / "report.json");
        const std::string config = read_file_text(run / "config.toml");
        // Replaces the JSON value after `key` (up to the next ',') in report.json.
        auto edit_report = [&](const std::string& key, const std::string& value) {
            const auto at = report.find("\"" + key + "\":");
            REQUIRE(at != std::string::npos);
            const auto from = at + key.size() + 3, to = report.find(',', from);
            write_file_text(run / "report.json",
                            report.substr(0, from) + value + report.substr(to));
        };
        const struct {
            std::string key, value, message;
        } cases[] = {
            {"world_size", "8",
             "report.json: \"world_size\" is 8, but " + (run / "last.ckpt.h5").string() +
                 " was written by 1 rank(s) (/extra/world_size)"},
            {"stopped_early", "true",
             "report.json: \"stopped_early\" is true, but config.toml has train.patience = 0"}};
        for (const auto& c : cases) {
            edit_report(c.key, c.value);
            const auto r = run_segrank_in_source("report " + sq(run.string()), 1);
            INFO(c.key, ": ", r.output);
            CHECK(r.exit_code == 1);
            CHECK(contains_text(r.output, c.message));
            CHECK_FALSE(fs::exists(run / "report.html"));
        }
        // report.json's random_baseline is the log's random_baseline line.
        {
            const auto rb = report.find("\"opa\":", report.find("\"random_baseline\":"));
            REQUIRE(rb != std::string::npos);
            const auto to = report.find(',', rb + 6);
            write_file_text(run / "report.json",
                            report.substr(0, rb + 6) + "0.01" + report.substr(to));
            const auto rr = run_segrank_in_source("report " + sq(run.string()), 1);
            INFO(rr.output);
            CHECK(rr.exit_code == 1);
            CHECK(contains_text(rr.output,
                                "report.json: \"random_baseline\" collections[0] \"opa\" "
                                "is 0.01, but the random_baseline line of metrics.jsonl has "));
        }
        // report.json's throughput, memory and stopped_early are not drawn; without last.ckpt.h5
        // its world_size is noted as not checked.
        edit_report("steps_per_s", "1e9");
        auto r = run_segrank_in_source("report " + sq(run.string()), 1);
        INFO(r.output);
        REQUIRE(r.exit_code == 0);
        const std::string html = read_file_text(run / "report.html");
        CHECK_FALSE(contains_text(html, "steps / s"));
        CHECK_FALSE(contains_text(html, "stopped early"));
        CHECK_FALSE(contains_text(html, "peak RSS"));
        CHECK_FALSE(contains_text(html, "1000000000"));
        fs::rename(run / "last.ckpt.h5", dir / "last.ckpt.h5");
        r = run_segrank_in_source("report " + sq(run.string()), 1);
        INFO(r.output);
        CHECK(r.exit_code == 0);
        CHECK(contains_text(r.output, "report.json: \"world_size\" is not checked ("));
        fs::rename(dir / "last.ckpt.h5", run / "last.ckpt.h5");
        write_file_text(run / "report.json", report);
        fs::remove(run / "report.html");
        // config.toml edited after training, in a key a resume cannot change.
        const auto h = config.find("\nhidden = ");
        REQUIRE(h != std::string::npos);
        const auto end = config.find_first_of(" \n", h + 10);
        write_file_text(run / "config.toml", config.substr(0, h + 10) + "999" + config.substr(end));
        r = run_segrank_in_source("report " + sq(run.string()), 1);
        INFO(r.output);
        CHECK(r.exit_code == 1);
        CHECK(
            contains_text(r.output, "config.toml: model.hidden = 999, but the run's checkpoint "));
        CHECK(contains_text(r.output, "(config.toml was edited after training: restore it)"));
        CHECK_FALSE(fs::exists(run / "report.html"));
        // A key a resume may change, in a finished run: last.ckpt.h5 was written at its end with
        // config.toml's values.
        const auto st = config.find("\nsteps = ");
        REQUIRE(st != std::string::npos);
        const auto st_end = config.find_first_of(" \n", st + 9);
        write_file_text(run / "config.toml",
                        config.substr(0, st + 9) + "2" + config.substr(st_end));
        r = run_segrank_in_source("report " + sq(run.string()), 1);
        INFO(r.output);
        CHECK(r.exit_code == 1);
        CHECK(contains_text(r.output, "config.toml: train.steps = 2, but the run's checkpoint "));
        CHECK(contains_text(r.output,
                            ", written at the run's end, was trained with train.steps = 4"));
    }

    TEST_CASE(
        "segrank report holds report.json's best step to best.ckpt.h5, notes a missing best "
        "checkpoint or an edited run_dir, and refuses an lr above optim.lr") {
        const fs::path dir = scratch_dir("report_summary_best");
        TinyLayoutSpec spec;
        spec.valid_graphs = 1;
        write_tiny_layout_collection(dir / "data", spec);
        const fs::path run = dir / "run", other = dir / "other";
        const std::string common =
            " --set train.eval_every=2 --set train.log_every=2 --set "
            "data.root=" +
            sq((dir / "data").string());
        auto train = [&](const std::string& args) {
            const auto t = run_segrank_in_source(args + common, 1);
            INFO(t.output);
            REQUIRE(t.exit_code == 0);
        };
        train("train --config configs/tiny.toml --set train.steps=2 --set train.run_dir=" +
              sq(run.string()));
        fs::copy_file(run / "last.ckpt.h5", dir / "step2.ckpt.h5");  // best_step 2 at step 2
        train("train --resume " + sq(run.string()) + " --set train.steps=6");
        train(
            "train --config configs/tiny.toml --set train.steps=6 --set sampling.seed=5 "
            "--set train.run_dir=" +
            sq(other.string()));
        check_report_draws_summary(run);
        const std::string text = read_file_text(run / "report.json");
        const auto bs = text.find("\"best_step\":");
        REQUIRE(bs != std::string::npos);
        const int best_step = std::stoi(text.substr(bs + 12));
        const fs::path best = run / "best.ckpt.h5", keep = dir / "best.ckpt.h5";
        fs::copy_file(best, keep);
        auto report = [&](int exit_code) {
            fs::remove(run / "report.html");
            const auto r = run_segrank_in_source("report " + sq(run.string()), 1);
            INFO(r.output);
            CHECK(r.exit_code == exit_code);
            CHECK(fs::exists(run / "report.html") == (exit_code == 0));
            return r.output;
        };
        // A checkpoint of another step of this run as best.ckpt.h5 (the one whose step is not
        // the best step).
        fs::copy_file(best_step == 2 ? run / "last.ckpt.h5" : dir / "step2.ckpt.h5", best,
                      fs::copy_options::overwrite_existing);
        CHECK(contains_text(report(1), (run / "report.json").string() + ": \"best_step\" is " +
                                           std::to_string(best_step) + ", but " + best.string() +
                                           ", the model of the best evaluation, is at step "));
        // Another run's best checkpoint.
        fs::copy_file(other / "best.ckpt.h5", best, fs::copy_options::overwrite_existing);
        CHECK(contains_text(report(1), "config.toml: sampling.seed = 0, but " + best.string() +
                                           " was trained with sampling.seed = 5"));
        // No best checkpoint: drawn with a note.
        fs::remove(best);
        CHECK(contains_text(report(0), ", the model of that evaluation, is absent"));
        fs::copy_file(keep, best);
        // train.run_dir edited in a finished run: drawn with a note.
        const std::string config = read_file_text(run / "config.toml");
        const auto rd = config.find("run_dir = \"");
        REQUIRE(rd != std::string::npos);
        write_file_text(run / "config.toml",
                        config.substr(0, rd + 11) + "/elsewhere" + config.substr(rd + 11));
        CHECK(contains_text(report(0), "config.toml: train.run_dir = \"/elsewhere"));
        write_file_text(run / "config.toml", config);
        // A learning rate above optim.lr, the schedule's peak.
        const std::string log = read_file_text(run / "metrics.jsonl");
        const auto lr = log.find("\"lr\":");
        REQUIRE(lr != std::string::npos);
        write_file_text(run / "metrics.jsonl",
                        log.substr(0, lr + 5) + "7.5" + log.substr(log.find(',', lr)));
        CHECK(contains_text(report(1),
                            "metrics.jsonl: the train line of step 2 has lr 7.5, but "
                            "config.toml has optim.lr = "));
        // An lr within the bound that the schedule of its part does not give (the resumed part,
        // steps 2..6): the train line of step 4.
        const auto t4 = log.find("{\"phase\":\"train\",\"step\":4,");
        REQUIRE(t4 != std::string::npos);
        const auto lr4 = log.find("\"lr\":", t4);
        write_file_text(run / "metrics.jsonl",
                        log.substr(0, lr4 + 5) + "1e-9" + log.substr(log.find(',', lr4)));
        CHECK(contains_text(report(1),
                            "metrics.jsonl: the train line of step 4 has lr 1e-09, "
                            "but the schedule (optim.lr = "));
        // An evaluation moved off the part's eval_every (2) and total_steps (6).
        const auto e4 = log.find("{\"phase\":\"eval\",\"step\":4,");
        REQUIRE(e4 != std::string::npos);
        write_file_text(run / "metrics.jsonl", log.substr(0, e4 + 23) + "5" + log.substr(e4 + 24));
        CHECK(contains_text(report(1),
                            "metrics.jsonl: the eval line of step 5 is not an "
                            "evaluation step of the schedule line of step 2"));
        // A train line removed from the middle of the resumed part: drawn with a note.
        const auto t4_end = log.find('\n', t4);
        write_file_text(run / "metrics.jsonl", log.substr(0, t4) + log.substr(t4_end + 1));
        CHECK(contains_text(report(0),
                            "metrics.jsonl: no train line at step(s) 4, which the "
                            "schedule line of step 2 (log_every 2) logs before its "
                            "last train line"));
        // The last train line of the first part (steps 0..2, resumed at its end): a note too.
        const auto t2 = log.find("{\"phase\":\"train\",\"step\":2,");
        REQUIRE(t2 != std::string::npos);
        write_file_text(run / "metrics.jsonl",
                        log.substr(0, t2) + log.substr(log.find('\n', t2) + 1));
        CHECK(contains_text(report(0),
                            "metrics.jsonl: no train line at step(s) 2, which the "
                            "schedule line of step 0 (log_every 2) logs before the "
                            "next part starts at step 2"));
        // Without its schedule lines the log is drawn with a note.
        std::string unscheduled;
        for (size_t at = 0, end; at < log.size(); at = end + 1) {
            end = log.find('\n', at);
            if (log.compare(at, 19, "{\"phase\":\"schedule\"") != 0)
                unscheduled += log.substr(at, end - at + 1);
        }
        REQUIRE(unscheduled.size() < log.size());
        write_file_text(run / "metrics.jsonl", unscheduled);
        CHECK(contains_text(report(0),
                            "no \"schedule\" line before its first train or "
                            "evaluation line"));
        write_file_text(run / "metrics.jsonl", log);
        check_report_draws_summary(run);
    }
}
