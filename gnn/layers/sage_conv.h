// SAGEConv dense part (docs/model.md#sage-layers):
//   h' = h + act(LN(W_self h + W_fwd mean_{operands} h + W_bwd mean_{users} h + b)).
// The neighbour means are computed by the caller (plain or mixed SpMM, so the same layer serves the
// config-independent K=1 rows and the [n*K] config rows); this layer owns the GEMMs, LN, act,
// dropout and the residual. Rows are (node, config) pairs: every input is [R, H].
#pragma once
#include <span>
#include <string>

#include "gnn/ops/pointwise.h"
#include "gnn/param_store.h"

namespace segrank {

/// Dropout applied to act(...) before the residual add (training only). Rows r share the mask of
/// keys[r / group] (the node id), so the K config rows of one node share it
/// (docs/model.md#sage-layers).
struct DropoutSpec {
    float p = 0.0f;
    uint64_t seed = 0;
    std::span<const int32_t> keys;
    int64_t group = 1;
};

/// Parameters "<name>.w_self|w_fwd|w_bwd" [H, H] (decay), "<name>.bias" [1, H],
/// "<name>.ln_gamma" [1, H] (ones), "<name>.ln_beta" [1, H] (zeros).
struct SageConv {
    ParamId w_self = -1, w_fwd = -1, w_bwd = -1, bias = -1, ln_gamma = -1, ln_beta = -1;
    int64_t hidden = 0;
    Activation act = Activation::kGelu;

    /// Saved state of one forward: LayerNorm's normalized input and inverse std.
    struct Saved {
        Tensor xhat;  ///< [R, H]
        Tensor rstd;  ///< [R]
    };

    static SageConv create(ParamStore& store, const std::string& name, int64_t hidden,
                           Activation act);
    /// out: [R, H] (must not alias the inputs); self, agg_fwd, agg_bwd: [R, H]. saved null =
    /// inference. drop null or p == 0: no dropout.
    void forward(const ParamStore& store, MatrixView out, ConstMatrixView self,
                 ConstMatrixView agg_fwd, ConstMatrixView agg_bwd, Saved* saved,
                 const DropoutSpec* drop) const;
    /// The GEMMs alone: out = W_self self + W_fwd agg_fwd + W_bwd agg_bwd + b ([R, H]).
    void forward_linear(const ParamStore& store, MatrixView out, ConstMatrixView self,
                        ConstMatrixView agg_fwd, ConstMatrixView agg_bwd) const;
    /// Adjoint of forward_linear without the bias: d_self, d_agg_fwd, d_agg_bwd [R, H] += dz W
    /// and dW += dz^T x for the three weights.
    void backward_linear(ParamStore& store, MatrixView d_self, MatrixView d_agg_fwd,
                         MatrixView d_agg_bwd, ConstMatrixView dz, ConstMatrixView self,
                         ConstMatrixView agg_fwd, ConstMatrixView agg_bwd) const;
    /// The epilogue alone: out <- self + dropout(act(LN(out))) where out holds z = W_self self +
    /// W_fwd agg_fwd
    /// + W_bwd agg_bwd + b ([R, H]); the caller ran the GEMMs (streaming, one aggregate buffer at a
    /// time). One fused pass when dropout is off. saved null = inference.
    void forward_epilogue(const ParamStore& store, MatrixView out, ConstMatrixView self,
                          Saved* saved, const DropoutSpec* drop) const;
    /// Adjoint of the epilogue without the residual: from dout [R, H] writes dz = dL/dz [R, H] (dz
    /// may alias dout) and accumulates the LN and bias gradients. The caller adds dout to d_self
    /// (residual) before dz overwrites it, then runs the GEMM adjoints (dW += dz^T x, dx = dz W).
    void backward_epilogue(ParamStore& store, MatrixView dz, ConstMatrixView dout,
                           const Saved& saved, const DropoutSpec* drop) const;
    /// Accumulates d_self (incl. the residual), d_agg_fwd, d_agg_bwd ([R, H] each) and the
    /// parameter grads, from dout [R, H] and the same inputs as the forward.
    void backward(ParamStore& store, MatrixView d_self, MatrixView d_agg_fwd, MatrixView d_agg_bwd,
                  ConstMatrixView dout, ConstMatrixView self, ConstMatrixView agg_fwd,
                  ConstMatrixView agg_bwd, const Saved& saved, const DropoutSpec* drop) const;
};

}  // namespace segrank
