// Hostile inputs of `segrank report` and `segrank leaderboard` end to end (ctest label `hostile`):
// files of the wrong kind are named with what was expected, and no page is written.
#include <doctest/doctest.h>

#include <filesystem>
#include <string>

#include "tests/eval/leaderboard_fixture.h"
#include "tests/support/test_paths.h"
#include "tests/support/tiny_cli_run.h"

using namespace segrank::test;
namespace fs = std::filesystem;

namespace {

CommandResult run_segrank(const std::string& args) { return run_segrank_in_source(args, 1); }

// configs/tiny.toml trained for 2 steps into dir/run (tests/support/tiny_cli_run.h).
fs::path tiny_layout_run(const fs::path& dir) { return segrank_tiny_layout_run(dir); }

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

    TEST_CASE(
        "segrank report refuses measurements that segrank tune --resume refuses, naming "
        "file:line") {
        const fs::path dir = scratch_dir("hostile_report_tune_values");
        fs::create_directories(dir / "t");
        write_text(dir / "t/tune.json",
                   "{\"graph\":{\"name\":\"fusion.7\",\"task\":\"tile\",\"num_nodes\":9,"
                   "\"num_configs\":30,\"num_config_nodes\":1,\"runtimes_fnv1a\":\"abc\"},"
                   "\"where\":\"k/fusion.7.npz\",\"measure\":\"recorded\",\"candidates\":"
                   "\"recorded\",\"strategy\":\"model\",\"checkpoints\":[]}\n");
        auto line = [](int round, int config, const std::string& ns, const std::string& best) {
            return "{\"round\":" + std::to_string(round) + ",\"config\":" + std::to_string(config) +
                   ",\"predicted\":1.0,\"measured_ns\":" + ns + ",\"best_ns\":" + best +
                   ",\"best_config\":" + std::to_string(config) + "}\n";
        };
        const std::string good = line(0, 0, "2000", "2000") + line(1, 1, "1500", "1500");
        const std::string t = (dir / "t").string();
        const std::string meas = t + "/measurements.jsonl";
        struct Case {
            std::string extra, expected;
        };
        const Case cases[] = {
            {line(2, 7, "-5", "-5"),
             meas + ":3: round 2: \"measured_ns\" is -5, expected a positive number of ns"},
            {line(2, 1, "1400", "1400"), meas + ":3: config 1 is measured twice"},
            {line(2, 7, "1800", "1800"),
             meas + ":3: round 2: \"best_ns\" is 1800, expected 1500 (the fastest"},
            {line(-1, 7, "1800", "1500"), meas + ":3: \"round\" is -1, expected an integer >= 0"},
        };
        for (const Case& c : cases) {
            write_text(dir / "t/measurements.jsonl", good + c.extra);
            const auto r = run_segrank("report " + sq(t));
            INFO(r.output);
            CHECK(r.exit_code == 1);
            CHECK(contains_text(r.output, c.expected));
            CHECK_FALSE(fs::exists(dir / "t/report.html"));
        }
        // best.json's runtimes are positive too.
        write_text(dir / "t/measurements.jsonl", good);
        write_text(dir / "t/best.json",
                   "{\"config\":1,\"runtime_ns\":1500,\"default_runtime_ns\":-3}\n");
        const auto b = run_segrank("report " + sq(t));
        INFO(b.output);
        CHECK(b.exit_code == 1);
        CHECK(contains_text(b.output, t + "/best.json: \"default_runtime_ns\" is -3, expected a "
                                          "positive number"));
        write_text(dir / "t/best.json",
                   "{\"config\":1,\"runtime_ns\":1500,\"default_runtime_ns\":2000}\n");
        const auto ok = run_segrank("report " + sq(t));
        INFO(ok.output);
        CHECK(ok.exit_code == 0);
    }

