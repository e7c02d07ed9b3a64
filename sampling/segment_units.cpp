// Segment units of a step's work (docs/distributed.md#segment-units).
#include "sampling/segment_units.h"

#include <algorithm>
#include <cmath>

#include "gnn/core/check.h"
#include "sampling/segment_sampler.h"
#include "segments/partitioner.h"

namespace segrank {

int64_t segment_unit_cost(int64_t nodes, bool fresh, int64_t len) {
    const double per_config = fresh ? kFreshPassCost : 1.0;
    return std::llround(
        static_cast<double>(std::max<int64_t>(0, nodes)) *
        (kSegmentBaseRows + per_config * static_cast<double>(std::max<int64_t>(0, len))));
}

std::vector<SegmentUnit> segment_units(std::span<const SegmentWork> work,
                                       std::span<const int64_t> k, int world) {
    SEGRANK_CHECK(world >= 1, "segment units: world size must be >= 1, got ", world);
    std::vector<int64_t> whole(work.size());
    long double total = 0;
    for (size_t i = 0; i < work.size(); ++i) {
        const SegmentWork& w = work[i];
        SEGRANK_CHECK(w.member >= 0 && w.member < static_cast<int64_t>(k.size()),
                      "segment units: work item ", i, " names member ", w.member, " of ", k.size());
        const int64_t kk = k[static_cast<size_t>(w.member)];
        SEGRANK_CHECK(w.nodes >= 0 && kk >= 0, "segment units: work item ", i, " has ", w.nodes,
                      " nodes and ", kk, " configs, expected both >= 0");
        whole[i] = segment_unit_cost(w.nodes, w.fresh, kk);
        total += static_cast<long double>(whole[i]);
    }
    std::vector<SegmentUnit> units;
    std::vector<int64_t> unit_costs;
    for (size_t i = 0; i < work.size(); ++i) {
        const int64_t kk = k[static_cast<size_t>(work[i].member)];
        int64_t n = 1;
        if (world > 1 && total > 0) {
            const long double share = static_cast<long double>(kSegmentPiecesPerRank) * world *
                                      static_cast<long double>(whole[i]) / total;
            n = std::clamp<int64_t>(static_cast<int64_t>(std::ceil(share)), 1,
                                    std::max<int64_t>(1, kk));
        }
        const int64_t base = kk / n, extra = kk % n;
        int64_t begin = 0;
        for (int64_t j = 0; j < n; ++j) {
            const int64_t len = base + (j < extra ? 1 : 0);
            units.push_back({static_cast<int64_t>(i), begin, begin + len, 0});
            unit_costs.push_back(segment_unit_cost(work[i].nodes, work[i].fresh, len));
            begin += len;
        }
    }
    const std::vector<int32_t> ranks = lpt_assignment(unit_costs, world);
    for (size_t u = 0; u < units.size(); ++u) units[u].rank = ranks[u];
    return units;
}

void append_member_segment_work(int64_t member, int64_t graph_id, int64_t nodes,
                                const GstVisitShape& shape, double keep_prob, uint64_t seed,
                                int64_t step, std::vector<SegmentWork>& out) {
    SEGRANK_CHECK(nodes >= 0 && shape.max_nodes >= 0 && shape.fresh >= 0, "segment units: graph ",
                  graph_id, " has ", nodes, " nodes, max_nodes ", shape.max_nodes, ", fresh ",
                  shape.fresh, ": expected sizes >= 0");
    if (nodes == 0) return;
    const std::vector<int64_t> bounds = shape.max_nodes == 0
                                            ? std::vector<int64_t>{0, nodes}
                                            : contiguous_bounds(nodes, shape.max_nodes);
    const auto s = static_cast<int32_t>(bounds.size() - 1);
    const SegmentChoice c =
        choose_segments(seed, step, graph_id, s,
                        static_cast<int32_t>(std::max<int64_t>(1, shape.fresh)), keep_prob);
    auto size = [&](int32_t seg) {
        return bounds[static_cast<size_t>(seg) + 1] - bounds[static_cast<size_t>(seg)];
    };
    for (int32_t seg : c.fresh) out.push_back({member, seg, size(seg), true});
    if (shape.stale_forward > 0.0)
        for (int32_t seg : c.stale_kept) out.push_back({member, seg, size(seg), false});
}

}  // namespace segrank
