// The fresh/stale combination of a GST step (gst/combine.h) over the segment choice: with one
// segment it is the fresh value, SED is unbiased, the mask is shared by all configs, the backward
// matches finite differences, and the HistoryTable glue (stale sums, history_init, max_staleness,
// fresh writes).
#include "gst/combine.h"

#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include "gnn/core/rng.h"
#include "sampling/segment_sampler.h"
#include "tests/support/grad_check.h"

using namespace segrank;

namespace {

// Combined [K, D] value of one step from per-segment values y[s] ([K, D] each).
Tensor combine_step(const SegmentChoice& c, SegmentAggregate agg, const std::vector<Tensor>& y,
                    int64_t k_cfg, int64_t d) {
    std::vector<ConstMatrixView> fresh, stale;
    for (int32_t s : c.fresh) fresh.push_back(y[s].view());
    for (int32_t s : c.stale_kept) stale.push_back(y[s].view());
    Tensor out(k_cfg, d);
    combine_segments_forward(out.view(), fresh, stale, combine_weights(c, agg));
    return out;
}

std::vector<Tensor> random_segment_values(int32_t num_segments, int64_t k_cfg, int64_t d,
                                          uint64_t seed) {
    Rng rng(seed);
    std::vector<Tensor> y;
    for (int32_t s = 0; s < num_segments; ++s) {
        Tensor t(k_cfg, d);
        for (int64_t i = 0; i < t.size(); ++i) t[i] = static_cast<float>(rng.normal() + 0.5 * s);
        y.push_back(std::move(t));
    }
    return y;
}

}  // namespace

TEST_CASE("with one segment the combined value is exactly the fresh value (full-graph training)") {
    const auto y = random_segment_values(1, 4, 3, 11);
    for (SegmentAggregate agg : {SegmentAggregate::kScoreSum, SegmentAggregate::kEmbeddingMean}) {
        for (int64_t step = 0; step < 5; ++step) {
            const SegmentChoice c = choose_segments(1, step, 0, 1, 1, 0.5);
            CHECK(c.fresh == std::vector<int32_t>{0});
            CHECK(c.alpha == 1.0);
            const Tensor out = combine_step(c, agg, y, 4, 3);
            for (int64_t i = 0; i < out.size(); ++i) CHECK(out[i] == y[0][i]);
        }
    }
}

TEST_CASE("SED is unbiased in expectation: mean combined score equals the full segment sum") {
    // Monte Carlo over steps (fresh choice and masks), current (non-stale) history values.
    const int32_t s_count = 7;
    const int64_t k_cfg = 4;
    for (int32_t k : {1, 3}) {
        for (double p : {0.0, 0.5, 0.9}) {
            for (SegmentAggregate agg :
                 {SegmentAggregate::kScoreSum, SegmentAggregate::kEmbeddingMean}) {
                const int64_t d = agg == SegmentAggregate::kScoreSum ? 1 : 2;
                const auto y =
                    random_segment_values(s_count, k_cfg, d, 100 + static_cast<uint64_t>(k));
                std::vector<double> truth(static_cast<size_t>(k_cfg * d), 0.0);
                for (const Tensor& t : y)
                    for (int64_t i = 0; i < t.size(); ++i) truth[i] += t[i];
                if (agg == SegmentAggregate::kEmbeddingMean)
                    for (double& v : truth) v /= s_count;
                const int steps = 30000;
                std::vector<double> mean(truth.size(), 0.0), sq(truth.size(), 0.0);
                for (int step = 0; step < steps; ++step) {
                    const Tensor out =
                        combine_step(choose_segments(9, step, 4, s_count, k, p), agg, y, k_cfg, d);
                    for (int64_t i = 0; i < out.size(); ++i) {
                        mean[i] += out[i];
                        sq[i] += static_cast<double>(out[i]) * out[i];
                    }
                }
                for (size_t i = 0; i < truth.size(); ++i) {
                    const double m = mean[i] / steps;
                    const double sd = std::sqrt(std::max(0.0, sq[i] / steps - m * m));
                    CAPTURE(k);
                    CAPTURE(p);
                    CAPTURE(i);
                    CHECK(std::abs(m - truth[i]) <
                          5.0 * sd / std::sqrt(static_cast<double>(steps)) + 1e-6);
                }
            }
        }
    }
}

