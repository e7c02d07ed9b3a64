// Per-graph and per-collection statistics for `segrank stats` (nodes, edges, configs, configurable
// nodes, duplicate config rows, runtime min/median/max in ns).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "data/graph.h"
#include "data/graph_source.h"
#include "util/json.h"

namespace segrank {

/// Statistics of one graph (runtimes are raw config_runtime values in ns).
struct GraphStats {
    std::string name;
    int64_t nodes = 0;
    int64_t edges = 0;
    int64_t configs = 0;
    int64_t config_nodes = 0;  ///< layout nc; 0 for tile
    int64_t duplicate_configs =
        0;  ///< configs minus distinct config rows (tile) / matrices (layout)
    int64_t runtime_min = 0;
    double runtime_median = 0;  ///< mean of the two middle values for even counts
    int64_t runtime_max = 0;
    std::string where;  ///< the graph's file, or store and graph (GraphSource::where); not in JSON
    int64_t nonpositive_runtimes = 0;       ///< configs with a runtime <= 0 ns; not in JSON
    int64_t first_nonpositive_config = -1;  ///< the first of them, -1 when none
};

/// Totals over the graphs of one collection split; runtime statistics pool all configs.
struct CollectionStats {
    std::string collection;  ///< CollectionId::full_name(), e.g. "tile:xla:test"
    std::string source;      ///< the folder or store the statistics were read from
    int64_t graphs = 0;
    int64_t nodes = 0;
    int64_t edges = 0;
    int64_t configs = 0;
    int64_t config_nodes = 0;
    int64_t duplicate_configs = 0;
    int64_t runtime_min = 0;
    double runtime_median = 0;
    int64_t runtime_max = 0;
    /// A labelled split (train / valid): runtimes must be > 0 ns to train or evaluate on it
    /// (label_policy); test splits carry 0 as their hidden label.
    bool labelled = false;
    std::vector<GraphStats> per_graph;
};

/// One line per graph of a labelled split with runtimes <= 0 ns, naming its file (or store and
/// graph), the first such config index and the count, and that train / evaluate refuse it;
/// empty for test splits and for clean data. `segrank stats` prints them to stderr.
std::vector<std::string> runtime_warnings(const CollectionStats& s);

GraphStats compute_stats(const TileGraph& g);
GraphStats compute_stats(const LayoutGraph& g);
/// Reads every graph of `src` (all config rows) and aggregates. `where` names the source. From a
/// source with partial reads (an HDF5 store) the structure without node features
/// (load_*_structure) and the config tensors (load_configs) are read: node features are neither
/// read nor checked; an npz graph is loaded whole (and validated as by load_tile / load_layout).
CollectionStats compute_stats(const GraphSource& src, const std::string& where);

/// JSON object {"collection", "source", "graphs", "nodes", "edges", "configs", "config_nodes",
/// "duplicate_configs", "runtime_min", "runtime_median", "runtime_max", "per_graph": [{"name",
/// "nodes", ... "runtime_max"}]} (`segrank stats --json`).
Json to_json(const CollectionStats& s);

}  // namespace segrank
