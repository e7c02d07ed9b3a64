// A crafted leaderboard truth (npz collection tree) and submissions whose scores are computed by
// hand in the comments; shared by tests/trainer/leaderboard_test.cpp and tests/cli.
//
// tile:xla:valid
//   k1: runtime [100 40 30 40 10 60 70] / normalizer [20 10 10 20 10 10 10] = targets [5 4 3 2 1 6
//   7]
//       (by raw runtime config 3 would tie config 1: the normalizer matters)
//   k2: 3 configs (fewer than 5), targets [30 10 20]
// layout:xla:random:valid
//   g1: runtime [40 10 30 10] (configs 1 and 3 tie)
//   big: 1001 configs, runtime[i] = 5000 - i (strictly decreasing)
#pragma once
#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>

#include "data/graph.h"

namespace segrank::test {

inline TileGraph lb_tile(const std::string& name, std::vector<int64_t> runtime,
                         std::vector<int64_t> norm) {
    TileGraph g;
    g.name = name;
    g.node_feat = Tensor(2, kNodeFeatDim);
    g.node_opcode = {5, 7};
    g.edge_index = {1, 0};
    g.config_feat = Tensor(static_cast<int64_t>(runtime.size()), kTileConfigDim);
    g.config_runtime = std::move(runtime);
    g.config_runtime_normalizers = std::move(norm);
    return g;
}

inline LayoutGraph lb_layout(const std::string& name, std::vector<int64_t> runtime) {
    LayoutGraph g;
    g.name = name;
    g.node_feat = Tensor(2, kNodeFeatDim);
    g.node_opcode = {26, 26};
    g.edge_index = {1, 0};
    g.node_config_ids = {0};
    g.node_config_feat.assign(runtime.size() * kLayoutConfigDim, 1);
    g.config_runtime = std::move(runtime);
    g.node_splits = {0, 2};
    return g;
}

/// Writes the truth tree under root/npz and returns root.
inline std::filesystem::path write_lb_truth(const std::filesystem::path& root) {
    const auto tile = root / "npz/tile/xla/valid";
    const auto lay = root / "npz/layout/xla/random/valid";
    std::filesystem::create_directories(tile);
    std::filesystem::create_directories(lay);
    save_tile_npz(lb_tile("k1", {100, 40, 30, 40, 10, 60, 70}, {20, 10, 10, 20, 10, 10, 10}),
                  tile / "k1.npz");
    save_tile_npz(lb_tile("k2", {30, 10, 20}, {1, 1, 1}), tile / "k2.npz");
    save_layout_npz(lb_layout("g1", {40, 10, 30, 10}), lay / "g1.npz");
    std::vector<int64_t> big(1001);
    for (int64_t i = 0; i < 1001; ++i) big[static_cast<size_t>(i)] = 5000 - i;
    save_layout_npz(lb_layout("big", big), lay / "big.npz");
    return root;
}

/// "0;1;...;n-1" (reverse = false) or "n-1;...;0".
inline std::string lb_sequence(int64_t n, bool reverse) {
    std::string s;
    for (int64_t i = 0; i < n; ++i) {
        if (i) s += ';';
        s += std::to_string(reverse ? n - 1 - i : i);
    }
    return s;
}

// Submission A: k1 "1;2;5;6;0" (targets 4 3 6 7 5: min 3, slowdown 2), k2 "2;0;1" (slowdown 0)
//   -> tile = 1 - mean(2, 0) = 0; g1 "1;3;2;0" -> tau = 5/sqrt(30); big identity -> tau = -1.
inline std::string lb_submission_a() {
    return "ID,TopConfigs\ntile:xla:k1,1;2;5;6;0\ntile:xla:k2,2;0;1\nlayout:xla:random:g1,1;3;2;0\n"
           "layout:xla:random:big," +
           lb_sequence(1001, false) + "\n";
}
inline double lb_tile_a() { return 0.0; }
inline double lb_layout_a() { return (5.0 / std::sqrt(30.0) - 1.0) / 2.0; }

// Submission B: k1 "4;0;1;2;3" (contains the best: 0), k2 "0;1;2" -> tile = 1; g1 "0;2;1;3" ->
//   tau = -5/sqrt(30); big reversed with the first two swapped -> one discordant pair of 500500:
//   tau = (500500 - 2) / 500500.
inline std::string lb_submission_b() {
    std::string big = "999;1000";
    for (int64_t i = 998; i >= 0; --i) {
        big += ';';
        big += std::to_string(i);
    }
    return "ID,TopConfigs\ntile:xla:k1,4;0;1;2;3\ntile:xla:k2,0;1;2\nlayout:xla:random:g1,0;2;1;3\n"
           "layout:xla:random:big," +
           big + "\n";
}
inline double lb_tile_b() { return 1.0; }
inline double lb_layout_b() { return (-5.0 / std::sqrt(30.0) + 500498.0 / 500500.0) / 2.0; }

// Submission C leaves out k1 and big. --missing worst: k1 scored with its 5 slowest configs
//   (targets 7 6 5 4 3: slowdown 2), big listed slowest first (tau -1) -> tile = 1 - (2 + 0) / 2 =
//   0, layout = (5/sqrt(30) - 1) / 2. --missing skip: tile = 1 (k2 only), layout = 5/sqrt(30). Also
//   carries a row of a collection absent from the truth (a warning, ignored).
inline std::string lb_submission_c() {
    return "ID,TopConfigs\ntile:xla:k2,2;0;1\nlayout:xla:random:g1,1;3;2;0\nlayout:nlp:default:zz,"
           "0;1\n";
}

inline void write_text(const std::filesystem::path& p, const std::string& text) {
    std::ofstream f(p, std::ios::binary | std::ios::trunc);
    f << text;
}

}  // namespace segrank::test
