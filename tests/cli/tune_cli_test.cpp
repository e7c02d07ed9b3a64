// `segrank tune` with recorded measurements on tiny synthetic tile and layout graphs: the default
// is measured first, the budget is kept, best.json matches the recorded runtimes, --resume after a
// kill measures nothing twice, an interrupt keeps what was measured, and bad input is refused.
#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "cli/tune_rounds.h"
#include "tests/support/test_paths.h"
#include "tests/support/tiny_checkpoint.h"
#include "util/json.h"

using namespace segrank;
using namespace segrank::test;
namespace fs = std::filesystem;

namespace {

CommandResult run_segrank(const std::string& args) {
    return run_command("OMP_NUM_THREADS=2 '" + segrank_binary().string() + "' " + args);
}

std::vector<Json> read_jsonl(const fs::path& p) {
    std::vector<Json> out;
    std::istringstream is(read_file_text(p));
    for (std::string line; std::getline(is, line);)
        if (!line.empty()) out.push_back(read_json(line, p.string()));
    return out;
}

struct Fixture {
    fs::path dir, layout_run, tile_run, layout_npz, tile_npz;
    int64_t layout_default = 7, tile_default = -1;
    std::vector<int64_t> layout_rt, tile_rt;
};

// Checkpoints and two graphs with a default marker: layout config 7 left at -1 everywhere, tile
// normalizers equal to config 4's runtime.
const Fixture& fixture() {
    static const Fixture f = [] {
        Fixture x;
        x.dir = scratch_dir("tune_cli");
        x.layout_run = train_tiny_layout_run(x.dir, "run", 3);
        x.tile_run = train_tiny_tile_run(x.dir, 3);
        TinyLayoutSpec ls;
        ls.configs = 40;
        LayoutGraph lg = tiny_layout_graph("tune_layout", 5, ls);
        const int64_t per = lg.num_config_nodes() * kLayoutConfigDim;
        std::fill_n(lg.node_config_feat.begin() + x.layout_default * per, per, int8_t{-1});
        lg.config_runtime[static_cast<size_t>(x.layout_default)] = 1000000 * (1 + 5 % 3);
        x.layout_npz = x.dir / "tune_layout.npz";
        save_layout_npz(lg, x.layout_npz);
        x.layout_rt = lg.config_runtime;
        TinyTileSpec ts;
        ts.configs = 30;
        TileGraph tg = tiny_tile_graph("tune_tile", 4, ts);
        tg.config_runtime_normalizers.assign(30, tg.config_runtime[4]);
        x.tile_npz = x.dir / "tune_tile.npz";
        save_tile_npz(tg, x.tile_npz);
        x.tile_rt = tg.config_runtime;
        for (int64_t j = 0; j < 30 && x.tile_default < 0; ++j)
            if (x.tile_rt[static_cast<size_t>(j)] == x.tile_rt[4]) x.tile_default = j;
        return x;
    }();
    return f;
}

// Checks DIR after a completed recorded replay of `budget` measurements.
void check_replay(const fs::path& out, int64_t budget, int64_t default_config,
                  const std::vector<int64_t>& rt) {
    const std::vector<Json> lines = read_jsonl(out / "measurements.jsonl");
    REQUIRE(static_cast<int64_t>(lines.size()) == budget);
    CHECK(lines[0]["round"].get<int64_t>() == 0);
    CHECK(lines[0]["config"].get<int64_t>() == default_config);
    std::set<int64_t> seen;
    int64_t best = -1;
    for (const Json& l : lines) {
        const int64_t c = l["config"].get<int64_t>();
        CHECK(seen.insert(c).second);
        CHECK(l["measured_ns"].get<double>() == static_cast<double>(rt[static_cast<size_t>(c)]));
        if (best < 0 || rt[static_cast<size_t>(c)] < rt[static_cast<size_t>(best)]) best = c;
        CHECK(l["best_config"].get<int64_t>() == best);
    }
    const Json b = read_json_file(out / "best.json");
    CHECK(b["config"].get<int64_t>() == best);
    CHECK(b["runtime_ns"].get<double>() == static_cast<double>(rt[static_cast<size_t>(best)]));
    CHECK(b["default_config"].get<int64_t>() == default_config);
    CHECK(b["speedup_over_default"].get<double>() ==
          doctest::Approx(static_cast<double>(rt[static_cast<size_t>(default_config)]) /
                          static_cast<double>(rt[static_cast<size_t>(best)])));
    CHECK(b.contains("xla"));
}

// The layout graph of the search-space tests, written to DIR/NAME.npz: 12 configs of 3 configurable
// nodes with shapes, config 0 at the compiler default (-1 everywhere: the reference hwmodel can
// cost; the random rows of the others are not layouts of the nodes' ranks).
fs::path search_graph(const fs::path& dir, const std::string& name) {
    TinyLayoutSpec spec;
    spec.configs = 12;
    spec.shapes = true;
    spec.config_nodes = 3;
    LayoutGraph g = tiny_layout_graph(name, 2, spec);
    std::fill_n(g.node_config_feat.begin(), 3 * kLayoutConfigDim, int8_t{-1});
    const fs::path npz = dir / (name + ".npz");
    save_layout_npz(g, npz);
    return npz;
}

}  // namespace

