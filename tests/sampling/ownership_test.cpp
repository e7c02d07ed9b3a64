// Graph ownership (docs/sampling.md#ownership): modulo is graph id % world bit for bit; balanced is
// a deterministic longest-processing-time assignment that owns every graph once, breaks ties by
// graph id and rank, and meets LPT's balance bounds against the brute-force optimum.
#include "sampling/ownership.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <numeric>
#include <vector>

#include "gnn/core/check.h"
#include "gnn/core/rng.h"

using namespace segrank;

namespace {

int64_t max_total(const std::vector<int64_t>& totals) {
    return *std::max_element(totals.begin(), totals.end());
}

// The smallest possible largest rank total over all world^n assignments (small n only).
int64_t optimum(const std::vector<int64_t>& costs, int world) {
    const size_t n = costs.size();
    int64_t best = std::numeric_limits<int64_t>::max();
    std::vector<int> a(n, 0);
    while (true) {
        std::vector<int64_t> t(static_cast<size_t>(world), 0);
        for (size_t g = 0; g < n; ++g) t[static_cast<size_t>(a[g])] += costs[g];
        best = std::min(best, max_total(t));
        size_t i = 0;
        while (i < n && ++a[i] == world) a[i++] = 0;
        if (i == n) break;
    }
    return best;
}

}  // namespace

TEST_CASE("modulo ownership is graph id % world whatever the costs") {
    const std::vector<int64_t> costs = {900, 1, 5, 5, 70, 3, 3};
    for (int world = 1; world <= 4; ++world) {
        const Ownership m(OwnershipMode::kModulo, costs, world);
        const Ownership plain(world);
        for (int64_t g = 0; g < 40; ++g) {  // ids beyond the costs too
            CHECK(m.owner(g) == static_cast<int>(g % world));
            CHECK(plain.owner(g) == m.owner(g));
        }
    }
    CHECK(owner_rank(7, 3) == 1);
}

TEST_CASE("balanced ownership is longest-processing-time with ties by graph id, then rank") {
    // Descending cost: graph 1 (3) -> rank 0, graph 2 (3) -> rank 1, graph 3 (2) -> rank 0 (equal
    // totals: lowest rank), graph 0 (1) -> rank 1.
    CHECK(lpt_assignment(std::vector<int64_t>{1, 3, 3, 2}, 2) == std::vector<int32_t>{1, 0, 1, 0});
    // Equal costs alternate in id order.
    CHECK(lpt_assignment(std::vector<int64_t>{5, 5, 5, 5, 5}, 2) ==
          std::vector<int32_t>{0, 1, 0, 1, 0});
    // The classic LPT example: 7 against the optimum 6 (3 + 3 | 2 + 2 + 2), the 4/3 - 1/6 bound.
    const std::vector<int64_t> classic = {3, 3, 2, 2, 2};
    CHECK(lpt_assignment(classic, 2) == std::vector<int32_t>{0, 1, 0, 1, 0});
    CHECK(max_total(Ownership(OwnershipMode::kBalanced, classic, 2).rank_totals(classic)) == 7);
    CHECK(optimum(classic, 2) == 6);
    // More ranks than graphs: each graph alone, the rest own nothing.
    CHECK(lpt_assignment(std::vector<int64_t>{4, 9}, 4) == std::vector<int32_t>{1, 0});
    CHECK(lpt_assignment(std::vector<int64_t>{}, 3).empty());
}

