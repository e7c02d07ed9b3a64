// Fused passes over a SAGE layer's dep rows [m*K, H] (docs/model.md#projection-first,
// docs/benchmarks.md#where-the-step-goes): one output node's K rows are summed from their
// projected terms and run through LayerNorm, activation and residual while they are in cache,
// instead of one memory-bound pass per term over the whole buffer. Bit for bit the unfused
// kernels: the same row functions in the same order on the same values.
#pragma once
#include <cstdint>
#include <span>

#include "gnn/core/csr.h"
#include "gnn/core/tensor.h"
#include "gnn/ops/mixed_rows.h"
#include "gnn/ops/pointwise.h"

namespace segrank {

/// The inputs of dep_layer_fused_forward besides the layer-l-1 state (K, H from it; m output
/// nodes; m' = the layer-l-1 dep rows).
struct DepLayerTerms {
    ConstMatrixView c;              ///< [m, H] each output node's config-independent part
    ConstMatrixView y_self;         ///< [m', K*H] W_self x of the layer-l-1 dep rows, or 0 rows
    ConstMatrixView y_fwd;          ///< [m', K*H] W_fwd x (0 rows with y_self)
    ConstMatrixView y_bwd;          ///< [m', K*H] W_bwd x (0 rows with y_self)
    const Csr* operands = nullptr;  ///< [n x n] row v: nodes v reads
    const Csr* users = nullptr;     ///< [n x n] operands transposed
    const float* gamma = nullptr;   ///< [H] LayerNorm scale
    const float* beta = nullptr;    ///< [H] LayerNorm shift
    Activation act = Activation::kGelu;
};

/// A SAGE layer's dep rows without dropout, in one pass per output node v = out_nodes[i]: its K
/// rows z = c[i] (each of them) + y_self[p(v)] + inv_deg_operands(v) sum over u in operands(v) of
/// y_fwd[p(u)] + inv_deg_users(v) sum over u in users(v) of y_bwd[p(u)], p = prev.pos (terms with
/// p < 0 are left out: c holds them), then out = prev(v) + act(LN(z)) with prev(v) the row of v in
/// the layer-l-1 state (its dep row, or its base row for each of the K configs). Equal bit for bit
/// to: c broadcast, dep_spmm_accumulate of the self, operand and user terms in this order,
/// mixed_gather_forward of prev as self and layernorm_act_residual_forward. out: [m, K*H]; xhat
/// [m*K, H] and rstd [m*K] (LayerNorm's saved state) written when xhat.data is non-null. Throws
/// segrank::Error on shapes, and when a node independent at layer l-1 has no base row.
void dep_layer_fused_forward(MatrixView out, MatrixView xhat, std::span<float> rstd,
                             std::span<const int32_t> out_nodes, const DepLayerTerms& t,
                             const MixedRows& prev);

/// The LayerNorm state and parameter gradients of dep_layer_fused_backward.
struct DepEpilogueState {
    ConstMatrixView xhat;          ///< [m*K, H] saved by the forward
    std::span<const float> rstd;   ///< [m*K]
    const float* gamma = nullptr;  ///< [H]
    const float* beta = nullptr;   ///< [H]
    Activation act = Activation::kGelu;
    float* dgamma = nullptr;  ///< [H] += (as layernorm_act_backward)
    float* dbeta = nullptr;   ///< [H] +=
    float* dbias = nullptr;   ///< [H] += column sums of dz (the bias of z), or null
};

/// Adjoint of dep_layer_fused_forward's residual and epilogue (dropout off), in one pass over the
/// K rows of each output node v = out_nodes[i]: g [m*K, H] = dL/dout is overwritten by dz = dL/dz;
/// the residual g is added to v's row of the layer-l-1 gradient prev (its dep row, or the sum over
/// the K configs into its base row); e's parameter gradients accumulate; and when dc.data is
/// non-null, dc [m, H] += the sum of each node's K rows of dz (the gradient of the
/// config-independent part c). Equal bit for bit to mixed_gather_backward, layernorm_act_backward
/// and the row sums, in that order (the same row blocks, each node's rows added in config order).
/// Throws segrank::Error on shapes.
void dep_layer_fused_backward(MatrixView g, MatrixView dc, const MixedGrads& prev,
                              std::span<const int32_t> out_nodes, const DepEpilogueState& e);

}  // namespace segrank
