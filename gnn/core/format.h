// The TpuGraphs format constants (docs/files.md): the widths of the npz arrays every part of
// segrank reads (data records, the model's encoders, the timing model, the tuner), one name each.
#pragma once

namespace segrank {

/// node_feat columns (docs/files.md#node-features).
inline constexpr int kNodeFeatDim = 140;
/// config_feat columns of a tile config: S0(6) of kernel, output and input bounds
/// (docs/files.md#tile-config-features).
inline constexpr int kTileConfigDim = 24;
/// node_config_feat slots of a layout config per configurable node: 3 tensors x 6 dims, values
/// -1..5 (docs/files.md#layout-config-features).
inline constexpr int kLayoutConfigDim = 18;
/// Opcode ids 0..120, 0 = unknown (docs/files.md#opcode-ids).
inline constexpr int kNumOpcodes = 121;
/// node_loop_trips columns: log2 trips, unknown flag (docs/files.md#loop-trip-counts).
inline constexpr int kLoopTripCols = 2;

}  // namespace segrank
