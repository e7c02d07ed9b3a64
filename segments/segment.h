// Segment: one piece of a graph for Graph Segment Training (docs/gst.md#segments). Local ids are
// int32: pooled nodes first (ascending global id), then halo context nodes (ascending global id)
// that are computed but not pooled. Only edges with both ends inside the segment are kept.
// Immutable.
#pragma once
#include <cstdint>
#include <span>
#include <vector>

#include "data/graph.h"
#include "gnn/core/csr.h"
#include "segments/partitioner.h"

namespace segrank {

/// An induced subgraph of one graph with both adjacency directions precomputed
/// (docs/gst.md#segments).
class Segment {
public:
    /// Validates and takes the arrays. nodes: [n_local] global ids (pooled first); edge_user /
    /// edge_producer: [m_local] local ids (edge i: edge_user[i] consumes edge_producer[i]);
    /// config_local: [nc_seg] strictly increasing local ids of configurable nodes; config_index:
    /// [nc_seg] their positions in the graph's node_config_ids (the nc axis of node_config_feat).
    /// Throws segrank::Error naming the field when sizes or ids are inconsistent.
    Segment(int64_t graph_id, int32_t segment_id, std::vector<int64_t> nodes, int32_t num_pooled,
            std::vector<int32_t> edge_user, std::vector<int32_t> edge_producer,
            std::vector<int32_t> config_local, std::vector<int32_t> config_index);

    int64_t graph_id() const { return graph_id_; }
    int32_t segment_id() const { return segment_id_; }
    /// Local node count (pooled + halo).
    int32_t num_nodes() const { return static_cast<int32_t>(nodes_.size()); }
    /// Nodes 0..num_pooled-1 are pooled into the readout; the rest are halo context.
    int32_t num_pooled() const { return num_pooled_; }
    int32_t num_halo() const { return num_nodes() - num_pooled_; }
    /// [num_nodes] global ids: local id i is global node nodes()[i].
    std::span<const int64_t> nodes() const { return nodes_; }
    std::span<const int64_t> pooled_nodes() const {
        return {nodes_.data(), static_cast<size_t>(num_pooled_)};
    }
    std::span<const int64_t> halo_nodes() const {
        return std::span<const int64_t>(nodes_).subspan(num_pooled_);
    }

    int64_t num_edges() const { return static_cast<int64_t>(edge_user_.size()); }
    /// [m_local] local id of the consuming node of each kept edge.
    std::span<const int32_t> edge_user() const { return edge_user_; }
    /// [m_local] local id of the produced (operand) node of each kept edge.
    std::span<const int32_t> edge_producer() const { return edge_producer_; }
    /// Row v: the local operands v reads. [num_nodes x num_nodes].
    const Csr& operands() const { return adj_.operands; }
    /// Row v: the local users reading v (operands().transpose()).
    const Csr& users() const { return adj_.users; }
    const GraphCsr& adjacency() const { return adj_; }

    /// [nc_seg] local ids of the configurable nodes (pooled and halo), ascending.
    std::span<const int32_t> config_local() const { return config_local_; }
    /// [nc_seg] index of each into node_config_ids / the nc axis of node_config_feat.
    std::span<const int32_t> config_index() const { return config_index_; }
    /// True when no node of the segment is configurable: its states (and score) are the same for
    /// every config of a layout graph, since edges leaving the segment are dropped
    /// (docs/model.md#config-independence).
    bool config_independent() const { return config_local_.empty(); }

    /// Approximate heap bytes held (ids, edges, both Csr).
    int64_t memory_bytes() const;

private:
    int64_t graph_id_;
    int32_t segment_id_;
    int32_t num_pooled_;
    std::vector<int64_t> nodes_;
    std::vector<int32_t> edge_user_;
    std::vector<int32_t> edge_producer_;
    GraphCsr adj_;
    std::vector<int32_t> config_local_;
    std::vector<int32_t> config_index_;
};

/// Builds the segments of one graph from its partition, one at a time or all together. Holds the
/// graph's edge lists indexed both ways (O(n + m) memory) and scratch; borrows `graph`, which must
/// outlive the builder. Streaming inference builds each segment just before use
/// (docs/gst.md#segments). Not thread-safe (shared scratch); use one builder per thread to build in
/// parallel.
class SegmentBuilder {
public:
    /// graph: structure (edge_index [m, 2]); node_config_ids: [nc] LayoutGraph::node_config_ids, or
    /// empty for tile graphs; partition: validated pooled node lists of this graph; halo_hops >= 0
    /// (`segments.halo_hops`). Throws segrank::Error on mismatched sizes or ids out of range.
    SegmentBuilder(const GraphStructure& graph, std::span<const int64_t> node_config_ids,
                   Partition partition, int64_t graph_id, int32_t halo_hops);
    SegmentBuilder(const SegmentBuilder&) = delete;
    SegmentBuilder& operator=(const SegmentBuilder&) = delete;

    int32_t num_segments() const { return static_cast<int32_t>(partition_.num_segments()); }
    const Partition& partition() const { return partition_; }

    /// Segment s in [0, num_segments()): pooled nodes = partition().segment(s), plus every node
    /// within halo_hops hops (edges in either direction, over the whole graph) as halo; edges of
    /// the whole graph with both ends among these nodes, in local ids.
    Segment build(int32_t s);
    /// All segments in order.
    std::vector<Segment> build_all();

private:
    const GraphStructure& graph_;
    Partition partition_;
    int64_t graph_id_;
    int32_t halo_hops_;
    std::vector<int64_t> out_ptr_, in_ptr_;  // [n+1] edges by user / by producer
    std::vector<int64_t> out_eid_, in_eid_;  // [m] edge ids
    std::vector<int32_t> config_pos_;        // [n] index into node_config_ids or -1
    std::vector<int32_t> local_of_;          // [n] scratch, -1 between builds
};

}  // namespace segrank
