#include "data/loop_depth.h"

#include <algorithm>

#include "data/hlo/featurizer.h"
#include "gnn/core/check.h"

namespace segrank {

std::vector<uint8_t> while_loop_depth(const GraphStructure& g) {
    const int64_t n = g.num_nodes(), m = g.num_edges();
    SEGRANK_CHECK(g.node_feat.rows() == n && g.node_feat.cols() >= 1, g.source.string(),
                  ": while_loop_depth needs node_feat column 0 (is_root) of all ", n,
                  " nodes, got [", g.node_feat.rows(), ", ", g.node_feat.cols(), "]");
    // Operands of each node (edge (u, v): u consumes v), as offsets into one array.
    std::vector<int64_t> start(static_cast<size_t>(n) + 1, 0), operand(static_cast<size_t>(m));
    for (int64_t e = 0; e < m; ++e) {
        const int64_t u = g.edge_index[static_cast<size_t>(2 * e)];
        const int64_t v = g.edge_index[static_cast<size_t>(2 * e + 1)];
        SEGRANK_CHECK(u >= 0 && u < n && v >= 0 && v < n, g.source.string(), ": edge ", e, " (", u,
                      ", ", v, ") outside [0, ", n, ")");
        ++start[static_cast<size_t>(u) + 1];
    }
    for (int64_t u = 0; u < n; ++u)
        start[static_cast<size_t>(u) + 1] += start[static_cast<size_t>(u)];
    std::vector<int64_t> fill(start.begin(), start.end() - 1);
    for (int64_t e = 0; e < m; ++e) {
        const auto u = static_cast<size_t>(g.edge_index[static_cast<size_t>(2 * e)]);
        operand[static_cast<size_t>(fill[u]++)] = g.edge_index[static_cast<size_t>(2 * e + 1)];
    }
    const int32_t kWhile = hlo::opcode_id("while");
    std::vector<uint8_t> depth(static_cast<size_t>(n), 0);
    std::vector<int64_t> mark(static_cast<size_t>(n), -1), stack;
    for (int64_t w = 0; w < n; ++w) {
        if (g.node_opcode[static_cast<size_t>(w)] != kWhile) continue;
        // The loop's called roots: operands with is_root set (the init tuple lives in the caller).
        stack.clear();
        for (int64_t i = start[static_cast<size_t>(w)]; i < start[static_cast<size_t>(w) + 1];
             ++i) {
            const int64_t r = operand[static_cast<size_t>(i)];
            if (g.node_feat.at(r, 0) != 0.0f && mark[static_cast<size_t>(r)] != w) {
                mark[static_cast<size_t>(r)] = w;
                stack.push_back(r);
            }
        }
        while (!stack.empty()) {
            const int64_t v = stack.back();
            stack.pop_back();
            auto& d = depth[static_cast<size_t>(v)];
            d = static_cast<uint8_t>(std::min(255, d + 1));
            for (int64_t i = start[static_cast<size_t>(v)]; i < start[static_cast<size_t>(v) + 1];
                 ++i) {
                const int64_t x = operand[static_cast<size_t>(i)];
                if (mark[static_cast<size_t>(x)] != w) {
                    mark[static_cast<size_t>(x)] = w;
                    stack.push_back(x);
                }
            }
        }
    }
    return depth;
}

}  // namespace segrank
