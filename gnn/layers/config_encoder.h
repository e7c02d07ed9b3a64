// Config encoders (docs/model.md#config-encoders). Layout: 18 slots x one-hot over the values -1..5
// (126 dims, all zero for non-configurable nodes) -> Linear(126 -> config_dim, bias). Tile: 24
// values, signed log sign(x) log1p(|x|) -> Linear(24 -> config_dim, bias).
#pragma once
#include <span>
#include <string>

#include "gnn/core/format.h"
#include "gnn/layers/linear.h"

namespace segrank {

/// Values of a layout config slot: -1..5 (kLayoutConfigDim slots, gnn/core/format.h).
inline constexpr int64_t kLayoutValues = 7;
/// Layout byte features per (config, configurable node) (docs/model.md#layout-byte-features;
/// hwmodel/layout_bytes.h's kLayoutByteFeatures must agree).
inline constexpr int64_t kLayoutByteFeatures = 9;
/// Layout access features per (config, configurable node) (docs/model.md#layout-access-features;
/// hwmodel/layout_bytes.h's kLayoutAccessFeatures must agree).
inline constexpr int64_t kLayoutAccessFeatures = 15;
/// Tile cost features per config (docs/model.md#tile-cost-features; computed by
/// hwmodel/tile_cost_features.h, whose kTileCostFeatures must agree).
inline constexpr int64_t kTileCostFeatures = 14;

/// Layout encoder: the one-hot product is a gather-sum of weight columns (no 126-wide GEMM).
struct LayoutConfigEncoder {
    Linear linear;  ///< "<name>": [config_dim, 126] + bias

    static LayoutConfigEncoder create(ParamStore& store, const std::string& name,
                                      int64_t config_dim);
    /// out[r] = b + sum_s W[:, 7 s + values[r, s] + 1]. out: [R, config_dim]; values: [R, 18] in
    /// -1..5 (validated: segrank::Error naming row and slot).
    void forward(const ParamStore& store, MatrixView out, std::span<const int8_t> values) const;
    /// dW[:, 7 s + v + 1] += dout[r]; db += sum_r dout[r].
    void backward(ParamStore& store, std::span<const int8_t> values, ConstMatrixView dout) const;
    /// The output of a non-configurable node (all-zero one-hot): the bias. out: [config_dim].
    std::span<const float> zero_code(const ParamStore& store) const;
};

/// Tile encoder.
struct TileConfigEncoder {
    Linear linear;  ///< "<name>": [config_dim, 24] + bias

    static TileConfigEncoder create(ParamStore& store, const std::string& name, int64_t config_dim);
    /// out: [K, config_dim]; config: [K, 24] raw values (signed log applied here).
    void forward(const ParamStore& store, MatrixView out, ConstMatrixView config) const;
    void backward(ParamStore& store, ConstMatrixView config, ConstMatrixView dout) const;
};

/// sign(x) * log1p(|x|) of every element: out, in: [R, C].
void signed_log(MatrixView out, ConstMatrixView in);

}  // namespace segrank
