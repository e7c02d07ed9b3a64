// model.prune_hops: the k-hop neighbourhood of the configurable nodes and the pruned structure.
#include "segments/prune.h"

#include <doctest/doctest.h>

#include <vector>

using namespace segrank;

namespace {

// 0 <- 1 <- 2 <- 3 <- 4 <- 5, and 6 -> 3 (u consumes v); node 3 is the one configurable node:
//
//   0 - 1 - 2 - [3] - 4 - 5
//                |
//                6
LayoutGraph chain_with_branch() {
    LayoutGraph g;
    g.node_opcode = {10, 11, 12, 13, 14, 15, 16};
    g.edge_index = {1, 0, 2, 1, 3, 2, 4, 3, 5, 4, 6, 3};
    g.node_config_ids = {3};
    g.node_splits = {0, 4, 7};
    return g;
}

}  // namespace

TEST_CASE("nodes near the configurable ones are those within the hops, edges in either direction") {
    const LayoutGraph g = chain_with_branch();
    CHECK(nodes_near_configurable(g, g.node_config_ids, 0) == std::vector<int64_t>{3});
    CHECK(nodes_near_configurable(g, g.node_config_ids, 1) == std::vector<int64_t>{2, 3, 4, 6});
    CHECK(nodes_near_configurable(g, g.node_config_ids, 2) ==
          std::vector<int64_t>{1, 2, 3, 4, 5, 6});
    CHECK(nodes_near_configurable(g, g.node_config_ids, 9) ==
          std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6});
    const std::vector<int64_t> two{0, 5};  // several sources at once
    CHECK(nodes_near_configurable(g, two, 1) == std::vector<int64_t>{0, 1, 4, 5});
}

TEST_CASE("a pruned layout structure keeps the edges among kept nodes, renumbered") {
    LayoutGraph g = chain_with_branch();
    const std::vector<int64_t> keep = nodes_near_configurable(g, g.node_config_ids, 1);
    prune_graph(g, keep);  // kept 2, 3, 4, 6 -> 0, 1, 2, 3
    CHECK(g.node_opcode == std::vector<int32_t>{12, 13, 14, 16});
    CHECK(g.edge_index == std::vector<int64_t>{1, 0, 2, 1, 3, 1});
    CHECK(g.node_config_ids == std::vector<int64_t>{1});
    CHECK(g.node_splits == std::vector<int64_t>{0, 4});
}
