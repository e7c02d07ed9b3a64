// Model::encode_dedupe (docs/model.md#row-deduplication): the deduplicated inference encode gives
// the dense encode's readout for every model option it serves, with and without cached base
// rows, computes exactly the distinct rows a hand count predicts, and falls back to the dense
// encode where it does not apply.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>

#include "gnn/model.h"
#include "tests/support/tiny_graphs.h"

using namespace segrank;
using namespace segrank::test;

namespace {

// seg with every configurable node j choosing, per config k, one of `choices` value rows (and
// layout feature rows) drawn once: pick(k, j) picks it. Config 0 keeps choice 0.
template <class Pick>
void restrict_choices(TinySegment& seg, int64_t choices, const Pick& pick) {
    const auto nc = static_cast<int64_t>(seg.config_nodes.size());
    const int64_t mb =
        static_cast<int64_t>(seg.layout_bytes.size()) / std::max<int64_t>(1, seg.k * nc);
    const auto vals = seg.config_values;
    const auto bytes = seg.layout_bytes;
    for (int64_t k = 0; k < seg.k; ++k)
        for (int64_t j = 0; j < nc; ++j) {
            const int64_t c = pick(k, j) % choices;  // choice c of node j: config c's rows
            std::copy_n(vals.begin() + (c * nc + j) * 18, 18,
                        seg.config_values.begin() + (k * nc + j) * 18);
            std::copy_n(bytes.begin() + (c * nc + j) * mb, mb,
                        seg.layout_bytes.begin() + (k * nc + j) * mb);
        }
}

double max_rel_diff(const Tensor& a, const Tensor& b) {
    REQUIRE(a.size() == b.size());
    double d = 0;
    for (int64_t i = 0; i < a.size(); ++i)
        d = std::max(d,
                     std::abs(double(a[i]) - double(b[i])) / std::max(1.0, std::abs(double(b[i]))));
    return d;
}

}  // namespace

TEST_CASE(
    "encode_dedupe gives the dense readout to 1e-5 with layout features and the mean readout, with "
    "and without cached base rows") {
    TinySegment seg9 = make_tiny_segment(60, 3, 24, {4, 9, 30, 31}, /*halo=*/5);
    auto pick = [](int64_t k, int64_t j) { return (k * (j + 1) + k / 5) % 7; };
    restrict_choices(seg9, 3, pick);
    // The same with feature rows of 24 (layout_bytes and layout_access).
    TinySegment seg24 = make_tiny_segment(60, 3, 24, {4, 9, 30, 31}, /*halo=*/5);
    set_layout_feature_width(seg24, kLayoutByteFeatures + kLayoutAccessFeatures);
    restrict_choices(seg24, 3, pick);
    struct Variant {
        const char* name;
        bool bytes;
        Readout readout = Readout::kMeanMax;
        bool access = false;
    };
    for (const Variant& o :
         {Variant{"plain", false}, Variant{"layout_bytes", true},
          Variant{"readout mean", false, Readout::kMean},
          Variant{"layout_bytes, readout mean", true, Readout::kMean},
          Variant{"layout_bytes and layout_access, readout mean", true, Readout::kMean, true}}) {
        INFO(o.name);
        TinySegment& seg = o.access ? seg24 : seg9;
        ModelConfig cfg = tiny_config(Task::kLayout, 3);
        cfg.layout_bytes = o.bytes;
        cfg.layout_access = o.access;
        cfg.readout = o.readout;
        seg.with_bytes = o.bytes;
        Model model(cfg);
        model.params().initialize(5);
        const SegmentInput in = seg.input();
        REQUIRE(model.dedupes(in));
        const Tensor dense = model.encode(in, nullptr);
        REQUIRE(dense.cols() == cfg.readout_width());
        DedupeStats st;
        const Tensor dd = model.encode_dedupe(in, nullptr, &st);
        CHECK(max_rel_diff(dd, dense) <= 1e-5);
        const EncodeBase base = model.encode_base(in);
        const Tensor cached = model.encode_dedupe(in, &base);
        CHECK(max_rel_diff(cached, dense) <= 1e-5);
        // The readout differs between configs (the test can fail), and far fewer rows were
        // computed than the dense path's.
        bool differ = false;
        for (int64_t c = 0; c < dense.cols(); ++c) differ |= dense.at(1, c) != dense.at(2, c);
        CHECK(differ);
        REQUIRE(st.unique_rows.size() == 4);
        for (size_t l = 0; l < 4; ++l) {
            INFO("layer ", l);
            CHECK(st.unique_rows[l] > 0);
            CHECK(st.unique_rows[l] < st.dense_rows[l]);
        }
    }
}

