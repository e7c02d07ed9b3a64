// Whole-model tests: finite-difference gradients (both tasks, both joins, halo, tile cost
// features), the exact config-independence path against the naive path (forward and gradients),
// cross-config attention, determinism, threads.
#include "gnn/model.h"

#include <doctest/doctest.h>

#include <cmath>

#include "gnn/core/parallel.h"
#include "tests/support/grad_check.h"
#include "tests/support/tiny_graphs.h"

using namespace segrank;
using namespace segrank::test;

namespace {

// Scalar loss = sum_k w_k score_k of one segment; fills the parameter grads when backward is set.
double model_loss(Model& model, const TinySegment& seg, const std::vector<float>& w, bool backward,
                  bool training = false, uint64_t drop_seed = 0, Tensor* scores_out = nullptr) {
    SegmentInput in = seg.input();
    Rng rng(drop_seed);
    EncodeSaved es;
    HeadSaved hs;
    Tensor r = model.encode(in, backward ? &es : nullptr, training, &rng);
    Tensor s = model.head(r.cview(), in.tile_config, backward ? &hs : nullptr, in.tile_cost);
    double loss = 0;
    for (int64_t i = 0; i < s.size(); ++i) loss += double(w[i]) * s[i];
    if (backward) {
        Tensor dr(r.rows(), r.cols());
        model.head_backward(w, hs, dr.view());
        model.encode_backward(dr.cview(), es);
    }
    if (scores_out) *scores_out = std::move(s);
    return loss;
}

std::vector<float> loss_weights(int64_t k) {
    std::vector<float> w;
    for (int64_t i = 0; i < k; ++i) w.push_back(0.5f + 0.37f * float(i % 5) - 0.4f * float(i % 2));
    return w;
}

// Checks a few entries of every parameter against central differences.
// eps is small because piecewise-linear activations and the max readout have kinks near the sample.
void check_all_param_grads(Model& model, const TinySegment& seg, bool training = false,
                           double eps = 1e-3, double atol = 2e-3) {
    const auto w = loss_weights(seg.k);
    model.params().zero_grads();
    model_loss(model, seg, w, true, training, 9);
    Tensor grads(model.params().total_size());
    std::copy(model.params().grads().begin(), model.params().grads().end(), grads.data());
    auto loss = [&] { return model_loss(model, seg, w, false, training, 9); };
    for (const ParamRef& ref : model.params().refs()) {
        std::span<float> vals = model.params().values().subspan(static_cast<size_t>(ref.offset),
                                                                static_cast<size_t>(ref.size()));
        std::span<const float> g =
            grads.span().subspan(static_cast<size_t>(ref.offset), static_cast<size_t>(ref.size()));
        INFO("parameter ", ref.name);
        SEGRANK_CHECK_GRAD(grad_check(vals, g, loss, eps, 3e-2, atol, 8, 3));
    }
}

}  // namespace

TEST_CASE("layout model gradients match finite differences, with halo nodes") {
    TinySegment seg = make_tiny_segment(14, 3, 3, {2, 9}, /*halo=*/3);
    const std::vector<float> bytes9 = seg.layout_bytes;
    for (int option = 0; option < 5; ++option)
        for (bool exploit : {true, false}) {
            // 1: byte features; 2: the mean readout; 3: the mean readout with bytes; 4: byte and
            // access features (rows of 24).
            const bool bytes = option == 1 || option == 3 || option == 4;
            ModelConfig cfg = tiny_config(Task::kLayout, 3);
            if (option == 2 || option == 3) cfg.readout = Readout::kMean;
            cfg.exploit_independence = exploit;
            cfg.layout_bytes = bytes;
            cfg.layout_access = option == 4;
            seg.layout_bytes = bytes9;
            if (cfg.layout_access) set_layout_feature_width(seg, cfg.layout_feature_width());
            seg.with_bytes = bytes;
            Model model(cfg);
            model.params().initialize(5);
            INFO("exploit_independence=", exploit, " layout_bytes=", bytes,
                 " layout_access=", cfg.layout_access, " readout=", to_string(cfg.readout));
            if (bytes) REQUIRE(model.params().find("config_mismatch.weight"));
            REQUIRE(model.params().ref(*model.params().find("head1.weight")).cols ==
                    cfg.readout_width());
            // Smaller steps with the option: its features move the max readout nearer a kink.
            check_all_param_grads(model, seg, false, option > 0 ? 1e-4 : 1e-3);
        }
}

