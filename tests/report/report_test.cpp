// `segrank report` library: run-directory loading, SVG charts and the HTML page on a fake run
// directory written here.
#include "report/report.h"

#include <doctest/doctest.h>

#include <cmath>
#include <fstream>

#include "report/report_svg.h"
#include "tests/support/test_paths.h"

using namespace segrank;
using segrank::test::scratch_dir;

namespace {

void write(const std::filesystem::path& p, const std::string& text) {
    std::ofstream f(p, std::ios::binary | std::ios::trunc);
    f << text;
}

size_t count(const std::string& s, const std::string& needle) {
    size_t n = 0;
    for (size_t p = s.find(needle); p != std::string::npos; p = s.find(needle, p + 1)) ++n;
    return n;
}

// An evaluation line of a layout run with two collections (layout:xla:default scoring `def`,
// layout:xla:random `lay`, whose OPA is null): overall and the kaggle selection are their mean.
std::string eval_line(int step, double def, double lay, const char* phase = "eval") {
    const double overall = (def + lay) / 2;
    return str("{\"phase\":\"", phase, "\",\"step\":", step, ",\"selection\":", overall,
               ",\"metrics\":{\"overall\":", overall, ",\"collections\":[",
               "{\"collection\":\"layout:xla:default\",\"task\":\"layout\",\"num_graphs\":2,"
               "\"num_uninformative\":0,\"kendall_tau\":",
               def, ",\"opa\":0.7,\"slowdown_1\":0.2,\"slowdown_5\":", 1 - def,
               ",\"slowdown_10\":0.01,\"score\":", def, "},",
               "{\"collection\":\"layout:xla:random\",\"task\":\"layout\",\"num_graphs\":3,"
               "\"num_uninformative\":0,\"kendall_tau\":",
               lay,
               ",\"opa\":null,\"slowdown_1\":0.3,\"slowdown_5\":0.1,\"slowdown_10\":0.0,"
               "\"score\":",
               lay, "}]}}\n");
}

// A run directory like the trainer writes: 20 train lines, 3 evals + a finetune eval, report.json.
std::filesystem::path fake_run(const std::string& name) {
    const auto dir = scratch_dir(name);
    std::string jsonl;
    for (int s = 10; s <= 200; s += 10) {
        jsonl += str("{\"phase\":\"train\",\"step\":", s, ",\"epoch\":", s / 50,
                     ",\"loss\":", 2.0 / s * 10, ",\"lr\":", 0.001 * (1 - s / 400.0),
                     ",\"steps_per_s\":12.5,\"peak_rss_mb\":300}\n");
        if (s % 100 == 0) jsonl += eval_line(s, 0.8, 0.1 + s / 1000.0);
    }
    jsonl += eval_line(200, 0.85, 0.37);                                   // overall 0.61
    const std::string last = eval_line(200, 0.86, 0.40, "finetune_eval");  // overall 0.63
    jsonl += last;
    jsonl += "{\"phase\":\"finetune\",\"step\":200,\"loss\":0.5}\n";
    write(dir / "metrics.jsonl", jsonl);
    write(dir / "config.toml", "[data]\nroot = \"x<y>&z\"\n[optim]\nlr = 0.001\n");
    // "final" is the last evaluation's metrics, as train writes it.
    write(dir / "report.json",
          "{\"steps\":200,\"stopped_early\":false,\"steps_per_s\":12.5,\"best_step\":200,"
          "\"best_selection\":0.63,\"peak_rss_mb\":310.5,\"world_size\":1,\"final\":" +
              dump_json(read_json(last, "eval line")["metrics"]) + "}\n");
    return dir;
}

}  // namespace

