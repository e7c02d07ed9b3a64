// `segrank tune --batch grow[:CAP]` end to end: the rounds of measurements.jsonl and the progress
// lines grow with the measurements taken (ceil(measured / 10) configs, 2 up to the cap), a quarter
// of the run explores (lines "explored"), --resume continues the same schedule (from a file without
// "explored" too), the model-free strategies take it, and a bad --batch is refused naming the
// option.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "tests/support/test_paths.h"
#include "tests/support/tiny_checkpoint.h"
#include "util/json.h"

using namespace segrank;
using namespace segrank::test;
namespace fs = std::filesystem;

namespace {

CommandResult run_segrank(const std::string& args) {
    return run_command("OMP_NUM_THREADS=2 " + sq(segrank_binary().string()) + " " + args);
}

// Measurements per round of DIR/measurements.jsonl, in round order (round 0: the default).
std::vector<int64_t> round_sizes(const fs::path& out) {
    std::map<int64_t, int64_t> per_round;
    std::istringstream is(read_file_text(out / "measurements.jsonl"));
    for (std::string line; std::getline(is, line);)
        if (!line.empty()) ++per_round[read_json(line, out.string())["round"].get<int64_t>()];
    std::vector<int64_t> sizes;
    for (const auto& [round, n] : per_round) {
        CHECK(round == static_cast<int64_t>(sizes.size()));  // no round skipped
        sizes.push_back(n);
    }
    return sizes;
}

// Exploration picks per round of DIR/measurements.jsonl (its lines' "explored"), in round order;
// `from_round` the first round counted.
std::vector<int64_t> explored_per_round(const fs::path& out, int64_t from_round = 0) {
    std::map<int64_t, int64_t> per_round;
    std::istringstream is(read_file_text(out / "measurements.jsonl"));
    for (std::string line; std::getline(is, line);) {
        if (line.empty()) continue;
        const Json j = read_json(line, out.string());
        const int64_t round = j["round"].get<int64_t>();
        if (round < from_round) continue;
        REQUIRE(j.contains("explored"));
        per_round[round] += j["explored"].get<bool>();
    }
    std::vector<int64_t> n;
    for (const auto& [round, x] : per_round) n.push_back(x);
    return n;
}

// The exploration picks per round (round order, round 0 the default's) that segrank tune with one
// checkpoint and --batch grow takes, replayed from DIR/measurements.jsonl: a round of k >= 2
// explores max(1, k / 4) while fewer than a quarter of the measurements before it explored (a line
// without "explored": the last max(1, n / 4) of its round of n >= 2), else 0; and all but one
// (k - 1) when it starts in the second half of the budget after a round whose measurements were
// none faster than the best before it (docs/tune.md#one-knob-exploration). The --budget of a round
// is `budget`, or `resumed_budget` from the round that starts after `resumed_at` measurements.
std::vector<int64_t> expected_explored(const fs::path& out, int64_t budget, int64_t resumed_at = -1,
                                       int64_t resumed_budget = 0) {
    struct Round {
        int64_t k = 0, explored = 0;
        double best = 1e300;
        bool old = false;  // lines without "explored"
    };
    std::map<int64_t, Round> rounds;
    std::istringstream is(read_file_text(out / "measurements.jsonl"));
    for (std::string line; std::getline(is, line);) {
        if (line.empty()) continue;
        const Json j = read_json(line, out.string());
        Round& r = rounds[j["round"].get<int64_t>()];
        ++r.k;
        r.old = !j.contains("explored");
        if (!r.old) r.explored += j["explored"].get<bool>();
        if (j["measured_ns"].is_number()) r.best = std::min(r.best, j["measured_ns"].get<double>());
    }
    std::vector<int64_t> want;
    int64_t measured = 0, explored = 0;
    double best = 1e300;
    bool improved = true;
    for (auto& [round, r] : rounds) {
        if (r.old && r.k >= 2) r.explored = std::max<int64_t>(1, r.k / 4);
        int64_t x = 0;
        if (round > 0 && r.k >= 2 && 4 * explored < measured) x = std::max<int64_t>(1, r.k / 4);
        const int64_t b = resumed_at >= 0 && measured >= resumed_at ? resumed_budget : budget;
        if (round > 0 && 2 * measured >= b && !improved) x = std::max(x, r.k - 1);
        want.push_back(x);
        improved = r.best < best;
        best = std::min(best, r.best);
        measured += r.k;
        explored += r.explored;
    }
    return want;
}

struct Fixture {
    fs::path dir, run, npz;
};

// A tiny layout checkpoint and a recorded layout graph of 60 configs whose config 0 is the
// default (every slot -1).
const Fixture& fixture() {
    static const Fixture f = [] {
        Fixture x;
        x.dir = scratch_dir("tune_batch_cli");
        x.run = train_tiny_layout_run(x.dir, "run", 3);
        TinyLayoutSpec spec;
        spec.configs = 60;
        LayoutGraph g = tiny_layout_graph("tune_grow", 3, spec);
        std::fill_n(g.node_config_feat.begin(), g.num_config_nodes() * kLayoutConfigDim,
                    int8_t{-1});
        x.npz = x.dir / "tune_grow.npz";
        save_layout_npz(g, x.npz);
        return x;
    }();
    return f;
}

std::string model_args(const Fixture& f, const fs::path& out, const std::string& batch) {
    return "tune --checkpoint " + sq(f.run.string()) + " --graph " + sq(f.npz.string()) +
           " --measure recorded --refit head --refit-steps 5 --batch " + batch + " --out " +
           sq(out.string());
}

}  // namespace

