// Config groups and dedupe without holding every config row: rows are read from a
// GraphSource chunk by chunk and reduced to a 128-bit hash each, so memory is O(chunk rows + c)
// instead of O(c * row bytes) (2.5 GB of float32 config features for 10^5 configs x 350 nodes).
#pragma once
#include <cstdint>
#include <span>
#include <vector>

#include "data/graph_source.h"
#include "sampling/dedupe.h"

namespace segrank {

/// Group of each config row of graph i of `source` ([c]; group_of[j] = first row identical to j),
/// the same answer as config_groups() on the rows in memory: layout rows compare as bytes, tile
/// rows as numbers (-0 equals +0, NaN refused naming the row and column). When
/// source.partial_reads(), rows are read max(1, chunk_bytes / row bytes) at a time (row bytes = nc
/// * 18 for layout, 96 for tile), else in one load (npz). Two rows are taken as identical when
/// their 128-bit hashes agree (collision probability about c^2 / 2^129). Throws segrank::Error from
/// the source, or for chunk_bytes < 1.
std::vector<int64_t> config_groups_streamed(const GraphSource& source, int64_t i,
                                            int64_t num_configs,
                                            int64_t chunk_bytes = int64_t{4} << 20);

/// dedupe_configs() over the configs `subset` (file indices, in order) given the group of every
/// config of the file (`group_of`, [c]) and every config's target (`targets`, [c]). Same result as
/// dedupe_configs on the subset's rows with indices mapped back to file indices: groups are
/// represented by their first member in `subset`, targets are the min / mean over the members in
/// `subset`, kKeep keeps every entry. Throws segrank::Error for an index out of range.
ConfigSet dedupe_by_groups(std::span<const int64_t> group_of, std::span<const int64_t> subset,
                           std::span<const double> targets, DedupeMode mode);

}  // namespace segrank
