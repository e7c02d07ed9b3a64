// Pooling over the node rows of a dense [n, W] operand (docs/model.md#readout-and-head): sum, mean,
// or max with the argmax saved for the backward (the gradient goes to one argmax row per column).
#pragma once
#include <cstdint>
#include <span>

#include "gnn/core/tensor.h"

namespace segrank {

enum class Pooling { kSum, kMean, kMax };

/// out[c] = reduce_r x[r, c]. out: [W]; x: [n, W]; argmax: [W] row ids (kMax only, else may be
/// empty). For n == 0 the output is 0 (and argmax -1).
void pool_forward(std::span<float> out, std::span<int32_t> argmax, ConstMatrixView x,
                  Pooling pooling);
/// dx[r, c] += dout[c] (sum), dout[c]/n (mean), or dout[c] at r = argmax[c] (max).
void pool_backward(MatrixView dx, std::span<const float> dout, std::span<const int32_t> argmax,
                   Pooling pooling);

}  // namespace segrank