TEST_CASE(
    "segrank tune --batch grow measures rounds of ceil(measured / 10) configs, 2 up to the cap, "
    "and --resume continues the same schedule") {
    const Fixture& f = fixture();
    const fs::path whole = f.dir / "grow_whole";
    const auto r = run_segrank(model_args(f, whole, "grow") + " --budget 40");
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    // After 1, 3, ..., 19 measurements: 2 each (10 rounds, 21 measured); after 21, 24, 27, 30: 3;
    // after 33: 4; after 37: the 3 the budget leaves.
    const std::vector<int64_t> want = {1, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 4, 3};
    CHECK(round_sizes(whole) == want);
    // The progress lines say the same.
    CHECK(contains_text(r.output, "tune: round 10: 2 measured (21 of budget 40)"));
    CHECK(contains_text(r.output, "tune: round 11: 3 measured (24 of budget 40)"));
    CHECK(contains_text(r.output, "tune: round 15: 4 measured (37 of budget 40)"));
    // A round explores one config while fewer than a quarter of the measurements so far were
    // explored: rounds of 2 alternate (the first after the default explores) up to round 10, the
    // last that starts in the first half of the budget (after 19 measured); later rounds explore
    // one config from round 13 (after 27 measured, 7 explored), or all but one after a round that
    // found nothing faster.
    const std::vector<int64_t> explored = expected_explored(whole, 40);
    CHECK(std::vector<int64_t>(explored.begin(), explored.begin() + 11) ==
          std::vector<int64_t>{0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0});
    CHECK(explored_per_round(whole) == explored);

    // Stopped after 15 measurements (a round boundary) and resumed: the same rounds.
    const fs::path split = f.dir / "grow_resumed";
    REQUIRE(run_segrank(model_args(f, split, "grow") + " --budget 15 --quiet").exit_code == 0);
    CHECK(round_sizes(split) == std::vector<int64_t>(want.begin(), want.begin() + 8));
    const auto resumed = run_segrank(model_args(f, split, "grow") + " --budget 40 --resume");
    INFO(resumed.output);
    REQUIRE(resumed.exit_code == 0);
    CHECK(contains_text(resumed.output, "tune: round 8: 2 measured (17 of budget 40)"));
    CHECK(round_sizes(split) == want);
    // The rounds from 8 measurements on were the second half of --budget 15.
    CHECK(explored_per_round(split) == expected_explored(split, 15, 15, 40));
    // Stopped inside a round (after 16): the resumed run sizes its rounds by the 16 taken.
    const fs::path odd = f.dir / "grow_odd";
    REQUIRE(run_segrank(model_args(f, odd, "grow") + " --budget 16 --quiet").exit_code == 0);
    REQUIRE(run_segrank(model_args(f, odd, "grow") + " --budget 40 --resume --quiet").exit_code ==
            0);
    CHECK(round_sizes(odd) ==
          std::vector<int64_t>{1, 2, 2, 2, 2, 2, 2, 2, 1, 2, 2, 2, 3, 3, 3, 4, 4, 1});
}

TEST_CASE(
    "segrank tune --batch grow --resume of a measurements.jsonl without \"explored\" counts a "
    "quarter of each earlier round as explored") {
    const Fixture& f = fixture();
    const fs::path whole = f.dir / "grow_whole_for_old";
    REQUIRE(run_segrank(model_args(f, whole, "grow") + " --budget 15 --quiet").exit_code == 0);
    // The 15 lines (rounds 0-7) as segrank tune wrote them before the field.
    const fs::path old = f.dir / "grow_old_file";
    fs::create_directories(old);
    fs::copy_file(whole / "tune.json", old / "tune.json");
    std::string text;
    std::istringstream is(read_file_text(whole / "measurements.jsonl"));
    for (std::string line; std::getline(is, line);) {
        Json j = read_json(line, whole.string());
        REQUIRE(j.contains("explored"));
        j.erase("explored");
        text += dump_json(j) + "\n";
    }
    write_file_text(old / "measurements.jsonl", text);
    const auto r = run_segrank(model_args(f, old, "grow") + " --budget 40 --resume --quiet");
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    CHECK(round_sizes(old) ==
          std::vector<int64_t>{1, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 4, 3});
    // Rounds 1-7 of 2 count one exploration pick each (7 of 15): rounds 8-10 (the first half of
    // --budget 40) explore none, the later ones one once fewer than a quarter of the measurements
    // were explored, after 30 measured, or all but one after a round that found nothing faster.
    const std::vector<int64_t> explored = explored_per_round(old, 8);
    CHECK(std::vector<int64_t>(explored.begin(), explored.begin() + 3) ==
          std::vector<int64_t>{0, 0, 0});
    const std::vector<int64_t> want = expected_explored(old, 40);
    CHECK(explored == std::vector<int64_t>(want.begin() + 8, want.end()));
}

