// model.prune_hops: the k-hop neighbourhood of the configurable nodes and the pruned structure
// (see prune.h).
#include "segments/prune.h"

#include <deque>
#include <utility>

namespace segrank {

std::vector<int64_t> nodes_near_configurable(const GraphStructure& g,
                                             std::span<const int64_t> config_nodes, int32_t hops) {
    const int64_t n = g.num_nodes();
    std::vector<int64_t> deg(static_cast<size_t>(n + 1), 0);
    const int64_t m = g.num_edges();
    for (int64_t e = 0; e < m; ++e) {
        deg[static_cast<size_t>(g.edge_index[2 * e]) + 1]++;
        deg[static_cast<size_t>(g.edge_index[2 * e + 1]) + 1]++;
    }
    for (int64_t i = 0; i < n; ++i) deg[static_cast<size_t>(i + 1)] += deg[static_cast<size_t>(i)];
    std::vector<int64_t> adj(static_cast<size_t>(2 * m));
    std::vector<int64_t> pos(deg.begin(), deg.end() - 1);
    for (int64_t e = 0; e < m; ++e) {
        int64_t u = g.edge_index[2 * e], v = g.edge_index[2 * e + 1];
        adj[static_cast<size_t>(pos[static_cast<size_t>(u)]++)] = v;
        adj[static_cast<size_t>(pos[static_cast<size_t>(v)]++)] = u;
    }
    std::vector<int32_t> dist(static_cast<size_t>(n), -1);
    std::deque<int64_t> q;
    for (int64_t c : config_nodes) {
        dist[static_cast<size_t>(c)] = 0;
        q.push_back(c);
    }
    while (!q.empty()) {
        int64_t v = q.front();
        q.pop_front();
        if (dist[static_cast<size_t>(v)] >= hops) continue;
        for (int64_t k = deg[static_cast<size_t>(v)]; k < deg[static_cast<size_t>(v + 1)]; ++k) {
            int64_t u = adj[static_cast<size_t>(k)];
            if (dist[static_cast<size_t>(u)] < 0) {
                dist[static_cast<size_t>(u)] = dist[static_cast<size_t>(v)] + 1;
                q.push_back(u);
            }
        }
    }
    std::vector<int64_t> keep;
    for (int64_t v = 0; v < n; ++v)
        if (dist[static_cast<size_t>(v)] >= 0) keep.push_back(v);
    return keep;
}

void prune_graph(LayoutGraph& g, const std::vector<int64_t>& keep) {
    const int64_t n = g.num_nodes();
    std::vector<int64_t> new_id(static_cast<size_t>(n), -1);
    for (size_t i = 0; i < keep.size(); ++i)
        new_id[static_cast<size_t>(keep[i])] = static_cast<int64_t>(i);
    std::vector<int32_t> op(keep.size());
    for (size_t i = 0; i < keep.size(); ++i) op[i] = g.node_opcode[static_cast<size_t>(keep[i])];
    std::vector<int64_t> edges;
    for (int64_t e = 0; e < g.num_edges(); ++e) {
        int64_t u = new_id[static_cast<size_t>(g.edge_index[2 * e])];
        int64_t v = new_id[static_cast<size_t>(g.edge_index[2 * e + 1])];
        if (u >= 0 && v >= 0) {
            edges.push_back(u);
            edges.push_back(v);
        }
    }
    for (auto& c : g.node_config_ids) c = new_id[static_cast<size_t>(c)];
    g.node_opcode = std::move(op);
    g.edge_index = std::move(edges);
    g.node_splits = {0, static_cast<int64_t>(keep.size())};
}

}  // namespace segrank
