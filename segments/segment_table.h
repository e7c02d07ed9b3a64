// SegmentTable: the segments of one graph held compactly, each Segment rebuilt on use
// (docs/gst.md#segment-table).
//
// A Segment with both Csr directions costs about 24 bytes per node and 24 per edge; at 10^6 nodes
// that is 60 MB per graph, more than the whole GST step. The table keeps what the Segment is built
// from and nothing derived:
// - pooled ids of a halo-free segment that are one id range: its first id only (contiguous and
//   splits partitions); other segments list their global ids as uint32;
// - kept edges as local (user, producer) pairs, packed in one uint32 when every segment has at most
//   65536 local nodes, else two;
// - opcodes as uint8; configurable nodes as int32 (local id, index into node_config_ids).
// So about 4 bytes per kept edge and 1 per node. Rebuilding a 1000-node segment (validation and
// both Csr) takes tens of microseconds, far below its forward pass.
//
// Source-backed tables (build_range_segments on an edge list sorted by user, as TpuGraphs files
// and the stores packed from them are) hold only O(S) offsets: segment s re-reads its rows of
// edge_index (those whose user lies in the segment) and its opcodes from the source when rebuilt.
#pragma once
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "segments/segment.h"

namespace segrank {

/// Reads rows [begin, end) of a graph's edge_index as [end - begin, 2] (u consumes v).
using EdgeRangeReader = std::function<std::vector<int64_t>(int64_t begin, int64_t end)>;
/// Reads node_opcode[begin, end).
using OpcodeRangeReader = std::function<std::vector<int32_t>(int64_t begin, int64_t end)>;

/// A SegmentTable packs an edge's local (user, producer) ids in one uint32 while every segment has
/// at most this many nodes (16-bit local ids), else in two.
inline constexpr int64_t kNarrowMaxNodes = int64_t{1} << 16;

/// Checks opcodes for the table's uint8 storage: throws segrank::Error naming `where` and the index
/// (base + i) of an opcode outside [0, 256).
void check_opcodes(std::span<const int32_t> opcode, const std::string& where, int64_t base = 0);

/// Where a source-backed SegmentTable re-reads each segment's edges and opcodes when it is rebuilt.
struct SegmentRowSource {
    EdgeRangeReader edges;  ///< the graph's edge_index rows (must stay valid as long as the table)
    OpcodeRangeReader opcodes;    ///< the graph's node_opcode ranges (same)
    int64_t num_graph_nodes = 0;  ///< n: re-read ids are checked against it
    std::string where;            ///< names the graph in messages
};

/// Compact, append-only store of one graph's segments.
class SegmentTable {
public:
    /// An empty table that packs appended segments (append, append_range).
    explicit SegmentTable(int64_t graph_id = 0) : graph_id_(graph_id) {}
    /// An empty source-backed table: segments are appended with append_rows and their edges and
    /// opcodes re-read from `source` on every rebuild (O(S) memory).
    SegmentTable(int64_t graph_id, SegmentRowSource source);

    /// Appends `seg` (its segment_id must be num_segments()) with its opcodes [seg.num_nodes()] in
    /// local order, each in [0, 256). Throws segrank::Error on a wrong segment id, opcode count or
    /// value, a global id >= 2^32, or a source-backed table.
    void append(const Segment& seg, std::span<const int32_t> opcode);

    /// Appends a halo-free segment pooling the id range [first, first + n) with local edges
    /// `user`/`producer` ([m_s], local ids in [0, n), sorted by user, stable in edge order),
    /// `config_local`/`config_index` ([nc_s], as in Segment) and opcodes [n]. Validated as
    /// append().
    void append_range(int64_t first, int32_t n, std::span<const int32_t> user,
                      std::span<const int32_t> producer, std::span<const int32_t> config_local,
                      std::span<const int32_t> config_index, std::span<const int32_t> opcode);

    /// Appends to a source-backed table a halo-free segment pooling [first, first + n) whose kept
    /// edges are the rows [row_begin, row_end) of edge_index with both ends in the range (for an
    /// edge list sorted by user, the rows whose user lies in the segment), in row order.
    /// row_begin must be the previous segment's row_end (0 for the first); config_local /
    /// config_index as in Segment. Throws segrank::Error for a packed table, ids outside [0, n) of
    /// the graph, rows that do not continue, or inconsistent configurable nodes.
    void append_rows(int64_t first, int32_t n, int64_t row_begin, int64_t row_end,
                     std::span<const int32_t> config_local, std::span<const int32_t> config_index);

    /// Reserves room for `segments` more segments holding `nodes` local nodes and `edges` kept
    /// edges in total, of at most `max_nodes` local nodes each (so the edge width is known): a
    /// builder that knows the sizes allocates once.
    void reserve(int64_t segments, int64_t nodes, int64_t edges, int64_t max_nodes);

