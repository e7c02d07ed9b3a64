// PreparedGraph: one graph ready for the model (DESIGN.md 4-6): normalized node features split into
// segments (with halo), both Csr directions per segment, which segments depend on the config, config
// tensors and ranking targets. Built once per graph and cached by the trainer.
//
// Two storage modes (issue 6, bounded memory):
// - in memory (npz sources: compressed members cannot be read partially): normalized features of
//   every segment and every config row are held, and the segments as built (both Csr directions);
// - streamed (sources with partial_reads(), i.e. HDF5 stores): only runtimes, the normalizer and the
//   segments in compact form (SegmentTable, about 4 bytes per kept edge and 1 per node) are held;
//   each use rebuilds the segment, reads the K config rows it needs (load_config_batch) and the
//   segment's node_feat rows (make_segment_input), so memory does not grow with the number of
//   configs or with node features. With a range partition (contiguous, splits), no halo and no
//   prune_hops, prepare never holds the graph either: it reads edge_index in chunks
//   (build_range_segments). Other settings load the structure once while preparing.
#pragma once
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "data/normalizer.h"
#include "gnn/model.h"
#include "segments/segment.h"
#include "segments/segment_table.h"
#include "data/graph_entry.h"

namespace segrank {

/// How to cut graphs into segments (from [segments] and [model]).
struct PrepareOptions {
    PartitionParams partition;  ///< method and max_nodes (max_nodes <= 0 = one segment)
    int32_t halo_hops = 0;
    int32_t prune_hops = -1;    ///< model.prune_hops: drop nodes farther than R hops from a configurable node
    bool require_labels = true; ///< refuse graphs whose runtimes are all 0 (test splits)
    /// Directory of cached partitions (segments/partition_cache.h; the trainer uses <run_dir>/partitions);
    /// empty = partition every time.
    std::filesystem::path partition_cache_dir;
    /// Stream rows from sources that support partial reads (false forces the in-memory mode).
    bool stream = true;
};

/// A graph normalized and segmented, with its config rows in memory or streamed from its source.
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
    Tensor tile_config;                       ///< tile: [c, 24] raw config_feat (in-memory mode; empty when streamed)
    std::vector<int8_t> layout_config;        ///< layout: [c, nc, 18] (in-memory mode; empty when streamed)
    std::vector<Segment> segments;            ///< [S] (in-memory mode only; see segment_table)
    std::vector<Tensor> segment_feat;         ///< [S] of [n_s, F'] normalized features (in-memory mode only)
    std::vector<std::vector<int32_t>> segment_opcode;  ///< [S] of [n_s] (in-memory mode only)
    SegmentTable segment_table;               ///< streamed mode: the S segments, compact
    std::vector<uint8_t> segment_dependent;   ///< [S] 1 if the segment's readout depends on the config
    std::vector<int64_t> configs;             ///< configs usable by this role (GraphEntry::configs or all)

    bool streamed = false;                    ///< rows are read from `source` on use
    const GraphSource* source = nullptr;      ///< streamed: the source (outlives the graph; not thread-safe)
    int64_t source_index = 0;                 ///< streamed: graph index in `source`
    Normalizer normalizer;                    ///< streamed: applied to node_feat rows as they are read
    std::vector<int64_t> source_node;         ///< streamed with prune_hops: node -> source node (empty = identity)
    bool partition_from_cache = false;        ///< the partition was loaded from options.partition_cache_dir
                                              ///< (range partitions of streamed graphs are recomputed, O(S))

    int64_t num_segments() const {
        return streamed ? segment_table.num_segments() : static_cast<int64_t>(segments.size());
    }
    /// Segment s (a copy; rebuilt from segment_table when streamed). Throws for s out of range.
    Segment segment(int64_t s) const;
    /// Bytes held (features, configs, segments), for the cache bound.
    int64_t memory_bytes() const;
};

/// Loads entry's graph (streamed when options.stream and the source has partial reads, else with all
/// config rows), applies the normalizer, partitions it and computes which segments depend on the
/// config under `model`. Streamed graphs under a range partition (contiguous, splits) with
/// halo_hops = 0 and prune_hops < 0 are segmented from chunked edge reads (build_range_segments; the
/// bounds are recomputed, not cached); every other case loads the structure and partitions through
/// the partition cache when options.partition_cache_dir is set. Throws segrank::Error naming the file when the graph is invalid, or when require_labels
/// and its runtimes are 0 (a test split).
std::unique_ptr<PreparedGraph> prepare_graph(const GraphEntry& entry, const Normalizer& normalizer,
                                             const Model& model, const PrepareOptions& options);

/// The config rows of K configs of one graph, read once per step or inference chunk.
struct ConfigBatch {
    std::vector<int64_t> ids;     ///< [K] config indices in the file
    std::vector<int8_t> layout;   ///< layout: [K, nc, 18]
    Tensor tile;                  ///< tile: [K, 24]
    /// Row of config `id` in this batch. Throws segrank::Error when it was not loaded.
    int64_t position(int64_t id) const;
};

/// Rows `configs` of g: copied from memory, or read from the source when streamed (only those rows'
/// chunks). Throws segrank::Error for an index out of range or a source read failure.
ConfigBatch load_config_batch(const PreparedGraph& g, std::span<const int64_t> configs);
/// The same into `into`, reusing its buffers (inference loads one chunk after another into one batch,
/// so the multi-MB rows of large graphs are not allocated and freed per chunk). Same errors.
void load_config_batch(const PreparedGraph& g, std::span<const int64_t> configs, ConfigBatch& into);

/// Reusable buffers for building SegmentInputs of one segment for K configs.
struct SegmentInputBuffers {
    std::optional<Segment> segment;     ///< streamed: the rebuilt segment (its Csr back the input)
    std::vector<int32_t> opcode;        ///< streamed: [n_s] opcodes
    std::vector<int8_t> layout_values;  ///< [K, nc_s, 18]
    Tensor tile_config;                 ///< [K, 24]
    Tensor node_feat;                   ///< streamed: [n_s, F'] normalized features of the segment
};

/// The model input of segment s for `configs` (file indices, each present in `batch`). Streamed
/// graphs read the segment's node_feat rows here. The returned views borrow `g`, `batch` and `buf`,
/// which must stay alive while it is used.
SegmentInput make_segment_input(const PreparedGraph& g, int64_t s, const ConfigBatch& batch,
                                std::span<const int64_t> configs, SegmentInputBuffers& buf);

/// Tile config rows of `configs` as [K, 24] (copy from `batch`); empty for layout graphs.
Tensor tile_rows(const PreparedGraph& g, const ConfigBatch& batch, std::span<const int64_t> configs);

/// Adds entry's node features to `fitter`, `chunk_rows` nodes at a time when the source has
/// partial reads (memory O(chunk)), else the whole graph at once.
void add_node_features(NormalizerFitter& fitter, const GraphEntry& entry, int64_t chunk_rows = 8192);

/// Nodes within `hops` hops (either direction) of a configurable node, ascending (model.prune_hops).
std::vector<int64_t> nodes_near_configurable(const GraphStructure& g, std::span<const int64_t> config_nodes,
                                             int32_t hops);

}  // namespace segrank
