// `segrank leaderboard` and `segrank report` end to end: exit codes, file:line messages on stderr,
// Markdown / CSV / JSON outputs, the test-split refusal, and an HTML report with the leaderboard.
#include <doctest/doctest.h>

#include <cmath>
#include <fstream>
#include <sstream>

#include "tests/eval/leaderboard_fixture.h"
#include "tests/support/test_paths.h"
#include "util/json_value.h"

using segrank::test::read_file_text;
using segrank::test::run_command;
using segrank::test::scratch_dir;
using segrank::test::segrank_binary;

namespace {

struct Setup {
    std::filesystem::path dir, root, a, b, c, bad;
};

Setup setup(const std::string& name) {
    Setup s;
    s.dir = scratch_dir(name);
    s.root = segrank::test::write_lb_truth(s.dir / "truth");
    s.a = s.dir / "model_a.csv";
    s.b = s.dir / "model_b.csv";
    s.c = s.dir / "partial.csv";
    s.bad = s.dir / "broken.csv";
    segrank::test::write_text(s.a, segrank::test::lb_submission_a());
    segrank::test::write_text(s.b, segrank::test::lb_submission_b());
    segrank::test::write_text(s.c, segrank::test::lb_submission_c());
    segrank::test::write_text(s.bad, "ID,TopConfigs\ntile:xla:k1,0;1;2\ntile:xla:k1,0;1;2;3;4\n");
    return s;
}

}  // namespace

TEST_CASE("segrank leaderboard ranks valid submissions, writes Markdown and CSV, exits 0") {
    const Setup s = setup("lb_cli_ok");
    const std::string cmd = segrank_binary().string() + " leaderboard --truth " + s.root.string() +
                            " --out-md " + (s.dir / "t.md").string() + " --out-csv " +
                            (s.dir / "t.csv").string() + " " + s.a.string() + " " + s.b.string() +
                            " " + s.c.string();
    const auto r = run_command(cmd);
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    CHECK(r.output.find(
              "3 submission(s) against 4 graph(s) (tile:xla:valid, layout:xla:random:valid)") !=
          std::string::npos);
    // model_b ranks first: overall = (1 + layout_b) / 2.
    char expect_b[64];
    std::snprintf(expect_b, sizeof(expect_b), "%.4f",
                  (segrank::test::lb_tile_b() + segrank::test::lb_layout_b()) / 2);
    const auto p1 = r.output.find("\n   1  model_b");
    REQUIRE(p1 != std::string::npos);
    CHECK(r.output.find(expect_b, p1) < r.output.find('\n', p1 + 1));
    CHECK(r.output.find("warning: " + s.c.string() + ": 1 of 2 graph(s) of tile:xla have no row") !=
          std::string::npos);
    const std::string md = read_file_text(s.dir / "t.md");
    CHECK(md.find("| 1 | model_b | " + std::string(expect_b)) != std::string::npos);
    const std::string csv = read_file_text(s.dir / "t.csv");
    CHECK(csv.find("\n1,model_b,") != std::string::npos);
    CHECK(csv.find(",partial,") != std::string::npos);
}

TEST_CASE(
    "segrank leaderboard reports every problem with file:line, still scores the valid ones, exits "
    "1") {
    const Setup s = setup("lb_cli_bad");
    const auto r =
        run_command(segrank_binary().string() + " leaderboard --truth " + s.root.string() + " " +
                    s.bad.string() + " " + s.a.string() + " --json");
    INFO(r.output);
    CHECK(r.exit_code == 1);
    CHECK(r.output.find("error: " + s.bad.string() +
                        ":2: tile:xla:k1: tile row lists 3 valid config(s)") != std::string::npos);
    CHECK(r.output.find("error: " + s.bad.string() + ":3: duplicate ID 'tile:xla:k1' (first at " +
                        s.bad.string() + ":2)") != std::string::npos);
    const auto brace = r.output.find("{\"split\"");
    REQUIRE(brace != std::string::npos);
    const auto j = segrank::parse_json(r.output.substr(brace), "stdout");
    const auto& e = j.find("entries")->items();
    REQUIRE(e.size() == 2);
    CHECK(*e[0].string_at("name") == "model_a");
    CHECK(*e[0].number_at("rank") == 1);
    CHECK(*e[0].number_at("overall") ==
          doctest::Approx((segrank::test::lb_tile_a() + segrank::test::lb_layout_a()) / 2)
              .epsilon(1e-12));
    CHECK(e[1].find("valid")->as_bool() == false);
}

