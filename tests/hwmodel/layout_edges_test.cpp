// Layout edge features (hwmodel/layout_bytes.h, layout_edge_features_of_rows) on a hand-built graph
// whose every feature value is worked out by hand below.
#include <doctest/doctest.h>

#include <algorithm>

#include "data/memory_graph_source.h"
#include "hwmodel/layout_bytes.h"

using namespace segrank;

namespace {

constexpr int kF32 = 13;  // node_feat column of the F32 one-hot (docs/files.md#node-features)
// Opcode ids (docs/files.md#opcode-ids).
constexpr int32_t kAdd = 2, kDot = 34, kParameter = 63, kReduce = 70, kReshape = 75;

// Node `v` of `g`: an f32 array of `dims` with minor_to_major `m2m`.
void set_array(LayoutGraph& g, int64_t v, std::vector<int> dims, std::vector<int> m2m) {
    g.node_feat.at(v, kF32) = 1.0f;
    for (size_t d = 0; d < dims.size(); ++d) g.node_feat.at(v, 21 + int64_t(d)) = float(dims[d]);
    for (size_t d = 0; d < m2m.size(); ++d) g.node_feat.at(v, 134 + int64_t(d)) = float(m2m[d]);
}

// 0 parameter [8,16]{1,0}, read by 2 and 4;  1 add [2,8,4]{2,1,0}, read by 2 only;
// 2 configurable dot [8,4]{1,0} reading 0 and 1;  users of 2: 3 add [8,4]{1,0} (absorbs), 4
// configurable dot [4,8]{1,0} reading 0 and 2, 5 reshape [32] (constrained), 6 reduce [8]
// (flexible). Node 4 has no users. Configurable: j = 0 node 2, j = 1 node 4.
LayoutGraph edge_graph(const std::vector<std::vector<int8_t>>& configs) {
    LayoutGraph g;
    g.name = "edges";
    g.node_feat = Tensor(7, kNodeFeatDim);
    set_array(g, 0, {8, 16}, {1, 0});
    set_array(g, 1, {2, 8, 4}, {2, 1, 0});
    set_array(g, 2, {8, 4}, {1, 0});
    set_array(g, 3, {8, 4}, {1, 0});
    set_array(g, 4, {4, 8}, {1, 0});
    set_array(g, 5, {32}, {0});
    set_array(g, 6, {8}, {0});
    g.node_opcode = {kParameter, kAdd, kDot, kAdd, kDot, kReshape, kReduce};
    g.edge_index = {2, 0, 2, 1, 3, 2, 4, 0, 4, 2, 5, 2, 6, 2};
    g.node_config_ids = {2, 4};
    g.node_splits = {0, 7};
    for (const auto& c : configs) {
        REQUIRE(c.size() == 36);
        g.node_config_feat.insert(g.node_config_feat.end(), c.begin(), c.end());
        g.config_runtime.push_back(1000);
    }
    return g;
}

// 36 values (2 nodes x 18) from per-tensor lists.
std::vector<int8_t> config(std::vector<std::vector<int8_t>> tensors) {
    std::vector<int8_t> v(36, -1);
    for (size_t t = 0; t < tensors.size(); ++t)
        for (size_t d = 0; d < tensors[t].size(); ++d) v.at(t * 6 + d) = tensors[t][d];
    return v;
}

}  // namespace

