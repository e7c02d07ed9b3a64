// Graph partitioners for Graph Segment Training (docs/gst.md#partitioners): split a graph's nodes
// into segments of at most max_nodes pooled nodes. A Partition is plain arrays so callers can cache
// it (HDF5 store or run directory, see segments/partition_cache.h). Every partitioner is
// deterministic.
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "data/graph.h"
#include "gnn/core/enum_names.h"

namespace segrank {

/// `segments.partition` (docs/gst.md#partitioners).
enum class PartitionMethod { kContiguous, kSplits, kMetis };

/// Names: "contiguous", "splits", "metis".
std::span<const EnumName<PartitionMethod>> enum_names(PartitionMethod);
/// Parses "contiguous" | "splits" | "metis"; throws segrank::Error listing the valid names.
PartitionMethod parse_partition_method(std::string_view name);
/// The config spelling of a method ("contiguous", "splits", "metis").
std::string_view to_string(PartitionMethod method);

/// What decides which nodes a segment pools (halo context is derived later, see segment.h).
struct PartitionParams {
    PartitionMethod method = PartitionMethod::kContiguous;
    int64_t max_nodes = 1000;  ///< `segments.max_nodes`: bound on pooled nodes per segment, >= 1;
                               ///< 0 = no bound (the whole graph is one segment)
    uint64_t metis_seed = 0;   ///< METIS_OPTION_SEED (metis only), fixed for determinism
};

/// Pooled nodes of every segment, as CSR-like plain arrays. Each node of the graph appears in
/// exactly one segment; nodes of a segment are in ascending global id; segments are ordered by
/// their smallest node id. Invariants are checked by `validate`.
struct Partition {
    int64_t num_nodes = 0;         ///< n of the graph
    std::vector<int64_t> offsets;  ///< [S+1], offsets[0] = 0, offsets[S] = n, strictly increasing
    std::vector<int64_t>
        nodes;  ///< [n] global node ids, segment s = nodes[offsets[s], offsets[s+1])

    int64_t num_segments() const {
        return offsets.empty() ? 0 : static_cast<int64_t>(offsets.size()) - 1;
    }
    /// Global ids pooled by segment s (ascending).
    std::span<const int64_t> segment(int64_t s) const {
        return {nodes.data() + offsets[s], static_cast<size_t>(offsets[s + 1] - offsets[s])};
    }
    /// Largest segment size.
    int64_t max_segment_size() const;
    /// Throws segrank::Error (prefixed by `where`) unless offsets/nodes form a valid partition of
    /// [0, num_nodes): non-empty segments, ascending ids within a segment, every node exactly once,
    /// segments ordered by first node, and (when max_nodes > 0) no segment above max_nodes.
    void validate(const std::string& where, int64_t max_nodes = 0) const;
};

/// Contiguous near-equal id ranges (node ids are topological in TpuGraphs):
/// S = ceil(n / max_nodes), segment i = [floor(i n / S), floor((i+1) n / S)), as the PyTorch peer.
/// Throws segrank::Error when n < 1 or max_nodes < 1.
Partition partition_contiguous(int64_t num_nodes, int64_t max_nodes);

/// Ranges from `node_splits` boundaries ([k], 0 first and n last, non-decreasing; empty ranges are
/// skipped; an empty span means the single range [0, n) as for tile graphs); each range longer than
/// max_nodes is cut into ceil(len / max_nodes) near-equal pieces, then adjacent ranges are merged
/// greedily left to right while the merged size stays <= max_nodes.
/// Throws segrank::Error naming `node_splits` and the index when the boundaries are invalid.
Partition partition_splits(int64_t num_nodes, std::span<const int64_t> node_splits,
                           int64_t max_nodes);

/// METIS k-way (METIS_PartGraphKway, edge-cut objective) on the symmetrized, deduplicated,
/// self-loop-free graph with nparts = ceil(n / max_nodes) and the given seed; parts above
/// max_nodes are re-split into near-equal pieces of their ascending id list; empty parts dropped.
/// edge_index: [m, 2] row-major (u, v) pairs. Throws segrank::Error on out-of-range ids, sizes
/// beyond METIS's 32-bit indices, or a METIS failure code.
Partition partition_metis(int64_t num_nodes, std::span<const int64_t> edge_index, int64_t max_nodes,
                          uint64_t seed);

/// Segment boundaries of partition_contiguous ([S+1], 0 first, num_nodes last): segment s pools the
/// ids [bounds[s], bounds[s+1]). Same errors as partition_contiguous.
std::vector<int64_t> contiguous_bounds(int64_t num_nodes, int64_t max_nodes);
/// Segment boundaries of partition_splits (same contract as contiguous_bounds and
/// partition_splits).
std::vector<int64_t> splits_bounds(int64_t num_nodes, std::span<const int64_t> node_splits,
                                   int64_t max_nodes);

/// The Partition of id ranges: segment s pools [bounds[s], bounds[s+1]) (bounds [S+1], 0 first,
/// num_nodes last; not validated here, see Partition::validate).
Partition partition_from_bounds(int64_t num_nodes, std::span<const int64_t> bounds);

/// True for methods whose segments are id ranges (contiguous, splits): they need only n and
/// node_splits, never the edges, so streamed graphs partition them in O(S) memory
/// (docs/gst.md#partition-cache).
bool is_range_method(PartitionMethod method);
/// Boundaries [S+1] of a range method under effective_max_nodes(num_nodes, params). Throws
/// segrank::Error for metis or for the partitioners' errors.
std::vector<int64_t> range_partition_bounds(int64_t num_nodes, std::span<const int64_t> node_splits,
                                            const PartitionParams& params);

/// The bound actually applied to a graph of n nodes: params.max_nodes, or n when it is 0.
/// Throws segrank::Error when max_nodes < 0.
int64_t effective_max_nodes(int64_t num_nodes, const PartitionParams& params);

/// Dispatches on params.method with effective_max_nodes (max_nodes = 0 gives one segment).
/// `node_splits` is used by kSplits only (LayoutGraph::node_splits; pass an empty span for tile
/// graphs). The result is validated against the bound.
Partition partition_graph(const GraphStructure& graph, std::span<const int64_t> node_splits,
                          const PartitionParams& params);

}  // namespace segrank
