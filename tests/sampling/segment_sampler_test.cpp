// Segment sampler (docs/gst.md#stale-embedding-dropout): fresh choice without replacement, SED
// mask, alpha. The combination of fresh and stale values that uses the choice is tested in
// tests/gst/combine_test.cpp.
#include "sampling/segment_sampler.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <vector>

#include "gnn/core/check.h"
#include "gnn/core/rng.h"

using namespace segrank;

TEST_CASE(
    "fresh segments are distinct, sorted, clamped to S, and fresh/kept/dropped partition all "
    "segments") {
    for (int32_t s_count : {1, 2, 5, 17}) {
        for (int32_t k : {1, 2, 4, 40}) {
            for (int64_t step = 0; step < 20; ++step) {
                const SegmentChoice c = choose_segments(42, step, 7, s_count, k, 0.5);
                CAPTURE(s_count);
                CAPTURE(k);
                CHECK(static_cast<int32_t>(c.fresh.size()) == std::min(k, s_count));
                CHECK(std::is_sorted(c.fresh.begin(), c.fresh.end()));
                std::set<int32_t> all;
                for (const auto* v : {&c.fresh, &c.stale_kept, &c.stale_dropped})
                    for (int32_t s : *v) {
                        CHECK(s >= 0);
                        CHECK(s < s_count);
                        CHECK(all.insert(s).second);  // never twice
                    }
                CHECK(static_cast<int32_t>(all.size()) == s_count);
                const double kk = static_cast<double>(c.fresh.size());
                CHECK(c.alpha == doctest::Approx((s_count * 0.5 + 0.5 * kk) / kk));
            }
        }
    }
}

TEST_CASE("segment choice is a pure function of (seed, step, graph) and varies with each") {
    const SegmentChoice a = choose_segments(1, 3, 9, 50, 3, 0.5);
    const SegmentChoice b = choose_segments(1, 3, 9, 50, 3, 0.5);
    CHECK(a.fresh == b.fresh);
    CHECK(a.stale_kept == b.stale_kept);
    int differ_step = 0, differ_graph = 0, differ_seed = 0;
    for (int i = 0; i < 10; ++i) {
        differ_step += choose_segments(1, 3 + 1 + i, 9, 50, 3, 0.5).fresh != a.fresh;
        differ_graph += choose_segments(1, 3, 10 + i, 50, 3, 0.5).fresh != a.fresh;
        differ_seed += choose_segments(2 + i, 3, 9, 50, 3, 0.5).fresh != a.fresh;
    }
    CHECK(differ_step >= 9);
    CHECK(differ_graph >= 9);
    CHECK(differ_seed >= 9);
}

TEST_CASE("fresh segments are uniform and SED keeps stale segments with probability p") {
    const int32_t s_count = 8, k = 2;
    const double p = 0.3;
    const int steps = 40000;
    std::vector<int> fresh_count(s_count, 0);
    int64_t kept = 0, stale = 0;
    for (int step = 0; step < steps; ++step) {
        const SegmentChoice c = choose_segments(5, step, 1, s_count, k, p);
        for (int32_t s : c.fresh) ++fresh_count[s];
        kept += static_cast<int64_t>(c.stale_kept.size());
        stale += static_cast<int64_t>(c.stale_kept.size() + c.stale_dropped.size());
    }
    const double expect = static_cast<double>(steps) * k / s_count;  // 10000, sd ~ 87
    for (int32_t s = 0; s < s_count; ++s)
        CHECK(std::abs(fresh_count[s] - expect) < 5 * std::sqrt(expect));
    const double rate = static_cast<double>(kept) / static_cast<double>(stale);  // sd ~ 0.001
    CHECK(std::abs(rate - p) < 0.006);
}

TEST_CASE("keep probability extremes: p = 0 reads no history, p = 1 keeps every stale segment") {
    const SegmentChoice none = choose_segments(3, 1, 2, 10, 2, 0.0);
    CHECK(none.stale_kept.empty());
    CHECK(none.stale_dropped.size() == 8);
    CHECK(none.alpha == doctest::Approx(5.0));  // S / k
    const SegmentChoice all = choose_segments(3, 1, 2, 10, 2, 1.0);
    CHECK(all.stale_kept.size() == 8);
    CHECK(all.alpha == doctest::Approx(1.0));
    CHECK_THROWS_WITH_AS(choose_segments(3, 1, 2, 10, 2, 1.5),
                         doctest::Contains("segments.keep_prob"), Error);
    CHECK_THROWS_WITH_AS(choose_segments(3, 1, 2, 10, 0, 0.5), doctest::Contains("segments.fresh"),
                         Error);
    CHECK_THROWS_AS(choose_segments(3, 1, 2, 0, 1, 0.5), Error);
    CHECK_THROWS_WITH_AS(parse_segment_aggregate("sum"),
                         doctest::Contains("\"score_sum\", \"embedding_mean\""), Error);
}