TEST_CASE(
    "layout_bytes adds config_mismatch.weight [config_dim, 9] after the other parameters, keeps "
    "the dependence plan, and its features move the scores") {
    TinySegment seg = make_tiny_segment(40, 3, 4, {5, 30});
    ModelConfig cfg = tiny_config(Task::kLayout, 3);
    Model off(cfg);
    cfg.layout_bytes = true;
    Model bytes(cfg);
    CHECK(cfg.layout_feature_width() == kLayoutByteFeatures);
    CHECK_FALSE(off.params().find("config_mismatch.weight"));
    const ParamRef& w = bytes.params().ref(*bytes.params().find("config_mismatch.weight"));
    CHECK(w.rows == cfg.config_dim);
    CHECK(w.cols == kLayoutByteFeatures);
    CHECK(bytes.params().num_parameters() ==
          off.params().num_parameters() + kLayoutByteFeatures * cfg.config_dim);
    // Tile ignores the option (no layout features, no parameter).
    ModelConfig tc = tiny_config(Task::kTile, 3);
    tc.layout_bytes = true;
    CHECK(tc.layout_feature_width() == 0);
    CHECK_FALSE(Model(tc).params().find("config_mismatch.weight"));

    off.params().initialize(3);
    bytes.params().initialize(3);
    for (const ParamRef& ref : off.params().refs()) {
        const ParamRef& r = bytes.params().ref(*bytes.params().find(ref.name));
        INFO(ref.name);
        CHECK(std::equal(off.params().values().begin() + ref.offset,
                         off.params().values().begin() + ref.offset + ref.size(),
                         bytes.params().values().begin() + r.offset));
    }
    const DependencePlan p0 = off.plan(seg.input());
    seg.with_bytes = true;
    CHECK(p0.nodes == bytes.plan(seg.input()).nodes);
    Tensor s1, s2;
    model_loss(bytes, seg, loss_weights(seg.k), false, false, 0, &s1);
    for (float& x : seg.layout_bytes) x = -x;
    model_loss(bytes, seg, loss_weights(seg.k), false, false, 0, &s2);
    bool moved = false;
    for (int64_t i = 0; i < seg.k; ++i) moved = moved || s1[i] != s2[i];
    CHECK(moved);
    seg.with_bytes = false;  // the option on without the features is refused
    CHECK_THROWS_WITH_AS(bytes.encode(seg.input(), nullptr), doctest::Contains("layout_bytes"),
                         Error);
}

TEST_CASE(
    "layout_access widens config_mismatch.weight to [config_dim, 9 + 15] (15 alone), keeps the "
    "other parameters and the plan, and its columns move the scores") {
    TinySegment seg = make_tiny_segment(40, 3, 4, {5, 30});
    ModelConfig cfg = tiny_config(Task::kLayout, 3);
    cfg.layout_bytes = true;
    Model bytes(cfg);
    cfg.layout_access = true;
    Model both(cfg);
    CHECK(cfg.layout_feature_width() == kLayoutByteFeatures + kLayoutAccessFeatures);
    const ParamRef& w = both.params().ref(*both.params().find("config_mismatch.weight"));
    CHECK(w.rows == cfg.config_dim);
    CHECK(w.cols == kLayoutByteFeatures + kLayoutAccessFeatures);
    CHECK(both.params().num_parameters() ==
          bytes.params().num_parameters() + kLayoutAccessFeatures * cfg.config_dim);
    ModelConfig only = cfg;
    only.layout_bytes = false;
    CHECK(only.layout_feature_width() == kLayoutAccessFeatures);
    const Model access_only(only);
    const ParamStore& ps = access_only.params();
    CHECK(ps.ref(*ps.find("config_mismatch.weight")).cols == kLayoutAccessFeatures);
    ModelConfig tc = tiny_config(Task::kTile, 3);
    tc.layout_access = true;
    CHECK(tc.layout_feature_width() == 0);
    CHECK_FALSE(Model(tc).params().find("config_mismatch.weight"));

    bytes.params().initialize(3);
    both.params().initialize(3);
    for (const ParamRef& ref : bytes.params().refs()) {
        if (ref.name == "config_mismatch.weight") continue;
        const ParamRef& r = both.params().ref(*both.params().find(ref.name));
        INFO(ref.name);
        CHECK(std::equal(bytes.params().values().begin() + ref.offset,
                         bytes.params().values().begin() + ref.offset + ref.size(),
                         both.params().values().begin() + r.offset));
    }
    set_layout_feature_width(seg, cfg.layout_feature_width());
    seg.with_bytes = true;
    CHECK(bytes.plan(make_tiny_segment(40, 3, 4, {5, 30}).input()).nodes ==
          both.plan(seg.input()).nodes);
    // Changing only the access columns (9..23 of each row) changes the scores.
    Tensor s1, s2;
    model_loss(both, seg, loss_weights(seg.k), false, false, 0, &s1);
    const int64_t m = cfg.layout_feature_width();
    for (size_t i = 0; i < seg.layout_bytes.size(); ++i)
        if (static_cast<int64_t>(i) % m >= kLayoutByteFeatures) seg.layout_bytes[i] += 1.0f;
    model_loss(both, seg, loss_weights(seg.k), false, false, 0, &s2);
    bool moved = false;
    for (int64_t i = 0; i < seg.k; ++i) moved = moved || s1[i] != s2[i];
    CHECK(moved);
    // Rows of the byte width alone are refused.
    TinySegment narrow = make_tiny_segment(40, 3, 4, {5, 30});
    narrow.with_bytes = true;
    CHECK_THROWS_WITH_AS(both.encode(narrow.input(), nullptr), doctest::Contains("layout_access"),
                         Error);
}