TEST_CASE(
    "the SED mask is shared by all configs: a config-independent segment cancels between configs") {
    // Segment values identical across configs except segment 0; score differences between configs
    // must then equal the weighted difference of segment 0 only, for every draw.
    const int32_t s_count = 6;
    const int64_t k_cfg = 5;
    std::vector<Tensor> y;
    for (int32_t s = 0; s < s_count; ++s) {
        Tensor t(k_cfg, 1);
        for (int64_t c = 0; c < k_cfg; ++c)
            t[c] = s == 0 ? static_cast<float>(c) : static_cast<float>(10 * s);
        y.push_back(std::move(t));
    }
    for (int step = 0; step < 200; ++step) {
        const SegmentChoice c = choose_segments(2, step, 3, s_count, 2, 0.5);
        const Tensor out = combine_step(c, SegmentAggregate::kScoreSum, y, k_cfg, 1);
        const bool fresh0 = c.fresh[0] == 0;
        const bool kept0 = !c.stale_kept.empty() && c.stale_kept[0] == 0;
        const double w0 = fresh0 ? c.alpha : (kept0 ? 1.0 : 0.0);
        for (int64_t k = 1; k < k_cfg; ++k)
            CHECK(out[k] - out[0] == doctest::Approx(w0 * static_cast<double>(k)).epsilon(1e-5));
    }
}

TEST_CASE("combine backward matches finite differences and gives stale values no gradient") {
    const SegmentChoice c = choose_segments(4, 2, 1, 5, 2, 0.5);
    REQUIRE(c.fresh.size() == 2);
    for (SegmentAggregate agg : {SegmentAggregate::kScoreSum, SegmentAggregate::kEmbeddingMean}) {
        const CombineWeights w = combine_weights(c, agg);
        auto y = random_segment_values(5, 3, 4, 21);
        Tensor dout(3, 4);
        Rng rng(8);
        for (int64_t i = 0; i < dout.size(); ++i) dout[i] = static_cast<float>(rng.normal());
        auto loss = [&]() {
            return test::weighted_sum(combine_step(c, agg, y, 3, 4).view(), dout);
        };
        std::vector<Tensor> grads;
        for (size_t i = 0; i < c.fresh.size(); ++i) grads.emplace_back(3, 4);
        std::vector<MatrixView> dfresh;
        for (auto& g : grads) dfresh.push_back(g.view());
        combine_segments_backward(dfresh, dout.view(), w);
        combine_segments_backward(dfresh, dout.view(), w);  // accumulates
        for (auto& g : grads)
            for (int64_t i = 0; i < g.size(); ++i) g[i] *= 0.5f;
        for (size_t i = 0; i < c.fresh.size(); ++i) {
            const auto r = test::grad_check(y[c.fresh[i]].span(), grads[i].span(), loss);
            CHECK_MESSAGE(r.ok(), r.first_failure);
        }
        // A kept stale segment changes the value but is a constant for the gradient.
        if (!c.stale_kept.empty()) {
            const double before = loss();
            y[c.stale_kept[0]][0] += 1.0f;
            CHECK(loss() - before == doctest::Approx(w.stale * dout[0]).epsilon(1e-3));
        }
    }
}

namespace {
// Forward-only stand-in whose output encodes (graph, config, segment, column) and counts calls.
struct FakeForward {
    int64_t graph = 0;
    float bias = 0.0f;
    int64_t calls = 0, values = 0;
    void operator()(int32_t s, std::span<const int64_t> configs, MatrixView out) {
        ++calls;
        values += static_cast<int64_t>(configs.size());
        for (int64_t k = 0; k < out.rows; ++k)
            for (int64_t c = 0; c < out.cols; ++c)
                out.at(k, c) = bias + static_cast<float>(graph * 1000 + configs[k] * 10 + s) +
                               0.5f * static_cast<float>(c);
    }
};
}  // namespace