TEST_CASE(
    "segrank leaderboard: --missing error invalidates partial submissions, a test split is "
    "refused") {
    const Setup s = setup("lb_cli_missing");
    const auto r = run_command(segrank_binary().string() + " leaderboard --missing error --truth " +
                               s.root.string() + " " + s.c.string());
    INFO(r.output);
    CHECK(r.exit_code == 1);
    CHECK(r.output.find("have no row") != std::string::npos);

    const auto test_root = s.dir / "test_truth";
    std::filesystem::create_directories(test_root / "npz/tile/xla/test");
    segrank::save_tile_npz(segrank::test::lb_tile("k1", {0, 0, 0}, {1, 1, 1}),
                           test_root / "npz/tile/xla/test/k1.npz");
    const auto t = run_command(segrank_binary().string() + " leaderboard --split test --truth " +
                               test_root.string() + " " + s.a.string());
    INFO(t.output);
    CHECK(t.exit_code == 1);
    CHECK(t.output.find("this split carries no runtimes") != std::string::npos);
    const auto v = run_command(segrank_binary().string() + " leaderboard --truth " +
                               test_root.string() + " " + s.a.string());
    CHECK(v.exit_code == 1);
    CHECK(v.output.find("no collection of split 'valid' found (found tile:xla:test)") !=
          std::string::npos);
    const auto h = run_command(segrank_binary().string() + " leaderboard --help");
    CHECK(h.exit_code == 0);
    CHECK(h.output.find("--missing worst (default)") != std::string::npos);
}

TEST_CASE("segrank report writes a self-contained page with the leaderboard of three submissions") {
    const Setup s = setup("lb_cli_report");
    const auto lb = run_command(segrank_binary().string() + " leaderboard --truth " +
                                s.root.string() + " --out-csv " + (s.dir / "lb.csv").string() +
                                " " + s.a.string() + " " + s.b.string() + " " + s.c.string());
    REQUIRE(lb.exit_code == 0);
    const auto run = s.dir / "run";
    std::filesystem::create_directories(run);
    segrank::test::write_text(run / "config.toml", "[train]\nsteps = 2\n[optim]\nlr = 0.1\n");
    segrank::test::write_text(
        run / "metrics.jsonl",
        "{\"phase\":\"train\",\"step\":1,\"epoch\":0,\"loss\":1.0,\"lr\":0.1}\n"
        "{\"phase\":\"train\",\"step\":2,\"epoch\":0,\"loss\":0.5,\"lr\":0.05}\n"
        "{\"phase\":\"eval\",\"step\":2,\"selection\":0.5,\"metrics\":{\"overall\":0.5,"
        "\"collections\":[{\"collection\":\"tile:xla\",\"task\":\"tile\",\"score\":0.5}]}}\n");
    const auto r = run_command(segrank_binary().string() + " report " + run.string() +
                               " --leaderboard " + (s.dir / "lb.csv").string());
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    const std::string html = read_file_text(run / "report.html");
    CHECK(html.find("<section id=\"leaderboard\">") != std::string::npos);
    CHECK(html.find(">model_b<") != std::string::npos);
    CHECK(html.find(">partial<") != std::string::npos);
    CHECK(html.find("<svg ") != std::string::npos);
    const auto bad =
        run_command(segrank_binary().string() + " report " + (s.dir / "no_run").string());
    CHECK(bad.exit_code == 1);
    CHECK(bad.output.find("no_run: no such directory (expected a run directory") !=
          std::string::npos);
}