    TEST_CASE(
        "segrank report refuses a config index beyond tune.json's num_configs, naming file:line") {
        const fs::path dir = scratch_dir("hostile_report_tune_config_bound");
        fs::create_directories(dir / "t");
        const std::string t = (dir / "t").string();
        const std::string meas = t + "/measurements.jsonl";
        auto tune_json = [&](const std::string& num_configs) {
            write_text(dir / "t/tune.json",
                       "{\"graph\":{\"name\":\"fusion.7\",\"task\":\"tile\",\"num_nodes\":9,"
                       "\"num_configs\":" +
                           num_configs +
                           ",\"num_config_nodes\":1,\"runtimes_fnv1a\":\"abc\"},"
                           "\"where\":\"k/fusion.7.npz\",\"measure\":\"recorded\",\"candidates\":"
                           "\"recorded\",\"strategy\":\"model\",\"checkpoints\":[]}\n");
        };
        auto line = [](int round, int config, int ns, int best) {
            return "{\"round\":" + std::to_string(round) + ",\"config\":" + std::to_string(config) +
                   ",\"predicted\":1.0,\"measured_ns\":" + std::to_string(ns) +
                   ",\"best_ns\":" + std::to_string(best) +
                   ",\"best_config\":" + std::to_string(config) + "}\n";
        };
        const std::string good = line(0, 0, 2000, 2000) + line(1, 11, 1500, 1500);
        struct Case {
            std::string num_configs, extra, expected;
        };
        const Case cases[] = {
            {"12", line(2, 999, 5, 5),
             meas + ":3: config 999 is out of range (tune.json: the graph has 12 configs)"},
            {"12", line(2, 12, 5, 5),
             meas + ":3: config 12 is out of range (tune.json: the graph has 12 configs)"},
            {"3", "", meas + ":2: config 11 is out of range (tune.json: the graph has 3 configs)"},
            {"0", "",
             t + "/tune.json: \"graph\": \"num_configs\" is 0, expected a positive integer"},
            {"\"12\"", "",
             t + "/tune.json: \"graph\": \"num_configs\" is \"12\", expected a positive integer"},
            {"1.5", "",
             t + "/tune.json: \"graph\": \"num_configs\" is 1.5, expected a positive integer"},
        };
        for (const Case& c : cases) {
            tune_json(c.num_configs);
            write_text(dir / "t/measurements.jsonl", good + c.extra);
            const auto r = run_segrank("report " + sq(t));
            INFO(r.output);
            CHECK(r.exit_code == 1);
            CHECK(contains_text(r.output, c.expected));
            CHECK_FALSE(fs::exists(dir / "t/report.html"));
        }
        tune_json("12");
        write_text(dir / "t/measurements.jsonl", good);
        const auto ok = run_segrank("report " + sq(t));
        INFO(ok.output);
        CHECK(ok.exit_code == 0);
    }

    TEST_CASE(
        "segrank report refuses a best.json that measurements.jsonl contradicts, naming both") {
        // trial 22 F-3: best.json's best config 7 (never measured) and default runtime 1000 s were
        // drawn, exit 0.
        const fs::path dir = scratch_dir("hostile_report_tune_best");
        fs::create_directories(dir / "t");
        const std::string t = (dir / "t").string();
        write_text(dir / "t/tune.json",
                   "{\"graph\":{\"name\":\"fusion.7\",\"task\":\"tile\",\"num_nodes\":9,"
                   "\"num_configs\":30,\"num_config_nodes\":1,\"runtimes_fnv1a\":\"abc\"},"
                   "\"where\":\"k/fusion.7.npz\",\"measure\":\"recorded\",\"candidates\":"
                   "\"recorded\",\"strategy\":\"model\",\"checkpoints\":[]}\n");
        write_text(dir / "t/measurements.jsonl",
                   "{\"round\":0,\"config\":0,\"measured_ns\":164213.5,\"best_ns\":164213.5}\n"
                   "{\"round\":1,\"config\":11,\"measured_ns\":476460.4,\"best_ns\":164213.5}\n");
        auto best = [&](const std::string& config, const std::string& default_ns) {
            write_text(dir / "t/best.json",
                       "{\"measured\":2,\"default_config\":0,\"default_runtime_ns\":" + default_ns +
                           ",\"config\":" + config + ",\"runtime_ns\":164213.5}\n");
        };
        best("7", "1e12");
        const auto r = run_segrank("report " + sq(t));
        INFO(r.output);
        CHECK(r.exit_code == 1);
        CHECK(contains_text(r.output,
                            t +
                                "/best.json: \"config\" is 7, expected 0: the fastest "
                                "measurement of the 2 line(s) of " +
                                t + "/measurements.jsonl that it counts (\"measured\") is " + t +
                                "/measurements.jsonl:1 (round 0, config 0, 164213.5 ns)"));
        CHECK_FALSE(fs::exists(dir / "t/report.html"));
        best("0", "1e12");
        const auto d = run_segrank("report " + sq(t));
        INFO(d.output);
        CHECK(d.exit_code == 1);
        CHECK(contains_text(d.output,
                            t +
                                "/best.json: \"default_runtime_ns\" is 1000000000000.0, "
                                "expected 164213.5: the default's measurement is " +
                                t + "/measurements.jsonl:1 (round 0, config 0, 164213.5 ns)"));
        CHECK_FALSE(fs::exists(dir / "t/report.html"));
        best("0", "164213.5");
        const auto ok = run_segrank("report " + sq(t));
        INFO(ok.output);
        CHECK(ok.exit_code == 0);
        CHECK_FALSE(contains_text(ok.output, "note"));
    }