TEST_CASE(
    "encode_dedupe computes one row per distinct receptive-field choice: 3 per node reached by one "
    "configurable node with 3 choices, up to 3 x 2 where two nodes' fields meet, 1 when every "
    "config is the same") {
    TinySegment seg = make_tiny_segment(50, 3, 12, {10, 30});
    ModelConfig cfg = tiny_config(Task::kLayout, 3);
    Model model(cfg);
    model.params().initialize(2);
    // Node 10 takes choice k % 3, node 30 choice k % 2: configs 0..11 cover every pair.
    restrict_choices(seg, 3, [](int64_t k, int64_t j) { return j == 0 ? k % 3 : k % 2; });
    const SegmentInput in = seg.input();
    const DependencePlan pl = model.plan(in);
    DedupeStats st;
    const Tensor dd = model.encode_dedupe(in, nullptr, &st);
    CHECK(max_rel_diff(dd, model.encode(in, nullptr)) <= 1e-5);
    for (int64_t l = 0; l <= cfg.layers; ++l) {
        // Expected: per dep node, the product of the choices of the configurable nodes within l
        // hops (their receptive fields are disjoint on this graph: 20 nodes apart, 3 layers).
        int64_t expect = 0;
        for (int32_t v : pl.nodes[static_cast<size_t>(l)])
            expect += v < 20 ? 3 : 2;  // reached by node 10 or by node 30
        INFO("layer ", l);
        CHECK(st.dense_rows[static_cast<size_t>(l)] ==
              12 * static_cast<int64_t>(pl.nodes[static_cast<size_t>(l)].size()));
        CHECK(st.unique_rows[static_cast<size_t>(l)] == expect);
    }
    // Two configurable nodes 2 apart: the nodes reached by both take up to 3 x 2 = 6 classes.
    TinySegment near = make_tiny_segment(50, 3, 12, {10, 12});
    restrict_choices(near, 3, [](int64_t k, int64_t j) { return j == 0 ? k % 3 : k % 2; });
    const Tensor dn = model.encode_dedupe(near.input(), nullptr, &st);
    CHECK(max_rel_diff(dn, model.encode(near.input(), nullptr)) <= 1e-5);
    const DependencePlan pn = model.plan(near.input());
    const auto m3 = static_cast<int64_t>(pn.nodes[3].size());
    CHECK(st.unique_rows[3] > 3 * m3);
    CHECK(st.unique_rows[3] <= 6 * m3);
    // Every config the same: one row per node and layer, one readout for all.
    restrict_choices(near, 1, [](int64_t, int64_t) { return 0; });
    const Tensor same = model.encode_dedupe(near.input(), nullptr, &st);
    for (int64_t l = 0; l <= cfg.layers; ++l)
        CHECK(st.unique_rows[static_cast<size_t>(l)] ==
              static_cast<int64_t>(pn.nodes[static_cast<size_t>(l)].size()));
    for (int64_t k = 1; k < near.k; ++k)
        for (int64_t c = 0; c < same.cols(); ++c) CHECK(same.at(k, c) == same.at(0, c));
}

TEST_CASE(
    "encode_dedupe runs the dense encode for tile, for config_attention and for one config, and "
    "rejects input the dense encode rejects") {
    TinySegment seg = make_tiny_segment(20, 3, 4, {5});
    DedupeStats st;
    ModelConfig tile = tiny_config(Task::kTile, 3);
    Model mt(tile);
    mt.params().initialize(1);
    CHECK_FALSE(mt.dedupes(seg.input()));
    const Tensor a = mt.encode_dedupe(seg.input(), nullptr, &st),
                 b = mt.encode(seg.input(), nullptr);
    CHECK(max_rel_diff(a, b) == 0);
    CHECK(st.unique_rows.empty());
    ModelConfig attn = tiny_config(Task::kLayout, 3);
    attn.config_attention = true;
    Model ma(attn);
    ma.params().initialize(1);
    randomize_attention_output(ma.params(), 3);
    CHECK_FALSE(ma.dedupes(seg.input()));
    CHECK(max_rel_diff(ma.encode_dedupe(seg.input()), ma.encode(seg.input(), nullptr)) == 0);
    Model ml(tiny_config(Task::kLayout, 3));
    ml.params().initialize(1);
    TinySegment one = make_tiny_segment(20, 3, 1, {5});
    CHECK_FALSE(ml.dedupes(one.input()));
    CHECK(ml.dedupes(seg.input()));
    SegmentInput bad = seg.input();
    bad.config_values = bad.config_values.subspan(0, 18);  // K = 4 configs, one row of values
    CHECK_THROWS_AS(ml.encode_dedupe(bad), Error);
    TinySegment other = make_tiny_segment(21, 3, 4, {5});
    const EncodeBase wrong = ml.encode_base(other.input());
    CHECK_THROWS_WITH_AS(ml.encode_dedupe(seg.input(), &wrong),
                         doctest::Contains("cached base rows"), Error);
}
