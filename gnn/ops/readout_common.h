// What the dense readout (mixed_readout_forward) and the class readout (class_readout_forward)
// share: the pooled independent nodes, summed once for every config, and the argument check.
#pragma once
#include <cstdint>
#include <span>
#include <vector>

#include "gnn/core/tensor.h"

namespace segrank {

/// The independent pooled nodes of a readout: their column sums and maxima (first argmax; -1 while
/// there is none), shared by every config, and the pooled dep nodes in node order.
struct BasePool {
    std::vector<double> sum;
    std::vector<float> max;
    std::vector<int32_t> arg;
    std::vector<int32_t> dep_nodes;
};

/// Sums and maxima of the pooled nodes v < num_pooled with pos[v] < 0 over their base rows
/// (base: [n, H]), and the pooled nodes with pos[v] >= 0 in dep_nodes.
BasePool pool_base(ConstMatrixView base, std::span<const int32_t> pos, int64_t num_pooled,
                   int64_t h);

/// Throws segrank::Error (prefixed by op) unless out is [K, 2H] (with K*H argmax ids when
/// need_argmax) or [K, H] (no argmax), and 1 <= num_pooled <= n.
void check_readout(const char* op, MatrixView out, std::span<int32_t> argmax, bool need_argmax,
                   int64_t num_pooled, size_t n, int64_t k, int64_t h);

}  // namespace segrank