TEST_CASE(
    "tile model gradients match finite differences for early and late join, with and without "
    "tile_cost_features") {
    TinySegment seg = make_tiny_segment(10, 4, 3, {}, /*halo=*/2);
    for (bool cost : {false, true})
        for (ConfigJoin join : {ConfigJoin::kEarly, ConfigJoin::kLate}) {
            ModelConfig cfg = tiny_config(Task::kTile, 4, join);
            cfg.tile_cost_features = cost;
            seg.with_cost = cost;
            Model model(cfg);
            model.params().initialize(6);
            INFO("late join=", join == ConfigJoin::kLate, " tile_cost_features=", cost);
            if (cost) REQUIRE(model.params().find("config_cost.weight"));
            check_all_param_grads(model, seg);
        }
}

TEST_CASE(
    "tile_cost_features adds only config_cost.weight, keeps the other parameters, moves the scores "
    "of the configs whose features change, and is refused without the features") {
    TinySegment seg = make_tiny_segment(20, 3, 4, {});
    seg.with_cost = true;
    for (ConfigJoin join : {ConfigJoin::kEarly, ConfigJoin::kLate}) {
        INFO("late join=", join == ConfigJoin::kLate);
        ModelConfig cfg = tiny_config(Task::kTile, 3, join);
        Model off(cfg);
        cfg.tile_cost_features = true;
        Model on(cfg);
        off.params().initialize(3);
        on.params().initialize(3);
        CHECK_FALSE(off.params().find("config_cost.weight"));
        const ParamRef& w = on.params().ref(*on.params().find("config_cost.weight"));
        CHECK(w.rows == cfg.config_dim);
        CHECK(w.cols == kTileCostFeatures);
        CHECK(on.params().num_parameters() ==
              off.params().num_parameters() + kTileCostFeatures * cfg.config_dim);
        for (const ParamRef& ref : off.params().refs()) {
            const ParamRef& r = on.params().ref(*on.params().find(ref.name));
            INFO(ref.name);
            CHECK(std::equal(off.params().values().begin() + ref.offset,
                             off.params().values().begin() + ref.offset + ref.size(),
                             on.params().values().begin() + r.offset));
        }
        // With config_cost.weight = 0 the option gives the scores of the model without it.
        Tensor s_off, s_zero, s1, s2;
        std::fill_n(on.params().values().begin() + w.offset, w.size(), 0.0f);
        model_loss(off, seg, loss_weights(seg.k), false, false, 0, &s_off);
        model_loss(on, seg, loss_weights(seg.k), false, false, 0, &s_zero);
        for (int64_t i = 0; i < seg.k; ++i) CHECK(s_zero[i] == s_off[i]);
        on.params().initialize(3);
        model_loss(on, seg, loss_weights(seg.k), false, false, 0, &s1);
        for (int64_t c = 0; c < kTileCostFeatures; ++c) seg.tile_cost.at(1, c) += 0.5f;
        model_loss(on, seg, loss_weights(seg.k), false, false, 0, &s2);
        for (int64_t i = 0; i < seg.k; ++i)
            if (i == 1)
                CHECK(s2[i] != s1[i]);
            else
                CHECK(s2[i] == s1[i]);
        seg.with_cost = false;  // the option on without the features is refused
        CHECK_THROWS_WITH_AS(model_loss(on, seg, loss_weights(seg.k), false),
                             doctest::Contains("tile_cost_features"), Error);
        seg.with_cost = true;
    }
    ModelConfig layout = tiny_config(Task::kLayout, 3);  // layout: the option declares nothing
    layout.tile_cost_features = true;
    CHECK_FALSE(Model(layout).params().find("config_cost.weight"));
}