    TEST_CASE("segrank report --leaderboard refuses a score outside its range, naming file:line") {
        const fs::path dir = scratch_dir("hostile_report_lb_range");
        fs::create_directories(dir / "run");
        write_text(dir / "run/metrics.jsonl", "");
        const std::string header =
            "rank,name,overall,tile:xla,layout:xla:default,layout:xla:random,layout:nlp:default,"
            "layout:nlp:random,graphs,missing,status\n";
        const std::string lb = (dir / "lb.csv").string();
        struct Case {
            std::string row, expected;
        };
        const Case cases[] = {
            {"1,a.csv,1e308,,,,,,3,0,ok\n", lb + ":3: overall 1e308 is above 1"},
            {"1,a.csv,0.5,,1.5,,,,3,0,ok\n", lb + ":3: layout:xla:default 1.5 is outside [-1, 1]"},
            {"1,a.csv,0.5,,,,,,x,0,ok\n", lb + ":3: graphs x is not a finite number"},
            {"0,a.csv,0.5,,,,,,3,0,ok\n", lb + ":3: rank 0 is not an integer >= 1"},
        };
        for (const Case& c : cases) {
            write_text(dir / "lb.csv", header + "2,b.csv,-3.5,-3.5,,,,,3,0,ok\n" + c.row);
            const auto r =
                run_segrank("report " + sq((dir / "run").string()) + " --leaderboard " + sq(lb));
            INFO(r.output);
            CHECK(r.exit_code == 1);
            CHECK(contains_text(r.output, c.expected));
            CHECK_FALSE(fs::exists(dir / "run/report.html"));
        }
        write_text(dir / "lb.csv",
                   header + "1,a.csv,0,,-1,1,,,3,0,ok\n,bad.csv,,,,,,,,,invalid (1 error)\n");
        const auto ok =
            run_segrank("report " + sq((dir / "run").string()) + " --leaderboard " + sq(lb));
        INFO(ok.output);
        CHECK(ok.exit_code == 0);
    }

    TEST_CASE(
        "segrank report --leaderboard refuses rows that contradict each other, naming file:line") {
        const fs::path dir = scratch_dir("hostile_report_lb_consistency");
        fs::create_directories(dir / "run");
        write_text(dir / "run/metrics.jsonl", "");
        const std::string header =
            "rank,name,overall,tile:xla,layout:xla:default,layout:xla:random,layout:nlp:default,"
            "layout:nlp:random,graphs,missing,status\n";
        const std::string lb = (dir / "lb.csv").string();
        const std::string a = "1,a.csv,0.8787878787878787,1.0,,0.7575757575757575,,,2,0,ok\n";
        const std::string b = "2,b.csv,0.5318,0.6697,,0.3939,,,1,1,ok (1 warning)\n";
        struct Case {
            std::string rows, expected;
        };
        const Case cases[] = {
            {"1,a.csv,0.1,1.0,,0.7575757575757575,,,2,0,ok\n" + b,
             lb + ":2: overall 0.1 is not the mean of the row's collection scores (0.8788)"},
            {"1,a.csv,0.8787878787878787,1.0,,0.7575757575757575,,,2,0,bogus\n",
             lb + ":2: status bogus is not one segrank leaderboard writes"},
            {a + "2,b.csv,0.5318,0.6697,,0.3939,,,1,1,ok (1 warnings)\n",
             lb + ":3: status ok (1 warnings) is not one"},
            {"2" + a.substr(1) + "1" + b.substr(1), lb + ":2: rank 2, expected 1"},
            {"1" + b.substr(1) + "2" + a.substr(1),
             lb + ":3: rank 2 has overall 0.8787878787878787, above the overall of rank 1"},
        };
        for (const Case& c : cases) {
            write_text(dir / "lb.csv", header + c.rows);
            const auto r =
                run_segrank("report " + sq((dir / "run").string()) + " --leaderboard " + sq(lb));
            INFO(r.output);
            CHECK(r.exit_code == 1);
            CHECK(contains_text(r.output, c.expected));
            CHECK_FALSE(fs::exists(dir / "run/report.html"));
        }
        write_text(dir / "lb.csv", header + a + b + ",bad.csv,,,,,,,,,invalid (2 errors)\n");
        const auto ok =
            run_segrank("report " + sq((dir / "run").string()) + " --leaderboard " + sq(lb));
        INFO(ok.output);
        CHECK(ok.exit_code == 0);
    }