    int64_t graph_id() const { return graph_id_; }
    int32_t num_segments() const { return static_cast<int32_t>(num_pooled_.size()); }
    /// Local node count (pooled + halo) of segment s.
    int32_t num_nodes(int32_t s) const;
    /// Segment s rebuilt: validated, with both Csr directions (docs/gst.md#segment-table). Equal to
    /// the Segment appended (nodes, edges in order, configurable nodes). Throws for s out of range.
    Segment segment(int32_t s) const;
    /// Opcodes [num_nodes(s)] of segment s in local order, written into `out` (resized).
    void opcodes(int32_t s, std::vector<int32_t>& out) const;
    /// True when segment s has no configurable node (see Segment::config_independent).
    bool config_independent(int32_t s) const { return cfg_off_[s + 1] == cfg_off_[s]; }
    /// Positions on the nc axis of node_config_feat of segment s's configurable nodes [nc_s]
    /// (Segment::config_index, without rebuilding the segment). No range check of s.
    std::span<const int32_t> config_index(int32_t s) const {
        return {cfg_index_.data() + cfg_off_[s],
                static_cast<size_t>(cfg_off_[s + 1] - cfg_off_[s])};
    }
    /// Heap bytes held (capacity).
    int64_t memory_bytes() const;
    /// Releases spare capacity left by appends (call once the table is complete).
    void shrink_to_fit();
    /// True when edges use two uint32 per edge (some segment has more than 65536 local nodes).
    bool wide_edges() const { return wide_; }
    /// True when edges and opcodes are re-read from the source on use (O(S) memory).
    bool source_backed() const { return backed_; }

private:
    void check_index(int32_t s) const;
    void push_edges(int32_t n, std::span<const int32_t> user, std::span<const int32_t> producer);
    void push_config(std::span<const int32_t> config_local, std::span<const int32_t> config_index);
    void widen();

    int64_t graph_id_;
    bool wide_ = false;
    std::vector<int64_t> first_node_;   // [S] first id of a range segment, -1 when listed
    std::vector<int32_t> num_pooled_;   // [S]
    std::vector<int64_t> node_off_{0};  // [S+1] cumulative local node counts (opcode_ offsets)
    std::vector<int64_t> list_off_{0};  // [S+1] into listed_ (equal bounds for range segments)
    std::vector<uint32_t> listed_;      // global ids of listed segments, local order
    std::vector<int64_t> edge_off_{0};  // [S+1] edge counts
    std::vector<uint32_t> edges_;       // narrow: (user << 16) | producer; wide: user, producer
    std::vector<int64_t> cfg_off_{0};   // [S+1]
    std::vector<int32_t> cfg_local_, cfg_index_;
    std::vector<uint8_t> opcode_;  // [sum n_s]
    // Source-backed mode: rows [edge_row_off_[s], edge_row_off_[s+1]) of edge_index hold segment
    // s's kept edges (range segments only); edges_ and opcode_ stay empty.
    bool backed_ = false;
    std::vector<int64_t> edge_row_off_;
    SegmentRowSource source_;
};

/// What build_range_segments reads and builds: the halo-free segments of a range partition of one
/// graph (segment s pools [bounds[s], bounds[s+1])).
struct RangeSegmentsOptions {
    int64_t num_nodes = 0;            ///< n >= 1
    int64_t num_edges = 0;            ///< m >= 0 (rows of edge_index)
    std::span<const int64_t> bounds;  ///< [S+1] strictly increasing from 0 to n
    std::span<const int64_t>
        node_config_ids;  ///< [nc] strictly increasing ids in [0, n) (empty for tile)
    int64_t graph_id = 0;
    EdgeRangeReader edges;                  ///< edge_index rows (kept by a source-backed table)
    OpcodeRangeReader opcodes;              ///< node_opcode ranges (same)
    std::string where;                      ///< names the graph in messages
    int64_t chunk_rows = int64_t{1} << 16;  ///< edge_index / node_opcode rows per read, >= 1
    bool source_backed = true;  ///< keep only row ranges when the rows are sorted by user
};

/// Builds the halo-free segments of a range partition without holding the graph, reading the edge
/// list `chunk_rows` rows at a time, through SegmentTable's append interface. Pass 1 checks every
/// id and counts kept edges per segment. When the rows are sorted by user and `source_backed`, the
/// table keeps each segment's row range and the readers (which must stay valid, and are called
/// again by segment() / opcodes()): O(S) memory. Otherwise pass 2 collects the kept edges (4 or 8
/// bytes each) and appends the segments one by one into a packed table: O(S + kept edges + n) bytes
/// with small constants, never O(m) int64. The result equals SegmentBuilder(graph, node_config_ids,
/// partition with these bounds, graph_id, 0).build(s) for every s. Throws segrank::Error naming
/// `where` for an edge id outside [0, num_nodes), bounds that are not increasing from 0 to
/// num_nodes, or reader errors.
SegmentTable build_range_segments(const RangeSegmentsOptions& options);

}  // namespace segrank
