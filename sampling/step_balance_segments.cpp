// Step-cost model of segment units (docs/distributed.md#segment-units).
#include <algorithm>
#include <climits>
#include <utility>
#include <vector>

#include "gnn/core/check.h"
#include "sampling/segment_units.h"
#include "sampling/step_balance.h"

namespace segrank {

StepBalance predict_segment_step_balance(const BatchSampler& batches, int world,
                                         std::span<const int64_t> nodes,
                                         std::span<const int64_t> positions,
                                         const GstVisitShape& shape, double keep_prob,
                                         uint64_t seed, int64_t begin, int64_t end) {
    SEGRANK_CHECK(begin >= 0 && end >= begin, "step balance: step range [", begin, ", ", end,
                  ") is empty or negative");
    SEGRANK_CHECK(world >= 1, "step balance: world size must be >= 1, got ", world);
    StepBalance b;
    std::vector<double> totals(static_cast<size_t>(world));
    for (int64_t step = begin; step < end; ++step) {
        const std::vector<int64_t> members = batches.global_batch(step);
        std::vector<int64_t> k;
        std::vector<SegmentWork> work;
        for (size_t i = 0; i < members.size(); ++i) {
            const int64_t g = members[i];
            SEGRANK_CHECK(g >= 0 && g < static_cast<int64_t>(nodes.size()) &&
                              g < static_cast<int64_t>(positions.size()),
                          "step balance: graph ", g, " has no size (", nodes.size(), " sizes, ",
                          positions.size(), " config positions)");
            k.push_back(positions[static_cast<size_t>(g)]);
            append_member_segment_work(static_cast<int64_t>(i), g, nodes[static_cast<size_t>(g)],
                                       shape, keep_prob, seed, step, work);
        }
        // A member's visit as one process runs it: every item at full K, its rows read once.
        std::vector<double> visit(members.size(), 0.0);
        for (const SegmentWork& w : work)
            visit[static_cast<size_t>(w.member)] += static_cast<double>(
                segment_unit_cost(w.nodes, w.fresh, k[static_cast<size_t>(w.member)]));
        double whole = 0.0;
        for (double v : visit) whole += v * (1.0 + kRowReadShare);
        std::fill(totals.begin(), totals.end(), 0.0);
        double all = 0.0;
        if (world == 1) {
            totals[0] = all = whole;
        } else {
            // The config range [first, last) of each member a rank holds pieces of: read once.
            std::vector<std::vector<std::pair<int64_t, int64_t>>> range(
                members.size(), std::vector<std::pair<int64_t, int64_t>>(static_cast<size_t>(world),
                                                                         {INT64_MAX, INT64_MIN}));
            for (const SegmentUnit& u : segment_units(work, k, world)) {
                const SegmentWork& w = work[static_cast<size_t>(u.work)];
                const auto i = static_cast<size_t>(w.member);
                auto& r = range[i][static_cast<size_t>(u.rank)];
                r = {std::min(r.first, u.begin), std::max(r.second, u.end)};
                const double c =
                    static_cast<double>(segment_unit_cost(w.nodes, w.fresh, u.end - u.begin));
                totals[static_cast<size_t>(u.rank)] += c;
                all += c;
            }
            for (size_t i = 0; i < members.size(); ++i)
                for (size_t r = 0; r < totals.size(); ++r) {
                    const auto [first, last] = range[i][r];
                    if (first >= last || k[i] <= 0) continue;
                    const double c = kRowReadShare * visit[i] * static_cast<double>(last - first) /
                                     static_cast<double>(k[i]);
                    totals[r] += c;
                    all += c;
                }
        }
        b.whole_work += whole / world;
        b.mean_work += all / world;
        b.max_work += *std::max_element(totals.begin(), totals.end());
        ++b.steps;
    }
    return b;
}

}  // namespace segrank
