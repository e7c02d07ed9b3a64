// A small layout graph for store and reader tests: a chain of nodes with two configurable nodes.
#pragma once
#include <cstdint>
#include <string>

#include "data/graph.h"

namespace segrank::test {

/// n nodes in a chain (edges u -> u-1), two configurable nodes (1 and n-1), c configs with runtimes
/// 100, 101, ... ns; node features i % 97 / 7, opcodes alternating 1 / 26, layout slots cycling
/// -1..5. Named `name`, source `name.npz`.
inline LayoutGraph chain_layout(const std::string& name, int64_t n, int64_t c) {
    LayoutGraph g;
    g.name = name;
    g.source = name + ".npz";
    g.node_feat = Tensor(n, kNodeFeatDim);
    for (int64_t i = 0; i < g.node_feat.size(); ++i)
        g.node_feat[i] = static_cast<float>(i % 97) / 7.0f;
    for (int64_t v = 0; v < n; ++v) g.node_opcode.push_back(v % 2 ? 26 : 1);
    for (int64_t u = 1; u < n; ++u) {
        g.edge_index.push_back(u);
        g.edge_index.push_back(u - 1);
    }
    g.node_config_ids = {1, n - 1};
    for (int64_t j = 0; j < c * 2 * kLayoutConfigDim; ++j)
        g.node_config_feat.push_back(static_cast<int8_t>(j % 7 - 1));
    for (int64_t j = 0; j < c; ++j) g.config_runtime.push_back(100 + j);
    g.node_splits = {0, n};
    return g;
}

}  // namespace segrank::test
