// Which rank owns which graph (docs/sampling.md#ownership): the owner prepares a graph, trains or
// scores it and holds its HistoryTable entries. Either graph id % world ("modulo") or a
// longest-processing-time assignment by cost ("balanced"), computed identically on every rank from
// the graph sizes the ranks have agreed on, without communication. "per_step" assigns each step's
// members afresh by longest-processing-time over their costs (every rank holds every history row).
#pragma once
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "data/graph_entry.h"
#include "gnn/core/enum_names.h"

namespace segrank {

/// `dist.ownership`.
enum class OwnershipMode { kModulo, kBalanced, kPerStep };

/// Names: "modulo", "balanced", "per_step".
std::span<const EnumName<OwnershipMode>> enum_names(OwnershipMode);
/// Parses "modulo" | "balanced" | "per_step"; throws segrank::Error listing the valid names.
OwnershipMode parse_ownership_mode(std::string_view name);
std::string_view to_string(OwnershipMode mode);

/// Longest-processing-time (LPT) assignment of graphs 0..N-1 with costs[g] >= 0 to `world` ranks:
/// the graphs in order of descending cost (equal costs: ascending graph id) each go to the rank
/// with the smallest total so far (equal totals: the lowest rank). Returns the rank of every graph
/// [N]. Deterministic and exact (integer costs); O(N log N + N log world). The largest rank total
/// is at most (4/3 - 1/(3 world)) times the optimum and at most total / world + (1 - 1/world) *
/// max cost. Throws segrank::Error when world < 1 or a cost is negative.
std::vector<int32_t> lpt_assignment(std::span<const int64_t> costs, int world);

/// One piece of a step's work under dist.slice_configs: the sampled configs at positions [begin,
/// end) of the member at index `member` of the step's global batch, trained by `rank`.
struct StepUnit {
    int64_t member = 0;
    int64_t begin = 0;
    int64_t end = 0;
    int32_t rank = 0;
};

/// Graph id -> owner rank of one role (training graphs or evaluation graphs, ids 0..N-1).
class Ownership {
public:
    /// Modulo ownership: graph g belongs to rank g % world, for any g >= 0. Throws segrank::Error
    /// when world < 1.
    explicit Ownership(int world = 1);
    /// `mode` over graphs 0..costs.size()-1: kModulo ignores the costs (bit for bit g % world),
    /// kBalanced is lpt_assignment(costs, world), kPerStep keeps the costs for step_ranks. Throws
    /// segrank::Error when world < 1 or a cost is negative.
    Ownership(OwnershipMode mode, std::span<const int64_t> costs, int world);

    /// The owner of `graph_id`; under kPerStep its home rank graph_id % world, which writes the
    /// graph's history rows into checkpoints (the trainer of a step is step_ranks'). Throws
    /// segrank::Error when graph_id < 0, or, for balanced ownership, when graph_id >= the number of
    /// graphs it was built for.
    int owner(int64_t graph_id) const;
    /// The rank that trains each member of one step's global batch [M] (same order as `members`,
    /// distinct graph ids): owner(g) for kModulo and kBalanced; for kPerStep lpt_assignment of the
    /// members' costs (the trainer builds it from step_member_costs) (equal costs: earlier batch
    /// position first), so every step's work is split as evenly as whole graphs allow. Throws
    /// segrank::Error for an id outside the costs (kPerStep, kBalanced) or a negative id.
    std::vector<int32_t> step_ranks(std::span<const int64_t> members) const;
    /// dist.slice_configs under kPerStep: config_slice_units of the members' costs and their
    /// sampled-config positions k [M] (same order as `members`). Throws segrank::Error when the
    /// mode is not kPerStep, for an id outside the costs, or as config_slice_units.
    std::vector<StepUnit> step_units(std::span<const int64_t> members,
                                     std::span<const int64_t> k) const;
    int world() const { return world_; }
    OwnershipMode mode() const { return mode_; }
    /// Sum of costs[g] over the graphs each rank owns [world] (costs indexed by graph id, any
    /// length; ids beyond it are not counted). Under kPerStep: by home rank (owner()).
    std::vector<int64_t> rank_totals(std::span<const int64_t> costs) const;

private:
    /// kPerStep: the cost of each of `members` [M]; throws for an id outside the costs.
    std::vector<int64_t> member_costs(std::span<const int64_t> members) const;