TEST_CASE("segrank tune --batch grow:CAP caps the rounds and fixed --batch B keeps rounds of B") {
    const Fixture& f = fixture();
    const fs::path capped = f.dir / "grow_cap3";
    REQUIRE(run_segrank(model_args(f, capped, "grow:3") + " --budget 40 --quiet").exit_code == 0);
    CHECK(round_sizes(capped) ==
          std::vector<int64_t>{1, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 1});
    const fs::path fixed = f.dir / "fixed4";
    REQUIRE(run_segrank(model_args(f, fixed, "4") + " --budget 40 --quiet").exit_code == 0);
    CHECK(round_sizes(fixed) == std::vector<int64_t>{1, 4, 4, 4, 4, 4, 4, 4, 4, 4, 3});
}

TEST_CASE("segrank tune --strategy random and anneal take --batch grow: rounds of the schedule") {
    const Fixture& f = fixture();
    // A search graph (3 configurable nodes with array shapes) with a large search space.
    TinyLayoutSpec spec;
    spec.configs = 12;
    spec.shapes = true;
    spec.config_nodes = 3;
    LayoutGraph g = tiny_layout_graph("tune_grow_free", 2, spec);
    std::fill_n(g.node_config_feat.begin(), 3 * kLayoutConfigDim, int8_t{-1});
    const fs::path npz = f.dir / "tune_grow_free.npz";
    save_layout_npz(g, npz);
    for (const std::string strategy : {"random", "anneal"}) {
        INFO(strategy);
        const fs::path out = f.dir / ("grow_" + strategy);
        const auto r = run_segrank("tune --strategy " + strategy + " --graph " + sq(npz.string()) +
                                   " --measure hwmodel:propagate --budget 26 --batch grow --seed 1 "
                                   "--quiet --out " +
                                   sq(out.string()));
        INFO(r.output);
        REQUIRE(r.exit_code == 0);
        // Round 0 the default; the search's first round re-asks for it (random: with one draw;
        // annealing: alone, no round), then rounds of the schedule after 2 (random) or 1
        // (annealing) measurements: 2 up to 21 or 22 measured, then 3.
        const std::vector<int64_t> want =
            strategy == "random" ? std::vector<int64_t>{1, 1, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 3, 1}
                                 : std::vector<int64_t>{1, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 3, 2};
        CHECK(round_sizes(out) == want);
        // No model picks, so no exploration pick: the lines have no "explored".
        CHECK_FALSE(contains_text(read_file_text(out / "measurements.jsonl"), "explored"));
    }
}

TEST_CASE(
    "segrank tune --candidates search with a --batch or grow cap of 2^63 - 1 scores the default "
    "pool, at most 65536 proposals" *
    doctest::test_suite("hostile")) {
    const Fixture& f = fixture();
    TinyLayoutSpec spec;
    spec.configs = 12;
    spec.shapes = true;
    spec.config_nodes = 3;
    LayoutGraph g = tiny_layout_graph("tune_huge_batch", 2, spec);
    std::fill_n(g.node_config_feat.begin(), 3 * kLayoutConfigDim, int8_t{-1});
    const fs::path npz = f.dir / "tune_huge_batch.npz";
    save_layout_npz(g, npz);
    for (const std::string batch : {"9223372036854775807", "grow:9223372036854775807"}) {
        INFO(batch);
        const fs::path out = f.dir / ("huge_" + batch.substr(0, 4));
        const auto r =
            run_segrank("tune --checkpoint " + sq(f.run.string()) + " --graph " + sq(npz.string()) +
                        " --candidates search --measure hwmodel --budget 5 --batch " + batch +
                        " --out " + sq(out.string()));
        INFO(r.output);
        REQUIRE(r.exit_code == 0);
        // 8 x the batch would overflow; the pool is the largest one, announced before scoring.
        CHECK(
            contains_text(r.output, "tune: round 1: scoring 65536 proposals with the cost model"));
        CHECK(round_sizes(out).size() >= 2);
    }
}

TEST_CASE("segrank tune refuses a --batch that is no count, grow or grow:CAP, naming the option" *
          doctest::test_suite("hostile")) {
    const Fixture& f = fixture();
    for (const std::string bad : {"0", "-1", "grow:1", "grow:0", "grow:", "grow:two", "3x", "auto",
                                  "99999999999999999999"}) {
        INFO(bad);
        const fs::path out = f.dir / "bad_batch";
        const auto r = run_segrank(model_args(f, out, sq(bad)) + " --budget 5");
        CHECK(r.exit_code == 1);
        CHECK(contains_text(r.output,
                            "--batch: expected a count of configs per round >= 1, grow "
                            "(rounds growing with the measurements, up to 8) or "
                            "grow:CAP (CAP >= 2), got '" +
                                bad + "'"));
        CHECK_FALSE(fs::exists(out));
    }
}