TEST_CASE(
    "segrank tune replays recorded layout runtimes: default first, budget kept, best.json right") {
    const Fixture& f = fixture();
    const fs::path out = f.dir / "layout_out";
    const auto r =
        run_segrank("tune --checkpoint " + sq(f.layout_run.string()) + " --graph " +
                    sq(f.layout_npz.string()) + " --budget 10 --batch 3 --out " + sq(out.string()));
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    CHECK(contains_text(r.output, "tune: round 0: default config 7 measured"));
    CHECK(contains_text(r.output, "tune: round 3: 3 measured (10 of budget 10)"));
    check_replay(out, 10, f.layout_default, f.layout_rt);
    const Json b = read_json_file(out / "best.json");
    REQUIRE(b["xla"].size() == 2);  // one entry per configurable node
    CHECK(b["node_config_feat"].size() == 2);
    CHECK(b["xla"][0].contains("output"));
}

TEST_CASE("segrank tune replays recorded tile runtimes with the is_default run's config first") {
    const Fixture& f = fixture();
    const fs::path out = f.dir / "tile_out";
    const auto r = run_segrank("tune --checkpoint " + sq(f.tile_run.string()) + " --graph " +
                               sq(f.tile_npz.string()) + " --budget 7 --batch 2 --quiet --out " +
                               sq(out.string()));
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    check_replay(out, 7, f.tile_default, f.tile_rt);
    const Json b = read_json_file(out / "best.json");
    CHECK(b["xla"].contains("kernel_bounds"));
    CHECK(b["config_feat"].size() == 24);
}

TEST_CASE("segrank tune --resume after a kill after k measurements measures nothing twice") {
    const Fixture& f = fixture();
    const fs::path out = f.dir / "resume_out";
    const std::string base = "tune --checkpoint " + sq(f.layout_run.string()) + " --graph " +
                             sq(f.layout_npz.string()) + " --batch 4 --quiet --out " +
                             sq(out.string());
    REQUIRE(run_segrank(base + " --budget 12").exit_code == 0);
    // What a kill after k = 5 measurements leaves: 5 flushed lines and a torn sixth.
    const std::string text = read_file_text(out / "measurements.jsonl");
    size_t pos = 0;
    for (int i = 0; i < 5; ++i) pos = text.find('\n', pos) + 1;
    std::set<int64_t> first;
    {
        std::ofstream o(out / "measurements.jsonl", std::ios::binary | std::ios::trunc);
        o << text.substr(0, pos) << text.substr(pos, 20);
    }
    {
        std::istringstream is(text.substr(0, pos));
        for (std::string line; std::getline(is, line);)
            first.insert(read_json(line, "x")["config"].get<int64_t>());
    }
    REQUIRE(first.size() == 5);
    const auto r = run_segrank(base + " --budget 12 --resume");
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    CHECK(contains_text(r.output, "12 measurements (7 now)"));
    check_replay(out, 12, f.layout_default, f.layout_rt);
    // Without --resume the directory is refused; with --resume and a spent budget nothing runs.
    const auto again = run_segrank(base + " --budget 12");
    CHECK(again.exit_code == 1);
    CHECK(contains_text(again.output, "already holds a tuning run"));
    const auto spent = run_segrank(base + " --budget 12 --resume");
    CHECK(spent.exit_code == 0);
    CHECK(contains_text(spent.output, "12 measurements (0 now)"));
    CHECK(read_jsonl(out / "measurements.jsonl").size() == 12);
}