TEST_CASE(
    "readout mean: the mean half of the mean_max readout bit for bit, a head of width H, and tile "
    "gradients match finite differences") {
    TinySegment seg = make_tiny_segment(40, 3, 4, {5, 30}, /*halo=*/3);
    ModelConfig cfg = tiny_config(Task::kLayout, 3);
    Model both(cfg);
    cfg.readout = Readout::kMean;
    Model mean(cfg);
    both.params().initialize(3);
    mean.params().initialize(3);
    // The parameters declared before the head (everything the encode reads) are the same.
    for (const char* name : {"opcode.weight", "input.weight", "sage2.w_self"}) {
        INFO(name);
        const ParamRef& a = both.params().ref(*both.params().find(name));
        const ParamRef& b = mean.params().ref(*mean.params().find(name));
        CHECK(std::equal(both.params().values().begin() + a.offset,
                         both.params().values().begin() + a.offset + a.size(),
                         mean.params().values().begin() + b.offset));
    }
    CHECK(both.params().ref(*both.params().find("head1.weight")).cols == 2 * cfg.hidden);
    CHECK(mean.params().ref(*mean.params().find("head1.weight")).cols == cfg.hidden);
    EncodeSaved es;
    Rng rng(1);
    const Tensor r2 = both.encode(seg.input(), nullptr);
    const Tensor r1 = mean.encode(seg.input(), &es, /*training=*/true, &rng);
    REQUIRE(r1.cols() == cfg.hidden);
    CHECK(es.argmax.empty());
    int64_t differ = 0;
    for (int64_t i = 0; i < seg.k; ++i)
        for (int64_t c = 0; c < cfg.hidden; ++c) differ += r1.at(i, c) != r2.at(i, c);
    CHECK(differ == 0);
    // A readout of the other width is refused by the head and the backward, naming the width.
    CHECK_THROWS_WITH_AS(mean.head(r2.cview(), {}, nullptr), doctest::Contains("mean"), Error);
    Tensor wrong(seg.k, 2 * cfg.hidden);
    CHECK_THROWS_AS(mean.encode_backward(wrong.cview(), es), Error);
    // Tile, both joins, with the cost features.
    TinySegment tile = make_tiny_segment(20, 3, 4, {}, /*halo=*/2, 5);
    tile.with_cost = true;
    for (ConfigJoin join : {ConfigJoin::kEarly, ConfigJoin::kLate}) {
        ModelConfig tc = tiny_config(Task::kTile, 3, join);
        tc.readout = Readout::kMean;
        tc.tile_cost_features = true;
        Model model(tc);
        model.params().initialize(6);
        INFO("tile late join=", join == ConfigJoin::kLate);
        check_all_param_grads(model, tile);
    }
}

TEST_CASE("relu, leaky_relu and gelu models with dropout in training match finite differences") {
    TinySegment seg = make_tiny_segment(12, 3, 2, {5});
    for (Activation act : {Activation::kRelu, Activation::kLeakyRelu, Activation::kGelu}) {
        ModelConfig cfg = tiny_config(Task::kLayout, 3);
        cfg.activation = act;
        cfg.dropout = 0.2f;
        Model model(cfg);
        model.params().initialize(8);
        INFO(to_string(act));
        check_all_param_grads(model, seg, /*training=*/true, 1e-4, 3e-3);
    }
}

