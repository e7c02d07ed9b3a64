// predict -> leaderboard round trip (docs/metrics.md#tie-policy): on tiny data sets a briefly
// trained model's `segrank predict` submission scored by `segrank leaderboard --json` gives exactly
// the numbers of `segrank evaluate --json`, for a layout model whose valid graphs have duplicate
// config rows (so the model's scores tie and the tie policy of eval/metrics.h is exercised) and for
// a tile model.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>

#include "tests/support/test_paths.h"
#include "tests/trainer/trainer_data_util.h"
#include "util/json_value.h"

using namespace segrank::test;
namespace fs = std::filesystem;

namespace {

CommandResult run_segrank(const std::string& args) { return run_segrank_in_source(args, 2); }

// The tiny layout collection of trainer_data_util.h, except that in every graph configs
// [c/2, c) repeat the feature rows (and so the runtimes) of configs [0, c/2): a model scores each
// pair identically, as it does the duplicate config rows of the real data.
void write_layout_with_duplicates(const fs::path& root) {
    TinyLayoutSpec spec;
    spec.configs = 32;
    const auto base = root / "npz/layout/xla/random";
    int64_t index = 0;
    for (const auto& [split, count] : {std::pair{"train", 3}, std::pair{"valid", 2}}) {
        fs::create_directories(base / split);
        for (int i = 0; i < count; ++i, ++index) {
            const std::string name = std::string("dup_") + split + "_" + std::to_string(i);
            segrank::LayoutGraph g = tiny_layout_graph(name, index, spec);
            const auto row = static_cast<size_t>(spec.config_nodes * segrank::kLayoutConfigDim);
            const auto half = static_cast<size_t>(spec.configs / 2);
            for (size_t c = half; c < static_cast<size_t>(spec.configs); ++c) {
                std::copy_n(
                    g.node_config_feat.begin() + static_cast<std::ptrdiff_t>((c - half) * row), row,
                    g.node_config_feat.begin() + static_cast<std::ptrdiff_t>(c * row));
                g.config_runtime[c] = g.config_runtime[c - half];
            }
            segrank::save_layout_npz(g, base / split / (name + ".npz"));
        }
    }
}

// Number of graphs in a `predict --scores` CSV (ID,config,score) with at least two equal scores.
int graphs_with_tied_scores(const fs::path& scores_csv) {
    std::map<std::string, std::multiset<std::string>> per;
    std::istringstream is(read_file_text(scores_csv));
    std::string line;
    std::getline(is, line);  // header
    while (std::getline(is, line)) {
        const auto a = line.find(','), b = line.rfind(',');
        if (a == std::string::npos || a == b) continue;
        per[line.substr(0, a)].insert(line.substr(b + 1));
    }
    int n = 0;
    for (const auto& [id, s] : per)
        n += std::set<std::string>(s.begin(), s.end()).size() < s.size();
    return n;
}

double num(const segrank::JsonValue& v, const char* key) {
    const auto x = v.number_at(key);
    return x ? *x : std::nan("");
}

// Trains `collection` briefly on data_root, then predict -> leaderboard vs evaluate on valid.
void round_trip(const fs::path& dir, const fs::path& data_root, const std::string& collection,
                bool tile) {
    const fs::path run = dir / "run";
    const auto tr =
        run_segrank("train --config configs/tiny.toml --set data.root='" + data_root.string() +
                    "' --set data.collections='[\"" + collection + "\"]' --set train.steps=4" +
                    " --set train.eval_every=0 --set train.run_dir='" + run.string() + "'");
    INFO(tr.output);
    REQUIRE(tr.exit_code == 0);
    const fs::path eval_json = dir / "eval.json", sub = dir / "sub.csv",
                   scores = dir / "scores.csv";
    const auto ev = run_segrank("evaluate --checkpoint '" + run.string() +
                                "' --split valid --threads 2 --json '" + eval_json.string() + "'");
    INFO(ev.output);
    REQUIRE(ev.exit_code == 0);
    const auto pr = run_segrank("predict --checkpoint '" + run.string() +
                                "' --split valid --threads 2 --out '" + sub.string() +
                                "' --scores '" + scores.string() + "'");
    INFO(pr.output);
    REQUIRE(pr.exit_code == 0);
    if (!tile) {
        // Precondition of the test: the model gives tied scores (duplicate rows), so evaluate's
        // raw-score tau-b would differ from the submission's.
        CHECK(graphs_with_tied_scores(scores) == 2);
    }
    const auto lb = run_segrank("leaderboard --truth '" + data_root.string() +
                                "' --split valid --missing skip --json '" + sub.string() + "'");
    INFO(lb.output);
    REQUIRE(lb.exit_code == 0);
    const auto brace = lb.output.find("{\"split\"");
    REQUIRE(brace != std::string::npos);
    const segrank::JsonValue lj =
        segrank::parse_json(lb.output.substr(brace), "leaderboard stdout");
    const segrank::JsonValue ej =
        segrank::parse_json(read_file_text(eval_json), eval_json.string());

    const auto& entries = lj.find("entries")->items();
    REQUIRE(entries.size() == 1);
    const auto& lc = entries[0].find("collections")->items();
    const auto& ec = ej.find("metrics")->find("collections")->items();
    REQUIRE(lc.size() == 1);
    REQUIRE(ec.size() == 1);
    CHECK(*lc[0].string_at("collection") == collection);
    CHECK(*ec[0].string_at("collection") == collection);
    CHECK(num(entries[0], "graphs_scored") == num(ec[0], "num_graphs"));
    // The same graphs, the same order, the same metric code: equal up to the summation order of
    // the per-collection means (print precision is 4 decimals; this is 1e-12).
    std::vector<const char*> keys = {"score", "slowdown_1", "slowdown_5"};
    if (!tile) keys.insert(keys.end(), {"kendall_tau", "opa", "slowdown_10"});
    for (const char* k : keys) {
        INFO(k);
        REQUIRE(std::isfinite(num(ec[0], k)));
        CHECK(num(lc[0], k) == doctest::Approx(num(ec[0], k)).epsilon(1e-12));
    }
    CHECK(num(entries[0], "overall") ==
          doctest::Approx(num(*ej.find("metrics"), "overall")).epsilon(1e-8));
    // The per-graph table printed by evaluate is the one the leaderboard's means come from.
    CHECK(ej.find("graphs")->items().size() == static_cast<size_t>(num(ec[0], "num_graphs")));
}

}  // namespace

TEST_CASE(
    "predict -> leaderboard equals evaluate for a layout model with tied scores on duplicate "
    "configs") {
    const fs::path dir = scratch_dir("lb_roundtrip_layout");
    write_layout_with_duplicates(dir / "data");
    round_trip(dir, dir / "data", "layout:xla:random", false);
}

TEST_CASE("predict -> leaderboard equals evaluate for a tile model on synthetic kernels") {
    const fs::path dir = scratch_dir("lb_roundtrip_tile");
    const auto sy =
        run_segrank("synth --out '" + (dir / "data").string() +
                    "' --collections tile --graphs 8 --nodes 50:200 --configs 12 --seed 3 "
                    "--splits 0.5,0.5,0 --force -q");
    INFO(sy.output);
    REQUIRE(sy.exit_code == 0);
    round_trip(dir, dir / "data", "tile:xla", true);
}
