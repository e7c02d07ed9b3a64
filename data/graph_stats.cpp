// Statistics of graphs and collections for `segrank stats`.
#include "data/graph_stats.h"

#include <algorithm>
#include <cstdio>
#include <string_view>
#include <unordered_set>

#include "gnn/core/check.h"

namespace segrank {
namespace {

// Distinct rows of a [c, row_bytes] byte matrix.
int64_t duplicates(const void* data, int64_t c, size_t row_bytes) {
    std::unordered_set<std::string_view> seen;
    const char* p = static_cast<const char*>(data);
    for (int64_t i = 0; i < c; ++i) seen.emplace(p + static_cast<size_t>(i) * row_bytes, row_bytes);
    return c - static_cast<int64_t>(seen.size());
}

void runtime_stats(std::vector<int64_t> rt, int64_t& mn, double& med, int64_t& mx) {
    if (rt.empty()) return;
    std::sort(rt.begin(), rt.end());
    mn = rt.front();
    mx = rt.back();
    const size_t h = rt.size() / 2;
    med = rt.size() % 2 ? static_cast<double>(rt[h])
                        : (static_cast<double>(rt[h - 1]) + static_cast<double>(rt[h])) / 2.0;
}

GraphStats base(const GraphStructure& g, int64_t c, const std::vector<int64_t>& rt) {
    GraphStats s;
    s.name = g.name;
    s.nodes = g.num_nodes();
    s.edges = g.num_edges();
    s.configs = c;
    runtime_stats(rt, s.runtime_min, s.runtime_median, s.runtime_max);
    for (size_t k = 0; k < rt.size(); ++k) {
        if (rt[k] > 0) continue;
        if (s.nonpositive_runtimes++ == 0) s.first_nonpositive_config = static_cast<int64_t>(k);
    }
    return s;
}

// Graph i of a source with partial reads (an HDF5 store): its structure without node features
// (load_*_structure: opcodes, edges, validated) and its config tensors (load_configs); node
// features, 2.2 GB on a 4M-node graph, are not read. Appends the runtimes to `all_rt`.
GraphStats stats_from_parts(const GraphSource& src, int64_t i, std::vector<int64_t>& all_rt) {
    GraphStats s;
    if (src.task() == Task::kTile) {
        TileGraph g = src.load_tile_structure(i);
        ConfigTensors t = src.load_configs(i, ConfigRows::all());
        g.config_feat = std::move(t.tile_feat);
        g.config_runtime = std::move(t.runtime);
        s = compute_stats(g);
        all_rt.insert(all_rt.end(), g.config_runtime.begin(), g.config_runtime.end());
    } else {
        LayoutGraph g = src.load_layout_structure(i);
        ConfigTensors t = src.load_configs(i, ConfigRows::all());
        g.node_config_feat = std::move(t.layout_feat);
        g.config_runtime = std::move(t.runtime);
        SEGRANK_CHECK(static_cast<int64_t>(g.node_config_feat.size()) ==
                          g.num_configs() * g.num_config_nodes() * kLayoutConfigDim,
                      src.where(i), ": node_config_feat holds ", g.node_config_feat.size(),
                      " values, expected (", g.num_configs(), ", ", g.num_config_nodes(), ", 18)");
        s = compute_stats(g);
        all_rt.insert(all_rt.end(), g.config_runtime.begin(), g.config_runtime.end());
    }
    return s;
}

}  // namespace

GraphStats compute_stats(const TileGraph& g) {
    GraphStats s = base(g, g.num_configs(), g.config_runtime);
    s.duplicate_configs = duplicates(g.config_feat.data(), g.num_configs(), kTileConfigDim * 4);
    return s;
}

GraphStats compute_stats(const LayoutGraph& g) {
    GraphStats s = base(g, g.num_configs(), g.config_runtime);
    s.config_nodes = g.num_config_nodes();
    s.duplicate_configs = duplicates(g.node_config_feat.data(), g.num_configs(),
                                     static_cast<size_t>(g.num_config_nodes()) * kLayoutConfigDim);
    return s;
}

CollectionStats compute_stats(const GraphSource& src, const std::string& where) {
    CollectionStats s;
    s.collection = src.collection().full_name();
    s.source = where;
    s.labelled = label_policy(src.collection().split) == LabelPolicy::kRequirePositive;
    std::vector<int64_t> all_rt;
    for (int64_t i = 0; i < src.size(); ++i) {
        GraphStats g;
        if (src.partial_reads()) {
            g = stats_from_parts(src, i, all_rt);
        } else if (src.task() == Task::kTile) {
            const TileGraph t = src.load_tile(i, ConfigRows::all());
            g = compute_stats(t);
            all_rt.insert(all_rt.end(), t.config_runtime.begin(), t.config_runtime.end());
        } else {
            const LayoutGraph l = src.load_layout(i, ConfigRows::all());
            g = compute_stats(l);
            all_rt.insert(all_rt.end(), l.config_runtime.begin(), l.config_runtime.end());
        }
        g.where = src.where(i);
        s.graphs += 1;
        s.nodes += g.nodes;
        s.edges += g.edges;
        s.configs += g.configs;
        s.config_nodes += g.config_nodes;
        s.duplicate_configs += g.duplicate_configs;
        s.per_graph.push_back(std::move(g));
    }
    runtime_stats(std::move(all_rt), s.runtime_min, s.runtime_median, s.runtime_max);
    return s;
}

std::vector<std::string> runtime_warnings(const CollectionStats& s) {
    std::vector<std::string> out;
    if (!s.labelled) return out;
    for (const GraphStats& g : s.per_graph) {
        if (g.nonpositive_runtimes == 0) continue;
        const bool named = g.where.find(g.name) != std::string::npos;
        out.push_back(str(g.where, named ? "" : str(" (graph '", g.name, "')"),
                          ": key 'config_runtime': config ", g.first_nonpositive_config,
                          " has a runtime of 0 ns (", g.nonpositive_runtimes, " of ", g.configs,
                          " configs) in the labelled split ", s.collection,
                          ": segrank train and evaluate refuse it (zeros are the hidden labels "
                          "of test splits only)"));
    }
    return out;
}

Json to_json(const CollectionStats& s) {
    // The counts of a graph or of the collection total, in the order of GraphStats.
    auto add_counts = [](Json& o, int64_t n, int64_t m, int64_t c, int64_t nc, int64_t dup,
                         int64_t mn, double med, int64_t mx) {
        o["nodes"] = n;
        o["edges"] = m;
        o["configs"] = c;
        o["config_nodes"] = nc;
        o["duplicate_configs"] = dup;
        o["runtime_min"] = mn;
        o["runtime_median"] = med;
        o["runtime_max"] = mx;
    };
    Json out = {{"collection", s.collection}, {"source", s.source}, {"graphs", s.graphs}};
    add_counts(out, s.nodes, s.edges, s.configs, s.config_nodes, s.duplicate_configs, s.runtime_min,
               s.runtime_median, s.runtime_max);
    Json per_graph = Json::array();
    for (const auto& g : s.per_graph) {
        Json o = {{"name", g.name}};
        add_counts(o, g.nodes, g.edges, g.configs, g.config_nodes, g.duplicate_configs,
                   g.runtime_min, g.runtime_median, g.runtime_max);
        per_graph.push_back(std::move(o));
    }
    out["per_graph"] = std::move(per_graph);
    return out;
}

}  // namespace segrank