TEST_CASE(
    "a fresh segrank tune refused on the folder of a run killed before its first measurement "
    "leaves its tune.json and empty measurements.jsonl for --resume") {
    const Fixture& f = fixture();
    const fs::path out = f.dir / "killed_early_out";
    const std::string base = "tune --checkpoint " + sq(f.layout_run.string()) + " --graph " +
                             sq(f.layout_npz.string()) + " --batch 4 --quiet --budget 6 --out " +
                             sq(out.string());
    REQUIRE(run_segrank(base).exit_code == 0);
    // What a SIGKILL after tune.json but before the first measurement leaves.
    { std::ofstream(out / "measurements.jsonl", std::ios::trunc); }
    fs::remove(out / "best.json");
    const std::string ident = read_file_text(out / "tune.json");
    const auto again = run_segrank(base);
    INFO(again.output);
    CHECK(again.exit_code == 1);
    CHECK(contains_text(again.output, "already holds a tuning run"));
    CHECK(read_file_text(out / "tune.json") == ident);
    CHECK(fs::is_regular_file(out / "measurements.jsonl"));
    const auto resumed = run_segrank(base + " --resume");
    INFO(resumed.output);
    CHECK(resumed.exit_code == 0);
    CHECK(read_jsonl(out / "measurements.jsonl").size() == 6);
}

TEST_CASE("segrank tune stopped by a signal keeps every measurement taken and resumes from there") {
    const Fixture& f = fixture();
    const fs::path out = f.dir / "stop_out";
    CostModel model({f.layout_run.string()});
    const Graph g = Graph::open(f.layout_npz.string());
    const tune::TuneGraph record =
        tune::load_tune_graph(f.layout_npz, Task::kLayout, LabelPolicy::kRequirePositive);
    std::atomic<int> stop{0};
    std::vector<int64_t> measured;
    auto measure = [&](std::span<const tune::Config> configs) {
        std::vector<cli::Measured> m;
        for (const tune::Config& x : configs) {
            int64_t c = 0;
            while (!(record.recorded_config(c) == x)) ++c;
            measured.push_back(c);
            m.push_back({static_cast<double>(f.layout_rt[static_cast<size_t>(c)]), ""});
        }
        if (measured.size() == 4) stop.store(15);  // SIGTERM arrives while the 4th is measured
        return m;
    };
    cli::TuneOptions o;
    o.budget = 9;
    o.batch = tune::RoundSchedule::fixed(3);
    o.out = out;
    o.measure = "recorded";  // what `measure` returns; tune.json records a --measure value
    o.progress = false;
    o.stop = &stop;
    const cli::TuneResult r = cli::tune_rounds(model, g, record, measure, o);
    CHECK(r.interrupted_by == 15);
    CHECK(r.measured == 4);
    CHECK(read_jsonl(out / "measurements.jsonl").size() == 4);
    CHECK(fs::is_regular_file(out / "best.json"));
    stop.store(0);
    o.resume = true;
    const cli::TuneResult r2 = cli::tune_rounds(model, g, record, measure, o);
    CHECK(r2.interrupted_by == 0);
    CHECK(r2.measured == 9);
    CHECK(r2.measured_now == 5);
    CHECK(std::set<int64_t>(measured.begin(), measured.end()).size() == measured.size());
    check_replay(out, 9, f.layout_default, f.layout_rt);
}

