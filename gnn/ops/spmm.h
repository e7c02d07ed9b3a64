// CSR aggregation over a dense operand (docs/architecture.md#tensor-layout-and-config-independence,
// docs/model.md#kernels): out = A x (sum) or D^-1 A x (mean), with x: [num_cols, W] where W = K*H
// (configs as a batch dimension). Backward = the same kernel on A^T.
#pragma once
#include <span>

#include "gnn/core/csr.h"
#include "gnn/core/tensor.h"

namespace segrank {

enum class Reduce { kSum, kMean };

/// out[v] = sum_{u in adj.row(v)} x[u] (times 1/deg(v) for kMean; 0 for empty rows).
/// out: [adj.num_rows, W] (overwritten); x: [adj.num_cols, W]. Throws segrank::Error on shapes.
void spmm_forward(MatrixView out, const Csr& adj, ConstMatrixView x, Reduce reduce);
/// dx[u] += sum_{v in adj_t.row(u)} s_v dout[v], s_v = 1 (kSum) or fwd_inv_deg[v] (kMean).
/// adj_t = adj.transpose(); fwd_inv_deg = adj.inverse_degrees() (ignored for kSum).
/// dx: [adj.num_cols, W]; dout: [adj.num_rows, W]. Parallel over dx rows: no write conflicts.
void spmm_backward(MatrixView dx, const Csr& adj_t, ConstMatrixView dout,
                   std::span<const float> fwd_inv_deg, Reduce reduce);

}  // namespace segrank
