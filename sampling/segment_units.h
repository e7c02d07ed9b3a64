// GST segments as the unit of a step's work over ranks (docs/distributed.md#segment-units): each
// step's fresh and recomputed stale segments, cut into config slices only where a segment is
// large against a rank's share, assigned to ranks by longest-processing-time, and the model of
// what such a split costs (sampling/step_balance.h predicts it for a run).
#pragma once
#include <cstdint>
#include <span>
#include <vector>

#include "sampling/ownership.h"

namespace segrank {

/// One segment of one member of a step that does work: fresh (forward with saved state and
/// backward) or kept stale and recomputed forward-only (history_init = "fresh", its row missing).
struct SegmentWork {
    int64_t member = 0;   ///< index in the step's global batch
    int32_t segment = 0;  ///< segment id in the member's graph
    int64_t nodes = 0;    ///< local nodes of the segment (>= 0)
    bool fresh = false;
};

/// One piece of a step's work under segment units: configs at positions [begin, end) of work item
/// `work` (an index into the step's SegmentWork list), trained by `rank`.
struct SegmentUnit {
    int64_t work = 0;
    int64_t begin = 0;
    int64_t end = 0;
    int32_t rank = 0;
};

/// Work of a segment that does not grow with its configs, in forward node-config rows per node: a
/// piece of `len` configs of a segment of n nodes costs about n x (kSegmentBaseRows + len) rows
/// forward-only and n x (kSegmentBaseRows + kFreshPassCost x len) fresh (forward and backward): the
/// segment's rebuild and node-feature reads and its config-independent rows are paid once per
/// piece. Measured on the full-size rehearsal's stores (layout:xla recipe, one thread, CPU time per
/// segment at K = 4 and K = 32, 2026-12-07): forward-only 4.3 us + 2.04 us x K per node (2.1 rows),
/// fresh 4.9 us (with the rebuild) + 5.92 us x K per node (2.4 rows, 2.9 passes);
/// docs/distributed.md#segment-units.
inline constexpr double kSegmentBaseRows = 2.2;

/// Share of a member's visit spent reading its sampled configs' rows from the store (the same
/// measurement: 0.46 s of 26.1 s at K = 32). A rank reads the rows of the config range its pieces
/// of a member cover once (first to last position): the model charges it kRowReadShare x the
/// visit x that range / K per member it holds pieces of (one process: the visit's share once).
inline constexpr double kRowReadShare = 0.018;

/// Pieces per rank segment_units aims at: a piece costs at most about 1 / kSegmentPiecesPerRank of
/// a rank's even share of the step.
inline constexpr int64_t kSegmentPiecesPerRank = 2;

/// Modelled cost of `len` configs of a segment of `nodes` nodes, in forward node-config rows:
/// nodes x (kSegmentBaseRows + len), with kFreshPassCost x len when fresh; rounded, >= 0.
int64_t segment_unit_cost(int64_t nodes, bool fresh, int64_t len);

/// The segment units of one step: every work item i (of member work[i].member, whose K' is
/// k[member]) costs c_i = segment_unit_cost(nodes, fresh, K'); it is cut into n_i =
/// clamp(ceil(kSegmentPiecesPerRank x world x c_i / sum c), 1, max(1, K')) slices of consecutive
/// config positions (sizes floor or ceil of K' / n_i, the larger first), each costing
/// segment_unit_cost(nodes, fresh, its length); the slices go to ranks by lpt_assignment (equal
/// costs: work order, then position). One rank: one unit per item on rank 0. Returns the units in
/// work then position order. Throws segrank::Error when world < 1, a member index is outside k, or
/// a node count or k is negative.
std::vector<SegmentUnit> segment_units(std::span<const SegmentWork> work,
                                       std::span<const int64_t> k, int world);

/// The work items of one member visit estimated from sizes (the step-cost model; the trainer uses
/// the prepared graph's segments): S = ceil(nodes / max_nodes) contiguous near-equal segments (one
/// when max_nodes = 0), the choice choose_segments(seed, step, graph_id, S, fresh, keep_prob); its
/// fresh segments, and its kept stale ones when shape.stale_forward > 0 (history_init = "fresh":
/// with far more configs than K most sampled configs have no stored row, so a kept segment is
/// recomputed). Appends to `out` with member index `member`; nothing for a graph without nodes.
/// Throws segrank::Error as choose_segments, or for negative sizes.
void append_member_segment_work(int64_t member, int64_t graph_id, int64_t nodes,
                                const GstVisitShape& shape, double keep_prob, uint64_t seed,
                                int64_t step, std::vector<SegmentWork>& out);

}  // namespace segrank