namespace {
// One forward + backward of `fast` (config independence exploited) and `naive` (the same weights,
// every row per config) on seg: scores within 1e-5 relative, each parameter's gradient within
// grad_rtol (default 1e-5) of its norm.
void check_fast_equals_naive(Model& fast, Model& naive, const TinySegment& seg, bool training,
                             double grad_rtol = 1e-5) {
    const auto w = loss_weights(seg.k);
    Tensor s_fast, s_naive;
    fast.params().zero_grads();
    naive.params().zero_grads();
    model_loss(fast, seg, w, true, training, 4, &s_fast);
    model_loss(naive, seg, w, true, training, 4, &s_naive);
    for (int64_t i = 0; i < seg.k; ++i)
        CHECK(std::abs(s_fast[i] - s_naive[i]) <= 1e-5 * std::max(1.0f, std::abs(s_naive[i])));
    for (const ParamRef& ref : fast.params().refs()) {
        double diff = 0, norm = 0;
        for (int64_t i = ref.offset; i < ref.offset + ref.size(); ++i) {
            const double a = fast.params().grads()[i], b = naive.params().grads()[i];
            diff += (a - b) * (a - b);
            norm += b * b;
        }
        INFO("parameter ", ref.name, " grad norm ", std::sqrt(norm));
        CHECK(std::sqrt(diff) <= grad_rtol * std::max(1e-3, std::sqrt(norm)));
    }
}
}  // namespace

TEST_CASE(
    "config-independent path equals the naive path to 1e-5 in scores and every gradient, layout "
    "and "
    "tile") {
    // 80 nodes, 3 configurable: most nodes are > 3 hops from any configurable node.
    TinySegment seg = make_tiny_segment(80, 5, 6, {10, 41, 77}, /*halo=*/4, 3);
    const std::vector<float> bytes9 = seg.layout_bytes;
    for (bool training : {false, true})
        for (int option = 0; option < 6; ++option) {
            // 1: layout_bytes; 2: config attention; 3: 1 and 2; 4: 1 with the mean readout;
            // 5: layout_bytes and layout_access (feature rows of 24) with the mean readout
            const bool bytes = option == 1 || option >= 3;
            seg.with_bytes = bytes;
            ModelConfig cfg = tiny_config(Task::kLayout, 5);
            cfg.config_attention = option == 2 || option == 3;
            if (option >= 4) cfg.readout = Readout::kMean;
            cfg.config_attention_dim = 6;
            cfg.hidden = 16;
            cfg.dropout = training ? 0.1f : 0.0f;
            cfg.layout_bytes = bytes;
            cfg.layout_access = option == 5;
            seg.layout_bytes = bytes9;
            if (cfg.layout_access) set_layout_feature_width(seg, cfg.layout_feature_width());
            Model fast(cfg);
            cfg.exploit_independence = false;
            Model naive(cfg);
            fast.params().initialize(21);
            naive.params().initialize(21);
            randomize_attention_output(fast.params(), 22);
            randomize_attention_output(naive.params(), 22);
            const auto plan = fast.plan(seg.input());
            CHECK(plan.nodes[3].size() < 60);  // the test is meaningful: many rows are broadcast
            CHECK(naive.plan(seg.input()).nodes[0].size() == 80);
            INFO("training=", training, " layout_bytes=", bytes,
                 " config_attention=", cfg.config_attention, " readout=", to_string(cfg.readout));
            // The mean readout sends every pooled node's rows a gradient (the max only its
            // argmax), so the weight gradients sum more terms in a different order on the two
            // paths: measured 1.0004e-5 of the norm for sage0.w_fwd in training.
            check_fast_equals_naive(fast, naive, seg, training, option >= 4 ? 3e-5 : 1e-5);
        }
    // Tile (no configurable nodes): late join keeps every layer config-independent (the config
    // enters at the head), early join makes every row dependent; both with the cost features.
    TinySegment tile = make_tiny_segment(40, 5, 6, {}, /*halo=*/3, 5);
    for (bool training : {false, true})
        for (ConfigJoin join : {ConfigJoin::kEarly, ConfigJoin::kLate})
            for (bool cost : {false, true}) {
                tile.with_cost = cost;
                ModelConfig cfg = tiny_config(Task::kTile, 5, join);
                cfg.hidden = 16;
                cfg.dropout = training ? 0.1f : 0.0f;
                cfg.tile_cost_features = cost;
                Model fast(cfg);
                cfg.exploit_independence = false;
                Model naive(cfg);
                fast.params().initialize(23);
                naive.params().initialize(23);
                CHECK(fast.plan(tile.input()).nodes[3].size() ==
                      (join == ConfigJoin::kLate ? 0u : 40u));
                INFO("tile training=", training, " late join=", join == ConfigJoin::kLate,
                     " tile_cost_features=", cost);
                check_fast_equals_naive(fast, naive, tile, training);
            }
}