TEST_CASE(
    "segrank tune --candidates search measures new configs of the search space and resumes by "
    "rows") {
    const Fixture& f = fixture();
    const fs::path npz = search_graph(f.dir, "tune_search");
    const fs::path out = f.dir / "search_out";
    const std::string base = "tune --checkpoint " + sq(f.layout_run.string()) + " --graph " +
                             sq(npz.string()) +
                             " --candidates search --measure hwmodel --batch 3 --pool 16 --quiet "
                             "--refit head --refit-steps 10 --out " +
                             sq(out.string());
    const auto r = run_segrank(base + " --budget 5");
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    CHECK(read_jsonl(out / "measurements.jsonl").size() == 5);
    const auto r2 = run_segrank(base + " --budget 9 --resume");
    INFO(r2.output);
    REQUIRE(r2.exit_code == 0);
    CHECK(contains_text(r2.output, "9 measurements (4 now)"));
    const std::vector<Json> lines = read_jsonl(out / "measurements.jsonl");
    REQUIRE(lines.size() == 9);
    std::set<std::string> rows;
    double best = 1e300;
    int64_t new_configs = 0;
    for (const Json& l : lines) {
        REQUIRE(l.contains("rows"));
        CHECK(rows.insert(dump_json(l["rows"])).second);  // nothing measured twice
        new_configs += l["config"].is_null();
        if (l["measured_ns"].is_number()) best = std::min(best, l["measured_ns"].get<double>());
    }
    CHECK(lines[0]["config"].is_number_integer());  // the default is a row of the file
    CHECK(new_configs >= 1);
    const Json b = read_json_file(out / "best.json");
    CHECK(b["runtime_ns"].get<double>() == best);
    CHECK(b["node_config_feat"].size() == 3);
    // A directory of a search run is not continued as a recorded one.
    const auto mixed = run_segrank(
        "tune --checkpoint " + sq(f.layout_run.string()) + " --graph " + sq(npz.string()) +
        " --measure hwmodel --budget 12 --resume --out " + sq(out.string()));
    CHECK(mixed.exit_code == 1);
    CHECK(contains_text(mixed.output, "the run used --candidates search, not recorded"));
}

TEST_CASE(
    "segrank tune --strategy anneal and random measure the default first, then distinct configs "
    "of the search space, without a checkpoint") {
    const Fixture& f = fixture();
    const fs::path npz = search_graph(f.dir, "tune_free");
    for (const std::string strategy : {"anneal", "random"}) {
        INFO(strategy);
        const auto free_run = [&](const fs::path& out) {
            return run_segrank("tune --strategy " + strategy + " --graph " + sq(npz.string()) +
                               " --measure hwmodel:propagate --budget 7 --batch 2 --seed 3 "
                               "--quiet --out " +
                               sq(out.string()));
        };
        const fs::path out = f.dir / ("free_" + strategy);
        const auto r = free_run(out);
        INFO(r.output);
        REQUIRE(r.exit_code == 0);
        const std::vector<Json> lines = read_jsonl(out / "measurements.jsonl");
        REQUIRE(lines.size() == 7);
        CHECK(lines[0]["round"].get<int64_t>() == 0);
        CHECK(lines[0]["config"].get<int64_t>() == 0);  // the recorded default, measured once
        std::set<std::string> rows;
        double best = 1e300;
        for (const Json& l : lines) {
            CHECK(rows.insert(dump_json(l["rows"])).second);
            CHECK(l["predicted"].is_null());
            // A failed measurement (the tiny graph's features and hwmodel's rebuilt module
            // disagree on some ranks) keeps its reason and counts against the budget.
            if (l["measured_ns"].is_number())
                best = std::min(best, l["measured_ns"].get<double>());
            else
                CHECK(l["error"].is_string());
            CHECK(l["best_ns"].get<double>() == best);
        }
        REQUIRE(lines[0]["measured_ns"].is_number());
        const Json t = read_json_file(out / "tune.json");
        CHECK(t["strategy"].get<std::string>() == strategy);
        CHECK(t["candidates"].get<std::string>() == "search");
        CHECK(t["checkpoints"].empty());
        const Json b = read_json_file(out / "best.json");
        CHECK(b["runtime_ns"].get<double>() == best);
        CHECK(b["default_runtime_ns"].get<double>() == lines[0]["measured_ns"].get<double>());
        // The same seed gives the same run.
        const fs::path again = f.dir / ("free_again_" + strategy);
        REQUIRE(free_run(again).exit_code == 0);
        CHECK(read_file_text(again / "measurements.jsonl") ==
              read_file_text(out / "measurements.jsonl"));
    }
    const std::string base = "tune --graph " + sq(npz.string()) + " --budget 3 --out " +
                             sq((f.dir / "free_bad").string());
    const auto ck =
        run_segrank(base + " --strategy anneal --checkpoint " + sq(f.layout_run.string()));
    CHECK(ck.exit_code == 1);
    CHECK(contains_text(ck.output, "--strategy anneal: a model-free search takes no --checkpoint"));
    const auto rec = run_segrank(base + " --strategy random --candidates recorded");
    CHECK(rec.exit_code == 1);
    CHECK(contains_text(rec.output, "--candidates recorded does not apply"));
    const auto res = run_segrank(base + " --strategy anneal --resume");
    CHECK(res.exit_code == 1);
    CHECK(contains_text(res.output, "--strategy anneal does not resume"));
    const auto refit = run_segrank(base + " --strategy random --refit head");
    CHECK(refit.exit_code == 1);
    CHECK(contains_text(refit.output, "--refit applies to --strategy model only"));
    const auto bad = run_segrank(base + " --strategy greedy");
    CHECK(bad.exit_code == 1);
    CHECK(contains_text(bad.output, "--strategy: expected model, anneal or random, got 'greedy'"));
    const auto none = run_segrank(base);
    CHECK(none.exit_code == 1);
    CHECK(contains_text(none.output, "missing --checkpoint"));
    CHECK(!fs::exists(f.dir / "free_bad"));
}

