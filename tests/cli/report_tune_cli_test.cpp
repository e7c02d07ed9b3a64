// `segrank report TUNE_DIR`: the page of a tuning run draws the best-so-far runtime and the
// speedup over the default against the measurement index (beside --compare runs), and refuses
// what does not apply to a tune directory.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "tests/support/test_paths.h"

using namespace segrank;
using namespace segrank::test;
namespace fs = std::filesystem;

namespace {

CommandResult run_segrank(const std::string& args) {
    std::string cmd = "'";  // built with += : GCC 12 -Wrestrict false positive on "'" + std::string
    cmd += segrank_binary().string() + "' " + args;
    return run_command(cmd);
}

void write(const fs::path& p, const std::string& text) {
    std::ofstream out(p, std::ios::binary);
    out << text;
}

// A tune directory of `strategy` with runtimes `ns` (0 = a failed measurement), the first the
// default (round 0), then rounds of 2.
fs::path make_tune_dir(const fs::path& dir, const std::string& strategy,
                       const std::vector<double>& ns) {
    fs::create_directories(dir);
    write(dir / "tune.json",
          "{\"graph\":{\"name\":\"fusion.7\",\"task\":\"tile\",\"num_nodes\":9,\"num_configs\":"
          "30,\"num_config_nodes\":1,\"runtimes_fnv1a\":\"abc\"},\"where\":\"k/fusion.7.npz\","
          "\"measure\":\"hwmodel:pipeline\",\"candidates\":\"search\",\"strategy\":\"" +
              strategy + "\",\"checkpoints\":[]}\n");
    std::string lines;
    double best = 0;
    for (size_t i = 0; i < ns.size(); ++i) {
        const int round = i == 0 ? 0 : static_cast<int>((i + 1) / 2);
        if (ns[i] > 0 && (best == 0 || ns[i] < best)) best = ns[i];
        // a searched tile config: 24 numbers, distinct per line (tune refuses a config measured
        // twice)
        std::string rows = "[";  // += : GCC 12 -Wrestrict false positive on "[" + std::string
        rows += std::to_string(i);
        for (int k = 1; k < 24; ++k) rows += ",1";
        lines += "{\"round\":" + std::to_string(round) + ",\"config\":null,\"rows\":" + rows + "],";
        lines += "\"predicted\":null,\"measured_ns\":" +
                 (ns[i] > 0 ? std::to_string(ns[i]) : std::string("null"));
        if (ns[i] <= 0) lines += ",\"error\":\"the working set does not fit VMEM\"";
        lines += ",\"best_ns\":" + (best > 0 ? std::to_string(best) : std::string("null")) +
                 ",\"best_config\":null}\n";
    }
    write(dir / "measurements.jsonl", lines);
    write(dir / "best.json",
          "{\"config\":null,\"runtime_ns\":" + std::to_string(best) +
              ",\"default_config\":0,\"default_runtime_ns\":" + std::to_string(ns[0]) + "}\n");
    return dir;
}

size_t count(const std::string& text, const std::string& what) {
    size_t n = 0;
    for (size_t p = text.find(what); p != std::string::npos; p = text.find(what, p + 1)) ++n;
    return n;
}

}  // namespace

TEST_CASE(
    "segrank report TUNE_DIR draws best-so-far and speedup curves per measurement, beside "
    "--compare runs") {
    const fs::path root = scratch_dir("report_tune");
    const fs::path model =
        make_tune_dir(root / "run_a", "model", {2000, 1800, 0, 1500, 1600, 1000});
    const fs::path rnd = make_tune_dir(root / "random_seed0", "random", {2000, 2100, 1900, 1990});
    const auto r = run_segrank("report " + sq(model.string()) + " --compare " + sq(rnd.string()));
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    const std::string html = read_file_text(model / "report.html");
    CHECK(html.starts_with("<!DOCTYPE html>"));
    CHECK(contains_text(html, "segrank tuning report: run_a (model) on fusion.7"));
    CHECK(contains_text(html, "Best runtime so far"));
    CHECK(contains_text(html, "Speedup over the default"));
    // One series per run in each chart, named by directory (and strategy when the name lacks it).
    CHECK(contains_text(html, "run_a (model)"));
    CHECK(contains_text(html, "random_seed0"));
    CHECK_FALSE(contains_text(html, "random_seed0 (random)"));
    // A series of 6 points (5 segments) and one of 4, in the best-so-far and speedup charts.
    size_t six = 0, four = 0;
    for (size_t p = html.find("<path d=\"M"); p != std::string::npos;
         p = html.find("<path d=\"M", p + 1)) {
        const std::string d = html.substr(p, html.find('"', p + 10) - p);
        six += count(d, " L") == 5;
        four += count(d, " L") == 3;
    }
    CHECK(six >= 2);
    CHECK(four >= 2);
    // Summary: default 2000 ns, best 1000 ns, 2x, within 1 % of the best at measurement 6; the
    // failed measurement counted.
    CHECK(contains_text(html, "6 (1 failed)"));
    CHECK(contains_text(html, "2.0000x"));
    CHECK(contains_text(html, "a searched config (not a row of the file)"));
    CHECK(
        contains_text(html, "<td>measurements to within 1 % of the best</td><td class=\"num\">6"));
    // Compare table: the random run never came within 1 % of the best of all runs.
    CHECK(contains_text(html, "never"));
    // Rounds table: round 2 (1500, 1600) improved the best to 1500 ns = 1.3333x.
    CHECK(contains_text(html, "1.3333"));
    CHECK(contains_text(html, "1.5 us"));
}

