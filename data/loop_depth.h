// While-loop depth of every node of a TpuGraphs graph (docs/model.md#loop-depth): how many while
// loops run the computation that holds it. The 140 node features carry no trip counts (literals
// are not featurized), but which nodes sit in a loop body follows from the structure alone.
#pragma once
#include <cstdint>
#include <vector>

#include "data/graph.h"

namespace segrank {

/// Depth of every node of g ([n], 0 = not inside any while loop; 2 = in a loop nested in another).
/// A while node links to the roots of its condition and body computations (call edges,
/// docs/files.md#node-order-and-edges), and a called computation's nodes reach no node of its
/// caller through operand edges (its parameters have none), so a loop's nodes are everything its
/// while node's called roots reach through edges: the operands of a while node with is_root set
/// (node_feat column 0), and what they reach. Nodes of computations called inside the body
/// (reducers, nested loops) count as inside it. g.node_feat must hold column 0 for every node
/// ([n, >= 1]). Throws segrank::Error naming g.source when node_feat has the wrong row count or an
/// edge leaves [0, n).
std::vector<uint8_t> while_loop_depth(const GraphStructure& g);

}  // namespace segrank
