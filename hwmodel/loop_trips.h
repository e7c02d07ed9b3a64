// Per-node loop trip counts of an HLO module (docs/files.md#loop-trip-counts): the node_loop_trips
// member ingest and synth write beside the 140 node features, for model.trip_counts.
#pragma once
#include <cstdint>
#include <optional>
#include <vector>

#include "data/hlo/module.h"
#include "hwmodel/module_index.h"

namespace segrank::hw {

/// Trip count of `while_ins`: the count XLA recorded in its backend config when it could prove one
/// (hlo::Instruction::known_trip_count), else find_trip_count's pattern match; nullopt when neither
/// gives one (or `while_ins` is no while).
std::optional<int64_t> loop_trip_count(const ModuleIndex& index, const hlo::Instruction& while_ins);

/// node_loop_trips of `module` in the featurizer's node order (every instruction of every
/// computation in stored order; docs/files.md#node-order-and-edges): [n, 2] row-major, per node
/// column 0 = log2 of the product of the trip counts of the while loops enclosing it (0 outside
/// loops; loops of unknown count contribute 1), column 1 = 1 when some enclosing loop's count is
/// unknown, else 0. A loop encloses the nodes of its body and condition and of everything they call
/// (reducers, fusions, nested loops). A computation called from several places takes the largest
/// product over its call sites and is unknown when any path to it crosses a loop of unknown count;
/// computations the entry never calls get 0 and 0. Throws segrank::Error (ModuleIndex) on a
/// malformed module.
std::vector<float> node_loop_trips(const hlo::HloModule& module);

}  // namespace segrank::hw
