// HistoryTable (docs/gst.md#history-table): rank-local store of historical segment outputs for
// Graph Segment Training, keyed exactly by (graph id, config index in the graph's file, segment
// id). A row holds all segments of one (graph, config); rows are evicted whole, least recently used
// first, to keep the estimated memory under `segments.history_max_mb`. Values are constants:
// backward never writes here.
#pragma once
#include <cstdint>
#include <functional>
#include <list>
#include <memory>
#include <optional>
#include <span>
#include <unordered_map>
#include <vector>

#include "gnn/core/tensor.h"

namespace segrank {

/// Counters of a HistoryTable (monotone except rows/entries/bytes, which are current sizes).
struct HistoryStats {
    int64_t rows = 0;          ///< live (graph, config) rows
    int64_t entries = 0;       ///< live (graph, config, segment) values
    int64_t bytes = 0;         ///< estimated heap bytes of the live rows (what the cap bounds)
    int64_t hits = 0;          ///< lookups that returned a value
    int64_t misses = 0;        ///< lookups without a value (absent or too stale)
    int64_t stale = 0;         ///< the part of `misses` caused by max_staleness
    int64_t evicted_rows = 0;  ///< rows dropped by the memory cap
};

/// Plain-array form for checkpoints and for moving shards between ranks. Rows appear from least to
/// most recently used, the entries of a row consecutively, so import reproduces the LRU order.
struct HistoryArrays {
    int32_t width = 0;            ///< floats per value (1 for score_sum, 2H for embedding_mean)
    std::vector<int64_t> graphs;  ///< [G] registered graph ids
    std::vector<int32_t> graph_segments;  ///< [G] their segment counts S
    std::vector<int64_t> keys;            ///< [E, 3] row-major (graph, config, segment)
    std::vector<int64_t> steps;           ///< [E] step each value was written
    std::vector<float> values;            ///< [E, width]

    int64_t num_entries() const { return static_cast<int64_t>(steps.size()); }
};

/// One stored value: a view into the table, valid until the next non-const call.
struct HistoryEntry {
    std::span<const float> value;  ///< [width]
    int64_t step = 0;              ///< training step whose forward pass produced it
};

/// Rank-local (graphs, not segments, are sharded across ranks). Not thread-safe: used from the
/// training thread only. Memory: per row S * (4 * width + 4) bytes plus a fixed overhead estimate.
class HistoryTable {
public:
    /// width: floats per value (>= 1); max_bytes: cap on stats().bytes, 0 = unlimited.
    /// Throws segrank::Error for width < 1 or max_bytes < 0.
    HistoryTable(int32_t width, int64_t max_bytes);
    HistoryTable(const HistoryTable&) = delete;
    HistoryTable& operator=(const HistoryTable&) = delete;
    HistoryTable(HistoryTable&&) noexcept = default;
    HistoryTable& operator=(HistoryTable&&) noexcept = default;

    /// Bytes for `segments.history_max_mb` (MiB; 0 = unlimited).
    static int64_t bytes_from_mb(double mb);

    int32_t width() const { return width_; }
    int64_t max_bytes() const { return max_bytes_; }

    /// Declares graph `graph` (0 <= graph < 2^32) with S segments; required before writing to it.
    /// Re-declaring with the same S is a no-op. Throws segrank::Error when S < 1, when S differs
    /// from an earlier declaration (a changed partition), or when one row of S values exceeds
    /// max_bytes.
    void set_num_segments(int64_t graph, int32_t num_segments);
    /// S of a declared graph, nullopt otherwise.
    std::optional<int32_t> num_segments(int64_t graph) const;

    /// The value of (graph, config, segment), or nullopt when absent or, with max_staleness > 0,
    /// written more than max_staleness steps before `now`. Marks the row recently used; counts a
    /// hit or a miss. Unknown graphs and out-of-range ids are misses, not errors.
    std::optional<HistoryEntry> lookup(int64_t graph, int64_t config, int32_t segment,
                                       int64_t now = 0, int64_t max_staleness = 0);
    /// Whether a value is stored (no staleness, no LRU update, no counting).
    bool contains(int64_t graph, int64_t config, int32_t segment) const;

    /// Stores value [width] written at `step` (>= 0, < 2^31), replacing any earlier one; creates
    /// the row (evicting least recently used rows while over the cap) and marks it recently used.
    /// Throws segrank::Error for an undeclared graph, segment outside [0, S), config outside
    /// [0, 2^32), a wrong value size or step.
    void write(int64_t graph, int64_t config, int32_t segment, std::span<const float> value,
               int64_t step);

    /// Batched lookup of one segment for K configs: out [K, width] gets the found values (rows not
    /// found are zeroed), found [K] gets 1/0. Returns the number found. Same semantics as lookup.
    int64_t gather(int64_t graph, std::span<const int64_t> configs, int32_t segment, int64_t now,
                   int64_t max_staleness, MatrixView out, std::span<uint8_t> found);
    /// Batched write of one segment for K configs: values [K, width], row k for configs[k].
    void scatter(int64_t graph, std::span<const int64_t> configs, int32_t segment,
                 ConstMatrixView values, int64_t step);

    /// Drops everything (declarations too); counters are kept.
    void clear();

    HistoryStats stats() const;

    /// All rows (or those whose graph satisfies `keep_graph`) as plain arrays, LRU order. With
    /// written_at >= 0 only the entries written at that step (rows without one are left out): what
    /// one step changed, for ranks that keep every row (dist.ownership = "per_step").
    HistoryArrays export_arrays(const std::function<bool(int64_t)>& keep_graph = {},
                                int64_t written_at = -1) const;
    /// Adds the graphs and entries of `arrays` (overwriting equal keys), in their order, so the
    /// most recently used row of the export is the most recent here; applies the cap.
    /// Throws segrank::Error naming the array and index on inconsistent sizes, a width mismatch,
    /// an entry of an undeclared graph or a conflicting segment count.
    void import_arrays(const HistoryArrays& arrays);

private:
    struct Row {
        int32_t num_segments = 0;
        int32_t live = 0;                   // segments with a value
        std::unique_ptr<float[]> values;    // [S, width]
        std::unique_ptr<int32_t[]> steps;   // [S], -1 = absent
        std::list<uint64_t>::iterator lru;  // position in lru_
    };

    static uint64_t pack(int64_t graph, int64_t config);
    int64_t row_bytes(int32_t num_segments) const;
    Row* find_row(int64_t graph, int64_t config);
    Row& get_or_create_row(int64_t graph, int64_t config);
    void touch(Row& row);
    void evict_lru();

    int32_t width_;
    int64_t max_bytes_;
    std::unordered_map<int64_t, int32_t> graph_segments_;
    std::unordered_map<uint64_t, Row> rows_;
    std::list<uint64_t> lru_;  // front = most recently used
    int64_t bytes_ = 0;
    int64_t entries_ = 0;
    HistoryStats counters_;
};

}  // namespace segrank
