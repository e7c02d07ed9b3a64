// BatchSampler: (seed, epoch) shuffles, epoch boundaries, and invariance of the union of rank-local
// batches to the number of ranks.
#include "sampling/batch_sampler.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <set>
#include <vector>

#include "gnn/core/check.h"

using namespace segrank;

namespace {
std::vector<int64_t> ids(int64_t n, int64_t stride = 1) {
    std::vector<int64_t> v;
    for (int64_t i = 0; i < n; ++i) v.push_back(3 + i * stride);
    return v;
}
}  // namespace

TEST_CASE("batch sampler is deterministic in the seed and independent of the id order given") {
    std::vector<int64_t> a = ids(50);
    std::vector<int64_t> b = a;
    std::reverse(b.begin(), b.end());
    const BatchSampler s1(a, 8, 42), s2(b, 8, 42), s3(a, 8, 43);
    bool differs = false;
    for (int64_t step = 0; step < 20; ++step) {
        CHECK(s1.global_batch(step) == s2.global_batch(step));
        differs |= s1.global_batch(step) != s3.global_batch(step);
    }
    CHECK(differs);
}

TEST_CASE("every epoch visits each training graph exactly once, in a new order") {
    const std::vector<int64_t> all = ids(10, 7);
    const BatchSampler s(all, 4, 1);
    REQUIRE(s.steps_per_epoch() == 3);
    for (int64_t epoch = 0; epoch < 4; ++epoch) {
        std::vector<int64_t> seen;
        const std::vector<size_t> sizes = {4, 4, 2};  // the last batch holds the leftovers
        for (int64_t i = 0; i < 3; ++i) {
            const int64_t step = epoch * 3 + i;
            CHECK(s.position(step).epoch == epoch);
            CHECK(s.position(step).step_in_epoch == i);
            const auto batch = s.global_batch(step);
            CHECK(batch.size() == sizes[i]);
            seen.insert(seen.end(), batch.begin(), batch.end());
        }
        CHECK(seen == s.epoch_order(epoch));
        std::sort(seen.begin(), seen.end());
        CHECK(seen == all);
    }
    CHECK(s.epoch_order(0) != s.epoch_order(1));
}

TEST_CASE("drop_last skips the leftovers and B is clamped to the number of graphs") {
    const BatchSampler dl(ids(10), 4, 1, /*drop_last=*/true);
    CHECK(dl.steps_per_epoch() == 2);
    CHECK(dl.global_batch(1).size() == 4);
    CHECK(dl.position(2).epoch == 1);
    const BatchSampler big(ids(3), 32, 1);
    CHECK(big.batch_graphs() == 3);
    CHECK(big.steps_per_epoch() == 1);
    CHECK(big.global_batch(5).size() == 3);
}

TEST_CASE("the union of rank-local batches is the global batch for 1, 2 and 3 ranks") {
    const BatchSampler s(ids(23, 5), 6, 9);
    for (int64_t step = 0; step < 12; ++step) {
        const std::vector<int64_t> global = s.global_batch(step);
        for (int world = 1; world <= 3; ++world) {
            std::vector<int64_t> merged;
            for (int rank = 0; rank < world; ++rank) {
                for (int64_t g : s.local_batch(step, rank, Ownership(world))) {
                    CHECK(g % world == rank);
                    merged.push_back(g);
                }
            }
            std::vector<int64_t> sorted_global = global;
            std::sort(merged.begin(), merged.end());
            std::sort(sorted_global.begin(), sorted_global.end());
            CHECK(merged == sorted_global);  // disjoint and complete
        }
        CHECK(s.local_batch(step, 0, Ownership(1)) == global);
    }
}

TEST_CASE("batch sampler rejects bad input") {
    CHECK_THROWS_AS(BatchSampler({}, 4, 1), Error);
    CHECK_THROWS_WITH_AS(BatchSampler({1, 2, 2}, 4, 1), doctest::Contains("id 2 appears twice"),
                         Error);
    CHECK_THROWS_AS(BatchSampler({-1, 2}, 4, 1), Error);
    CHECK_THROWS_AS(BatchSampler({1, 2}, 0, 1), Error);
    const BatchSampler s({1, 2}, 1, 1);
    CHECK_THROWS_AS(s.local_batch(0, 2, Ownership(2)), Error);
    CHECK_THROWS_AS(s.global_batch(-1), Error);
}
