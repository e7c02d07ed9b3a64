// model.prune_hops (docs/gst.md#pruning): the nodes within R hops of a configurable node, and a
// layout structure restricted to them, before it is partitioned.
#pragma once
#include <cstdint>
#include <span>
#include <vector>

#include "data/graph.h"

namespace segrank {

/// Nodes within `hops` hops (edges taken in either direction) of a node of `config_nodes`,
/// ascending: a breadth-first search from all configurable nodes at once over g's edge_index
/// [m, 2] (model.prune_hops; hops = 0 keeps exactly the configurable nodes). Memory O(n + m).
/// `config_nodes` must be node ids of g in [0, n).
std::vector<int64_t> nodes_near_configurable(const GraphStructure& g,
                                             std::span<const int64_t> config_nodes, int32_t hops);

/// Restricts a layout structure (loaded without node features) to `keep` (ascending node ids of
/// g, as nodes_near_configurable gives them, which must contain every configurable node): opcodes,
/// the edges among kept nodes (in their order), node_config_ids renumbered. node_splits become
/// [0, n'] (boundaries lose meaning). The node features are read later through the kept ids
/// (PreparedGraph::source_node).
void prune_graph(LayoutGraph& g, const std::vector<int64_t>& keep);

}  // namespace segrank