TEST_CASE(
    "load_run reads train points, evals with collections, config and report, torn last line is a "
    "note") {
    const auto dir = fake_run("report_load");
    {
        std::ofstream f(dir / "metrics.jsonl", std::ios::app);
        f << "{\"phase\":\"train\",\"st";  // a run still writing
    }
    const RunRecords r = load_run(dir);
    CHECK(r.train.size() == 20);
    CHECK(r.train[0].step == 10);
    CHECK(r.train[0].loss == doctest::Approx(2.0));
    REQUIRE(r.evals.size() == 4);
    CHECK(r.evals[3].phase == "finetune_eval");
    REQUIRE(r.evals[0].collections.size() == 2);
    CHECK(r.evals[0].collections[1].collection == "layout:xla:random");
    CHECK(std::isnan(r.evals[0].collections[1].opa));
    CHECK(r.config_text.find("lr = 0.001") != std::string::npos);
    REQUIRE(r.report.has_value());
    REQUIRE(r.notes.size() == 1);
    CHECK(r.notes[0].find("metrics.jsonl:26: torn last line skipped") != std::string::npos);

    write(dir / "metrics.jsonl", "{\"phase\":\"train\"}\n{oops\n{\"phase\":\"train\"}\n");
    CHECK_THROWS_WITH_AS(
        load_run(dir),
        doctest::Contains("metrics.jsonl:2:2: syntax error while parsing object key"), Error);
    CHECK_THROWS_WITH_AS(load_run(dir / "nope"), doctest::Contains("not a run directory"), Error);
}

TEST_CASE("nice_ticks covers the range with 1-2-5 steps") {
    const auto t = nice_ticks(0.13, 0.87, 5);
    REQUIRE(t.size() >= 2);
    CHECK(t.front() <= 0.13);
    CHECK(t.back() >= 0.87);
    CHECK(t[1] - t[0] == doctest::Approx(0.2));
    CHECK(nice_ticks(-1, 1, 4) == std::vector<double>{-1, -0.5, 0, 0.5, 1});
}

TEST_CASE(
    "svg charts: one path per series, gaps at NaN, legend names, 'no data' when empty, bars "
    "signed") {
    const std::string svg =
        svg_line_chart({{"a<b", {0, 1, 2, 3}, {1, 2, std::nan(""), 4}}, {"c", {0, 1}, {3, 3}}},
                       {"T", "step", "y", false, 400, 200});
    CHECK(svg.rfind("<svg xmlns=\"http://www.w3.org/2000/svg\"", 0) == 0);
    CHECK(count(svg, "<path ") == 2);
    CHECK(count(svg, "d=\"M") == 2);
    CHECK(count(svg, " M") == 1);  // series a breaks at the NaN into two sub-paths
    CHECK(svg.find("a&lt;b") != std::string::npos);
    CHECK(svg.find("a<b") == std::string::npos);
    CHECK(svg_line_chart({}, {"E", "x", "y", false, 300, 200}).find("no data") !=
          std::string::npos);
    const std::string bars = svg_bar_chart({{"g1", 0.5}, {"g2", -0.25}, {"g3", std::nan("")}},
                                           {"K", "tau", -1.0, 1.0, 600});
    CHECK(count(bars, "<rect ") == 2);
    CHECK(bars.find("#4c78a8") != std::string::npos);  // positive
    CHECK(bars.find("#e45756") != std::string::npos);  // negative
    CHECK(bars.find("n/a") != std::string::npos);
}

