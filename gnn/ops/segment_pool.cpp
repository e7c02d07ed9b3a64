// Node pooling kernels; parallel over column blocks so each output column has one writer.
#include "gnn/ops/segment_pool.h"

#include <limits>

#include "gnn/core/op_timer.h"
#include "gnn/core/parallel.h"

namespace segrank {

void pool_forward(std::span<float> out, std::span<int32_t> argmax, ConstMatrixView x,
                  Pooling pooling) {
    const OpScope op_scope(OpCategory::kGatherScatter);
    SEGRANK_CHECK(static_cast<int64_t>(out.size()) == x.cols, "pool_forward: out has ", out.size(),
                  " entries, expected ", x.cols);
    SEGRANK_CHECK(pooling != Pooling::kMax || static_cast<int64_t>(argmax.size()) == x.cols,
                  "pool_forward: max pooling needs argmax of ", x.cols, " entries");
    parallel_for(0, x.cols, 64, [&](int64_t c0, int64_t c1) {
        for (int64_t c = c0; c < c1; ++c) {
            if (pooling == Pooling::kMax) {
                float best = x.rows ? -std::numeric_limits<float>::infinity() : 0.0f;
                int32_t arg = -1;
                for (int64_t r = 0; r < x.rows; ++r)
                    if (x.at(r, c) > best || arg < 0)
                        best = x.at(r, c), arg = static_cast<int32_t>(r);
                out[c] = best;
                argmax[c] = arg;
            } else {
                double s = 0.0;
                for (int64_t r = 0; r < x.rows; ++r) s += x.at(r, c);
                if (pooling == Pooling::kMean && x.rows > 0) s /= static_cast<double>(x.rows);
                out[c] = static_cast<float>(s);
            }
        }
    });
}

void pool_backward(MatrixView dx, std::span<const float> dout, std::span<const int32_t> argmax,
                   Pooling pooling) {
    const OpScope op_scope(OpCategory::kGatherScatter);
    SEGRANK_CHECK(static_cast<int64_t>(dout.size()) == dx.cols, "pool_backward: dout has ",
                  dout.size(), " entries, expected ", dx.cols);
    if (pooling == Pooling::kMax) {
        SEGRANK_CHECK(static_cast<int64_t>(argmax.size()) == dx.cols, "pool_backward: argmax size");
        for (int64_t c = 0; c < dx.cols; ++c)
            if (argmax[c] >= 0) dx.at(argmax[c], c) += dout[c];
        return;
    }
    const float s =
        pooling == Pooling::kMean && dx.rows > 0 ? 1.0f / static_cast<float>(dx.rows) : 1.0f;
    parallel_for(0, dx.rows, 256, [&](int64_t r0, int64_t r1) {
        for (int64_t r = r0; r < r1; ++r) {
            float* d = dx.row(r);
            for (int64_t c = 0; c < dx.cols; ++c) d[c] += s * dout[c];
        }
    });
}

}  // namespace segrank
