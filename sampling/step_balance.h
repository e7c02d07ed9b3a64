// Step-cost model of data-parallel training (docs/architecture.md#distribution): from the batch
// schedule and each training graph's cost, how evenly a dist.ownership mode splits each step's
// work over `world` ranks. The prediction of `step_balance_cpu` that scripts/bench_mpi.sh measures.
#pragma once
#include <cstdint>
#include <span>

#include "sampling/batch_sampler.h"
#include "sampling/ownership.h"

namespace segrank {

/// Work of a range of steps summed step by step, in the units of the costs given (the trainer's
/// model uses step_member_cost: node-config forward passes).
struct StepBalance {
    int64_t steps = 0;       ///< steps modelled
    double mean_work = 0.0;  ///< sum over steps of (the step's total cost / world)
    double max_work = 0.0;   ///< sum over steps of the largest rank's cost in the step
    /// mean_work / max_work in (0, 1] (1 = no rank waits at the gradient allreduce): the
    /// per-step efficiency, weighted by step cost like bench_mpi.sh's step_balance_cpu (sum of the
    /// per-step mean CPU time / sum of the per-step maximum). 1 when there is no work.
    double efficiency() const { return max_work > 0.0 ? mean_work / max_work : 1.0; }
    /// Sum over steps of (the step's cost as whole members / world): the work one rank would do
    /// alone, evened out. Differs from mean_work only where config slices repeat work.
    double whole_work = 0.0;
    /// whole_work / max_work in (0, 1]: the scaling efficiency the model predicts (steps/s at
    /// `world` ranks / (world x steps/s at one), as scripts/bench_scale.py measures it), which
    /// also charges the work slices repeat. 1 when there is no work.
    double scaling_efficiency() const { return max_work > 0.0 ? whole_work / max_work : 1.0; }
};

/// The ownership of the training graphs a run builds for `mode` at `world` ranks: modulo and
/// balanced from `visit_costs` (train_member_costs), per_step from `step_costs`
/// (step_member_costs). Same errors as the Ownership constructor.
Ownership training_ownership(OwnershipMode mode, std::span<const int64_t> visit_costs,
                             std::span<const int64_t> step_costs, int world);

/// Models steps [begin, end) of `batches` split by `owners` (Ownership::step_ranks of each global
/// batch) with costs[g] the work of graph g (indexed by id; owners may have been built from other
/// costs, as balanced ownership is). Ranks with no member count as idle
/// (mean over all owners.world() ranks). Assumes a rank's step time is proportional to the sum of
/// its members' costs: fixed per-graph overheads, communication and threads are not modelled.
/// Throws segrank::Error when begin < 0 or end < begin, or a member has no cost.
StepBalance predict_step_balance(const BatchSampler& batches, const Ownership& owners,
                                 std::span<const int64_t> costs, int64_t begin, int64_t end);

/// The same under dist.slice_configs (per_step ownership): each step's members cut into config
/// slices by Ownership::step_units with positions[g] (step_config_positions, indexed by id), a
/// slice's cost config_slice_cost (the member's share plus the work every slice repeats). One rank:
/// whole members. Throws segrank::Error as above or when owners is not per_step.
StepBalance predict_sliced_step_balance(const BatchSampler& batches, const Ownership& owners,
                                        std::span<const int64_t> costs,
                                        std::span<const int64_t> positions, int64_t begin,
                                        int64_t end);

/// The same under segment units (docs/distributed.md#segment-units) at `world` ranks: each member g
/// of a step (nodes[g] nodes, positions[g] sampled-config positions, both indexed by id) gives its
/// work items by append_member_segment_work(shape, keep_prob, seed, step), cut and assigned by
/// segment_units; a rank's work is the cost of its units plus, per member it holds units of,
/// kRowReadShare of the member's visit x the share of the configs its units span (whole_work: the
/// member's items at full K plus one read of its rows, as one process runs them). One rank: whole
/// members. Not modelled: the exchange of the members' summed segment values (one allreduce of 2 x
/// K x width floats per member and step), the history exchange and the gradient allreduce. Throws
/// segrank::Error as predict_step_balance, when world < 1, or as append_member_segment_work.
StepBalance predict_segment_step_balance(const BatchSampler& batches, int world,
                                         std::span<const int64_t> nodes,
                                         std::span<const int64_t> positions,
                                         const GstVisitShape& shape, double keep_prob,
                                         uint64_t seed, int64_t begin, int64_t end);

}  // namespace segrank