TEST_CASE(
    "segrank tune --measure exec:CMD sends each config's rows to the process and logs its "
    "runtimes") {
    if (!have_python3()) {
        MESSAGE("SKIPPED: python3 not found");
        return;
    }
    const Fixture& f = fixture();
    const fs::path harness = f.dir / "harness.py";
    std::ofstream(harness) << "import json, sys\n"
                              "for line in sys.stdin:\n"
                              "    r = json.loads(line)\n"
                              "    flat = [v for row in r['config'] for v in row]\n"
                              "    print(json.dumps({'id': r['id'], 'runtime_ns': 1000 + "
                              "sum(abs(v) for v in flat)}), flush=True)\n";
    const fs::path out = f.dir / "exec_out";
    const auto r =
        run_segrank("tune --checkpoint " + sq(f.layout_run.string()) + " --graph " +
                    sq(f.layout_npz.string()) + " --budget 5 --batch 2 --quiet " + "--measure " +
                    sq("exec:python3 " + harness.string()) + " --out " + sq(out.string()));
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    const LayoutGraph lg = load_layout_npz(f.layout_npz, LabelPolicy::kRequirePositive);
    const std::vector<Json> lines = read_jsonl(out / "measurements.jsonl");
    REQUIRE(lines.size() == 5);
    const size_t per = static_cast<size_t>(lg.num_config_nodes()) * kLayoutConfigDim;
    for (const Json& l : lines) {
        const auto c = static_cast<size_t>(l["config"].get<int64_t>());
        double want = 1000;
        for (size_t i = 0; i < per; ++i) want += std::abs(lg.node_config_feat[c * per + i]);
        CHECK(l["measured_ns"].get<double>() == want);
    }
    CHECK(lines[0]["config"].get<int64_t>() == f.layout_default);
}