    TEST_CASE(
        "segrank report takes a run's task from its config or checkpoint, never from the line "
        "it checks: a layout run's kaggle selection below -1 is refused however the line reads") {
        const fs::path dir = scratch_dir("hostile_report_run_task");
        const fs::path run = tiny_layout_run(dir);
        const std::string met = (run / "metrics.jsonl").string();
        const std::string train_lines = read_file_text(run / "metrics.jsonl");
        const std::string good_coll =
            R"({"collection":"layout:xla:random","task":"layout","num_graphs":1,"score":0.39})";
        auto eval_line = [&](const std::string& selection, const std::string& metrics) {
            return R"({"phase":"eval","step":2,"selection":)" + selection + R"(,"metrics":)" +
                   metrics + "}\n";
        };
        auto report_of = [&](const std::string& extra) {
            write_text(run / "metrics.jsonl", train_lines + extra);
            fs::remove(run / "report.html");
            return run_segrank("report " + sq(run.string()));
        };
        // The configs/tiny.toml run lists no data.collections: the task is its checkpoint's.
        const std::string edits[] = {
            eval_line("-7", R"({"overall":null,"collections":[]})"),
            eval_line("-7", R"({"overall":0.39,"collections":[)" + good_coll + "]}"),
            eval_line("-7", R"({"overall":-7})"),
        };
        for (const std::string& e : edits) {
            const auto r = report_of(e);
            INFO(e, r.output);
            CHECK(r.exit_code == 1);
            CHECK((contains_text(r.output,
                                 "\"selection\" is -7, expected [-1, 1] (the Kendall "
                                 "tau of a layout run) (eval.metric = kaggle)") ||
                   contains_text(r.output,
                                 "metrics \"overall\" is -7, expected a number in "
                                 "[-1, 1] (a mean of Kendall taus: a layout run)")));
            CHECK_FALSE(fs::exists(run / "report.html"));
        }
        // A collection relabelled "tile" is not one of this layout run's.
        std::string tile = good_coll;
        tile.replace(tile.find(R"("task":"layout")"), 15, R"("task":"tile")");
        const auto relabelled =
            report_of(eval_line("0.39", R"({"overall":0.39,"collections":[)" + tile + "]}"));
        INFO(relabelled.output);
        CHECK(relabelled.exit_code == 1);
        CHECK(contains_text(relabelled.output,
                            "collections[0] \"task\" is \"tile\", expected "
                            "\"layout\" (the run's task"));
        // An overall outside [-1, 1] beside a collection without a score.
        const auto overall = report_of(
            eval_line("0.39", R"({"overall":-3,"collections":[{"collection":"layout:xla:random",)"
                              R"("task":"layout","num_graphs":1,"score":null}]})"));
        INFO(overall.output);
        CHECK(overall.exit_code == 1);
        CHECK(contains_text(overall.output, "\"overall\" is -3, expected a number in [-1, 1]"));
        // Without a checkpoint, the config's data.collections tell the task.
        fs::remove(run / "last.ckpt.h5");
        fs::remove(run / "best.ckpt.h5");
        // Nor do its checkpoints: the one task its evaluations name (report.json's final) does.
        const auto narrowed = report_of(edits[0]);
        INFO(narrowed.output);
        CHECK(narrowed.exit_code == 1);
        CHECK(contains_text(narrowed.output, "\"selection\" is -7, expected [-1, 1]"));
        std::string config = read_file_text(run / "config.toml");
        const size_t at = config.find("collections = []");
        REQUIRE(at != std::string::npos);
        config.replace(at, 16, R"(collections = ["layout:xla:random"])");
        write_text(run / "config.toml", config);
        const auto from_config = report_of(edits[0]);
        INFO(from_config.output);
        CHECK(from_config.exit_code == 1);
        CHECK(contains_text(from_config.output, "\"selection\" is -7, expected [-1, 1]"));
        // A well-formed layout line renders (report.json moved aside: its summary names the
        // run's own last evaluation, which the appended line would contradict).
        fs::rename(run / "report.json", dir / "report.json");
        const auto ok =
            report_of(eval_line("0.39", R"({"overall":0.39,"collections":[)" + good_coll + "]}"));
        INFO(ok.output);
        CHECK(ok.exit_code == 0);
        CHECK(fs::exists(run / "report.html"));
    }