TEST_CASE("segrank report refuses --eval for a tune directory and --compare without one") {
    const fs::path root = scratch_dir("report_tune_errors");
    const fs::path t = make_tune_dir(root / "t", "anneal", {100, 90});
    const auto ev = run_segrank("report " + sq(t.string()) + " --eval x.json");
    CHECK(ev.exit_code == 1);
    CHECK(contains_text(ev.output, "is a tune directory: --eval and --leaderboard apply"));
    fs::create_directories(root / "run");
    write(root / "run" / "config.toml", "");
    const auto cmp =
        run_segrank("report " + sq((root / "run").string()) + " --compare " + sq(t.string()));
    CHECK(cmp.exit_code == 1);
    CHECK(contains_text(cmp.output, "is not a tune directory (no tune.json)"));
    const auto bad =
        run_segrank("report " + sq(t.string()) + " --compare " + sq((root / "run").string()));
    CHECK(bad.exit_code == 1);
    CHECK(contains_text(bad.output,
                        "--compare " + (root / "run").string() + ": not a tune directory"));
    // A damaged line other than the last is an error naming file:line; nothing is written.
    write(t / "measurements.jsonl",
          "{\"round\":0,\"config\":0,\"measured_ns\":100,\"best_ns\":100}\n{oops\n{\"round\":1,"
          "\"best_ns\":90}"
          "\n");
    const auto torn = run_segrank("report " + sq(t.string()));
    CHECK(torn.exit_code == 1);
    CHECK(contains_text(torn.output, "measurements.jsonl:2"));
    CHECK_FALSE(fs::exists(t / "report.html"));
    // A torn last line (a run still measuring) is skipped with a note; best.json was written
    // after line 1 (tune rewrites it after a line is flushed, never before).
    write(t / "measurements.jsonl",
          "{\"round\":0,\"config\":0,\"measured_ns\":100,\"best_ns\":100}\n{\"round\":1,\"meas");
    write(t / "best.json",
          "{\"measured\":1,\"default_config\":0,\"default_runtime_ns\":100,\"config\":0,"
          "\"runtime_ns\":100}\n");
    const auto live = run_segrank("report " + sq(t.string()));
    INFO(live.output);
    REQUIRE(live.exit_code == 0);
    CHECK(contains_text(read_file_text(t / "report.html"), "torn last line skipped"));
}

TEST_CASE(
    "segrank report names a tune directory's tune.json that is a FIFO or was deleted, instead of "
    "drawing an empty training page") {
    const fs::path root = scratch_dir("report_tune_json_gone");
    const fs::path fifo = make_tune_dir(root / "fifo", "anneal", {100, 90});
    fs::remove(fifo / "tune.json");
    REQUIRE(run_command("mkfifo " + sq((fifo / "tune.json").string())).exit_code == 0);
    const auto f = run_segrank("report " + sq(fifo.string()));
    INFO(f.output);
    CHECK(f.exit_code == 1);
    CHECK(contains_text(f.output, (fifo / "tune.json").string() + ": is a FIFO"));
    CHECK_FALSE(fs::exists(fifo / "report.html"));
    const fs::path gone = make_tune_dir(root / "gone", "anneal", {100, 90});
    fs::remove(gone / "tune.json");
    const auto g = run_segrank("report " + sq(gone.string()));
    INFO(g.output);
    CHECK(g.exit_code == 1);
    CHECK(contains_text(g.output, (gone / "tune.json").string() + ": no such file"));
    CHECK_FALSE(fs::exists(gone / "report.html"));
}
