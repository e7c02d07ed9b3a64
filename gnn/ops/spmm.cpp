// CSR SpMM kernels: OpenMP over output rows, contiguous K*H inner loops.
#include "gnn/ops/spmm.h"

#include <cstring>

#include "gnn/core/op_timer.h"
#include "gnn/core/parallel.h"

namespace segrank {

void spmm_forward(MatrixView out, const Csr& adj, ConstMatrixView x, Reduce reduce) {
    const OpScope op_scope(OpCategory::kSpmm);
    SEGRANK_CHECK(out.rows == adj.num_rows() && x.rows == adj.num_cols() && out.cols == x.cols,
                  "spmm_forward: out[", out.rows, ",", out.cols, "] = A[", adj.num_rows(), "x",
                  adj.num_cols(), "] x[", x.rows, ",", x.cols, "] do not agree");
    const auto indptr = adj.indptr();
    const auto indices = adj.indices();
    const auto inv = adj.inverse_degrees();
    const int64_t w = x.cols;
    parallel_for(0, adj.num_rows(), 16, [&](int64_t r0, int64_t r1) {
        for (int64_t v = r0; v < r1; ++v) {
            float* o = out.row(v);
            std::memset(o, 0, sizeof(float) * static_cast<size_t>(w));
            for (int64_t e = indptr[v]; e < indptr[v + 1]; ++e) {
                const float* xi = x.row(indices[e]);
                for (int64_t c = 0; c < w; ++c) o[c] += xi[c];
            }
            if (reduce == Reduce::kMean) {
                const float s = inv[v];
                for (int64_t c = 0; c < w; ++c) o[c] *= s;
            }
        }
    });
}

void spmm_backward(MatrixView dx, const Csr& adj_t, ConstMatrixView dout,
                   std::span<const float> fwd_inv_deg, Reduce reduce) {
    const OpScope op_scope(OpCategory::kSpmm);
    SEGRANK_CHECK(
        dx.rows == adj_t.num_rows() && dout.rows == adj_t.num_cols() && dx.cols == dout.cols,
        "spmm_backward: dx[", dx.rows, ",", dx.cols, "] += A^T[", adj_t.num_rows(), "x",
        adj_t.num_cols(), "] dout[", dout.rows, ",", dout.cols, "] do not agree");
    SEGRANK_CHECK(
        reduce == Reduce::kSum || static_cast<int64_t>(fwd_inv_deg.size()) == adj_t.num_cols(),
        "spmm_backward: ", fwd_inv_deg.size(), " inverse degrees for ", adj_t.num_cols(), " rows");
    const auto indptr = adj_t.indptr();
    const auto indices = adj_t.indices();
    const int64_t w = dx.cols;
    parallel_for(0, adj_t.num_rows(), 16, [&](int64_t r0, int64_t r1) {
        for (int64_t u = r0; u < r1; ++u) {
            float* d = dx.row(u);
            for (int64_t e = indptr[u]; e < indptr[u + 1]; ++e) {
                const int32_t v = indices[e];
                const float s = reduce == Reduce::kMean ? fwd_inv_deg[v] : 1.0f;
                const float* g = dout.row(v);
                for (int64_t c = 0; c < w; ++c) d[c] += s * g[c];
            }
        }
    });
}

}  // namespace segrank