TEST_CASE(
    "the report page has every section, inline SVG only, escaped config, and ranks the "
    "evaluations") {
    const auto dir = fake_run("report_html");
    write(dir / "best.ckpt.h5", "");  // the checkpoint the evaluation records
    write(dir / "eval.json",
          "{\"checkpoint\":\"" + (dir / "best.ckpt.h5").string() +
              "\",\"graphs\":[{\"graph\":\"bert\",\"num_configs\":5,"
              "\"targets_constant\":false,\"kendall_tau\":0.8,\"opa\":0.9,\"slowdown_1\":0,"
              "\"slowdown_5\":0,\"slowdown_10\":0},{\"graph\":\"resnet\",\"num_configs\":5,"
              "\"targets_constant\":false,\"kendall_tau\":-0.2,\"opa\":0.4,\"slowdown_1\":0.1,"
              "\"slowdown_5\":0,\"slowdown_10\":0}],\"metrics\":{\"overall\":0.3,\"collections\":[]"
              "}}\n");
    write(dir / "lb.csv",
          "rank,name,overall,tile:xla,layout:xla:default,layout:xla:random,layout:nlp:default,"
          "layout:nlp:random,graphs,missing,status\n1,model,0.7,0.9,,0.5,,,4,0,ok\n"
          "2,hwmodel,0.4,0.6,,0.2,,,4,0,ok\n3,random,0.1,0.2,,0.0,,,4,0,ok\n");
    ReportOptions opt;
    opt.run_dir = dir;
    opt.eval_json = dir / "eval.json";
    opt.leaderboard = dir / "lb.csv";
    const std::string html = render_report_html(opt);
    for (const char* id : {"summary", "training", "validation", "graphs", "run-leaderboard",
                           "leaderboard", "config"})
        CHECK(html.find(str("<section id=\"", id, "\">")) != std::string::npos);
    CHECK(html.rfind("<!DOCTYPE html>", 0) == 0);
    CHECK(count(html, "<svg ") >= 8);  // loss, log loss, lr, 4 validation, per-graph, leaderboard
    CHECK(html.find("<script") == std::string::npos);
    CHECK(html.find("http://") ==
          html.find("http://www.w3.org/2000/svg"));  // the SVG namespace only
    CHECK(html.find("https://") == std::string::npos);
    CHECK(html.find("root = &quot;x&lt;y&gt;&amp;z&quot;") != std::string::npos);
    CHECK(html.find("Kendall tau per graph (2 graphs, mean 0.3000)") != std::string::npos);
    CHECK(html.find(">resnet<") != std::string::npos);
    // Best evaluation (finetune_eval, overall 0.63) is rank 1 and highlighted.
    CHECK(html.find("<tr class=\"best\"><td class=\"num\">1</td><td>finetune_eval</td>") !=
          std::string::npos);
    CHECK(html.find(">hwmodel<") != std::string::npos);
    CHECK(html.find("Overall score by submission") != std::string::npos);
}

TEST_CASE(
    "the report of a run without report.json, config or evals still renders and says what is "
    "missing") {
    const auto dir = scratch_dir("report_bare");
    write(dir / "metrics.jsonl", "{\"phase\":\"train\",\"step\":1,\"loss\":1.5,\"lr\":0.01}\n");
    ReportOptions opt;
    opt.run_dir = dir;
    const std::string html = render_report_html(opt);
    CHECK(html.find("report.json: absent") != std::string::npos);
    CHECK(html.find("config.toml is absent") != std::string::npos);
    CHECK(html.find("No evaluations in metrics.jsonl") != std::string::npos);
    CHECK(html.find("No per-graph metrics: pass --eval") != std::string::npos);
    opt.eval_json = dir / "missing.json";
    CHECK_THROWS_WITH_AS(render_report_html(opt), doctest::Contains("missing.json: no such file"),
                         Error);
}

TEST_CASE("load_leaderboard_table reads the leaderboard CSV and JSON forms") {
    const auto dir = scratch_dir("report_lb");
    write(dir / "t.csv", "rank,name,overall\n1,\"a,b\",0.5\n");
    const TextTable t = load_leaderboard_table(dir / "t.csv");
    REQUIRE(t.rows.size() == 1);
    CHECK(t.rows[0][1] == "a,b");
    write(dir / "bad.csv", "rank,name,overall\n1\n");
    CHECK_THROWS_WITH_AS(load_leaderboard_table(dir / "bad.csv"),
                         doctest::Contains("bad.csv:2: 1 fields, the header has 3"), Error);
    write(dir / "t.json",
          "{\"split\":\"valid\",\"entries\":[{\"rank\":1,\"name\":\"m\",\"valid\":true,\"overall\":"
          "0.25,"
          "\"graphs_scored\":3,\"graphs_missing\":1,\"collections\":[{\"collection\":\"tile:xla\","
          "\"score\":0.5},{\"collection\":\"layout:xla:random\",\"score\":0.0}],\"issues\":[]}]}");
    const TextTable j = load_leaderboard_table(dir / "t.json");
    REQUIRE(j.rows.size() == 1);
    CHECK(j.rows[0][1] == "m");
    CHECK(j.rows[0][2] == "0.2500");
    CHECK(j.rows[0][3] == "0.5000");
    CHECK(j.rows[0][9] == "1");
}