namespace {
// The segment with only the configs `keep` (in that order) of seg.
TinySegment with_configs(const TinySegment& seg, const std::vector<int64_t>& keep) {
    TinySegment s;
    s.feat = seg.feat.clone();
    s.opcode = seg.opcode;
    s.graph = seg.graph;
    s.config_nodes = seg.config_nodes;
    s.num_pooled = seg.num_pooled;
    s.k = static_cast<int64_t>(keep.size());
    const size_t row = seg.config_nodes.size() * kLayoutConfigDim;
    for (int64_t c : keep)
        s.config_values.insert(s.config_values.end(), seg.config_values.begin() + c * row,
                               seg.config_values.begin() + (c + 1) * row);
    return s;
}
}  // namespace

TEST_CASE("config_attention model gradients match finite differences, layout and tile") {
    TinySegment seg = make_tiny_segment(14, 3, 3, {2, 9}, /*halo=*/3);
    for (bool exploit : {true, false}) {
        ModelConfig cfg = tiny_config(Task::kLayout, 3);
        cfg.exploit_independence = exploit;
        cfg.config_attention = true;
        cfg.config_attention_dim = 3;
        Model model(cfg);
        model.params().initialize(5);
        randomize_attention_output(model.params(), 6);
        INFO("layout exploit_independence=", exploit);
        REQUIRE(model.params().find("xattn2.w_o"));
        check_all_param_grads(model, seg, false, 1e-4);
    }
    TinySegment tile = make_tiny_segment(10, 4, 3, {}, /*halo=*/2);
    for (ConfigJoin join : {ConfigJoin::kEarly, ConfigJoin::kLate}) {
        ModelConfig cfg = tiny_config(Task::kTile, 4, join);
        cfg.config_attention = true;
        cfg.config_attention_dim = 4;
        Model model(cfg);
        model.params().initialize(6);
        randomize_attention_output(model.params(), 7);
        INFO("tile late join=", join == ConfigJoin::kLate);
        check_all_param_grads(model, tile);
    }
}

TEST_CASE(
    "config_attention adds only its parameters, starts as the model without it, and makes a "
    "config's score depend on the configs scored with it") {
    TinySegment seg = make_tiny_segment(30, 3, 5, {4, 11, 20});
    ModelConfig cfg = tiny_config(Task::kLayout, 3);
    Model off(cfg);
    cfg.config_attention = true;
    cfg.config_attention_dim = 4;
    Model on(cfg);
    off.params().initialize(3);
    on.params().initialize(3);
    CHECK(on.params().num_parameters() ==
          off.params().num_parameters() + cfg.layers * 4 * cfg.hidden * 4);
    for (const ParamRef& ref : off.params().refs()) {
        const ParamRef& r = on.params().ref(*on.params().find(ref.name));
        INFO(ref.name);
        CHECK(std::equal(off.params().values().begin() + ref.offset,
                         off.params().values().begin() + ref.offset + ref.size(),
                         on.params().values().begin() + r.offset));
    }
    const DependencePlan a = off.plan(seg.input()), b = on.plan(seg.input());
    CHECK(a.nodes == b.nodes);  // no new dependence: attention stays within a node
    const auto w = loss_weights(seg.k);
    Tensor s_off, s_on;
    model_loss(off, seg, w, false, false, 0, &s_off);
    model_loss(on, seg, w, false, false, 0, &s_on);
    for (int64_t i = 0; i < seg.k; ++i) CHECK(s_on[i] == s_off[i]);  // w_o = 0: identity
    randomize_attention_output(on.params(), 4);
    // Config 0 scored with {1, 2} and with {3, 4}: different scores; the same set in another
    // order: the same score (attention is a set function) up to rounding; twice: the same bits.
    Tensor s_a, s_b, s_c, s_a2;
    model_loss(on, with_configs(seg, {0, 1, 2}), w, false, false, 0, &s_a);
    model_loss(on, with_configs(seg, {0, 3, 4}), w, false, false, 0, &s_b);
    model_loss(on, with_configs(seg, {2, 1, 0}), w, false, false, 0, &s_c);
    model_loss(on, with_configs(seg, {0, 1, 2}), w, false, false, 0, &s_a2);
    CHECK(s_a[0] != s_b[0]);
    CHECK(s_c[2] == doctest::Approx(s_a[0]).epsilon(1e-5));
    for (int64_t i = 0; i < 3; ++i) CHECK(s_a2[i] == s_a[i]);
    // Without the option the score of config 0 does not depend on the others.
    model_loss(off, with_configs(seg, {0, 1, 2}), w, false, false, 0, &s_a);
    model_loss(off, with_configs(seg, {0, 3, 4}), w, false, false, 0, &s_b);
    CHECK(s_a[0] == doctest::Approx(s_b[0]).epsilon(1e-6));
    ModelConfig bad = cfg;
    bad.config_attention_dim = 0;
    CHECK_THROWS_WITH_AS(Model{bad}, doctest::Contains("model.config_attention_dim"), Error);
}