TEST_CASE("segrank tune --start-timeout bounds a new harness's first request and -1 is refused" *
          doctest::test_suite("hostile")) {
    const Fixture& f = fixture();
    auto args = [&](const fs::path& out, const std::string& start) {
        return "tune --strategy random --graph " + sq(f.layout_npz.string()) +
               " --budget 2 --batch 1 --quiet --measure 'exec:sleep 60' --timeout 0.5 "
               "--max-restarts 0 --start-timeout " +
               start + " --out " + sq(out.string());
    };
    const fs::path bad = f.dir / "start_timeout_bad";
    const auto refused = run_segrank(args(bad, "-1"));
    INFO(refused.output);
    CHECK(refused.exit_code == 1);
    CHECK(contains_text(refused.output, "--start-timeout -1: expected seconds >= 0"));
    CHECK(!fs::exists(bad));
    const fs::path out = f.dir / "start_timeout_0";
    const auto t0 = std::chrono::steady_clock::now();
    const auto r = run_segrank(args(out, "0"));
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    INFO(r.output);
    CHECK(r.exit_code == 1);  // no measurement succeeded
    CHECK(contains_text(r.output, "no reply within 0.5 s; killed"));
    CHECK(s < 20.0);  // not the default 30 s start-up allowance
}

TEST_CASE(
    "segrank tune --measure exec:CMD exits 1 when no measurement succeeded, and gives no speedup "
    "when only the default's failed" *
    doctest::test_suite("hostile")) {
    if (!have_python3()) {
        MESSAGE("SKIPPED: python3 not found");
        return;
    }
    const Fixture& f = fixture();
    // Fails every request (FAIL_ALL) or only the first one (the default's).
    const fs::path harness = f.dir / "failing_harness.py";
    std::ofstream(harness) << "import json, os, sys\n"
                              "n = 0\n"
                              "for line in sys.stdin:\n"
                              "    r = json.loads(line)\n"
                              "    n += 1\n"
                              "    if n == 1 or os.environ.get('FAIL_ALL'):\n"
                              "        print(json.dumps({'id': r['id'], 'error': 'no TPU here'}), "
                              "flush=True)\n"
                              "    else:\n"
                              "        print(json.dumps({'id': r['id'], 'runtime_ns': 1000 + n}), "
                              "flush=True)\n";
    auto args = [&](const fs::path& out) {
        return "tune --checkpoint " + sq(f.layout_run.string()) + " --graph " +
               sq(f.layout_npz.string()) + " --budget 3 --batch 2 --quiet --measure " +
               sq("exec:exec python3 " + harness.string()) + " --out " + sq(out.string());
    };
    const fs::path all = f.dir / "fail_all_out";
    const auto r = run_command("FAIL_ALL=1 OMP_NUM_THREADS=2 '" + segrank_binary().string() + "' " +
                               args(all));
    INFO(r.output);
    CHECK(r.exit_code == 1);
    CHECK(contains_text(r.output, "no measurement succeeded (3 of 3 failed"));
    CHECK(contains_text(r.output, "the first failure: exec: no TPU here"));
    // The failed lines are the record.
    const std::vector<Json> lines = read_jsonl(all / "measurements.jsonl");
    REQUIRE(lines.size() == 3);
    for (const Json& l : lines) {
        CHECK(l["measured_ns"].is_null());
        CHECK(l["error"].get<std::string>() == "exec: no TPU here");
    }
    CHECK(lines[0]["config"].get<int64_t>() == f.layout_default);
    // Only the default failed: a result without a speedup.
    const fs::path some = f.dir / "fail_default_out";
    const auto ok = run_segrank(args(some));
    INFO(ok.output);
    CHECK(ok.exit_code == 0);
    CHECK(contains_text(ok.output, "no speedup: the default (config 7) has no successful"));
    const Json best = read_json(read_file_text(some / "best.json"), "best.json");
    CHECK(best["default_runtime_ns"].is_null());
    CHECK(best["speedup_over_default"].is_null());
    CHECK(best["runtime_ns"].get<double>() == 1002);
}

