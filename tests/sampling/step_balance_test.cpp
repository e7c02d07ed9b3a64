// Per-step ownership and the step-cost model (docs/sampling.md#ownership,
// docs/architecture.md#distribution): per_step splits every global batch by longest-processing-time
// over its members' costs, each member trained by exactly one rank; predict_step_balance sums the
// per-step mean and max rank work.
#include "sampling/step_balance.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "gnn/core/check.h"
#include "sampling/batch_sampler.h"
#include "sampling/ownership.h"

using namespace segrank;

namespace {

std::vector<int64_t> ids(int64_t n) {
    std::vector<int64_t> v(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = i;
    return v;
}

}  // namespace

TEST_CASE("per_step ownership splits each step's members by LPT with ties by batch position") {
    const std::vector<int64_t> costs = {10, 1, 7, 7, 3};
    const Ownership o(OwnershipMode::kPerStep, costs, 2);
    // Batch (4, 0, 2, 3): costs 3, 10, 7, 7 -> 0 (10) to rank 0, 2 (7) to rank 1, 3 (7) to rank 1
    // (7 < 10), 4 (3) to rank 0 (10 < 14).
    CHECK(o.step_ranks(std::vector<int64_t>{4, 0, 2, 3}) == std::vector<int32_t>{0, 0, 1, 1});
    // Equal costs: the earlier batch position gets the lower rank.
    CHECK(o.step_ranks(std::vector<int64_t>{3, 2}) == std::vector<int32_t>{0, 1});
    CHECK(o.step_ranks(std::vector<int64_t>{2, 3}) == std::vector<int32_t>{0, 1});
    // The home rank (checkpoint shards) is graph id % world.
    for (int64_t g = 0; g < 5; ++g) CHECK(o.owner(g) == static_cast<int>(g % 2));
    CHECK(to_string(OwnershipMode::kPerStep) == "per_step");
    CHECK(parse_ownership_mode("per_step") == OwnershipMode::kPerStep);
}

TEST_CASE("static modes give every step member its owner") {
    const std::vector<int64_t> costs = {10, 1, 7, 7, 3};
    for (OwnershipMode m : {OwnershipMode::kModulo, OwnershipMode::kBalanced}) {
        const Ownership o(m, costs, 3);
        const std::vector<int64_t> batch = {4, 1, 0, 3};
        const auto r = o.step_ranks(batch);
        REQUIRE(r.size() == batch.size());
        for (size_t i = 0; i < batch.size(); ++i) CHECK(r[i] == o.owner(batch[i]));
    }
}

TEST_CASE("per_step local batches cover every member once, in batch order, at any world size") {
    std::vector<int64_t> costs;
    for (int64_t g = 0; g < 37; ++g) costs.push_back(1 + (g * 7919) % 1000);
    const BatchSampler b(ids(37), 8, 3);
    for (int world : {1, 2, 3, 8, 16}) {
        const Ownership o(OwnershipMode::kPerStep, costs, world);
        for (int64_t step = 0; step < 12; ++step) {
            const auto global = b.global_batch(step);
            std::vector<int64_t> seen;
            for (int r = 0; r < world; ++r) {
                const auto mine = b.local_batch(step, r, o);
                // Global-batch order within the rank.
                std::vector<size_t> pos;
                for (int64_t g : mine)
                    pos.push_back(static_cast<size_t>(std::find(global.begin(), global.end(), g) -
                                                      global.begin()));
                CHECK(std::is_sorted(pos.begin(), pos.end()));
                seen.insert(seen.end(), mine.begin(), mine.end());
            }
            std::sort(seen.begin(), seen.end());
            auto sorted = global;
            std::sort(sorted.begin(), sorted.end());
            CHECK(seen == sorted);
        }
    }
}

TEST_CASE("per_step ownership rejects graphs without a cost and negative costs") {
    const Ownership o(OwnershipMode::kPerStep, std::vector<int64_t>{1, 2}, 2);
    CHECK_THROWS_AS(o.step_ranks(std::vector<int64_t>{0, 2}), Error);
    CHECK_THROWS_AS(o.step_ranks(std::vector<int64_t>{-1}), Error);
    CHECK_THROWS_AS(Ownership(OwnershipMode::kPerStep, std::vector<int64_t>{1, -2}, 2), Error);
}

TEST_CASE("step balance sums each step's mean and largest rank work") {
    // 4 graphs, batches of 2 without shuffling effects: check against a hand sum over the schedule.
    const std::vector<int64_t> costs = {8, 2, 5, 5};
    const BatchSampler b(ids(4), 2, 11);
    const Ownership modulo(OwnershipMode::kModulo, costs, 2);
    const Ownership per_step(OwnershipMode::kPerStep, costs, 2);
    double mean = 0.0, max_m = 0.0, max_p = 0.0;
    for (int64_t step = 0; step < 6; ++step) {
        const auto g = b.global_batch(step);
        REQUIRE(g.size() == 2);
        const int64_t c0 = costs[static_cast<size_t>(g[0])], c1 = costs[static_cast<size_t>(g[1])];
        mean += static_cast<double>(c0 + c1) / 2.0;
        max_p += static_cast<double>(std::max(c0, c1));  // one graph each
        max_m += g[0] % 2 == g[1] % 2 ? static_cast<double>(c0 + c1)
                                      : static_cast<double>(std::max(c0, c1));
    }
    const StepBalance m = predict_step_balance(b, modulo, costs, 0, 6);
    const StepBalance p = predict_step_balance(b, per_step, costs, 0, 6);
    CHECK(m.steps == 6);
    CHECK(m.mean_work == doctest::Approx(mean));
    CHECK(m.max_work == doctest::Approx(max_m));
    CHECK(p.max_work == doctest::Approx(max_p));
    CHECK(p.efficiency() >= m.efficiency());
    // One rank: nobody waits.
    CHECK(predict_step_balance(b, Ownership(OwnershipMode::kPerStep, costs, 1), costs, 0, 6)
              .efficiency() == doctest::Approx(1.0));
    // More ranks than members: idle ranks count (2 members over 8 ranks: at most 2/8).
    CHECK(predict_step_balance(b, Ownership(OwnershipMode::kPerStep, costs, 8), costs, 0, 6)
              .efficiency() <= 0.25 + 1e-12);
    CHECK(predict_step_balance(b, modulo, costs, 3, 3).efficiency() == 1.0);
    CHECK_THROWS_AS(predict_step_balance(b, modulo, costs, 4, 3), Error);
    CHECK_THROWS_AS(predict_step_balance(b, modulo, std::vector<int64_t>{1}, 0, 2), Error);
}

TEST_CASE("per_step balances skewed graph sizes better than a static owner per graph") {
    // Log-uniform-like sizes over 100x: per_step's per-step efficiency beats modulo and balanced.
    std::vector<int64_t> costs;
    for (int64_t g = 0; g < 64; ++g)
        costs.push_back(static_cast<int64_t>(100 * (1 + (g * 37) % 97)));
    const BatchSampler b(ids(64), 8, 5);
    for (int world : {2, 4}) {
        const double per_step =
            predict_step_balance(b, Ownership(OwnershipMode::kPerStep, costs, world), costs, 0, 80)
                .efficiency();
        for (OwnershipMode m : {OwnershipMode::kModulo, OwnershipMode::kBalanced})
            CHECK(per_step >
                  predict_step_balance(b, Ownership(m, costs, world), costs, 0, 80).efficiency());
    }
}

TEST_CASE("a GST step member costs K' x (3 fresh nodes + the kept share of the others)") {
    GraphEntry small, large;
    small.info.num_nodes = 400;
    small.info.num_configs = 1000;
    large.info.num_nodes = 8000;
    large.info.num_configs = 1000;
    const GstVisitShape shape;  // 1000-node segments, 1 fresh, half of the rest recomputed
    // A graph of one segment is all fresh: forward and backward over every node.
    CHECK(step_member_cost(small, 32, shape) == 32 * 3 * 400);
    // 1000 fresh nodes, half of the other 7000 forward only.
    CHECK(step_member_cost(large, 32, shape) == 32 * (3 * 1000 + 3500));
    // The size ratio shrinks from 20x (nodes x K) to 5.4x: small graphs pay their backward pass.
    CHECK(train_member_cost(large, 32) == 20 * train_member_cost(small, 32));
    // K' = min(K, usable configs): held-out configs count.
    small.configs = {0, 1, 2};
    CHECK(step_member_cost(small, 32, shape) == 3 * 3 * 400);
    // One segment per graph (max_nodes 0), or history_init = "zero" (nothing recomputed).
    CHECK(step_member_cost(large, 32, GstVisitShape{0, 1, 0.5}) == 32 * 3 * 8000);
    CHECK(step_member_cost(large, 32, GstVisitShape{1000, 2, 0.0}) == 32 * 3 * 2000);
    CHECK_THROWS_AS(step_member_cost(large, 32, GstVisitShape{1000, 1, 1.5}), Error);
    CHECK_THROWS_AS(step_member_cost(large, 32, GstVisitShape{-1, 1, 0.5}), Error);
}

TEST_CASE(
    "training_ownership builds per_step from the step costs and the static modes from the "
    "visit costs") {
    const std::vector<int64_t> visit = {10, 1, 1, 1};
    const std::vector<int64_t> step = {1, 10, 1, 1};
    const Ownership b = training_ownership(OwnershipMode::kBalanced, visit, step, 2);
    CHECK(b.owner(0) == 0);  // the largest visit cost first
    const Ownership p = training_ownership(OwnershipMode::kPerStep, visit, step, 2);
    CHECK(p.step_ranks(std::vector<int64_t>{0, 1}) == std::vector<int32_t>{1, 0});
}

TEST_CASE(
    "config slices cover every member's positions once, cut the costly members finer and "
    "stay whole on one rank") {
    const std::vector<int64_t> costs = {800, 100, 100, 0};
    const std::vector<int64_t> k = {32, 32, 8, 32};
    // One rank: each member whole.
    const auto one = config_slice_units(costs, k, 1);
    REQUIRE(one.size() == 4);
    for (size_t i = 0; i < one.size(); ++i) {
        CHECK(one[i].member == static_cast<int64_t>(i));
        CHECK(one[i].begin == 0);
        CHECK(one[i].end == k[i]);
        CHECK(one[i].rank == 0);
    }
    // Four ranks: member 0 (800 of 1000) into ceil(4 x 4 x 0.8) = 13 slices, members 1 and 2 into
    // 2, the free member 3 stays whole; consecutive positions, larger slices first.
    const auto four = config_slice_units(costs, k, 4);
    std::vector<int64_t> slices(4, 0), covered(4, 0), load(4, 0);
    for (size_t u = 0; u < four.size(); ++u) {
        const StepUnit& x = four[u];
        if (u > 0 && four[u - 1].member == x.member) CHECK(four[u - 1].end == x.begin);
        CHECK(x.end > x.begin);
        ++slices[static_cast<size_t>(x.member)];
        covered[static_cast<size_t>(x.member)] += x.end - x.begin;
        load[static_cast<size_t>(x.rank)] += costs[static_cast<size_t>(x.member)] *
                                             (x.end - x.begin) / k[static_cast<size_t>(x.member)];
    }
    CHECK(slices == std::vector<int64_t>{13, 2, 2, 1});
    CHECK(covered == k);
    CHECK(four.front().end - four.front().begin == 3);  // 32 = 6 x 3 + 7 x 2
    // The busiest rank within a slice of the even share (250).
    CHECK(*std::max_element(load.begin(), load.end()) <= 250 + 800 * 3 / 32);
    // A member cannot be cut finer than its positions.
    const auto tiny = config_slice_units(std::vector<int64_t>{1000}, std::vector<int64_t>{3}, 64);
    CHECK(tiny.size() == 3);
    CHECK_THROWS_AS(config_slice_units(costs, std::vector<int64_t>{1, 2}, 2), Error);
    CHECK_THROWS_AS(config_slice_units(std::vector<int64_t>{-1}, std::vector<int64_t>{1}, 2),
                    Error);
    CHECK_THROWS_AS(config_slice_units(costs, k, 0), Error);
}

TEST_CASE(
    "the sliced step model balances batches smaller than the world that whole graphs cannot") {
    std::vector<int64_t> ids, costs;
    for (int64_t g = 0; g < 16; ++g) {
        ids.push_back(g);
        costs.push_back(100 * (1 + g % 5) * (1 + g % 3));  // 100 .. 1500
    }
    const std::vector<int64_t> positions(16, 32);
    const BatchSampler batches(ids, 8, 3);
    for (int world : {2, 8, 64}) {
        const Ownership owners = training_ownership(OwnershipMode::kPerStep, costs, costs, world);
        const double whole = predict_step_balance(batches, owners, costs, 0, 20).efficiency();
        const double sliced =
            predict_sliced_step_balance(batches, owners, costs, positions, 0, 20).efficiency();
        INFO("world ", world, ": whole graphs ", whole, ", slices ", sliced);
        const double scaling = predict_sliced_step_balance(batches, owners, costs, positions, 0, 20)
                                   .scaling_efficiency();
        CHECK(sliced >= whole - 0.01);  // at np 2 whole graphs may already fit as well
        CHECK(sliced >= 0.8);
        // The work slices repeat counts against the scaling efficiency, never for it; where
        // whole graphs leave ranks idle, slices still scale better.
        CHECK(scaling <= sliced + 1e-12);
        if (world >= 8) CHECK(scaling > whole);
        if (world >= 8) CHECK(whole <= 8.0 / world + 1e-9);  // 8 graphs cannot busy more ranks
    }
    const Ownership one = training_ownership(OwnershipMode::kPerStep, costs, costs, 1);
    CHECK(predict_sliced_step_balance(batches, one, costs, positions, 0, 20).efficiency() == 1.0);
    const Ownership modulo = training_ownership(OwnershipMode::kModulo, costs, costs, 2);
    CHECK_THROWS_AS(predict_sliced_step_balance(batches, modulo, costs, positions, 0, 20), Error);
}
