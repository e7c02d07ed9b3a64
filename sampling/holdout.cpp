// Deterministic holdout splits over graphs and over each graph's configs
// (docs/sampling.md#holdout).
#include "sampling/holdout.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "gnn/core/check.h"
#include "gnn/core/rng.h"

namespace segrank {
namespace {

template <typename T>
void shuffle(std::vector<T>& v, Rng& rng) {
    for (size_t i = v.size(); i > 1; --i)
        std::swap(v[i - 1], v[static_cast<size_t>(rng.uniform_int(i))]);
}

std::vector<int64_t> sorted_unique(std::vector<int64_t> ids) {
    std::sort(ids.begin(), ids.end());
    const auto dup = std::adjacent_find(ids.begin(), ids.end());
    SEGRANK_CHECK(dup == ids.end(), "holdout: graph id ", *dup, " appears twice");
    return ids;
}

int64_t heldout_count(int64_t n, double fraction, const char* what) {
    SEGRANK_CHECK(fraction > 0 && fraction < 1, "data.holdout_fraction must be in (0, 1), got ",
                  fraction);
    SEGRANK_CHECK(n >= 2, "holdout: need at least 2 ", what, " to hold some out, got ", n);
    const auto k = static_cast<int64_t>(std::llround(fraction * static_cast<double>(n)));
    return std::clamp<int64_t>(k, 1, n - 1);
}

}  // namespace

GraphSplit holdout_graphs_kfold(std::vector<int64_t> ids, int64_t folds, int64_t fold,
                                uint64_t seed) {
    ids = sorted_unique(std::move(ids));
    const auto n = static_cast<int64_t>(ids.size());
    SEGRANK_CHECK(folds >= 2 && folds <= n, "data.holdout_folds must be in [2, ", n,
                  "] (the number of graphs), got ", folds);
    SEGRANK_CHECK(fold >= 0 && fold < folds, "data.holdout_fold must be in [0, ", folds, "), got ",
                  fold);
    Rng rng = Rng::derive(seed, 0, 0, "graph_folds");
    std::vector<int64_t> order = ids;
    shuffle(order, rng);
    GraphSplit split;
    for (int64_t i = 0; i < n; ++i)
        (i % folds == fold ? split.heldout : split.train).push_back(order[i]);
    std::sort(split.train.begin(), split.train.end());
    std::sort(split.heldout.begin(), split.heldout.end());
    return split;
}

ConfigSplit holdout_configs(int64_t num_configs, std::span<const int64_t> group_of, double fraction,
                            uint64_t seed, int64_t graph_id) {
    SEGRANK_CHECK(num_configs >= 0, "holdout: num_configs must be >= 0, got ", num_configs);
    SEGRANK_CHECK(group_of.empty() || static_cast<int64_t>(group_of.size()) == num_configs,
                  "holdout: graph ", graph_id, ": ", group_of.size(), " group ids for ",
                  num_configs, " configs");
    // Groups in order of their first config, so the split does not depend on the group id values.
    std::map<int64_t, int64_t> group_index;
    std::vector<int64_t> group(static_cast<size_t>(num_configs));
    for (int64_t i = 0; i < num_configs; ++i) {
        const int64_t key = group_of.empty() ? i : group_of[i];
        group[i] =
            group_index.try_emplace(key, static_cast<int64_t>(group_index.size())).first->second;
    }
    const auto num_groups = static_cast<int64_t>(group_index.size());
    SEGRANK_CHECK(num_groups >= 2, "holdout: graph ", graph_id, " has ", num_groups,
                  " distinct config(s); holding out configs needs at least 2");
    const int64_t k = heldout_count(num_groups, fraction, "distinct configs");
    std::vector<int64_t> order(static_cast<size_t>(num_groups));
    for (int64_t g = 0; g < num_groups; ++g) order[g] = g;
    Rng rng = Rng::derive(seed, 0, static_cast<uint64_t>(graph_id), "config_holdout");
    shuffle(order, rng);
    std::vector<bool> held(static_cast<size_t>(num_groups), false);
    for (int64_t i = 0; i < k; ++i) held[order[i]] = true;
    ConfigSplit split;
    for (int64_t i = 0; i < num_configs; ++i)
        (held[group[i]] ? split.heldout : split.train).push_back(i);
    return split;
}

}  // namespace segrank
