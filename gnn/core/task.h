// The two TpuGraphs tasks, shared by the data records (data/graph.h) and the model (gnn/model.h).
#pragma once
#include <span>
#include <string_view>

#include "gnn/core/enum_names.h"

namespace segrank {

/// tile: one config vector per kernel graph; layout: per-node layout configs of a whole module.
enum class Task { kTile, kLayout };

/// Names: "tile", "layout".
std::span<const EnumName<Task>> enum_names(Task);
/// Parses "tile" | "layout"; throws segrank::Error listing the valid names.
Task parse_task(std::string_view s);
std::string_view to_string(Task t);

}  // namespace segrank
