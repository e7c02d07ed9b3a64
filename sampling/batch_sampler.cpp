// Global batch schedule over a (seed, epoch) shuffle of all training graphs
// (docs/sampling.md#batches).
#include "sampling/batch_sampler.h"

#include <algorithm>

#include "gnn/core/check.h"
#include "gnn/core/rng.h"

namespace segrank {

BatchSampler::BatchSampler(std::vector<int64_t> train_graph_ids, int64_t batch_graphs,
                           uint64_t seed, bool drop_last)
    : ids_(std::move(train_graph_ids)), seed_(seed) {
    SEGRANK_CHECK(!ids_.empty(), "sampling: no training graphs");
    SEGRANK_CHECK(batch_graphs >= 1, "sampling.batch_graphs must be >= 1, got ", batch_graphs);
    std::sort(ids_.begin(), ids_.end());
    SEGRANK_CHECK(ids_.front() >= 0, "sampling: graph ids must be >= 0, got ", ids_.front());
    const auto dup = std::adjacent_find(ids_.begin(), ids_.end());
    SEGRANK_CHECK(dup == ids_.end(), "sampling: training graph id ", *dup, " appears twice");
    const auto n = static_cast<int64_t>(ids_.size());
    batch_ = std::min(batch_graphs, n);
    steps_per_epoch_ = drop_last ? n / batch_ : (n + batch_ - 1) / batch_;
}

StepPosition BatchSampler::position(int64_t step) const {
    SEGRANK_CHECK(step >= 0, "sampling: step must be >= 0, got ", step);
    return {step / steps_per_epoch_, step % steps_per_epoch_};
}

std::vector<int64_t> BatchSampler::epoch_order(int64_t epoch) const {
    SEGRANK_CHECK(epoch >= 0, "sampling: epoch must be >= 0, got ", epoch);
    std::vector<int64_t> order = ids_;
    Rng rng = Rng::derive(seed_, static_cast<uint64_t>(epoch), 0, "epoch_shuffle");
    for (size_t i = order.size(); i > 1; --i) {
        const size_t j = static_cast<size_t>(rng.uniform_int(i));
        std::swap(order[i - 1], order[j]);
    }
    return order;
}

std::vector<int64_t> BatchSampler::global_batch(int64_t step) const {
    const StepPosition pos = position(step);
    const std::vector<int64_t> order = epoch_order(pos.epoch);
    const auto n = static_cast<int64_t>(order.size());
    const int64_t begin = pos.step_in_epoch * batch_;
    const int64_t end = std::min(begin + batch_, n);
    return {order.begin() + begin, order.begin() + end};
}

std::vector<int64_t> BatchSampler::local_batch(int64_t step, int rank,
                                               const Ownership& owners) const {
    SEGRANK_CHECK(rank >= 0 && rank < owners.world(), "sampling: rank ", rank, " outside [0, ",
                  owners.world(), ")");
    std::vector<int64_t> mine;
    const std::vector<int64_t> global = global_batch(step);
    const std::vector<int32_t> ranks = owners.step_ranks(global);
    for (size_t i = 0; i < global.size(); ++i)
        if (ranks[i] == rank) mine.push_back(global[i]);
    return mine;
}

}  // namespace segrank
