// Score head (docs/model.md#readout-and-head): MLP in -> H -> 1 with the model activation; in = 2H
// (+ config_dim for the tile late join). One scalar score per (segment, config) row.
#pragma once
#include <span>
#include <string>

#include "gnn/layers/linear.h"
#include "gnn/ops/pointwise.h"

namespace segrank {

/// Parameters "<name>1.weight|bias" [H, in], "<name>2.weight|bias" [1, H].
struct MlpHead {
    Linear l1;
    Linear l2;
    Activation act = Activation::kGelu;

    struct Saved {
        Tensor x;    ///< [K, in] input copy
        Tensor pre;  ///< [K, H] l1 output (activation input)
        Tensor a;    ///< [K, H] activation output
    };

    static MlpHead create(ParamStore& store, const std::string& name, int64_t in, int64_t hidden,
                          Activation act);
    /// scores: [K]; x: [K, in]. saved null = inference.
    void forward(const ParamStore& store, std::span<float> scores, ConstMatrixView x,
                 Saved* saved) const;
    /// dx: [K, in] += d/dx (skipped when dx.data is null); parameter grads accumulate. dscores:
    /// [K].
    void backward(ParamStore& store, MatrixView dx, std::span<const float> dscores,
                  const Saved& saved) const;
};

}  // namespace segrank
