// Duplicate configuration rows (docs/sampling.md#duplicate-configurations): identical config rows
// measured several times carry different runtimes. For TRAINING only (never evaluation), each group
// of identical rows becomes one candidate ("min" / "mean" runtime) or every row is kept ("keep").
#pragma once
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "gnn/core/enum_names.h"
#include "gnn/core/tensor.h"

namespace segrank {

/// `sampling.dedupe`.
enum class DedupeMode { kMin, kMean, kKeep };

/// Names: "min", "mean", "keep".
std::span<const EnumName<DedupeMode>> enum_names(DedupeMode);
/// Parses "min" | "mean" | "keep"; throws segrank::Error listing the valid names.
DedupeMode parse_dedupe_mode(std::string_view name);
std::string_view to_string(DedupeMode mode);

/// Training candidates of one graph: config indices into the file and their targets.
struct ConfigSet {
    std::vector<int64_t> indices;  ///< [n] config row indices in the file (ascending after dedupe)
    std::vector<double> targets;   ///< [n] runtime (ns) or runtime / normalizer, per index

    int64_t size() const { return static_cast<int64_t>(indices.size()); }
};

/// Dedupes byte rows. rows: [c * row_bytes] (layout: node_config_feat [c, nc, 18] as int8, so
/// row_bytes = nc * 18); runtimes: [c]. Rows are identical iff all their bytes are equal.
/// Each group is represented by its first row (lowest index); target = min or mean of the group's
/// runtimes (kKeep: every row, its own runtime). Result sorted by index. O(c * row_bytes)
/// (hashing). Throws segrank::Error when rows.size() != c * row_bytes or row_bytes < 0 (row_bytes =
/// 0: all rows are identical, e.g. a layout graph without configurable nodes).
ConfigSet dedupe_configs(std::span<const int8_t> rows, int64_t row_bytes,
                         std::span<const double> runtimes, DedupeMode mode);

/// Dedupes float rows (tile config_feat [c, 24]). Values compare as numbers: -0 equals +0.
/// Throws segrank::Error when rows.rows != runtimes.size() or a value is NaN (names row, column).
ConfigSet dedupe_configs(ConstMatrixView rows, std::span<const double> runtimes, DedupeMode mode);

/// Group of each config row: the index of the first row identical to it ([c]; group_of[i] == i for
/// the first row of each group). Same row semantics and errors as dedupe_configs; for holdouts
/// that must move identical rows together (sampling/holdout.h).
std::vector<int64_t> config_groups(std::span<const int8_t> rows, int64_t row_bytes, int64_t c);
/// Float rows ([c, D]); -0 equals +0, NaN refused.
std::vector<int64_t> config_groups(ConstMatrixView rows);

/// int64 runtimes (ns) convenience.
ConfigSet dedupe_configs(std::span<const int8_t> rows, int64_t row_bytes,
                         std::span<const int64_t> runtimes_ns, DedupeMode mode);

}  // namespace segrank
