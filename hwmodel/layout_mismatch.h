// Layout-mismatch signals of a layout configuration at its configurable nodes
// (docs/model.md#layout-mismatch-features): per configurable node and config, whether the
// configured input / kernel layouts agree with what the producers hand over and whether the
// configured output layout agrees with what the users read. Operand slots are matched by rank as in
// the timing model (match_layout_operands, docs/hwmodel.md#operand-order-is-not-stored).
#pragma once
#include <cstdint>
#include <span>
#include <vector>

#include "data/graph_source.h"
#include "data/hlo/module.h"

namespace segrank::hw {

/// Features per (config, configurable node), in this order:
///   0 operand slots whose configured layout differs from the producer's layout (0..2);
///   1 the same as a fraction of the configured (set) operand slots (0 when none is set);
///   2 fraction of users that read another layout than the configured output (0 without users);
///   3 log1p(number of such users);
///   4 1 when the configured output layout differs from the node's own layout, else 0.
inline constexpr int64_t kMismatchFeatures = 5;

/// What the features of one graph need, gathered once: the shapes (with their own layouts) of
/// every configurable node, its operands and its users, and who is configurable. Node lists are in
/// ascending node id (the order match_layout_operands breaks ties in).
struct LayoutNeighbourhood {
    std::vector<hlo::Shape> shapes;   ///< [u] involved nodes, ascending node id
    std::vector<int32_t> config_of;   ///< [u] configurable index 0..nc-1, or -1
    std::vector<int32_t> self;        ///< [nc] entry of each configurable node in `shapes`
    std::vector<int64_t> op_begin;    ///< [nc + 1] offsets into `operands`
    std::vector<int32_t> operands;    ///< entries in `shapes`, per node ascending, distinct
    std::vector<int64_t> user_begin;  ///< [nc + 1] offsets into `users` / `user_slot`
    std::vector<int32_t> users;       ///< entries in `shapes`
    /// Position of the node among the operands of each user when the user is configurable, else
    /// -1.
    std::vector<int32_t> user_slot;
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

/// Features of configurable nodes `nodes` (indices 0..nc-1) under one config: `values` is that
/// config's node_config_feat row [nc, 18] (-1..5), `out` [nodes.size(), kMismatchFeatures].
///
/// The producer's layout is its configured output layout when the producer is configurable and its
/// output tensor is set in this config, else its own (node_feat f134-139, descending when absent).
/// A user reads: when it is configurable and its input or kernel tensor (matched to its operands by
/// rank) falls on this node and is set, that configured layout; otherwise, a user of the same rank
/// its own output layout (elementwise users keep their operands' layout), a user of another rank
/// (reshape, reduce, broadcast, ...) the node's own layout, i.e. what the default program was
/// compiled for. An unset tensor means no change: unset output = own layout, unset input / kernel
/// = no copy. A configured list that cannot be applied to the operand (a dim out of range or
/// repeated) counts as a mismatch. Tuple shapes are skipped. Throws segrank::Error on size
/// mismatches or an index out of range.
void layout_mismatch_features(const LayoutNeighbourhood& nb, std::span<const int8_t> values,
                              std::span<const int32_t> nodes, std::span<float> out);

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
/// unmatched or inapplicable tensor (a listed dim out of range or repeated;
/// layout_mismatch_features flags those) and tuple shapes give 0 0 0. `values` [nc, 18] (-1..5) as
/// in layout_mismatch_features, `out` [nodes.size(), kLayoutByteFeatures]. Throws segrank::Error on
/// size mismatches or an index out of range.
inline constexpr int64_t kLayoutByteFeatures = 9;
void layout_byte_features(const LayoutNeighbourhood& nb, std::span<const int8_t> values,
                          std::span<const int32_t> nodes, std::span<float> out);

}  // namespace segrank::hw
