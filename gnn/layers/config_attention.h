// Cross-config attention (docs/model.md#cross-config-attention): per node, its K config rows
// attend to each other with one residual single-head scaled dot-product attention,
//   h'_{v,k} = h_{v,k} + W_o sum_k' softmax_k'(q_{v,k} . key_{v,k'} / sqrt(d)) val_{v,k'},
// q / key / val = W_q / W_k / W_v h ([d, H] each), W_o [H, d]. A base row stands for K equal rows,
// whose attention returns val itself: h' = h + W_o W_v h, computed once.
#pragma once
#include <string>

#include "gnn/param_store.h"

namespace segrank {

/// Parameters "<name>.w_q|w_k|w_v" [d, H] (U(-1/sqrt(H), 1/sqrt(H)), decay) and "<name>.w_o"
/// [H, d] (zeros, decay: the layer starts as the identity, so a model with it starts as the model
/// without it).
struct ConfigAttention {
    ParamId w_q = -1, w_k = -1, w_v = -1, w_o = -1;
    int64_t hidden = 0;  ///< H
    int64_t dim = 0;     ///< d

    /// Saved state of one forward (training): the input rows, the attention weights and the
    /// attention output before W_o.
    struct Saved {
        Tensor x;      ///< [R, H] input rows
        Tensor probs;  ///< [R, K] softmax weights (row v*K + k: over k' of node v); empty for base
        Tensor ctx;    ///< [R, d] sum_k' p val (base rows: val)
        int64_t k = 0;
    };

    static ConfigAttention create(ParamStore& store, const std::string& name, int64_t hidden,
                                  int64_t dim);
    /// In place on rows [m*K, H], node i's K config rows at i*K .. i*K+K-1. saved null =
    /// inference. Throws segrank::Error when rows is not [m*K, H] for k >= 1.
    void forward(const ParamStore& store, MatrixView rows, int64_t k, Saved* saved) const;
    /// Adjoint of forward, in place: drows [R, H] holds dL/dh' on entry and dL/dh on return;
    /// accumulates the four weight gradients.
    void backward(ParamStore& store, MatrixView drows, const Saved& saved) const;
    /// Base rows [n, H], each standing for K equal config rows: rows += (rows W_v^T) W_o^T.
    /// saved null = inference.
    void forward_base(const ParamStore& store, MatrixView rows, Saved* saved) const;
    /// Adjoint of forward_base, in place like backward (no gradient for W_q, W_k).
    void backward_base(ParamStore& store, MatrixView drows, const Saved& saved) const;
};

}  // namespace segrank
