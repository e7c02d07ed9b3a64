// ConfigSampler: determinism, without replacement, the fast_biased distribution (exact Gumbel-max
// probabilities), stratified composition, the fixed pool; dedupe of duplicate config rows.
#include "sampling/config_sampler.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <vector>

#include "gnn/core/check.h"

using namespace segrank;

namespace {

// n candidates with file indices 100 + 2i and targets that make rank = (i * 7) % n (n prime to 7).
ConfigSet candidates(int64_t n) {
    ConfigSet c;
    for (int64_t i = 0; i < n; ++i) {
        c.indices.push_back(100 + 2 * i);
        c.targets.push_back(1000.0 + static_cast<double>((i * 7) % n));
    }
    return c;
}

ConfigSamplerOptions opts(int64_t k, ConfigStrategy s, int64_t pool = 0) {
    ConfigSamplerOptions o;
    o.configs = k;
    o.strategy = s;
    o.pool = pool;
    o.seed = 1234;
    return o;
}

// Rank of a target among candidates(n): target - 1000.
int64_t rank_of(double target) { return static_cast<int64_t>(target - 1000.0); }

}  // namespace

TEST_CASE(
    "config sampling is deterministic per (seed, step, graph) and draws without replacement") {
    for (auto strategy :
         {ConfigStrategy::kUniform, ConfigStrategy::kFastBiased, ConfigStrategy::kStratified}) {
        const ConfigSet cand = candidates(50);
        ConfigSet reversed = cand;
        std::reverse(reversed.indices.begin(), reversed.indices.end());
        std::reverse(reversed.targets.begin(), reversed.targets.end());
        const ConfigSampler a(opts(16, strategy), 7, cand);
        const ConfigSampler b(opts(16, strategy), 7, reversed);
        const ConfigSampler other_graph(opts(16, strategy), 8, cand);
        for (int64_t step = 0; step < 10; ++step) {
            const ConfigSet s = a.sample(step);
            CHECK(s.indices == b.sample(step).indices);
            CHECK(s.indices == a.sample(step).indices);
            CHECK(s.indices != a.sample(step + 1).indices);
            CHECK(s.indices != other_graph.sample(step).indices);
            REQUIRE(s.size() == 16);
            CHECK(std::set<int64_t>(s.indices.begin(), s.indices.end()).size() == 16);
            for (int64_t j = 0; j < s.size(); ++j) {
                const int64_t i = (s.indices[j] - 100) / 2;  // candidate position
                CHECK(s.targets[j] == cand.targets[i]);
            }
        }
        // K larger than the candidates: every candidate exactly once.
        const ConfigSet all = ConfigSampler(opts(80, strategy), 7, cand).sample(3);
        CHECK(std::set<int64_t>(all.indices.begin(), all.indices.end()).size() == 50);
    }
}

TEST_CASE("fast_biased with K=1 draws rank r with probability proportional to exp((n - r) / n)") {
    const int64_t n = 4;
    const ConfigSampler s(opts(1, ConfigStrategy::kFastBiased), 3, candidates(n));
    std::vector<double> freq(n, 0.0);
    const int trials = 40000;
    for (int step = 0; step < trials; ++step)
        freq[rank_of(s.sample(step).targets[0])] += 1.0 / trials;
    double z = 0;
    for (int64_t r = 0; r < n; ++r) z += std::exp(static_cast<double>(n - r) / n);
    for (int64_t r = 0; r < n; ++r) {
        const double p = std::exp(static_cast<double>(n - r) / n) / z;
        CHECK(freq[r] == doctest::Approx(p).epsilon(0.05));  // ~4 standard errors
    }
}

TEST_CASE("fast_biased prefers fast configs, uniform does not") {
    const int64_t n = 100;
    for (auto strategy : {ConfigStrategy::kUniform, ConfigStrategy::kFastBiased}) {
        const ConfigSampler s(opts(10, strategy), 5, candidates(n));
        double fast = 0, slow = 0;
        for (int step = 0; step < 3000; ++step) {
            for (double t : s.sample(step).targets) {
                fast += rank_of(t) < 10;
                slow += rank_of(t) >= 90;
            }
        }
        if (strategy == ConfigStrategy::kFastBiased) {
            CHECK(fast / slow > 1.8);  // weights e^(0.9..1) vs e^(0..0.1): about 2.3x
        } else {
            CHECK(fast / slow == doctest::Approx(1.0).epsilon(0.1));
        }
    }
}

TEST_CASE("stratified draws floor(K/3) from the best and worst thirds and the rest uniformly") {
    const int64_t n = 30;  // thirds: ranks [0, 10), [10, 20), [20, 30)
    const ConfigSampler s(opts(10, ConfigStrategy::kStratified), 2, candidates(n));
    std::vector<int> hits(n, 0);
    for (int step = 0; step < 500; ++step) {
        const ConfigSet c = s.sample(step);
        REQUIRE(c.size() == 10);
        int best = 0, worst = 0;
        for (int64_t j = 0; j < c.size(); ++j) {
            const int64_t r = rank_of(c.targets[j]);
            ++hits[r];
            best += r < 10;
            worst += r >= 20;
            if (j < 3) CHECK(r < 10);             // draw order: best third first,
            if (j >= 3 && j < 6) CHECK(r >= 20);  // then the worst third, then the rest
        }
        CHECK(best >= 3);
        CHECK(worst >= 3);
    }
    for (int r = 0; r < n; ++r) CHECK(hits[r] > 0);
}

