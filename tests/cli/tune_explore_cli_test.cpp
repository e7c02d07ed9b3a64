// `segrank tune` with one --checkpoint explores, in the second half of its budget, the one-knob
// changes of the best config measured so far first, and all but one pick of a round after a round
// that did not beat the best (tune/explore.h, docs/tune.md#the-rounds), end to end on a recorded
// layout graph, also when resumed after a kill.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "tests/support/test_paths.h"
#include "tests/support/tiny_checkpoint.h"
#include "util/json.h"

using namespace segrank;
using namespace segrank::test;
namespace fs = std::filesystem;

TEST_CASE(
    "segrank tune with one checkpoint explores one-knob changes of the best config so far in the "
    "second half of the budget, all but one pick of a round after a round that found nothing "
    "faster, uniform draws before, never a config twice, the same schedule after --resume") {
    const fs::path dir = scratch_dir("tune_explore_cli");
    const fs::path run = train_tiny_layout_run(dir, "run", 3);
    // 60 configs of 2 configurable nodes (6 knobs): config 0 the default (every slot -1) and the
    // fastest; configs 1..6 the default with one knob set; the others random rows, each two or
    // more knobs from the default.
    TinyLayoutSpec spec;
    spec.configs = 60;
    LayoutGraph g = tiny_layout_graph("tune_explore", 3, spec);
    const int64_t row = g.num_config_nodes() * kLayoutConfigDim;
    const auto knobs_from_default = [&](int64_t c) {
        int64_t k = 0;
        for (int64_t s = 0; s < row; s += 6)
            k += std::any_of(g.node_config_feat.begin() + c * row + s,
                             g.node_config_feat.begin() + c * row + s + 6,
                             [](int8_t v) { return v != -1; });
        return k;
    };
    for (int64_t c = 0; c <= 6; ++c) {
        std::fill_n(g.node_config_feat.begin() + c * row, row, int8_t{-1});
        if (c > 0) {
            g.node_config_feat[static_cast<size_t>(c * row + (c - 1) * 6)] = 1;
            g.node_config_feat[static_cast<size_t>(c * row + (c - 1) * 6 + 1)] = 0;
        }
    }
    for (int64_t c = 7; c < 60; ++c) REQUIRE(knobs_from_default(c) >= 2);
    const std::set<int64_t> one_knob = {1, 2, 3, 4, 5, 6};
    g.config_runtime[0] = 1000;
    for (int64_t c = 1; c < 60; ++c) g.config_runtime[static_cast<size_t>(c)] += 2000000;
    const fs::path npz = dir / "tune_explore.npz";
    save_layout_npz(g, npz);

    const std::string base = "OMP_NUM_THREADS=2 " + sq(segrank_binary().string()) +
                             " tune --checkpoint " + sq(run.string()) + " --graph " +
                             sq(npz.string()) +
                             " --measure recorded --refit head --refit-steps 5 --batch grow"
                             " --quiet --budget 40 --out ";
    const fs::path whole = dir / "whole", killed = dir / "killed",
                   killed_late = dir / "killed_late";
    const auto r = run_command(base + sq(whole.string()));
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    // What a kill after 13 measurements (after round 6) or 27 (after the second round of the
    // second half) leaves, then --resume with the same budget.
    const std::string text = read_file_text(whole / "measurements.jsonl");
    for (const auto& [out, lines] : {std::pair{killed, 13}, std::pair{killed_late, 27}}) {
        size_t pos = 0;
        for (int i = 0; i < lines; ++i) pos = text.find('\n', pos) + 1;
        fs::create_directories(out);
        fs::copy_file(whole / "tune.json", out / "tune.json");
        write_file_text(out / "measurements.jsonl", text.substr(0, pos));
        const auto resumed = run_command(base + sq(out.string()) + " --resume");
        INFO(resumed.output);
        REQUIRE(resumed.exit_code == 0);
    }

    // The default stays the best, so every round that starts after 20 of the 40 measurements
    // follows a round that found nothing faster: rounds of --batch grow starting after 21, 24, 27,
    // 30, 33 and 37 measurements (3, 3, 3, 3, 4 and 3 configs) explore all but one pick, 13 in
    // all, one of the default's 6 one-knob changes while one is left; earlier exploration picks
    // are uniform draws of the 59 other configs, which hit the 6 by chance only. The schedule
    // (round and "explored" of each line) is the same with and without a kill.
    std::vector<std::pair<int64_t, bool>> schedule[3];
    int run_index = 0;
    for (const fs::path& out : {whole, killed, killed_late}) {
        std::set<int64_t> seen;
        std::map<int64_t, int64_t> round_start;  // round -> measurements before it
        int64_t lines = 0, early_far = 0, late = 0;
        std::istringstream is(read_file_text(out / "measurements.jsonl"));
        for (std::string line; std::getline(is, line);) {
            if (line.empty()) continue;
            const Json j = read_json(line, out.string());
            const int64_t config = j["config"].get<int64_t>();
            const int64_t start =
                round_start.emplace(j["round"].get<int64_t>(), lines).first->second;
            const bool knob_left = std::any_of(one_knob.begin(), one_knob.end(),
                                               [&](int64_t c) { return !seen.count(c); });
            CHECK(seen.insert(config).second);  // nothing measured twice
            ++lines;
            schedule[run_index].emplace_back(j["round"].get<int64_t>(), j["explored"].get<bool>());
            if (!j["explored"].get<bool>()) continue;
            if (2 * start >= 40) {
                ++late;
                if (knob_left) CHECK(one_knob.count(config) == 1);
            } else {
                early_far += one_knob.count(config) == 0;
            }
        }
        CHECK(lines == 40);
        CHECK(late == 13);
        CHECK(early_far >= 1);
        ++run_index;
    }
    CHECK(schedule[1] == schedule[0]);
    CHECK(schedule[2] == schedule[0]);
}
