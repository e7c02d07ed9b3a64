// while_loop_depth (data/loop_depth.h): the while-loop depth of every node from the graph
// structure alone, checked against the module's own call graph on the real U-Net fixture and on a
// hand-built graph with nested loops.
#include "data/loop_depth.h"

#include <doctest/doctest.h>

#include <functional>
#include <map>
#include <set>
#include <vector>

#include "data/hlo/featurizer.h"
#include "gnn/core/check.h"
#include "tests/hlo/hlo_test_util.h"

using namespace segrank;

namespace {

// n nodes, edges (u, v) = u consumes v, roots: the nodes with is_root set, whiles: while nodes.
GraphStructure make_graph(int64_t n, const std::vector<std::pair<int64_t, int64_t>>& edges,
                          const std::set<int64_t>& roots, const std::set<int64_t>& whiles) {
    GraphStructure g;
    g.node_feat = Tensor(n, kNodeFeatDim);
    g.node_opcode.assign(static_cast<size_t>(n), hlo::opcode_id("add"));
    for (int64_t r : roots) g.node_feat.at(r, 0) = 1.0f;
    for (int64_t w : whiles) g.node_opcode[static_cast<size_t>(w)] = hlo::opcode_id("while");
    for (const auto& [u, v] : edges) {
        g.edge_index.push_back(u);
        g.edge_index.push_back(v);
    }
    return g;
}

}  // namespace

TEST_CASE("while_loop_depth counts the loops around each node, nested loops twice") {
    // Inner loop: cond 0-1 (root 1), body 2-3 (root 3). Outer body: 4-6 with the inner while 5
    // (init tuple 4, root 6); outer cond: 7-8 (root 8). Entry: 9-11, while 10 (init 9), root 11.
    const std::vector<std::pair<int64_t, int64_t>> edges = {{1, 0},  {3, 2},  {5, 4},  {5, 1},
                                                            {5, 3},  {6, 5},  {8, 7},  {10, 9},
                                                            {10, 6}, {10, 8}, {11, 10}};
    const GraphStructure g = make_graph(12, edges, {1, 3, 6, 8, 11}, {5, 10});
    CHECK(while_loop_depth(g) == std::vector<uint8_t>{2, 2, 2, 2, 1, 1, 1, 1, 1, 0, 0, 0});
    // Only operands with is_root set are called roots (a while's init tuple is not): without it
    // on 6 the outer loop reaches its condition alone, and the inner loop counts once.
    const GraphStructure h = make_graph(12, edges, {1, 3, 8, 11}, {5, 10});
    CHECK(while_loop_depth(h) == std::vector<uint8_t>{1, 1, 1, 1, 0, 0, 0, 1, 1, 0, 0, 0});
}

TEST_CASE("while_loop_depth refuses edges out of range and missing feature rows") {
    GraphStructure g = make_graph(3, {{1, 0}, {2, 5}}, {2}, {});
    g.source = "bad.npz";
    CHECK_THROWS_WITH_AS(while_loop_depth(g), doctest::Contains("bad.npz: edge 1 (2, 5)"), Error);
    GraphStructure h = make_graph(3, {{1, 0}}, {2}, {});
    h.node_feat = Tensor(2, kNodeFeatDim);
    CHECK_THROWS_AS(while_loop_depth(h), Error);
}

TEST_CASE("while_loop_depth of the U-Net fixture matches the module's call graph") {
    SEGRANK_REQUIRE_SHARED_DATA(data);
    const auto& f = test::fixture(data, "module_tuning_data_layout.pb");
    REQUIRE(f.modules.size() == 1);
    const hlo::HloModule& m = f.modules[0].module;
    auto res = hlo::featurize_layout(f.modules[0], "module_tuning_data_layout.pb");
    REQUIRE(res.graph.has_value());
    const std::vector<uint8_t> depth = while_loop_depth(*res.graph);

    // From the module: a computation's depth is the number of while instructions that call it,
    // directly or through the computations they call.
    std::map<int64_t, size_t> index;
    for (size_t c = 0; c < m.computations.size(); ++c) index[m.computations[c].id] = c;
    std::vector<int> comp_depth(m.computations.size(), 0);
    int whiles = 0;
    for (const auto& comp : m.computations)
        for (const auto& ins : comp.instructions) {
            if (ins.opcode != "while") continue;
            ++whiles;
            std::set<size_t> seen;
            std::function<void(int64_t)> visit = [&](int64_t id) {
                const size_t c = index.at(id);
                if (!seen.insert(c).second) return;
                for (const auto& callee : m.computations[c].instructions)
                    for (int64_t cc : callee.called_computation_ids) visit(cc);
            };
            for (int64_t cc : ins.called_computation_ids) visit(cc);
            for (size_t c : seen) ++comp_depth[c];
        }
    CHECK(whiles == 3);
    std::vector<uint8_t> expected;
    for (size_t c = 0; c < m.computations.size(); ++c)
        expected.insert(expected.end(), m.computations[c].instructions.size(),
                        static_cast<uint8_t>(comp_depth[c]));
    REQUIRE(expected.size() == depth.size());
    CHECK(depth == expected);
    int64_t in_loops = 0;
    for (uint8_t d : depth) in_loops += d > 0;
    // The three while bodies and conditions with what they call; the entry is outside.
    CHECK(in_loops == 67);
    CHECK(depth.back() == 0);
}
