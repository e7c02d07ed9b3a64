// HistoryTable rows between ranks (docs/architecture.md#distribution): the flat form shards travel
// in (checkpoints gather them to rank 0), and, under dist.ownership = "per_step", the exchange
// after every step that keeps every rank's table a full replica, so any rank can train any graph.
#pragma once
#include <cstdint>
#include <span>
#include <vector>

#include "segments/history_table.h"
#include "trainer/comm.h"

namespace segrank {

/// Flattens arrays into doubles for Communicator::gather: [width, G, E, (graph, S) x G, keys
/// [E x 3], steps [E], values [E x width]] (ids < 2^53 and floats are exact in double).
std::vector<double> pack_history(const HistoryArrays& a);
/// Inverse of pack_history. Throws segrank::Error when `v` is shorter than its header says.
HistoryArrays unpack_history(std::span<const double> v);

/// dist.ownership = "per_step", after each step on every rank (collective): the entries this rank
/// wrote at `step` for the graphs it trained (`trained`, its local batch) go to every other rank,
/// which imports them in rank order (gather to rank 0, then one broadcast). Afterwards every rank
/// holds the same values as one process that trained the whole batch (as long as
/// segments.history_max_mb evicts nothing: each rank evicts by its own LRU order). Data moved per
/// step: the fresh entries of the batch, K x fresh segments x width floats per graph.
void share_step_history(HistoryTable& table, Communicator& comm, std::span<const int64_t> trained,
                        int64_t step);

}  // namespace segrank
