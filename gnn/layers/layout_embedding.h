// Layout-aware inputs (docs/model.md#layout-embedding): the node's current output layout (its own
// minor_to_major, or the configured output layout on a configurable node) and the configured input
// and kernel layouts go through one learned per-value table; with the sizes of the dims the output
// layout puts minor-most they give an [H] term added to the node's input-layer pre-activation.
#pragma once
#include <cstdint>
#include <span>
#include <string>

#include "gnn/param_store.h"

namespace segrank {

/// Positions per row: 6 output (or own) layout positions, then 6 input and 6 kernel positions,
/// in the order of node_config_feat (docs/files.md#npz-files).
inline constexpr int64_t kLayoutEmbedPositions = 18;
/// Table rows: 0 = past the tensor's rank (padding), 1 = unset (-1, the compiler's choice), 2..7 =
/// dimension 0..5, 8 = no configured tensor (input / kernel of a node that is not configurable).
inline constexpr int64_t kLayoutEmbedValues = 9;
/// Size features per row: log1p(size of the dim at output layout position i), i = 0..5 (0 at
/// padding or unset positions), then the log of the (8, 128) tile padding of the two minor-most
/// dims, log(roundup(s0, 128) / s0) + log(roundup(s1, 8) / s1) (each term 0 when its dim is
/// unknown or the rank too small).
inline constexpr int64_t kLayoutEmbedSizes = 7;
/// Dims per node in SegmentInput::node_layout / node_dims.
inline constexpr int64_t kLayoutRankMax = 6;

/// The embedding inputs of one row. own_m2m [6]: the node's own minor_to_major for its real dims,
/// -1 past its rank (so the rank is the count of entries >= 0); dims [6]: its dim sizes (0 past
/// the rank). cfg: the node's configured values [18] (-1..5) in one config, or null for a node
/// that is not configurable. The output positions use cfg[0..5] when any of them is set (>= 0),
/// else the node's own layout (an unset output keeps the node's layout). Writes idx [18] (table
/// rows) and sizes [7].
void layout_embedding_row(const int8_t* own_m2m, const float* dims, const int8_t* cfg, int8_t* idx,
                          float* sizes);

/// Parameters "<name>.table" [9, d] (N(0, 1), no decay), "<name>.weight" [H, 18 d] (decay) and
/// "<name>.size_weight" [H, 7] (decay); no bias.
/// out[r] += W [E[idx[r, 0]], ..., E[idx[r, 17]]] + W_s sizes[r].
struct LayoutEmbedding {
    ParamId table = -1, weight = -1, size_weight = -1;
    int64_t width = 0;   ///< d
    int64_t hidden = 0;  ///< H

    static LayoutEmbedding create(ParamStore& store, const std::string& name, int64_t width,
                                  int64_t hidden);
    /// out [R, H] += the embedding of idx [R, 18] (rows 0..8) and sizes [R, 7]. Throws
    /// segrank::Error on sizes or an index outside 0..8.
    void forward(const ParamStore& store, MatrixView out, std::span<const int8_t> idx,
                 std::span<const float> sizes) const;
    /// Accumulates the gradients of table, weight and size_weight from dout [R, H].
    void backward(ParamStore& store, std::span<const int8_t> idx, std::span<const float> sizes,
                  ConstMatrixView dout) const;
};

}  // namespace segrank
