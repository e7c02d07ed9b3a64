// `segrank tune` with one --checkpoint explores the one-knob changes of the best config measured so
// far first (tune/explore.h, docs/tune.md#the-rounds), end to end on a recorded layout graph.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <set>
#include <sstream>
#include <string>

#include "tests/support/test_paths.h"
#include "tests/support/tiny_checkpoint.h"
#include "util/json.h"

using namespace segrank;
using namespace segrank::test;
namespace fs = std::filesystem;

TEST_CASE(
    "segrank tune with one checkpoint measures one-knob changes of the best config so far as its "
    "exploration picks, never a config twice, also after --resume") {
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
    g.config_runtime[0] = 1000;
    for (int64_t c = 1; c < 60; ++c) g.config_runtime[static_cast<size_t>(c)] += 2000000;
    const fs::path npz = dir / "tune_explore.npz";
    save_layout_npz(g, npz);

    const auto tune = [&](const fs::path& out, int budget, const std::string& extra) {
        const auto r =
            run_command("OMP_NUM_THREADS=2 " + sq(segrank_binary().string()) +
                        " tune --checkpoint " + sq(run.string()) + " --graph " + sq(npz.string()) +
                        " --measure recorded --refit head --refit-steps 5 --batch grow"
                        " --quiet --budget " +
                        std::to_string(budget) + " --out " + sq(out.string()) + extra);
        INFO(r.output);
        REQUIRE(r.exit_code == 0);
    };
    // The default stays the best, so every exploration pick is one of its 6 one-knob changes
    // while one is left: rounds 1, 3, 5, 7, 9 and 11 of --batch grow explore (6 picks in 23);
    // a uniform draw of the 59 others would hit them by chance only.
    const fs::path whole = dir / "whole", split = dir / "split";
    tune(whole, 23, "");
    tune(split, 9, "");
    tune(split, 23, " --resume");
    for (const fs::path& out : {whole, split}) {
        std::set<int64_t> explored, seen;
        int64_t lines = 0;
        std::istringstream is(read_file_text(out / "measurements.jsonl"));
        for (std::string line; std::getline(is, line);) {
            if (line.empty()) continue;
            const Json j = read_json(line, out.string());
            const int64_t config = j["config"].get<int64_t>();
            CHECK(seen.insert(config).second);  // nothing measured twice
            ++lines;
            if (j["explored"].get<bool>()) explored.insert(config);
        }
        CHECK(lines == 23);
        CHECK(explored == std::set<int64_t>{1, 2, 3, 4, 5, 6});
    }
}
