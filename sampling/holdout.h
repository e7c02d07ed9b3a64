// Holdout splits (docs/sampling.md#holdout): by graphs (k-fold, leave-one-out, or a fraction) for
// data sets with several graphs, and by configs (a fraction of each graph's configs) for data sets
// with few graphs. Deterministic from (seed, graph id) through Rng::derive; identical on every
// rank.
#pragma once
#include <cstdint>
#include <span>
#include <vector>

namespace segrank {

/// Graph ids split into training and held-out graphs (both ascending).
struct GraphSplit {
    std::vector<int64_t> train;
    std::vector<int64_t> heldout;
};

/// k-fold over graphs: the sorted ids are shuffled with Rng::derive(seed, 0, 0, "graph_folds") and
/// position i goes to fold i % folds; fold `fold` is held out. folds = number of graphs gives
/// leave-one-out. Throws segrank::Error unless 2 <= folds <= ids.size() and 0 <= fold < folds, or
/// if an id repeats.
GraphSplit holdout_graphs_kfold(std::vector<int64_t> ids, int64_t folds, int64_t fold,
                                uint64_t seed);

/// Config indices of one graph split into training and held-out configs (both ascending).
struct ConfigSplit {
    std::vector<int64_t> train;
    std::vector<int64_t> heldout;
};

/// Holds out a fraction of one graph's configs. Duplicate config rows would leak a held-out
/// runtime into training, so whole groups of identical rows move together: `group_of` [c] maps each
/// config to its group id (config_groups() in sampling/dedupe.h), or is empty (every config its own
/// group). round(fraction * G) of the G groups are held out (at least 1, at most G - 1), chosen by
/// a shuffle with Rng::derive(seed, 0, graph_id, "config_holdout"). Throws segrank::Error unless 0
/// < fraction < 1, G >= 2 and group_of is empty or has num_configs entries.
ConfigSplit holdout_configs(int64_t num_configs, std::span<const int64_t> group_of, double fraction,
                            uint64_t seed, int64_t graph_id);

}  // namespace segrank