TEST_CASE("a config pool is drawn once per graph and bounds every step's sample") {
    const ConfigSet cand = candidates(60);
    const ConfigSampler a(opts(5, ConfigStrategy::kUniform, /*pool=*/12), 4, cand);
    const ConfigSampler again(opts(5, ConfigStrategy::kFastBiased, 12), 4, cand);
    const ConfigSampler other(opts(5, ConfigStrategy::kUniform, 12), 9, cand);
    REQUIRE(a.pool().size() == 12);
    CHECK(a.pool().indices == again.pool().indices);  // step- and strategy-independent
    CHECK(a.pool().indices != other.pool().indices);
    CHECK(std::is_sorted(a.pool().targets.begin(), a.pool().targets.end()));
    const std::set<int64_t> pool(a.pool().indices.begin(), a.pool().indices.end());
    std::set<int64_t> seen;
    for (int step = 0; step < 200; ++step)
        for (int64_t i : a.sample(step).indices) {
            CHECK(pool.count(i) == 1);
            seen.insert(i);
        }
    CHECK(seen == pool);
    CHECK(ConfigSampler(opts(5, ConfigStrategy::kUniform, 100), 4, cand).pool().size() == 60);
}

TEST_CASE("config sampler rejects bad input and names the graph") {
    CHECK_THROWS_WITH_AS(ConfigSampler(opts(4, ConfigStrategy::kUniform), 17, ConfigSet{}),
                         doctest::Contains("graph 17: no configs"), Error);
    CHECK_THROWS_AS(ConfigSampler(opts(0, ConfigStrategy::kUniform), 1, candidates(3)), Error);
    CHECK_THROWS_AS(ConfigSampler(opts(2, ConfigStrategy::kUniform, -1), 1, candidates(3)), Error);
    ConfigSet dup = candidates(3);
    dup.indices[2] = dup.indices[0];
    CHECK_THROWS_WITH_AS(ConfigSampler(opts(2, ConfigStrategy::kUniform), 1, dup),
                         doctest::Contains("appears twice"), Error);
    CHECK_THROWS_WITH_AS(parse_config_strategy("biased"),
                         "unknown sampling strategy \"biased\" (valid: \"uniform\", "
                         "\"fast_biased\", \"stratified\")",
                         Error);
    CHECK(parse_config_strategy("stratified") == ConfigStrategy::kStratified);
}

TEST_CASE("dedupe groups identical byte rows: first row represents, min / mean / keep targets") {
    // rows A B A C B A (3 bytes each); runtimes 10 20 5 7 30 9.
    const std::vector<int8_t> rows = {1, 2, 3, 0, 0, 1, 1, 2, 3, -1, 5, 5, 0, 0, 1, 1, 2, 3};
    const std::vector<double> rt = {10, 20, 5, 7, 30, 9};
    const ConfigSet mn = dedupe_configs(rows, 3, rt, DedupeMode::kMin);
    CHECK(mn.indices == std::vector<int64_t>{0, 1, 3});
    CHECK(mn.targets == std::vector<double>{5, 20, 7});
    const ConfigSet me = dedupe_configs(rows, 3, rt, DedupeMode::kMean);
    CHECK(me.indices == std::vector<int64_t>{0, 1, 3});
    CHECK(me.targets == std::vector<double>{8, 25, 7});
    const ConfigSet kp = dedupe_configs(rows, 3, rt, DedupeMode::kKeep);
    CHECK(kp.indices == std::vector<int64_t>{0, 1, 2, 3, 4, 5});
    CHECK(kp.targets == rt);
    const std::vector<int64_t> rt_ns = {10, 20, 5, 7, 30, 9};
    CHECK(dedupe_configs(rows, 3, rt_ns, DedupeMode::kMin).targets == mn.targets);
    // No configurable nodes: every row is the empty row.
    const ConfigSet none = dedupe_configs(std::span<const int8_t>(), 0, rt, DedupeMode::kMin);
    CHECK(none.indices == std::vector<int64_t>{0});
    CHECK(none.targets == std::vector<double>{5});
    CHECK_THROWS_AS(dedupe_configs(rows, 4, rt, DedupeMode::kMin), Error);
    CHECK_THROWS_WITH_AS(parse_dedupe_mode("max"), doctest::Contains("\"min\", \"mean\", \"keep\""),
                         Error);
}

TEST_CASE("dedupe of float rows compares values, so -0 equals +0, and refuses NaN") {
    Tensor rows(3, 2);
    rows.at(0, 0) = 0.0f;
    rows.at(0, 1) = 1.5f;
    rows.at(1, 0) = -0.0f;
    rows.at(1, 1) = 1.5f;
    rows.at(2, 0) = 2.0f;
    rows.at(2, 1) = 1.5f;
    const std::vector<double> rt = {3.0, 1.0, 2.0};
    const ConfigSet d = dedupe_configs(rows.view(), rt, DedupeMode::kMin);
    CHECK(d.indices == std::vector<int64_t>{0, 2});
    CHECK(d.targets == std::vector<double>{1.0, 2.0});
    rows.at(2, 1) = std::nanf("");
    CHECK_THROWS_WITH_AS(dedupe_configs(rows.view(), rt, DedupeMode::kMin),
                         doctest::Contains("row 2 column 1"), Error);
}
