// Layout byte features of a layout configuration at its configurable nodes
// (docs/model.md#layout-byte-features): per configurable node and config, the padded bytes of the
// configured output / input / kernel layouts against the tensors' own layouts. Operand slots are
// matched by rank as in the timing model (match_layout_operands,
// docs/hwmodel.md#operand-order-is-not-stored).
#pragma once
#include <cstdint>
#include <span>
#include <vector>

#include "data/graph_source.h"
#include "data/hlo/module.h"

namespace segrank::hw {

/// What the features of one graph need, gathered once: the shapes (with their own layouts) of
/// every configurable node, its operands and its users (the users count only in scale_bytes).
/// Node lists are in ascending node id (the order match_layout_operands breaks ties in).
struct LayoutNeighbourhood {
    std::vector<hlo::Shape> shapes;  ///< [u] involved nodes, ascending node id
    std::vector<int32_t> self;       ///< [nc] entry of each configurable node in `shapes`
    std::vector<int64_t> op_begin;   ///< [nc + 1] offsets into `operands`
    std::vector<int32_t> operands;   ///< entries in `shapes`, per node ascending, distinct
    /// Sum of padded_bytes of every involved array shape under its own layout (at least 1): the
    /// per-graph unit of layout_byte_features.
    double scale_bytes = 1.0;

    int64_t num_config_nodes() const { return static_cast<int64_t>(self.size()); }
    /// Heap bytes held (approximate for the shapes).
    int64_t memory_bytes() const;
};

/// Gathers the neighbourhood of graph i of `source` (a layout source): node_config_ids from
/// load_structure_index, edges read `edge_chunk` rows at a time (an edge (u, v) makes v an operand
/// of u), then the raw node_feat rows of the nodes involved, turned into shapes by
/// shape_from_features. Memory O(edge_chunk + involved nodes). Throws segrank::Error naming the
/// source for an edge id outside [0, n) or a read failure.
LayoutNeighbourhood layout_neighbourhood(const GraphSource& source, int64_t i,
                                         int64_t edge_chunk = int64_t{1} << 20);

/// Byte features per (config, configurable node) (docs/model.md#layout-byte-features): for each
/// layout tensor t = output, input (operand slot 1), kernel (operand slot 2), in this order, three
/// numbers:
///   3t + 0  log2(padded bytes under the configured layout / padded bytes under the tensor's own);
///   3t + 1  (padded bytes configured - own) / nb.scale_bytes;
///   3t + 2  (own + configured padded bytes) / nb.scale_bytes when the configured layout differs
///           from the tensor's own (the copy the timing model charges), else 0.
/// The tensor of t = 0 is the node's output, of t = 1, 2 the operand matched by rank
/// (match_layout_operands), under that operand's own layout (node_feat, as the timing model charges
/// copies against the module's layouts, docs/hwmodel.md#modules-under-a-layout-config). An unset,
/// unmatched or inapplicable tensor (a listed dim out of range or repeated) and tuple shapes give
/// 0 0 0. `values` is one config's node_config_feat row [nc, 18] (-1..5), `out`
/// [nodes.size(), kLayoutByteFeatures] for configurable nodes `nodes` (indices 0..nc-1). Throws
/// segrank::Error on size mismatches or an index out of range.
inline constexpr int64_t kLayoutByteFeatures = 9;
void layout_byte_features(const LayoutNeighbourhood& nb, std::span<const int8_t> values,
                          std::span<const int32_t> nodes, std::span<float> out);
/// The same from the config rows of `nodes` only: `node_rows` [nodes.size(), 18], row r the row of
/// configurable node nodes[r] (a node's features read only its own row, so a reader holding a block
/// of nc's columns gets the same numbers). Throws segrank::Error on size mismatches or an index out
/// of range.
void layout_byte_features_of_rows(const LayoutNeighbourhood& nb, std::span<const int8_t> node_rows,
                                  std::span<const int32_t> nodes, std::span<float> out);

/// Access features per (config, configurable node) (docs/model.md#layout-access-features): for
/// each layout tensor t = output, input, kernel (as layout_byte_features), five numbers, all 0
/// unless the configured layout is set, applicable and differs from the tensor's own (a relayout):
///   5t + 0  1: the tensor is relayouted (a copy or transpose is needed);
///   5t + 1  1 when the minor-most physical dim changes (size-1 dims skipped): a lane transpose;
///   5t + 2  1 when the second-minor physical dim changes (size-1 dims skipped): a sublane move;
///   5t + 3  log2(runs) / 16, runs = elements / run, run = the elements contiguous in both layouts
///           (the product of the minor-most non-size-1 dims the two layouts share, in order);
///   5t + 4  log2(run x element bytes) / 16: the bytes of each contiguous run.
/// `node_rows` [nodes.size(), 18], row r the config row of configurable node nodes[r]; `out`
/// [nodes.size(), kLayoutAccessFeatures]. Throws segrank::Error on size mismatches or an index
/// out of range.
inline constexpr int64_t kLayoutAccessFeatures = 15;
void layout_access_features_of_rows(const LayoutNeighbourhood& nb,
                                    std::span<const int8_t> node_rows,
                                    std::span<const int32_t> nodes, std::span<float> out);

/// The layout feature blocks of a model's feature rows, in this order: the byte features
/// (model.layout_bytes), the access features (model.layout_access).
struct LayoutFeatureSets {
    bool bytes = false;
    bool access = false;
    /// Values per row: the sum of the widths of the blocks that are on.
    int64_t width() const {
        return (bytes ? kLayoutByteFeatures : 0) + (access ? kLayoutAccessFeatures : 0);
    }
};

/// The rows of `sets` for configurable nodes `nodes` (node_rows as layout_byte_features_of_rows):
/// `out` [nodes.size(), sets.width()], each row its byte, access and tiling features (the blocks
/// that are on, in this order). Throws segrank::Error on size mismatches or an index out of
/// range.
void layout_features_of_rows(const LayoutNeighbourhood& nb, LayoutFeatureSets sets,
                             std::span<const int8_t> node_rows, std::span<const int32_t> nodes,
                             std::span<float> out);

}  // namespace segrank::hw