TEST_CASE(
    "segments whose pooled nodes are more than L hops from configurable nodes do not depend on the "
    "config") {
    TinySegment far = make_tiny_segment(40, 2, 2, {39});
    far.num_pooled = 20;  // nodes 0..19 pooled; node 39 is at least 7 hops away
    ModelConfig cfg = tiny_config(Task::kLayout, 2);
    Model model(cfg);
    model.params().initialize(1);
    CHECK_FALSE(model.segment_depends_on_config(far.input()));
    TinySegment near = make_tiny_segment(40, 2, 2, {21});
    near.num_pooled = 20;
    CHECK(model.segment_depends_on_config(near.input()));
    // And indeed every config gets the same score.
    Tensor s;
    model_loss(model, far, loss_weights(2), false, false, 0, &s);
    CHECK(s[0] == s[1]);
    TinySegment none = make_tiny_segment(10, 2, 2, {});
    CHECK_FALSE(model.segment_depends_on_config(none.input()));
    Model tile(tiny_config(Task::kTile, 2));
    CHECK(tile.segment_depends_on_config(none.input()));
}

TEST_CASE("same seed gives the same parameters and scores, 1 and 2 threads agree to 1e-6") {
    TinySegment seg = make_tiny_segment(60, 4, 4, {3, 30});
    ModelConfig cfg = tiny_config(Task::kLayout, 4);
    cfg.hidden = 32;
    Model a(cfg), b(cfg);
    a.params().initialize(77);
    b.params().initialize(77);
    for (int64_t i = 0; i < a.params().total_size(); ++i)
        REQUIRE(a.params().values()[i] == b.params().values()[i]);
    const auto w = loss_weights(seg.k);
    const int threads = num_threads();
    set_num_threads(1);
    Tensor s1;
    a.params().zero_grads();
    model_loss(a, seg, w, true, false, 0, &s1);
    set_num_threads(2);
    Tensor s2;
    b.params().zero_grads();
    model_loss(b, seg, w, true, false, 0, &s2);
    set_num_threads(threads);
    for (int64_t i = 0; i < seg.k; ++i)
        CHECK(std::abs(s1[i] - s2[i]) <= 1e-6 * std::max(1.0f, std::abs(s1[i])));
    double worst = 0;
    for (int64_t i = 0; i < a.params().total_size(); ++i) {
        const double x = a.params().grads()[i], y = b.params().grads()[i];
        worst = std::max(worst, std::abs(x - y) / std::max(1.0, std::abs(y)));
    }
    CHECK(worst <= 1e-6);
}

TEST_CASE("invalid segment input is rejected with a message naming the field") {
    TinySegment seg = make_tiny_segment(10, 3, 2, {4});
    Model model(tiny_config(Task::kLayout, 3));
    SegmentInput in = seg.input();
    in.num_pooled = 11;
    CHECK_THROWS_WITH_AS(model.encode(in, nullptr), doctest::Contains("num_pooled"), Error);
    in = seg.input();
    in.k = 3;
    CHECK_THROWS_WITH_AS(model.encode(in, nullptr), doctest::Contains("config_values"), Error);
    std::vector<int32_t> twice = {4, 4};
    TinySegment dup = make_tiny_segment(10, 3, 2, twice);
    CHECK_THROWS_WITH_AS(model.encode(dup.input(), nullptr), doctest::Contains("twice"), Error);
    ModelConfig bad = tiny_config(Task::kLayout, 3, ConfigJoin::kLate);
    CHECK_THROWS_AS(Model{bad}, Error);
    CHECK_THROWS_AS(parse_config_join("middle"), Error);
}
