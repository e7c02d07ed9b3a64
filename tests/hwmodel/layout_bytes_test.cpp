// Layout byte features (hwmodel/layout_bytes.h) on a hand-built graph whose every feature value
// is worked out by hand below.
#include "hwmodel/layout_bytes.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>

#include "data/memory_graph_source.h"

using namespace segrank;

namespace {

constexpr int kF32 = 13;  // node_feat column of the F32 one-hot (docs/files.md#node-features)

// Node `v` of `g`: an f32 array of `dims` with minor_to_major `m2m` (empty: the files' 0 padding).
void set_array(LayoutGraph& g, int64_t v, std::vector<int> dims, std::vector<int> m2m) {
    g.node_feat.at(v, kF32) = 1.0f;
    for (size_t d = 0; d < dims.size(); ++d) g.node_feat.at(v, 21 + int64_t(d)) = float(dims[d]);
    for (size_t d = 0; d < m2m.size(); ++d) g.node_feat.at(v, 134 + int64_t(d)) = float(m2m[d]);
}

// 0 param [8,16] {1,0};  1 param [2,8,4] {2,1,0};  2 configurable, [8,4] {1,0}, reads 0 and 1;
// 3 elementwise user of 2, [8,4] {0,1};  4 configurable user of 2, [4,8] {1,0};  5 reshape user of
// 2, [32]. Configurable: j = 0 node 2, j = 1 node 4.
LayoutGraph mismatch_graph(const std::vector<std::vector<int8_t>>& configs) {
    LayoutGraph g;
    g.name = "mismatch";
    g.node_feat = Tensor(6, kNodeFeatDim);
    set_array(g, 0, {8, 16}, {1, 0});
    set_array(g, 1, {2, 8, 4}, {2, 1, 0});
    set_array(g, 2, {8, 4}, {});  // all-zero layout block: padding, i.e. descending {1, 0}
    set_array(g, 3, {8, 4}, {0, 1});
    set_array(g, 4, {4, 8}, {1, 0});
    set_array(g, 5, {32}, {0});
    g.node_opcode = {63, 63, 34, 5, 99, 82};
    g.edge_index = {2, 0, 2, 1, 3, 2, 4, 2, 5, 2};
    g.node_config_ids = {2, 4};
    g.node_splits = {0, 6};
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
    "layout byte features give the padding change and the copy bytes of each configured "
    "tensor against its own layout, in units of the graph's padded bytes") {
    // Padded bytes under the own layouts (tiles: docs/hwmodel.md#tiled-layouts-and-padding):
    // node 0 f32[8,16]{1,0} 8 x 128 x 4 = 4096; node 1 [2,8,4]{2,1,0} 2 x 8 x 128 x 4 = 8192;
    // node 2 [8,4]{1,0} 4096; node 3 [8,4]{0,1} (second-minor 4: 4-row tile) 2048; node 4
    // [4,8]{1,0} 2048; node 5 [32] (1-D tile of 256 words) 1024. Unit: 21504.
    const std::vector<int8_t> b = config({{0, 1}, {2, 1, 0}, {0, 1}, {}, {1, 0}});
    const std::vector<int8_t> c = config({{}, {0, 5}});
    MemoryGraphSource src(mismatch_graph({b, c}), CollectionId::parse("layout:xla:default"),
                          "mismatch");
    const hw::LayoutNeighbourhood nb = hw::layout_neighbourhood(src, 0);
    CHECK(nb.scale_bytes == 21504.0);
    const double u = 21504.0;
    std::vector<float> f(2 * hw::kLayoutByteFeatures);
    const std::vector<int32_t> nodes = {0, 1};
    hw::layout_byte_features(nb, b, nodes, f);
    // Node 2 output {0,1}: [8,4] with minor 8, second-minor 4 -> 4 x 128 x 4 = 2048 (own 4096).
    CHECK(f[0] == doctest::Approx(-1.0));
    CHECK(f[1] == doctest::Approx((2048 - 4096) / u));
    CHECK(f[2] == doctest::Approx((2048 + 4096) / u));
    // Input {2,1,0} on node 1 (the rank-3 operand): its own layout, no change and no copy.
    for (int i = 3; i < 6; ++i) CHECK(f[i] == 0.0f);
    // Kernel {0,1} on node 0 [8,16]: second-minor 16 -> 16 x 128 x 4 = 8192 (own 4096).
    CHECK(f[6] == doctest::Approx(1.0));
    CHECK(f[7] == doctest::Approx(4096 / u));
    CHECK(f[8] == doctest::Approx((8192 + 4096) / u));
    // Node 4: output and kernel unset; input {1,0} is node 2's own layout (the byte features
    // compare with the own layout, not with node 2's configured {0,1}).
    for (int i = 9; i < 18; ++i) CHECK(f[i] == 0.0f);

    // The neighbourhood gathered two edges at a time gives the same features.
    const hw::LayoutNeighbourhood nb2 = hw::layout_neighbourhood(src, 0, /*edge_chunk=*/2);
    std::vector<float> f2(f.size());
    hw::layout_byte_features(nb2, b, nodes, f2);
    CHECK(f2 == f);

    // From the nodes' own rows only (a column block of the config): the same features, for the
    // nodes in either order.
    std::vector<float> f3(f.size());
    hw::layout_byte_features_of_rows(nb, b, nodes, f3);
    CHECK(f3 == f);
    const std::vector<int32_t> swapped = {1, 0};
    std::vector<int8_t> rows_swapped(b.begin() + 18, b.begin() + 36);
    rows_swapped.insert(rows_swapped.end(), b.begin(), b.begin() + 18);
    hw::layout_byte_features_of_rows(nb, rows_swapped, swapped, f3);
    CHECK(std::equal(f3.begin(), f3.begin() + 9, f.begin() + 9));
    CHECK(std::equal(f3.begin() + 9, f3.end(), f.begin()));

    // C: an input list no operand can take gives zeros.
    hw::layout_byte_features(nb, c, nodes, f);
    for (float x : f) CHECK(x == 0.0f);

    std::vector<float> one(hw::kLayoutByteFeatures);
    const std::vector<int32_t> bad = {2};
    CHECK_THROWS_WITH_AS(hw::layout_byte_features(nb, b, bad, one),
                         doctest::Contains("outside [0, 2)"), Error);
    CHECK_THROWS_AS(
        hw::layout_byte_features(nb, std::vector<int8_t>(18, -1), {nodes.data(), 1}, one), Error);
}

TEST_CASE(
    "layout access features flag each relayouted tensor, whether its lane and sublane dims move, "
    "and the runs contiguous in both layouts, on the hand-built graph") {
    // b: node 2 (j = 0) output {0,1}, input {2,1,0}, kernel {0,1}; node 4 (j = 1) input {1,0}.
    // d: node 2 input {2,0,1} only.
    const std::vector<int8_t> b = config({{0, 1}, {2, 1, 0}, {0, 1}, {}, {1, 0}});
    const std::vector<int8_t> d = config({{}, {2, 0, 1}});
    MemoryGraphSource src(mismatch_graph({b, d}), CollectionId::parse("layout:xla:default"),
                          "mismatch");
    const hw::LayoutNeighbourhood nb = hw::layout_neighbourhood(src, 0);
    const std::vector<int32_t> nodes = {0, 1};
    constexpr int64_t a = hw::kLayoutAccessFeatures;
    std::vector<float> f(2 * a);
    hw::layout_access_features_of_rows(nb, b, nodes, f);
    // Node 2 output f32[8,4] {1,0} -> {0,1}: relayouted, lane and sublane dims swap, no run is
    // shared (run = 1 element): 32 runs of 4 bytes.
    const std::vector<float> out = {1, 1, 1, 5.0f / 16, 2.0f / 16};
    for (int i = 0; i < 5; ++i) CHECK(f[i] == doctest::Approx(out[i]));
    // Input {2,1,0} on node 1 f32[2,8,4]: its own layout, nothing moves.
    for (int i = 5; i < 10; ++i) CHECK(f[i] == 0.0f);
    // Kernel {0,1} on node 0 f32[8,16] {1,0}: 128 runs of one element.
    const std::vector<float> ker = {1, 1, 1, 7.0f / 16, 2.0f / 16};
    for (int i = 0; i < 5; ++i) CHECK(f[10 + i] == doctest::Approx(ker[i]));
    // Node 4: output and kernel unset, input {1,0} is node 2's own layout.
    for (int i = 15; i < 30; ++i) CHECK(f[i] == 0.0f);

    // d: input {2,0,1} on node 1 f32[2,8,4] {2,1,0}: the minor dim 2 stays (lanes do not move),
    // the second-minor changes 1 -> 0; runs of dims[2] = 4 elements (16 bytes), 64 / 4 = 16 runs.
    hw::layout_access_features_of_rows(nb, d, nodes, f);
    for (int i = 0; i < 5; ++i) CHECK(f[i] == 0.0f);
    const std::vector<float> in = {1, 0, 1, 4.0f / 16, 4.0f / 16};
    for (int i = 0; i < 5; ++i) CHECK(f[5 + i] == doctest::Approx(in[i]));
    for (int i = 10; i < 30; ++i) CHECK(f[i] == 0.0f);

    // Rows of both blocks: the byte features, then the access features, per node.
    const hw::LayoutFeatureSets both{true, true};
    CHECK(both.width() == hw::kLayoutByteFeatures + a);
    std::vector<float> rows(2 * both.width()), bytes(2 * hw::kLayoutByteFeatures), acc(2 * a);
    hw::layout_features_of_rows(nb, both, b, nodes, rows);
    hw::layout_byte_features_of_rows(nb, b, nodes, bytes);
    hw::layout_access_features_of_rows(nb, b, nodes, acc);
    for (int64_t r = 0; r < 2; ++r) {
        const float* row = rows.data() + r * both.width();
        CHECK(std::equal(row, row + hw::kLayoutByteFeatures,
                         bytes.begin() + r * hw::kLayoutByteFeatures));
        CHECK(std::equal(row + hw::kLayoutByteFeatures, row + both.width(), acc.begin() + r * a));
    }
    // One block alone is that block's rows.
    std::vector<float> only(2 * a);
    hw::layout_features_of_rows(nb, {false, true}, b, nodes, only);
    CHECK(only == acc);
    std::vector<float> one(a);
    const std::vector<int32_t> bad = {2};
    CHECK_THROWS_WITH_AS(
        hw::layout_access_features_of_rows(nb, std::vector<int8_t>(18, -1), bad, one),
        doctest::Contains("outside [0, 2)"), Error);
    CHECK_THROWS_AS(hw::layout_features_of_rows(nb, both, b, nodes, acc), Error);
}
