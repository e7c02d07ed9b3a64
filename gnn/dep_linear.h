// The projection-first linear of a SAGE layer's dep rows and its adjoint
// (docs/model.md#projection-first), and the K = 1 inputs it (and Model's base rows restricted to
// the independent nodes) reads: pieces of Model::encode / encode_backward (gnn/model_encode.cpp).
#pragma once
#include <cstdint>
#include <span>

#include "gnn/core/tensor.h"
#include "gnn/layers/sage_conv.h"
#include "gnn/model.h"
#include "gnn/ops/mixed_rows.h"
#include "gnn/param_store.h"

namespace segrank {

/// A SAGE layer's three inputs with K = 1 for `nodes`: their rows and their two neighbour means
/// over a mixed state ([m, H] each, m = nodes.size()). Used by the config-independent part of the
/// dep rows and by the base rows restricted to the independent nodes.
struct K1Inputs {
    Tensor self, agg_fwd, agg_bwd;
};

/// The K1Inputs of `nodes` over the mixed state r (r.k = 1; r.base [n, H]).
K1Inputs k1_inputs(const SegmentInput& in, std::span<const int32_t> nodes, const MixedRows& r);

/// Adjoint of k1_inputs: g (K = 1) += the gradients d_self, d_fwd, d_bwd [m, H] of the inputs;
/// out_pos [n] = the row of a node in them (-1 for the others).
void k1_inputs_backward(const SegmentInput& in, std::span<const int32_t> nodes,
                        std::span<const int32_t> out_pos, const MixedGrads& g,
                        ConstMatrixView d_self, ConstMatrixView d_fwd, ConstMatrixView d_bwd);

/// z = W_self h + W_fwd mean_{operands} h + W_bwd mean_{users} h + b for the dep rows of layer l
/// (out [m*K, H], m = |plan.nodes[l]|) from the layer-l-1 state prev (K = prev.k, H = prev.h),
/// projection first (docs/model.md#projection-first): the part that no config changes (b and the
/// terms of rows independent at layer l-1) is computed once per node with K = 1 and broadcast over
/// the K rows; then each weight multiplies the m'*K dep rows of layer l-1 once (m' <= m) and the
/// products are summed into the rows that read them. The same sums as the aggregate-first order,
/// in m'*K instead of m*K GEMM rows.
void dep_linear_forward(const ParamStore& ps, const SageConv& conv, const SegmentInput& in,
                        const DependencePlan& plan, int64_t l, const MixedRows& prev,
                        MatrixView out);

/// Layer l's dep rows without dropout, out [m*K, H] = self + act(LN(z)) with z as in
/// dep_linear_forward and self the layer-l-1 row of each (node, config)
/// (docs/model.md#sage-layers): the three products of the layer-l-1 dep rows first, then one fused
/// pass per output node (dep_layer_fused_forward) instead of a pass per term over [m*K, H]. The
/// same bits as dep_linear_forward followed by SageConv::forward_epilogue; saved (null = inference)
/// receives the epilogue's saved state. Memory: three [m'*K, H] products at once. Throws
/// segrank::Error on shapes.
void dep_layer_forward_fused(const ParamStore& ps, const SageConv& conv, const SegmentInput& in,
                             const DependencePlan& plan, int64_t l, const MixedRows& prev,
                             MatrixView out, SageConv::Saved* saved);

/// Adjoint of dep_linear_forward without the bias (the epilogue's backward takes it): from dz
/// [m*K, H], accumulates the three weight gradients, the dep rows' gradient pg.ddep of layer l-1
/// and, for the rows independent at layer l-1, pg.dbase. dc_sums [m, H]: the sum of each node's K
/// rows of dz when the caller has it (dep_layer_fused_backward), else empty and summed here.
/// Throws segrank::Error when layer l-1 has base rows but pg no base gradient, or on dc's shape.
void dep_linear_backward(ParamStore& ps, const SageConv& conv, const SegmentInput& in,
                         const DependencePlan& plan, int64_t l, const MixedRows& prev,
                         const MixedGrads& pg, ConstMatrixView dz,
                         ConstMatrixView dc_sums = ConstMatrixView{});

/// Adjoint of dep_layer_forward_fused (dropout off): from ddep [m*K, H] = d(layer l's dep rows),
/// overwritten by dz, adds the residual to pg, the LayerNorm, bias and weight gradients to ps and
/// the rest of layer l-1's gradient to pg, with the residual, the epilogue and the row sums of dz
/// in one pass (dep_layer_fused_backward). The same bits as mixed_gather_backward,
/// SageConv::backward_epilogue and dep_linear_backward. saved: the forward's epilogue state.
/// Throws segrank::Error as dep_linear_backward and on shapes.
void dep_layer_backward_fused(ParamStore& ps, const SageConv& conv, const SegmentInput& in,
                              const DependencePlan& plan, int64_t l, const MixedRows& prev,
                              const MixedGrads& pg, MatrixView ddep, const SageConv::Saved& saved);

}  // namespace segrank
