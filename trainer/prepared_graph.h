// PreparedGraph: one graph ready for the model (DESIGN.md 4-6): normalized node features split into
// segments (with halo), both Csr directions per segment, which segments depend on the config, config
// tensors and ranking targets. Built once per graph and cached by the trainer.
#pragma once
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "data/normalizer.h"
#include "gnn/model.h"
#include "segments/segment.h"
#include "trainer/dataset.h"

namespace segrank {

/// How to cut graphs into segments (from [segments] and [model]).
struct PrepareOptions {
    PartitionParams partition;  ///< method and max_nodes (max_nodes <= 0 = one segment)
    int32_t halo_hops = 0;
    int32_t prune_hops = -1;    ///< model.prune_hops: drop nodes farther than R hops from a configurable node
    bool require_labels = true; ///< refuse graphs whose runtimes are all 0 (test splits)
};

/// A graph loaded with every config row, normalized and segmented.
struct PreparedGraph {
    int64_t id = 0;
    std::string name;
    CollectionId collection;
    Task task = Task::kLayout;
    int64_t num_nodes = 0;
    int64_t num_configs = 0;
    int64_t num_config_nodes = 0;             ///< layout nc
    std::vector<double> targets;              ///< [c] runtime ns (layout) or runtime / normalizer (tile)
    std::vector<int64_t> runtimes_ns;         ///< [c] raw config_runtime
    Tensor tile_config;                       ///< tile: [c, 24] raw config_feat
    std::vector<int8_t> layout_config;        ///< layout: [c, nc, 18]
    std::vector<Segment> segments;            ///< [S]
    std::vector<Tensor> segment_feat;         ///< [S] of [n_s, F'] normalized features (local order)
    std::vector<std::vector<int32_t>> segment_opcode;  ///< [S] of [n_s]
    std::vector<uint8_t> segment_dependent;   ///< [S] 1 if the segment's readout depends on the config
    std::vector<int64_t> configs;             ///< configs usable by this role (GraphEntry::configs or all)

    int64_t num_segments() const { return static_cast<int64_t>(segments.size()); }
    /// Bytes held (features, configs, segments), for the cache bound.
    int64_t memory_bytes() const;
};

/// Loads entry's graph with all config rows, applies the normalizer, partitions it and computes which
/// segments depend on the config under `model`. Throws segrank::Error naming the file when the graph
/// is invalid, or when require_labels and its runtimes are 0 (a test split).
std::unique_ptr<PreparedGraph> prepare_graph(const GraphEntry& entry, const Normalizer& normalizer,
                                             const Model& model, const PrepareOptions& options);

/// Reusable buffers for building SegmentInputs of one segment for K configs.
struct SegmentInputBuffers {
    std::vector<int8_t> layout_values;  ///< [K, nc_s, 18]
    Tensor tile_config;                 ///< [K, 24]
};

/// The model input of segment s for the configs `configs` (indices into the graph's config rows).
/// The returned views borrow `g` and `buf`, which must stay alive while it is used.
SegmentInput make_segment_input(const PreparedGraph& g, int64_t s, std::span<const int64_t> configs,
                                SegmentInputBuffers& buf);

/// Nodes within `hops` hops (either direction) of a configurable node, ascending (model.prune_hops).
std::vector<int64_t> nodes_near_configurable(const GraphStructure& g, std::span<const int64_t> config_nodes,
                                             int32_t hops);

}  // namespace segrank