    TEST_CASE("segrank report --eval accepts a renamed run's own evaluation, not another model's") {
        const fs::path dir = scratch_dir("hostile_report_renamed_run");
        const fs::path run = tiny_layout_run(dir);
        const std::string ev = (dir / "eval.json").string();
        const auto e = run_segrank("evaluate --checkpoint " + sq(run.string()) + " --json " +
                                   sq(ev) + " --data " + sq((dir / "data/../data").string()));
        INFO(e.output);
        REQUIRE(e.exit_code == 0);
        CHECK(contains_text(read_file_text(ev), R"("checkpoint_id":"xxh3_64:)"));
        // The data it read, as an absolute normal path (meaningful wherever report runs).
        CHECK(
            contains_text(read_file_text(ev),
                          "\"data_root\":\"" + (dir / "data").lexically_normal().string() + "\""));
        CHECK(contains_text(read_file_text(ev), R"("evaluated":"split 'valid'")"));
        // Its collection metrics aggregate its graphs, and it names its checkpoint.
        const std::string doc = read_file_text(ev);
        const size_t metrics = doc.find(R"("metrics":)");
        REQUIRE(metrics != std::string::npos);
        const size_t opa = doc.find(R"("opa":)", metrics);
        REQUIRE(opa != std::string::npos);
        const std::string edited = (dir / "edited.json").string();
        write_text(edited,
                   doc.substr(0, opa) + R"("opa":0.0123,)" + doc.substr(doc.find(',', opa) + 1));
        const auto agg = run_segrank("report " + sq(run.string()) + " --eval " + sq(edited));
        INFO(agg.output);
        CHECK(agg.exit_code == 1);
        CHECK(contains_text(agg.output, "metrics collections[0] \"opa\" is 0.0123, expected "));
        CHECK(contains_text(agg.output, "(the aggregate of the document's \"graphs\")"));
        const size_t ck = doc.find(R"("checkpoint":)");
        write_text(edited, doc.substr(0, ck) + doc.substr(doc.find(R"("graphs":)")));
        const auto anon = run_segrank("report " + sq(run.string()) + " --eval " + sq(edited));
        INFO(anon.output);
        CHECK(anon.exit_code == 1);
        CHECK(contains_text(anon.output, "it records no \"checkpoint\""));
        // config.toml's eval.metric is the checkpoint's: an edited one is refused.
        const std::string config = read_file_text(run / "config.toml");
        const size_t at = config.find(R"(metric = "kaggle")");
        REQUIRE(at != std::string::npos);
        write_text(run / "config.toml",
                   config.substr(0, at) + R"(metric = "opa")" + config.substr(at + 17));
        const auto metric = run_segrank("report " + sq(run.string()));
        INFO(metric.output);
        CHECK(metric.exit_code == 1);
        CHECK(contains_text(metric.output,
                            "config.toml: eval.metric = \"opa\", but the run's "
                            "checkpoint"));
        write_text(run / "config.toml", config);
        fs::rename(run, dir / "renamed");
        const auto ok =
            run_segrank("report " + sq((dir / "renamed").string()) + " --eval " + sq(ev));
        INFO(ok.output);
        CHECK(ok.exit_code == 0);
        // Trained one step further, the run's checkpoints hold another model than the evaluated
        // one.
        const auto more = run_segrank("train --resume " + sq((dir / "renamed").string()) +
                                      " --set train.steps=3");
        INFO(more.output);
        REQUIRE(more.exit_code == 0);
        fs::remove(dir / "renamed/report.html");
        const auto other =
            run_segrank("report " + sq((dir / "renamed").string()) + " --eval " + sq(ev));
        INFO(other.output);
        CHECK(other.exit_code == 1);
        CHECK(contains_text(other.output, "the identity of none of"));
        CHECK(contains_text(other.output, "it evaluated another model"));
    }
}
