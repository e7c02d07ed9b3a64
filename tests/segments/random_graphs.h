// Seeded graph builders for segment tests: random DAGs in topological id order and small oracles.
#pragma once
#include <algorithm>
#include <cstdint>
#include <deque>
#include <string>
#include <vector>

#include "data/graph.h"
#include "data/npz.h"
#include "gnn/core/rng.h"

namespace segrank::test {

/// n nodes; node u >= 1 consumes 1..max_fanin distinct earlier nodes, mostly within `window` ids
/// before it (as compiler graphs), sometimes anywhere. Edge (u, v): u consumes v, v < u.
inline GraphStructure random_dag(int64_t n, uint64_t seed, int max_fanin = 3, int64_t window = 20) {
    GraphStructure g;
    g.name = "random_dag_" + std::to_string(seed);
    g.source = g.name;
    g.node_opcode.assign(static_cast<size_t>(n), 1);
    Rng rng(seed);
    for (int64_t u = 1; u < n; ++u) {
        const int fanin = 1 + static_cast<int>(rng.uniform_int(static_cast<uint64_t>(max_fanin)));
        std::vector<int64_t> chosen;
        for (int i = 0; i < fanin; ++i) {
            int64_t v;
            if (rng.uniform() < 0.8) {
                const int64_t lo = std::max<int64_t>(0, u - window);
                v = lo + static_cast<int64_t>(rng.uniform_int(static_cast<uint64_t>(u - lo)));
            } else {
                v = static_cast<int64_t>(rng.uniform_int(static_cast<uint64_t>(u)));
            }
            if (std::find(chosen.begin(), chosen.end(), v) != chosen.end()) continue;
            chosen.push_back(v);
            g.edge_index.push_back(u);
            g.edge_index.push_back(v);
        }
    }
    return g;
}

/// Every `every`-th node is configurable (ascending ids, as LayoutGraph::node_config_ids).
inline std::vector<int64_t> every_nth(int64_t n, int64_t every, int64_t offset = 0) {
    std::vector<int64_t> ids;
    for (int64_t v = offset; v < n; v += every) ids.push_back(v);
    return ids;
}

/// Undirected hop distance from a node set (BFS oracle; -1 = unreachable).
inline std::vector<int64_t> hop_distance(const GraphStructure& g,
                                         const std::vector<int64_t>& sources) {
    const int64_t n = g.num_nodes();
    std::vector<std::vector<int64_t>> adj(static_cast<size_t>(n));
    for (int64_t e = 0; e < g.num_edges(); ++e) {
        adj[g.edge_index[2 * e]].push_back(g.edge_index[2 * e + 1]);
        adj[g.edge_index[2 * e + 1]].push_back(g.edge_index[2 * e]);
    }
    std::vector<int64_t> dist(static_cast<size_t>(n), -1);
    std::deque<int64_t> q;
    for (int64_t s : sources) {
        dist[s] = 0;
        q.push_back(s);
    }
    while (!q.empty()) {
        const int64_t x = q.front();
        q.pop_front();
        for (int64_t y : adj[x])
            if (dist[y] < 0) {
                dist[y] = dist[x] + 1;
                q.push_back(y);
            }
    }
    return dist;
}

/// Structure keys of a real layout npz (edge_index, node_opcode, node_config_ids, node_splits),
/// read directly: the shared layout sample is a derived file with reduced feature widths that the
/// typed loader rejects, but its graph structure is untouched (npz_samples/PROVENANCE.md).
inline LayoutGraph load_layout_structure(const std::filesystem::path& path) {
    NpzReader z(path);
    LayoutGraph g;
    g.name = path.stem().string();
    g.source = path;
    const auto opcode = z.read_i64("node_opcode", nullptr);
    g.node_opcode.assign(opcode.begin(), opcode.end());
    g.edge_index = z.read_i64("edge_index", nullptr);
    g.node_config_ids = z.read_i64("node_config_ids", nullptr);
    g.node_splits = z.read_i64("node_splits", nullptr);
    return g;
}

}  // namespace segrank::test