TEST_CASE("svg line chart: a reference level is a labelled horizontal line inside the y range") {
    LineChartOptions opt{"T", "step", "y", false, 400, 200};
    opt.references.push_back({"random (10 seeds)", -0.5, "#888", "2 3"});
    opt.references.push_back({"left out", std::nan(""), "#888", "2 3"});
    const std::string svg = svg_line_chart({{"a", {0, 100}, {0.2, 0.4}}}, opt);
    REQUIRE(count(svg, "<line class=\"reference\"") == 1);
    CHECK(svg.find("random (10 seeds)") != std::string::npos);
    CHECK(svg.find("left out") == std::string::npos);
    // The line is horizontal and inside the plot: the y axis was extended down to -0.5.
    const size_t at = svg.find("<line class=\"reference\"");
    const std::string line = svg.substr(at, svg.find('>', at) - at);
    const auto attr = [&](const std::string& name) {
        const size_t p = line.find(" " + name + "=\"") + name.size() + 3;
        return std::stod(line.substr(p, line.find('"', p) - p));
    };
    CHECK(attr("y1") == attr("y2"));
    CHECK(attr("y1") <= 30 + 200 - 30 - 46 + 0.01);  // within the plot frame (mt + ph)
    CHECK(svg.find(">-0.5<") != std::string::npos);  // value printed at the right end
}

TEST_CASE("the validation charts draw the run's random baseline and the leaderboard's hwmodel") {
    const auto dir = fake_run("report_levels");
    {
        std::ofstream f(dir / "metrics.jsonl", std::ios::app);
        f << eval_line(200, 0.11, 0.013, "random_baseline");
    }
    const RunRecords r = load_run(dir);
    CHECK(r.evals.size() == 4);  // the baseline is not an evaluation of the model
    REQUIRE(r.random_baseline.has_value());
    REQUIRE(r.random_baseline->collections.size() == 2);
    CHECK(r.random_baseline->collections[1].kendall_tau == doctest::Approx(0.013));

    ReportOptions opt;
    opt.run_dir = dir;
    std::string html = render_report_html(opt);
    // Two collections: one random line per collection in each chart with that metric (score,
    // Kendall, slowdown@5 for both; OPA only for layout:xla:default, the other's OPA is null).
    CHECK(count(html, "<line class=\"reference\"") == 7);
    CHECK(html.find("random, layout:xla:random") != std::string::npos);
    CHECK(html.find("No hwmodel level: pass --leaderboard") != std::string::npos);

    write(dir / "lb.csv",
          "rank,name,overall,tile:xla,layout:xla:default,layout:xla:random,layout:nlp:default,"
          "layout:nlp:random,graphs,missing,status\n1,model,0.7,,0.9,0.5,,,4,0,ok\n"
          "2,hwmodel_v3,0.4,,0.6,0.2,,,4,0,ok\n3,random,0.1,,0.2,0.0,,,4,0,ok\n");
    opt.leaderboard = dir / "lb.csv";
    html = render_report_html(opt);
    CHECK(count(html, "<line class=\"reference\"") == 9);  // + hwmodel on the score chart
    CHECK(html.find("hwmodel, layout:xla:default: 0.6<") != std::string::npos);
    CHECK(html.find("leaderboard row &quot;hwmodel_v3&quot;") != std::string::npos);

    // Without the baseline line (a run still training) no level is invented.
    write(dir / "metrics.jsonl", eval_line(100, 0.8, 0.2));
    opt.leaderboard.reset();
    html = render_report_html(opt);
    CHECK(count(html, "<line class=\"reference\"") == 0);
    CHECK(html.find("No random level") != std::string::npos);
}
