// Segment units of a step's work and their step-cost model (docs/distributed.md#segment-units): the
// fresh and recomputed stale segments of each member, cut into config slices only where large
// against a rank's share, assigned by longest-processing-time, every config of every segment once.
#include "sampling/segment_units.h"

#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "gnn/core/check.h"
#include "sampling/batch_sampler.h"
#include "sampling/segment_sampler.h"
#include "sampling/step_balance.h"
#include "segments/partitioner.h"

using namespace segrank;

namespace {

// Configs of each work item covered by `units`: [items][k] counts.
std::vector<std::vector<int>> coverage(const std::vector<SegmentWork>& work,
                                       const std::vector<int64_t>& k,
                                       const std::vector<SegmentUnit>& units) {
    std::vector<std::vector<int>> cov;
    for (const SegmentWork& w : work) cov.emplace_back(static_cast<size_t>(k[w.member]), 0);
    for (const SegmentUnit& u : units)
        for (int64_t c = u.begin; c < u.end; ++c) ++cov[static_cast<size_t>(u.work)][c];
    return cov;
}

}  // namespace

TEST_CASE("a segment unit costs its nodes times the base rows plus its configs, fresh ones 3x") {
    CHECK(segment_unit_cost(100, false, 32) == std::llround(100 * (kSegmentBaseRows + 32)));
    CHECK(segment_unit_cost(100, true, 32) ==
          std::llround(100 * (kSegmentBaseRows + kFreshPassCost * 32)));
    CHECK(segment_unit_cost(100, true, 1) < segment_unit_cost(100, true, 32) / 15);
    CHECK(segment_unit_cost(0, true, 32) == 0);
}

TEST_CASE("segment units cover every config of every work item once and cut only large items") {
    // Member 0 (K 32): a large fresh segment and two kept ones; member 1 (K 5): a small fresh one.
    const std::vector<SegmentWork> work = {
        {0, 2, 1000, true}, {0, 0, 1000, false}, {0, 1, 900, false}, {1, 0, 50, true}};
    const std::vector<int64_t> k = {32, 5};
    for (int world : {1, 2, 3, 8, 64}) {
        INFO("world ", world);
        const std::vector<SegmentUnit> units = segment_units(work, k, world);
        for (const auto& row : coverage(work, k, units))
            for (int c : row) CHECK(c == 1);
        for (const SegmentUnit& u : units) CHECK((u.rank >= 0 && u.rank < world));
        if (world == 1) CHECK(units.size() == work.size());
    }
    // Two ranks: the fresh 1000-node segment (about 0.6 of the step) is cut into
    // ceil(kSegmentPiecesPerRank x 2 x its share) slices; the small fresh one stays whole.
    double total = 0;
    for (const SegmentWork& w : work) total += segment_unit_cost(w.nodes, w.fresh, k[w.member]);
    const auto cut = static_cast<int>(
        std::ceil(kSegmentPiecesPerRank * 2 * segment_unit_cost(1000, true, 32) / total));
    REQUIRE(cut >= 2);
    const std::vector<SegmentUnit> two = segment_units(work, k, 2);
    int fresh_slices = 0, small = 0;
    for (const SegmentUnit& u : two) {
        fresh_slices += u.work == 0;
        small += u.work == 3;
    }
    CHECK(fresh_slices == cut);
    CHECK(small == 1);
    CHECK_THROWS_AS(segment_units(work, k, 0), Error);
    CHECK_THROWS_AS(segment_units(work, std::vector<int64_t>{32}, 2), Error);
}

TEST_CASE("a member's segment work is its fresh and kept segments of the contiguous partition") {
    GstVisitShape shape;
    shape.max_nodes = 1000;
    shape.fresh = 1;
    shape.stale_forward = 0.5;
    std::vector<SegmentWork> work;
    append_member_segment_work(3, 17, 4500, shape, 0.5, 9, 42, work);
    const std::vector<int64_t> bounds = contiguous_bounds(4500, 1000);
    const SegmentChoice c = choose_segments(9, 42, 17, 5, 1, 0.5);
    REQUIRE(work.size() == c.fresh.size() + c.stale_kept.size());
    CHECK(work[0].segment == c.fresh[0]);
    CHECK(work[0].fresh);
    for (size_t i = 0; i < work.size(); ++i) {
        CHECK(work[i].member == 3);
        CHECK(work[i].nodes == bounds[work[i].segment + 1] - bounds[work[i].segment]);
    }
    // history_init = "zero" (nothing recomputed): the fresh segments only.
    shape.stale_forward = 0.0;
    std::vector<SegmentWork> zero;
    append_member_segment_work(3, 17, 4500, shape, 0.5, 9, 42, zero);
    CHECK(zero.size() == c.fresh.size());
    // One segment per graph (max_nodes 0): the whole graph is the fresh segment.
    shape.max_nodes = 0;
    std::vector<SegmentWork> one;
    append_member_segment_work(0, 17, 4500, shape, 0.5, 9, 42, one);
    REQUIRE(one.size() == 1);
    CHECK(one[0].nodes == 4500);
}

TEST_CASE("the segment model balances steps whole graphs cannot, and charges repeated work") {
    // 16 graphs of 400-40,000 nodes, batches of 8, K 32.
    std::vector<int64_t> nodes, positions, ids;
    for (int64_t g = 0; g < 16; ++g) {
        nodes.push_back(400 + (g * 7919 * 13) % 39600);
        positions.push_back(32);
        ids.push_back(g);
    }
    const BatchSampler batches(ids, 8, 5);
    GstVisitShape shape;  // 1000-node segments, 1 fresh, keep 0.5
    const StepBalance one =
        predict_segment_step_balance(batches, 1, nodes, positions, shape, 0.5, 0, 0, 20);
    CHECK(one.efficiency() == 1.0);
    CHECK(one.scaling_efficiency() == 1.0);
    for (int world : {2, 8}) {
        const StepBalance b =
            predict_segment_step_balance(batches, world, nodes, positions, shape, 0.5, 0, 0, 20);
        INFO("world ", world, ": step ", b.efficiency(), ", scaling ", b.scaling_efficiency());
        CHECK(b.efficiency() >= 0.85);
        CHECK(b.scaling_efficiency() <= b.efficiency() + 1e-12);  // ranks repeat member work
        CHECK(b.scaling_efficiency() >= 0.75);
    }
    CHECK_THROWS_AS(predict_segment_step_balance(batches, 0, nodes, positions, shape, 0.5, 0, 0, 2),
                    Error);
    CHECK_THROWS_AS(predict_segment_step_balance(batches, 2, std::vector<int64_t>{1000}, positions,
                                                 shape, 0.5, 0, 0, 2),
                    Error);
}
