// HLO module model -> TpuGraphs graph records (docs/files.md#node-features): node order, edges,
// node_splits, opcode ids, the 140 node features, and the tile (24) / layout (18 per node) config
// features.
#pragma once
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "data/graph.h"
#include "data/hlo/module.h"

namespace segrank::hlo {

/// Opcode id of an XLA opcode string per the 120-entry table of XLA's hlo_opcode.h
/// (docs/files.md#opcode-ids); 0 for unknown strings. The tombstones "trace" (97) and
/// "tuple-select" (101) keep their ids.
int32_t opcode_id(std::string_view opcode);
/// Inverse of opcode_id(): the opcode string of id 1..120, "unknown" for 0 or out-of-range ids.
std::string_view opcode_name(int32_t id);

/// The 140 node features of one instruction (docs/files.md#node-features), raw (unnormalized)
/// float32. `is_root`: the instruction is its computation's root (feature 0).
std::array<float, kNodeFeatDim> node_features(const Instruction& ins, bool is_root);

/// Fills name, node_feat [n, 140], node_opcode [n] and edge_index [m, 2] of `out` from a whole
/// module (docs/files.md#node-order-and-edges, docs/files.md#opcode-ids,
/// docs/files.md#node-features): every instruction of every computation is a node in stored order;
/// edges "user -> producer" over distinct operands plus one edge per called computation to its
/// root, sorted, duplicates removed. Throws segrank::Error (prefixed by `where`) when an operand,
/// callee or root id is missing, an instruction id repeats, or an edge would be a self edge.
void featurize_structure(const HloModule& m, GraphStructure& out, const std::string& where);

/// Computation-group boundaries (docs/files.md#computation-boundaries): [0, ..., n], a boundary
/// after each computation whose name contains "cluster", "while" or "cond", and n last.
std::vector<int64_t> node_splits(const HloModule& m);

/// The 24 tile config features (docs/files.md#tile-config-features): S0(6) of kernel, output and
/// input bounds, where the product of an empty list is 0.
std::array<float, kTileConfigDim> tile_config_features(const TileSizeConfig& t);

/// The 18 layout config values of one configurable node (docs/files.md#layout-config-features): -1
/// everywhere, slot t*6+d = tensors[t][d] for t < 3, d < 6. Throws segrank::Error when there are
/// more than 3 tensors or a value does not fit in int8.
std::array<int8_t, kLayoutConfigDim> layout_config_values(const NodeLayoutConfig& node);

/// Which task a module's runs belong to: kTile if its first run carries op_config, kLayout if
/// module_config; nullopt when it has no runs or the first run has no config.
std::optional<Task> detect_task(const ModuleTuning& mt);

/// Result of featurizing one module: a graph, or why the reference pipeline skips the module.
template <typename G>
struct Featurized {
    std::optional<G> graph;
    std::string skip_reason;  ///< non-empty iff graph is empty
};

/// Tile collection (docs/files.md#tile-collection). Skips (skip_reason set) a module without
/// module, with fewer than 2 runs, or with a run lacking op_config.tile_size_config. Kept runs:
/// error == false and compute_time_ns > 1, in stored order; config_runtime in ns; the normalizer is
/// the compute_time_ns of the first kept is_default run, repeated. Throws segrank::Error naming
/// `where` and the module when no kept run is a default run (the reference fails for the whole
/// file) or no run is kept.
Featurized<TileGraph> featurize_tile(const ModuleTuning& mt, const std::string& where);

/// Layout collection (docs/files.md#layout-collection). node_config_ids = config_index_to_node;
/// kept runs: module_config present, error == false, profile present; node_config_feat [c, nc, 18]
/// int8; node_splits as in docs/files.md#computation-boundaries; config_runtime in ns (not
/// normalized). Skips a module without module or whose kept runs include no is_default run (the
/// reference yields zero samples). Throws segrank::Error when config_index_to_node is empty or out
/// of range, a kept run's layout node count differs from nc, or a kept run has compute_time_ns <=
/// 0.
Featurized<LayoutGraph> featurize_layout(const ModuleTuning& mt, const std::string& where);

}  // namespace segrank::hlo
