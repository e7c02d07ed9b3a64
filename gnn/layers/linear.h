// Linear layer y = x W^T + b over ParamStore parameters (torch layout W: [out, in]).
#pragma once
#include <string>

#include "gnn/param_store.h"

namespace segrank {

/// Parameters "<name>.weight" [out, in] (decay, Kaiming-uniform) and "<name>.bias" [1, out]
/// (optional).
struct Linear {
    ParamId weight = -1;
    ParamId bias = -1;  ///< -1 when created without bias
    int64_t in = 0;
    int64_t out = 0;

    static Linear create(ParamStore& store, const std::string& name, int64_t in, int64_t out,
                         bool with_bias = true);
    /// y: [M, out] (= x W^T + b, or += with accumulate); x: [M, in].
    void forward(const ParamStore& store, MatrixView y, ConstMatrixView x,
                 bool accumulate = false) const;
    /// dx: [M, in] += dy W (skipped when dx.data is null); dW += dy^T x; db += colsum dy. dy: [M,
    /// out].
    void backward(ParamStore& store, MatrixView dx, ConstMatrixView dy, ConstMatrixView x) const;
};

}  // namespace segrank
