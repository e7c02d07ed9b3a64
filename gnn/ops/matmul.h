// Dense matmul on strided views (docs/model.md#kernels): C = op(A) op(B) [+ C] [+ bias]. Dispatches
// to oneDNN (gnn/ops/dnnl_matmul.cpp, built when SEGRANK_WITH_DNNL=1) or to the naive reference
// kernel.
#pragma once
#include "gnn/core/tensor.h"

namespace segrank {

/// Arguments of one product. op(A) is A or A^T (A stored [K, M] when transposed), op(B) likewise
/// (B stored [N, K] when transposed). Transposes are expressed through strides, never materialized.
struct MatmulArgs {
    bool trans_a = false;
    bool trans_b = false;
    bool accumulate = false;      ///< C += product (else C = product)
    const float* bias = nullptr;  ///< optional [N], added to every row of C
};

/// c: [M, N]; a: [M, K] (or [K, M] with trans_a); b: [K, N] (or [N, K] with trans_b).
/// Throws segrank::Error with the shapes when they disagree or when oneDNN fails.
/// Must be called from the main compute thread, outside any parallel region (oneDNN rule).
void matmul(MatrixView c, ConstMatrixView a, ConstMatrixView b, const MatmulArgs& args = {});

/// The naive OpenMP reference (test oracle and fallback); same contract as `matmul`.
void matmul_reference(MatrixView c, ConstMatrixView a, ConstMatrixView b,
                      const MatmulArgs& args = {});

/// Linear forward: y[M, N] = x[M, K] w[N, K]^T + b[N] (torch layout); accumulate adds into y.
void linear_forward(MatrixView y, ConstMatrixView x, ConstMatrixView w, const float* b,
                    bool accumulate = false);
/// Linear backward, accumulating: dx[M, K] += dy w (if dx.data); dw[N, K] += dy^T x; db[N] +=
/// colsum(dy) (if db). dy: [M, N].
void linear_backward(MatrixView dx, MatrixView dw, float* db, ConstMatrixView dy, ConstMatrixView x,
                     ConstMatrixView w);

/// Floating-point operations (2 m n k per product, bias and accumulation not counted) of every
/// matmul() call of this process since the last reset (relaxed atomic; for benchmarks).
int64_t matmul_flops();
/// Sets the matmul_flops() counter to 0.
void reset_matmul_flops();

namespace detail {
/// oneDNN implementation (dnnl_matmul.cpp); shapes already validated.
void dnnl_matmul(MatrixView c, ConstMatrixView a, ConstMatrixView b, const MatmulArgs& args,
                 int64_t m, int64_t k, int64_t n);
/// Number of cached oneDNN primitives (for tests of the cache).
int64_t dnnl_cache_size();
}  // namespace detail

}  // namespace segrank
