// The pooled independent nodes and the argument check of the two readouts.
#include "gnn/ops/readout_common.h"

#include <limits>

#include "gnn/core/check.h"

namespace segrank {

BasePool pool_base(ConstMatrixView base, std::span<const int32_t> pos, int64_t num_pooled,
                   int64_t h) {
    BasePool bp{std::vector<double>(static_cast<size_t>(h), 0.0),
                std::vector<float>(static_cast<size_t>(h), -std::numeric_limits<float>::infinity()),
                std::vector<int32_t>(static_cast<size_t>(h), -1),
                {}};
    for (int32_t v = 0; v < num_pooled; ++v) {
        if (pos[v] >= 0) {
            bp.dep_nodes.push_back(v);
            continue;
        }
        const float* r = base.row(v);
        for (int64_t c = 0; c < h; ++c) {
            bp.sum[c] += r[c];
            if (r[c] > bp.max[c] || bp.arg[c] < 0) bp.max[c] = r[c], bp.arg[c] = v;
        }
    }
    return bp;
}

void check_readout(const char* op, MatrixView out, std::span<int32_t> argmax, bool need_argmax,
                   int64_t num_pooled, size_t n, int64_t k, int64_t h) {
    const bool with_max = out.cols == 2 * h;
    SEGRANK_CHECK(
        out.rows == k && (with_max || out.cols == h) &&
            (need_argmax ? static_cast<int64_t>(argmax.size()) == (with_max ? k * h : 0) : true),
        op, ": out[", out.rows, ",", out.cols, "] argmax ", argmax.size(), " for K=", k, " H=", h,
        " (expected out [K, 2H] with K*H argmax ids, or [K, H] without)");
    SEGRANK_CHECK(num_pooled >= 1 && num_pooled <= static_cast<int64_t>(n), op,
                  ": num_pooled = ", num_pooled, " outside [1, ", n, "]");
}

}  // namespace segrank
