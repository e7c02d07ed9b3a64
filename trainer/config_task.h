// The task of a run (tile or layout) from its training collections: one task per run, and the model
// options that need a tile task. Shared by the Trainer (from the graphs it opened) and
// `segrank train --check` (from a listing of data.root that reads no graph).
#pragma once
#include <optional>
#include <vector>

#include "data/collection.h"
#include "trainer/config.h"

namespace segrank {

/// The collections of cfg.data.train_split under cfg.data.root that a run would train on (those of
/// cfg.data.collections, or all when it is []), sorted by name, from folder names, npz keys of a
/// flat folder's first file and HDF5 store attributes: no graph is read. nullopt when data.root
/// does not exist yet or data.ingest adds graphs to it before training. Throws segrank::Error as
/// the run's listing does (no collections, a broken store, a collection of cfg.data.collections
/// that data.root does not hold: "data.collections: collection 'X' not found under 'ROOT' (found:
/// ...)").
std::optional<std::vector<CollectionId>> training_collections(const RunConfig& cfg);

/// The one task of training collections `train` (in the run's graph order: by collection name).
/// Throws segrank::Error "data.collections: one run trains one task; found both 'A' and 'B' ..."
/// when they hold two tasks, and naming the key (with where it was set) when model.config_join =
/// "late" or model.tile_cost_features = true meet layout collections. `train` is not empty.
Task check_one_task(const RunConfig& cfg, const std::vector<CollectionId>& train);

}  // namespace segrank
