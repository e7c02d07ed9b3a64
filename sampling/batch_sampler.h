// Global batches of training graphs (docs/sampling.md#batches): one (seed, epoch) shuffle of ALL
// training graph ids, identical on every rank; rank r processes the members it owns
// (sampling/ownership.h).
#pragma once
#include <cstdint>
#include <vector>

#include "sampling/ownership.h"

namespace segrank {

/// Where a step falls in the epoch schedule.
struct StepPosition {
    int64_t epoch = 0;          ///< 0-based epoch of the step
    int64_t step_in_epoch = 0;  ///< 0-based index of the batch inside its epoch
};

/// Step -> global batch of graph ids. Every epoch visits each training graph exactly once:
/// the epoch's order is a Fisher-Yates shuffle of the sorted ids with Rng::derive(seed, epoch, 0,
/// "epoch_shuffle"), cut into consecutive batches of B = min(batch_graphs, N) graphs. The last
/// batch of an epoch holds the N mod B leftovers (fewer than B) unless `drop_last`, which skips
/// them (different graphs each epoch, since the order is reshuffled). A batch never spans two
/// epochs. The loss is normalized by global_batch(step).size(), the same number on every rank.
class BatchSampler {
public:
    /// train_graph_ids: distinct ids >= 0 (any order; sorted internally so every rank agrees even
    /// if it discovered the files in another order). Throws segrank::Error when empty, when an id
    /// repeats or is negative, or when batch_graphs < 1.
    BatchSampler(std::vector<int64_t> train_graph_ids, int64_t batch_graphs, uint64_t seed,
                 bool drop_last = false);

    /// Batches per epoch: ceil(N / B), or floor(N / B) with drop_last.
    int64_t steps_per_epoch() const { return steps_per_epoch_; }
    /// Effective B = min(batch_graphs, N).
    int64_t batch_graphs() const { return batch_; }
    int64_t num_graphs() const { return static_cast<int64_t>(ids_.size()); }

    /// Epoch and in-epoch index of a 0-based global step (step >= 0, else segrank::Error).
    StepPosition position(int64_t step) const;
    /// The epoch's visiting order: a permutation of all training ids.
    std::vector<int64_t> epoch_order(int64_t epoch) const;
    /// The global batch of a step: graph ids in shuffle order, identical on every rank.
    std::vector<int64_t> global_batch(int64_t step) const;
    /// The members of the global batch `rank` trains (owners.step_ranks(global_batch(step)):
    /// the owner under modulo and balanced ownership, the step's LPT share under per_step), in
    /// global-batch order. Throws segrank::Error unless 0 <= rank < owners.world().
    std::vector<int64_t> local_batch(int64_t step, int rank, const Ownership& owners) const;

private:
    std::vector<int64_t> ids_;  // sorted
    int64_t batch_ = 1;
    uint64_t seed_ = 0;
    int64_t steps_per_epoch_ = 1;
};

}  // namespace segrank