    OwnershipMode mode_ = OwnershipMode::kModulo;
    int world_ = 1;
    std::vector<int32_t> owner_;  // balanced: owner of each graph id
    std::vector<int64_t> costs_;  // per_step: cost of each graph id
};

/// Slices per rank the config-slice split aims at: a slice costs at most about 1 / kSlicesPerRank
/// of a rank's even share of the step, so longest-processing-time ends within that of the mean.
inline constexpr int64_t kSlicesPerRank = 4;

/// Share of a member's visit cost that every slice of it pays again, however few configs it holds:
/// the config-independent rows of its segments, its segment bookkeeping and history lookups. A
/// visit of K configs costs about a + b K; on a 12-graph layout collection of 2,000-20,000 nodes
/// (layout:xla recipe, one thread, 2026-12-07) a = 0.066 of the K = 32 cost (CPU time per step at
/// K = 4 against K = 32, docs/distributed.md#config-slices).
inline constexpr double kSliceFixedShare = 0.07;

/// Modelled cost of one slice of `len` of a member's `k` positions when the member (of cost
/// `cost`) is cut into `slices` slices: `cost` when whole (slices <= 1 or k <= 0), else cost x
/// (kSliceFixedShare + (1 - kSliceFixedShare) x len / k), rounded to an integer.
int64_t config_slice_cost(int64_t cost, int64_t len, int64_t k, int64_t slices);

/// dist.slice_configs: one step's members [M] with costs[i] >= 0 (step_member_cost) and k[i] >= 0
/// sampled-config positions each, cut into slices and assigned to `world` ranks. Member i is cut
/// into n_i = clamp(ceil(kSlicesPerRank x world x costs[i] / total cost), 1, max(1, k[i])) slices
/// of floor or ceil(k[i] / n_i) consecutive positions (the larger first), a slice costing costs[i]
/// x its length / k[i]; the slices then go to ranks by lpt_assignment (equal costs: member order,
/// then position). One rank: one unit per member, [0, k[i]), on rank 0. Returns the units in member
/// then position order. Throws segrank::Error when world < 1, the sizes differ, or a cost or k is
/// negative. (Cutting only where the modelled step gets shorter, counting config_slice_cost's
/// repeated work, balanced the full-size rehearsal's steps worse: docs/benchmarks.md.)
std::vector<StepUnit> config_slice_units(std::span<const int64_t> costs, std::span<const int64_t> k,
                                         int world);

/// Sampled-config positions of one training visit of `e` that config slices cut: min(K =
/// `configs`, the pool `pool` when > 0, the usable configs as in train_member_cost), >= 0.
int64_t step_config_positions(const GraphEntry& e, int64_t configs, int64_t pool);
/// step_config_positions of every entry [N] (entry i has id i; same id checks as
/// train_member_costs).
std::vector<int64_t> step_config_positions(const std::vector<GraphEntry>& entries, int64_t configs,
                                           int64_t pool);

/// Owner rank of a graph under modulo ownership: graph_id % world. Throws segrank::Error if
/// world < 1 or graph_id < 0.
int owner_rank(int64_t graph_id, int world);

/// Cost of one training step's work on graph `e` with K = `configs` sampled configs:
/// num_nodes * min(K, usable configs) (usable = the role's held-out-free configs, else all of the
/// graph's). Under GST the step runs the fresh segments forward and backward and, for every sampled
/// config whose stale rows are missing or too old (most of them when a graph has far more configs
/// than K), the kept stale segments forward only, so the work grows with the whole graph, not with
/// the fresh segments alone (docs/sampling.md#ownership).
int64_t train_member_cost(const GraphEntry& e, int64_t configs);

/// Per-graph training costs [N] of `entries` (entry i has id i): train_member_cost of each.
std::vector<int64_t> train_member_costs(const std::vector<GraphEntry>& entries, int64_t configs);

/// The GST settings that shape one training visit's work (segments.max_nodes, segments.fresh, and
/// the forward-only share of the other nodes: segments.keep_prob with history_init = "fresh", 0
/// with "zero").
struct GstVisitShape {
    int64_t max_nodes = 1000;    ///< segment size bound M in nodes; 0 = one segment per graph
    int64_t fresh = 1;           ///< k fresh segments per visit
    double stale_forward = 0.5;  ///< forward-only share of the non-fresh nodes (kept, recomputed)
};

/// Relative cost of a forward+backward pass over a node against a forward-only one.
inline constexpr double kFreshPassCost = 3.0;

/// Estimated work of one GST training visit of `e`, in node-config forward passes: K' x (3 f +
/// stale_forward x (n - f)), f = min(n, k M) fresh nodes (n when M = 0), n = nodes, K' = min(K,
/// usable configs) as in train_member_cost; rounded to an integer. Unlike train_member_cost it
/// counts a small graph's backward pass and that only the kept share of a large graph's stale
/// segments is recomputed (with far more configs than K, most sampled configs have no stored row),
/// so it tracks the measured CPU time per member more closely (docs/sampling.md#ownership). Throws
/// segrank::Error for negative shape fields or stale_forward outside [0, 1].
int64_t step_member_cost(const GraphEntry& e, int64_t configs, const GstVisitShape& shape);
/// step_member_cost of every entry [N] (entry i has id i; same id checks as train_member_costs).
std::vector<int64_t> step_member_costs(const std::vector<GraphEntry>& entries, int64_t configs,
                                       const GstVisitShape& shape);

}  // namespace segrank