TEST_CASE(
    "segrank tune under SIGTERM exits 143 keeping every measurement, and --resume continues") {
    if (!have_python3()) {
        MESSAGE("SKIPPED: python3 not found");
        return;
    }
    const Fixture& f = fixture();
    // The harness answers, and sends SIGTERM to segrank (its parent) while answering the third.
    const fs::path harness = f.dir / "term_harness.py";
    std::ofstream(harness) << "import json, os, signal, sys\n"
                              "n = 0\n"
                              "for line in sys.stdin:\n"
                              "    r = json.loads(line)\n"
                              "    n += 1\n"
                              "    if n == 3 and os.environ.get('TERM_AT_3'):\n"
                              "        os.kill(os.getppid(), signal.SIGTERM)\n"
                              "    print(json.dumps({'id': r['id'], 'runtime_ns': 1000 + n}), "
                              "flush=True)\n";
    const fs::path out = f.dir / "term_out";
    const std::string args = "tune --checkpoint " + sq(f.layout_run.string()) + " --graph " +
                             sq(f.layout_npz.string()) + " --budget 7 --batch 2 --quiet " +
                             "--measure " + sq("exec:exec python3 " + harness.string()) +
                             " --out " + sq(out.string());
    const auto r =
        run_command("TERM_AT_3=1 OMP_NUM_THREADS=2 '" + segrank_binary().string() + "' " + args);
    INFO(r.output);
    CHECK(r.exit_code == 143);
    CHECK(contains_text(r.output, "interrupted by signal 15 after 3 measurements"));
    CHECK(read_jsonl(out / "measurements.jsonl").size() == 3);
    CHECK(fs::is_regular_file(out / "best.json"));
    const auto r2 = run_segrank(args + " --resume");
    INFO(r2.output);
    CHECK(r2.exit_code == 0);
    CHECK(contains_text(r2.output, "7 measurements (4 now)"));
    std::set<int64_t> seen;
    for (const Json& l : read_jsonl(out / "measurements.jsonl"))
        CHECK(seen.insert(l["config"].get<int64_t>()).second);
    CHECK(seen.size() == 7);
}

TEST_CASE("segrank tune --refit head refits between rounds and still keeps the budget") {
    const Fixture& f = fixture();
    const fs::path out = f.dir / "refit_out";
    const auto r = run_segrank(
        "tune --checkpoint " + sq(f.layout_run.string()) + " --graph " + sq(f.layout_npz.string()) +
        " --budget 9 --batch 4 --refit head --refit-steps 30 --out " + sq(out.string()));
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    check_replay(out, 9, f.layout_default, f.layout_rt);
}

TEST_CASE("segrank tune refuses bad flags, another graph's directory and a corrupt measurement") {
    const Fixture& f = fixture();
    const std::string ck = " --checkpoint " + sq(f.layout_run.string());
    const std::string graph = " --graph " + sq(f.layout_npz.string());
    const fs::path out = f.dir / "errors_out";
    auto fails_with = [&](const std::string& args, const std::string& what) {
        const auto r = run_segrank("tune" + args);
        INFO(args, "\n", r.output);
        CHECK(r.exit_code == 1);
        CHECK(contains_text(r.output, what));
    };
    fails_with(ck + graph + " --out " + sq(out.string()), "missing --budget");
    fails_with(ck + graph + " --budget 0 --out " + sq(out.string()),
               "--budget: expected >= 1, got 0");
    fails_with(ck + graph + " --budget 3 --refit some --out " + sq(out.string()),
               "--refit: expected none, head or full, got 'some'");
    fails_with(ck + graph + " --budget 3 --measure magic --out " + sq(out.string()),
               "--measure 'magic'");
    fails_with(ck + " --graph " + sq(f.tile_npz.string()) + " --budget 3 --out " + sq(out.string()),
               "no --checkpoint was trained on the tile task");
    CHECK_FALSE(fs::exists(out / "measurements.jsonl"));
    // A directory of the layout graph is not continued on the tile graph.
    REQUIRE(run_segrank("tune" + ck + graph + " --budget 3 --quiet --out " + sq(out.string()))
                .exit_code == 0);
    fails_with(" --checkpoint " + sq(f.tile_run.string()) + " --graph " + sq(f.tile_npz.string()) +
                   " --budget 5 --resume --out " + sq(out.string()),
               "holds measurements of another graph");
    // A measurement of a config the graph does not have.
    {
        std::ofstream o(out / "measurements.jsonl", std::ios::app);
        o << "{\"round\":1,\"config\":400,\"measured_ns\":5}\n";
    }
    fails_with(ck + graph + " --budget 5 --resume --out " + sq(out.string()),
               "measurements.jsonl:4: config 400 is out of range (the graph has 40 configs)");
}

