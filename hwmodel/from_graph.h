// Approximate HLO modules and configurations rebuilt from TpuGraphs npz records
// (docs/hwmodel.md#graphs-from-npz), so the cost models run on npz graphs: shape dims f21-28,
// element type f2-20, dimensions f31-36, window f37-92, convolution dims f93-108, layout f134-139,
// edges for operands and called computations.
#pragma once
#include <cstdint>
#include <vector>

#include "data/graph.h"
#include "data/hlo/module.h"

namespace segrank::hw {

/// Rebuilds a module from `g`: one instruction per node (id = node index + 1, opcode from
/// node_opcode), computations split after each is_root node (f0), operands = edges to nodes of the
/// same computation in ascending node order (operand order is lost in npz), called computations =
/// edges into other computations. Lost information: literals (so while trip counts fall back to
/// the default), dims beyond the 6th (folded into the 6th from the f28 product), tuple elements,
/// operand order. Throws segrank::Error naming g.source when an edge or opcode is out of range.
hlo::HloModule module_from_graph(const GraphStructure& g);

/// The array shape of one raw node_feat row `f` ([140], docs/files.md#node-features): element type
/// f2-20, dims f21-26 (the leading non-zero ones; rank > 6 folded into the 6th from the f28
/// product), layout f134-139 read for the real dims only (the files pad with 0 past the rank) and
/// kept when it is a permutation of them (a rank >= 2 all-zero block is padding: no layout, i.e.
/// descending). Tuples come back as an empty tuple.
hlo::Shape shape_from_features(const float* f);

/// Tile bounds of config_feat row `row` ([24] floats, docs/files.md#tile-config-features): the
/// leading non-zero entries of slots 0-5 (kernel), 8-13 (output) and 16-21 (input).
hlo::TileSizeConfig tile_config_from_features(const float* row);

/// Element type (xla::PrimitiveType value) of a one-hot f2-20 block; kInvalid when none is set.
int32_t element_type_from_features(const float* f2_to_20);

}  // namespace segrank::hw