TEST_CASE(
    "stale sum recomputes missing kept entries once (history_init fresh) and then reads them") {
    HistoryTable table(2, 0);
    const std::vector<int64_t> configs{4, 9, 1};
    SegmentChoice c;
    for (uint64_t seed = 0; c.stale_kept.size() < 2; ++seed)
        c = choose_segments(seed, 0, 3, 6, 1, 0.5);
    FakeForward fwd{3};
    auto fn = [&](int32_t s, std::span<const int64_t> cf, MatrixView out) { fwd(s, cf, out); };
    const StaleSum first = sum_stale_segments(table, 3, c, configs, 0, 0, HistoryInit::kFresh, fn);
    CHECK(first.hits == 0);
    CHECK(first.recomputed == static_cast<int64_t>(3 * c.stale_kept.size()));
    CHECK(fwd.calls == static_cast<int64_t>(c.stale_kept.size()));
    for (int64_t k = 0; k < 3; ++k) {
        double expect = 0.0;
        for (int32_t s : c.stale_kept)
            expect += static_cast<double>(3 * 1000 + configs[k] * 10 + s) + 0.5;
        CHECK(first.sum.at(k, 1) == doctest::Approx(expect));
    }
    for (int32_t s : c.stale_dropped)
        CHECK_FALSE(table.contains(3, 4, s));  // dropped: never read or stored
    for (int32_t s : c.fresh) CHECK_FALSE(table.contains(3, 4, s));
    fwd.bias = 100.0f;  // parameters changed: stored values must still be the old ones
    const StaleSum second = sum_stale_segments(table, 3, c, configs, 1, 0, HistoryInit::kFresh, fn);
    CHECK(second.hits == first.recomputed);
    CHECK(second.recomputed == 0);
    for (int64_t i = 0; i < first.sum.size(); ++i) CHECK(second.sum[i] == first.sum[i]);
    // Older than max_staleness: recomputed with the new parameters and rewritten.
    const StaleSum third = sum_stale_segments(table, 3, c, configs, 20, 5, HistoryInit::kFresh, fn);
    CHECK(third.recomputed == first.recomputed);
    CHECK(third.sum.at(0, 0) ==
          doctest::Approx(first.sum.at(0, 0) + 100.0 * static_cast<double>(c.stale_kept.size())));
    CHECK(table.lookup(3, 9, c.stale_kept[0])->step == 20);
}

TEST_CASE("stale sum with history_init zero reads absent entries as 0 without storing them") {
    HistoryTable table(1, 0);
    const std::vector<int64_t> configs{0, 2};
    const SegmentChoice c = choose_segments(1, 0, 0, 5, 1, 1.0);  // keeps all 4 stale segments
    REQUIRE(c.stale_kept.size() == 4);
    table.set_num_segments(0, 5);
    table.write(0, 2, c.stale_kept[1], std::vector<float>{7.0f}, 0);
    int calls = 0;
    auto fn = [&](int32_t, std::span<const int64_t>, MatrixView out) {
        ++calls;
        for (int64_t k = 0; k < out.rows; ++k) out.at(k, 0) = 1.0f;
    };
    const StaleSum s = sum_stale_segments(table, 0, c, configs, 1, 0, HistoryInit::kZero, fn);
    CHECK(calls == 0);
    CHECK(s.hits == 1);
    CHECK(s.zeros == 7);
    CHECK(s.sum.at(0, 0) == 0.0f);
    CHECK(s.sum.at(1, 0) == 7.0f);
    CHECK(table.stats().entries == 1);
    // A present entry that is too stale is recomputed even with "zero".
    const StaleSum late = sum_stale_segments(table, 0, c, configs, 50, 10, HistoryInit::kZero, fn);
    CHECK(calls == 1);
    CHECK(late.recomputed == 1);
    CHECK(late.sum.at(1, 0) == 1.0f);
    CHECK_THROWS_WITH_AS(parse_history_init("lazy"), doctest::Contains("\"fresh\", \"zero\""),
                         Error);
}

TEST_CASE("fresh values written after the step are read back under their exact keys") {
    HistoryTable table(2, 0);
    const std::vector<int64_t> configs{3, 8};
    const std::vector<int32_t> fresh{1, 4};
    Tensor a(2, 2), b(2, 2);
    for (int64_t i = 0; i < 4; ++i) {
        a[i] = static_cast<float>(i);
        b[i] = static_cast<float>(10 + i);
    }
    const std::vector<ConstMatrixView> vals{a.view(), b.view()};
    write_fresh_segments(table, 6, 5, fresh, configs, vals, 12);
    CHECK(table.stats().entries == 4);
    CHECK(table.lookup(6, 8, 4)->value[1] == 13.0f);
    CHECK(table.lookup(6, 3, 1)->value[0] == 0.0f);
    CHECK(table.lookup(6, 3, 1)->step == 12);
    CHECK_FALSE(table.contains(6, 3, 0));
    CHECK_THROWS_WITH_AS(write_fresh_segments(table, 6, 4, fresh, configs, vals, 13),
                         doctest::Contains("partition changed"), Error);
}