TEST_CASE("balanced ownership owns every graph once, is deterministic and meets the LPT bounds") {
    Rng rng = Rng::derive(17, 0, 0, "ownership_test");
    for (int trial = 0; trial < 120; ++trial) {
        const int world = 2 + trial % 3;
        const size_t n = world == 4 ? 7 : 9;
        std::vector<int64_t> costs(n);
        for (auto& c : costs) {
            // Log-uniform-ish sizes with frequent ties.
            const int64_t nodes = int64_t{1} << rng.uniform_int(8);
            c = nodes * static_cast<int64_t>(1 + rng.uniform_int(3));
        }
        const Ownership own(OwnershipMode::kBalanced, costs, world);
        const Ownership again(OwnershipMode::kBalanced, costs, world);
        std::vector<int64_t> counted(static_cast<size_t>(world), 0);
        for (size_t g = 0; g < n; ++g) {
            const int r = own.owner(static_cast<int64_t>(g));
            REQUIRE(r >= 0);
            REQUIRE(r < world);
            CHECK(again.owner(static_cast<int64_t>(g)) == r);
            counted[static_cast<size_t>(r)] += costs[g];
        }
        const std::vector<int64_t> totals = own.rank_totals(costs);
        CHECK(totals == counted);
        const int64_t total = std::accumulate(costs.begin(), costs.end(), int64_t{0});
        CHECK(std::accumulate(totals.begin(), totals.end(), int64_t{0}) == total);
        const double lpt = static_cast<double>(max_total(totals));
        const double opt = static_cast<double>(optimum(costs, world));
        const double m = world;
        CHECK(lpt <= (4.0 / 3.0 - 1.0 / (3.0 * m)) * opt + 1e-9);
        const double biggest = static_cast<double>(*std::max_element(costs.begin(), costs.end()));
        CHECK(lpt <= static_cast<double>(total) / m + (1.0 - 1.0 / m) * biggest + 1e-9);
    }
}

TEST_CASE("balanced ownership splits skewed sizes evenly where modulo does not") {
    // Large graphs at even ids: modulo puts all of them on rank 0.
    std::vector<int64_t> costs;
    for (int g = 0; g < 12; ++g) costs.push_back(g % 2 == 0 ? 40000 : 400);
    const auto modulo = Ownership(2).rank_totals(costs);
    const auto balanced = Ownership(OwnershipMode::kBalanced, costs, 2).rank_totals(costs);
    CHECK(modulo == std::vector<int64_t>{240000, 2400});
    CHECK(balanced == std::vector<int64_t>{121200, 121200});
}

TEST_CASE("ownership rejects bad world sizes, negative costs and unknown graphs") {
    CHECK_THROWS_WITH_AS(Ownership(0), doctest::Contains("world size must be >= 1"), Error);
    CHECK_THROWS_WITH_AS(lpt_assignment(std::vector<int64_t>{1, -2}, 2),
                         doctest::Contains("cost of graph 1 is negative"), Error);
    const Ownership b(OwnershipMode::kBalanced, std::vector<int64_t>{1, 2, 3}, 2);
    CHECK_THROWS_WITH_AS(b.owner(3), doctest::Contains("graph id 3 outside the 3 graphs"), Error);
    CHECK_THROWS_AS(b.owner(-1), Error);
    CHECK_THROWS_AS(Ownership(2).owner(-1), Error);
    CHECK(parse_ownership_mode("balanced") == OwnershipMode::kBalanced);
    CHECK(to_string(OwnershipMode::kModulo) == "modulo");
    CHECK_THROWS_WITH_AS(parse_ownership_mode("lpt"), doctest::Contains("\"modulo\", \"balanced\""),
                         Error);
}

TEST_CASE("a training member costs nodes x min(K, usable configs)") {
    GraphEntry e;
    e.info.num_nodes = 1000;
    e.info.num_configs = 50;
    CHECK(train_member_cost(e, 32) == 32000);
    CHECK(train_member_cost(e, 64) == 50000);  // K clamped to the configs
    e.configs = {1, 4, 9};                     // held-out configs: only these are usable
    CHECK(train_member_cost(e, 32) == 3000);
    std::vector<GraphEntry> entries(3);
    for (int i = 0; i < 3; ++i) {
        entries[static_cast<size_t>(i)].id = 2 - i;  // any order, ids 0..2
        entries[static_cast<size_t>(i)].info.num_nodes = 10 * (i + 1);
        entries[static_cast<size_t>(i)].info.num_configs = 100;
    }
    CHECK(train_member_costs(entries, 4) == std::vector<int64_t>{120, 80, 40});
    entries[0].id = 1;  // id 1 twice
    CHECK_THROWS_WITH_AS(train_member_costs(entries, 4), doctest::Contains("has id 1"), Error);
}