TEST_CASE(
    "layout edge features say which users of a relayouted output fuse, accept, need a copy of it "
    "or decide themselves, and whether a relayouted operand's producer takes the layout") {
    // b: node 2 output {0,1}, input {2,0,1} (on node 1, rank 3), kernel {0,1} (on node 0);
    // node 4 output {0,1}, input {0,1} (node 0: the lower id of its two rank-2 operands), kernel
    // {0,1} (node 2). Every set tensor differs from its own layout.
    const std::vector<int8_t> b = config({{0, 1}, {2, 0, 1}, {0, 1}, {0, 1}, {0, 1}, {0, 1}});
    const std::vector<int8_t> same = config({{1, 0}, {2, 1, 0}, {1, 0}});  // own layouts only
    MemoryGraphSource src(edge_graph({b, same}), CollectionId::parse("layout:xla:default"),
                          "edges");
    const hw::LayoutNeighbourhood nb = hw::layout_neighbourhood(src, 0, int64_t{1} << 20, true);
    // Padded bytes (docs/hwmodel.md#tiled-layouts-and-padding): [8,16]{1,0} 8 x 128 x 4 = 4096;
    // [2,8,4] 2 x 4096 = 8192; [8,4]{1,0} 4096 (twice); [4,8]{1,0} (4-row tile) 2048; [32] and
    // [8] one 1-D tile of 256 words, 1024 each. Unit U = 24576.
    REQUIRE(nb.scale_bytes == 24576.0);
    const double u = 24576.0;
    CHECK(nb.user_count == std::vector<int32_t>{2, 1, 4, 0, 0, 0, 0});

    constexpr int64_t w = hw::kLayoutEdgeFeatures;
    const std::vector<int32_t> nodes = {0, 1};
    std::vector<float> f(2 * w);
    hw::layout_edge_features_of_rows(nb, b, nodes, f);
    // Node 2's output: one user of each role, a quarter each; the copy at the reshape is a quarter
    // of own 4096 + configured [8,4]{0,1} (4-row tile) 2048.
    for (int i = 0; i < 4; ++i) CHECK(f[i] == doctest::Approx(0.25));
    CHECK(f[4] == 0.0f);
    CHECK(f[5] == doctest::Approx(0.25 * (4096 + 2048) / u));
    // Input on node 1, an add with no other user: it is produced in the new layout.
    CHECK(f[6] == 1.0f);
    CHECK(f[7] == 0.0f);
    CHECK(f[8] == 0.0f);
    // Kernel on node 0, a parameter: a copy of own 4096 + [8,16]{0,1} (16 rows) 8192.
    CHECK(f[9] == 0.0f);
    CHECK(f[10] == 0.0f);
    CHECK(f[11] == doctest::Approx((4096 + 8192) / u));
    // Node 4: no users, so its relayouted output leaves as a copy: own 2048 + [4,8]{0,1} 4096.
    for (int i = 0; i < 4; ++i) CHECK(f[w + i] == 0.0f);
    CHECK(f[w + 4] == 1.0f);
    CHECK(f[w + 5] == doctest::Approx((2048 + 4096) / u));
    // Input on node 0 (a parameter with two users): a copy; kernel on node 2 (configurable).
    CHECK(f[w + 6] == 0.0f);
    CHECK(f[w + 8] == doctest::Approx((4096 + 8192) / u));
    CHECK(f[w + 10] == 1.0f);
    CHECK(f[w + 9] == 0.0f);
    CHECK(f[w + 11] == 0.0f);

    // The neighbourhood gathered two edges and two opcodes at a time gives the same features.
    const hw::LayoutNeighbourhood nb2 = hw::layout_neighbourhood(src, 0, 2, true);
    std::vector<float> f2(f.size());
    hw::layout_edge_features_of_rows(nb2, b, nodes, f2);
    CHECK(f2 == f);

    // In the model's rows the edge block comes after the byte block.
    const hw::LayoutFeatureSets sets = {.bytes = true, .edges = true};
    REQUIRE(sets.width() == hw::kLayoutByteFeatures + w);
    std::vector<float> rows(2 * sets.width());
    hw::layout_features_of_rows(nb, sets, b, nodes, rows);
    for (int64_t r = 0; r < 2; ++r)
        CHECK(std::equal(rows.begin() + r * sets.width() + hw::kLayoutByteFeatures,
                         rows.begin() + (r + 1) * sets.width(), f.begin() + r * w));

    // No tensor relayouted: all zeros.
    hw::layout_edge_features_of_rows(nb, same, nodes, f);
    for (float x : f) CHECK(x == 0.0f);

    // A neighbourhood gathered without edge roles is refused.
    const hw::LayoutNeighbourhood plain = hw::layout_neighbourhood(src, 0);
    CHECK_THROWS_WITH_AS(hw::layout_edge_features_of_rows(plain, b, nodes, f),
                         doctest::Contains("without edge roles"), Error);
}