TEST_CASE(
    "segrank tune --resume refuses another measurement backend, hwmodel family or --noise than "
    "the run's, naming both, and measures nothing" *
    doctest::test_suite("hostile")) {
    const Fixture& f = fixture();
    const fs::path npz = search_graph(f.dir, "tune_resume_measure");
    const fs::path out = f.dir / "resume_measure_out";
    const std::string base = "tune --checkpoint " + sq(f.layout_run.string()) + " --graph " +
                             sq(npz.string()) + " --batch 2 --quiet --out " + sq(out.string());
    const auto r = run_segrank(base + " --measure recorded --budget 3");
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    const std::string before = read_file_text(out / "measurements.jsonl");
    const std::string best_before = read_file_text(out / "best.json");
    const auto refused = [&](const std::string& args, const std::string& was,
                             const std::string& now) {
        const auto x = run_segrank(base + args + " --budget 5 --resume");
        INFO(args, "\n", x.output);
        CHECK(x.exit_code == 1);
        CHECK(contains_text(x.output, "the run was measured with --measure " + was + ", not " +
                                          now + " (runtimes of different measurements"));
        CHECK(read_file_text(out / "measurements.jsonl") == before);
        CHECK(read_file_text(out / "best.json") == best_before);
    };
    refused(" --measure hwmodel", "recorded", "hwmodel:default with --noise 0");
    refused(" --measure exec:'python3 h.py'", "recorded", "exec:python3 h.py");
    // A hwmodel run is continued by the same family and noise only.
    const fs::path hw = f.dir / "resume_measure_hw";
    const std::string hw_base = "tune --checkpoint " + sq(f.layout_run.string()) + " --graph " +
                                sq(npz.string()) + " --batch 2 --quiet --out " + sq(hw.string());
    const auto h = run_segrank(hw_base + " --measure hwmodel --noise 0.5 --budget 3");
    INFO(h.output);
    REQUIRE(h.exit_code == 0);
    for (const auto& [args, now] : std::vector<std::pair<std::string, std::string>>{
             {" --measure hwmodel", "hwmodel:default with --noise 0"},
             {" --measure hwmodel:propagate --noise 0.5", "hwmodel:propagate with --noise 0.5"}}) {
        const auto x = run_segrank(hw_base + args + " --budget 5 --resume");
        INFO(args, "\n", x.output);
        CHECK(x.exit_code == 1);
        CHECK(contains_text(x.output, "--measure hwmodel:default with --noise 0.5, not " + now));
        CHECK(read_jsonl(hw / "measurements.jsonl").size() == 3);
    }
    const auto same = run_segrank(hw_base +
                                  " --measure hwmodel:default --noise 0.5 --budget 5 "
                                  "--resume");
    INFO(same.output);
    CHECK(same.exit_code == 0);
    CHECK(read_jsonl(hw / "measurements.jsonl").size() == 5);
}

TEST_CASE("segrank tune that cannot write tune.json (a full disk) leaves no --out folder behind" *
          doctest::test_suite("hostile")) {
    const Fixture& f = fixture();
    const fs::path out = f.dir / "no_space" / "out";
    fs::remove_all(f.dir / "no_space");
    // A file size limit of 0 with SIGXFSZ ignored: every write to a file fails with EFBIG, as on
    // a full disk (also as root, unlike a read-only folder); stdout and stderr are a pipe.
    const auto r = run_command("ulimit -f 0; trap '' XFSZ; OMP_NUM_THREADS=2 exec " +
                               sq(segrank_binary().string()) + " tune --checkpoint " +
                               sq(f.layout_run.string()) + " --graph " + sq(f.layout_npz.string()) +
                               " --budget 3 --quiet --out " + sq(out.string()));
    INFO(r.output);
    CHECK(r.exit_code == 1);
    CHECK(contains_text(r.output, "tune.json"));
    CHECK_FALSE(fs::exists(out));
    CHECK_FALSE(fs::exists(f.dir / "no_space"));
}
