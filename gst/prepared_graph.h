// PreparedGraph: one graph ready for the model (docs/gst.md#segment-table): its segments (with
// halo) in a compact SegmentTable over the GraphSource it is read from, which segments depend on
// the config, and the ranking targets. Built once per graph and cached by the trainer.
//
// One storage layout for every source. The graph's rows stay in its source and are read on use:
// each use rebuilds the segment from the table, reads the segment's node_feat rows and normalizes
// them (make_segment_input), and reads the K config rows a step or inference chunk needs
// (load_config_batch). Sources with partial reads (HDF5 stores) are read directly, so memory does
// not grow with the number of configs or with node features; npz graphs, whose members cannot be
// read partially, are loaded once into a MemoryGraphSource owned by the PreparedGraph and read
// through the same calls. A graph held in memory also keeps its rebuilt segments (Segment, opcodes,
// normalized features) when they fit PrepareOptions::max_kept_segment_bytes, which saves the
// rebuild per use; those are exactly what the rebuild returns.
//
// With a range partition (contiguous, splits), no halo and no prune_hops, prepare does not load the
// structure: it reads edge_index in chunks (build_range_segments). Other settings load the
// structure once while preparing.
#pragma once
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "data/graph_entry.h"
#include "data/memory_graph_source.h"
#include "data/normalizer.h"
#include "gnn/model.h"
#include "hwmodel/layout_bytes.h"
#include "segments/segment.h"
#include "segments/segment_table.h"

namespace segrank {

/// How to cut graphs into segments (from [segments] and [model]).
struct PrepareOptions {
    PartitionParams partition;  ///< method and max_nodes (max_nodes <= 0 = one segment)
    int32_t halo_hops = 0;
    int32_t prune_hops =
        -1;  ///< model.prune_hops: drop nodes farther than R hops from a configurable node
    bool require_labels = true;  ///< refuse graphs whose runtimes are all 0 (test splits)
    /// Directory of cached partitions (segments/partition_cache.h; the trainer uses
    /// <run_dir>/partitions); empty = partition every time.
    std::filesystem::path partition_cache_dir;
    /// Read rows from sources that support partial reads (false: load the graph into memory first,
    /// as for npz sources).
    bool stream = true;
    /// A graph held in memory keeps its rebuilt segments when they take at most this many bytes
    /// (0 = rebuild on every use). Graphs read from a partial-read source never keep them.
    int64_t max_kept_segment_bytes = int64_t{64} << 20;
    /// `hwmodel.hardware`: the hardware table of the analytical prior and the tile cost features
    /// (a name of hw::hardware_names(); docs/model.md#analytical-prior).
    std::string hardware = "tpu_v3_core";
};

/// One segment ready for the model: rebuilt from the table, with its opcodes and normalized node
/// features.
struct BuiltSegment {
    std::optional<Segment> segment;  ///< the Segment (both Csr directions)
    std::vector<int32_t> opcode;     ///< [n_s] opcodes in local order
    Tensor node_feat;                ///< [n_s, F'] normalized node features in local order (then
                                     ///< the loop depth with model.loop_depth, then the two trip
                                     ///< columns with model.trip_counts)

    /// Heap bytes held.
    int64_t memory_bytes() const;
};

/// A graph normalized and segmented; every row is read from `source` on use.
struct PreparedGraph {
    int64_t id = 0;
    std::string name;
    CollectionId collection;
    Task task = Task::kLayout;
    int64_t num_nodes = 0;  ///< after prune_hops
    int64_t num_configs = 0;
    int64_t num_config_nodes = 0;      ///< layout nc
    std::vector<double> targets;       ///< [c] runtime ns (layout) or runtime / normalizer (tile)
    std::vector<int64_t> runtimes_ns;  ///< [c] raw config_runtime
    SegmentTable segment_table;        ///< the S segments, compact
    std::vector<uint8_t>
        segment_dependent;         ///< [S] 1 if the segment's readout depends on the config
    std::vector<int64_t> configs;  ///< configs usable by this role (GraphEntry::configs or all)
    /// [num_configs] the analytical prior's input z per config (prior_values_from_estimates of the
    /// hwmodel estimates, docs/model.md#analytical-prior); empty when the model has no prior.
    std::vector<float> prior_z;
    /// With model.tile_cost_features (tile): [num_configs, kTileCostFeatures] the kernel model's
    /// features of every config (hw::tile_cost_features, docs/model.md#tile-cost-features); empty
    /// otherwise.
    std::vector<float> tile_cost;

    const GraphSource* source = nullptr;  ///< rows are read from here (the entry's source, or
                                          ///< `held`; outlives the graph; not thread-safe)
    int64_t source_index = 0;             ///< graph index in `source`
    /// The graph loaded into memory when the entry's source has no partial reads (npz) or
    /// PrepareOptions::stream is false; `source` then points to it. Null otherwise.
    std::unique_ptr<const MemoryGraphSource> held;
    Normalizer normalizer;             ///< applied to node_feat rows as they are read
    std::vector<int64_t> source_node;  ///< with prune_hops: node -> source node (empty = identity)
    /// [S] the rebuilt segments kept by a graph held in memory
    /// (PrepareOptions::max_kept_segment_bytes); empty = rebuilt on each use.
    std::vector<BuiltSegment> kept_segments;
    /// With model.layout_bytes or layout_access (layout): what the features need,
    /// gathered from `source` while preparing (docs/model.md#layout-byte-features); null
    /// otherwise. make_segment_input then computes the feature rows of `layout_feature_sets`
    /// (layout_feature_sets.width() values) of every (config, configurable node).
    std::shared_ptr<const hw::LayoutNeighbourhood> layout_neighbourhood;
    hw::LayoutFeatureSets layout_feature_sets;  ///< the model's blocks (with layout_neighbourhood)
    /// With model.loop_depth (layout): [num_nodes] each node's while-loop depth (after
    /// prune_hops; while_loop_depth of the whole graph), appended to its normalized features as
    /// the last column (docs/model.md#loop-depth). Empty otherwise.
    std::vector<uint8_t> loop_depth;
    /// With model.trip_counts (layout): [num_nodes, 2] row-major each node's node_loop_trips row
    /// (after prune_hops; docs/model.md#loop-trip-counts), appended after the normalized features
    /// and the depth. A graph without node_loop_trips gets (0, 1) for nodes inside a while loop
    /// and (0, 0) outside. Empty otherwise.
    std::vector<float> loop_trips;
    bool partition_from_cache =
        false;  ///< the partition was loaded from options.partition_cache_dir
                ///< (range partitions are recomputed, O(S))

    int64_t num_segments() const { return segment_table.num_segments(); }
    /// Segment s rebuilt from segment_table. Throws for s out of range.
    Segment segment(int64_t s) const;
    /// Bytes held (held graph, kept segments, table, targets), for the cache bound.
    int64_t memory_bytes() const;
};

/// Loads entry's structure and labels (from its source when options.stream and the source has
/// partial reads, else from a MemoryGraphSource loaded once), partitions it and computes which
/// segments depend on the config under `model`. Graphs under a range partition (contiguous, splits)
/// with halo_hops = 0 and prune_hops < 0 are segmented from chunked edge reads
/// (build_range_segments; the bounds are recomputed, not cached); every other case loads the
/// structure and partitions through the partition cache when options.partition_cache_dir is set.
/// Throws segrank::Error naming the file when the graph is invalid, or when require_labels and its
/// runtimes are 0 (a test split).
std::unique_ptr<PreparedGraph> prepare_graph(const GraphEntry& entry, const Normalizer& normalizer,
                                             const Model& model, const PrepareOptions& options);

/// The analytical prior's z from per-config hwmodel estimates (ns): z_c = (log est_c - mean) / sd,
/// mean and sd (population) over the configs whose estimate is finite and > 0. Configs without
/// such an estimate get z = 0 (the mean), and every z is 0 when fewer than two configs have one or
/// sd is 0 (docs/model.md#analytical-prior).
std::vector<float> prior_values_from_estimates(std::span<const double> estimates_ns);

/// The hwmodel estimate (ns, on the hardware table `hardware`) of every config of graph `index` of
/// `source`: tile from
/// the config_feat rows, layout from node_config_feat rows read `chunk_bytes` at a time
/// (docs/model.md#analytical-prior: the graph's node features are loaded once while costing).
/// Throws segrank::Error when the graph cannot be read or costed, or the hardware name is unknown.
std::vector<double> hwmodel_estimates(const GraphSource& source, int64_t index,
                                      int64_t chunk_bytes = int64_t{8} << 20,
                                      std::string_view hardware = "tpu_v3_core");

/// Rebuilds segment s of g into `out` (reusing its buffers): the Segment from g.segment_table, its
/// opcodes, and its node_feat rows read from g.source and normalized with g.normalizer. Throws
/// segrank::Error for s out of range or a source read failure.
void build_segment(const PreparedGraph& g, int64_t s, BuiltSegment& out);

/// Segment s of g ready for the model: g.kept_segments[s] when kept, else rebuilt into `scratch`.
/// The result borrows g or scratch. Same errors as build_segment.
const BuiltSegment& built_segment(const PreparedGraph& g, int64_t s, BuiltSegment& scratch);

/// The config rows of K configs of one graph, read once per step or inference chunk.
struct ConfigBatch {
    std::vector<int64_t> ids;    ///< [K] config indices in the file
    std::vector<int8_t> layout;  ///< layout: [K, nc, 18], or [K, |columns|, 18] for a column block
    /// True for a layout column block (load_config_columns): `layout` holds only `columns`, the
    /// positions on the nc axis, strictly increasing; false: every column (load_config_batch).
    bool column_block = false;
    std::vector<int32_t> columns;
    Tensor tile;  ///< tile: [K, 24]
    /// Row of config `id` in this batch. Throws segrank::Error when it was not loaded.
    int64_t position(int64_t id) const;
};

/// Rows `configs` of g, read from g.source (only those rows' chunks). Throws segrank::Error for an
/// index out of range or a source read failure.
ConfigBatch load_config_batch(const PreparedGraph& g, std::span<const int64_t> configs);
/// The same into `into`, reusing its buffers (inference loads one chunk after another into one
/// batch, so the multi-MB rows of large graphs are not allocated and freed per chunk). Same errors.
void load_config_batch(const PreparedGraph& g, std::span<const int64_t> configs, ConfigBatch& into);
/// Columns `columns` (positions on the nc axis, strictly increasing) of rows `configs` of layout
/// graph g into `into` (layout [K, |columns|, 18], reusing its buffer): a column block, which
/// make_segment_input reads for the segments whose configurable nodes it holds. Throws
/// segrank::Error for a tile graph, an index out of range, unordered columns or a read failure.
void load_config_columns(const PreparedGraph& g, std::span<const int64_t> configs,
                         std::span<const int32_t> columns, ConfigBatch& into);

/// Reusable buffers for building SegmentInputs of one segment for K configs.
struct SegmentInputBuffers {
    BuiltSegment segment;  ///< the rebuilt segment when g keeps none (its Csr back the input)
    std::vector<int8_t> layout_values;    ///< [K, nc_s, 18]
    std::vector<int64_t> layout_columns;  ///< [nc_s] positions of the nodes' columns in the batch
    std::vector<float> layout_features;   ///< [K, nc_s, M] (g.layout_neighbourhood set)
    Tensor tile_config;                   ///< [K, 24]
    Tensor tile_cost;                     ///< [K, kTileCostFeatures] (g.tile_cost set)
};

/// The model input of segment s for `configs` (file indices, each present in `batch`), from
/// built_segment (node_feat rows are read here unless g keeps its segments). A column block batch
/// must hold every configurable node of the segment (throws segrank::Error otherwise). With
/// g.layout_neighbourhood, the layout feature rows of the segment's configurable nodes are
/// computed here from their config rows (a node's features read its own row only). With g.tile_cost
/// the input carries the configs' tile cost features (SegmentInput::tile_cost). The returned views
/// borrow `g`, `batch` and `buf`, which must stay alive while it is used.
SegmentInput make_segment_input(const PreparedGraph& g, int64_t s, const ConfigBatch& batch,
                                std::span<const int64_t> configs, SegmentInputBuffers& buf);

/// The same from segment `built` of g (built_segment or build_segment of one of g's segments),
/// which must stay alive while the input is used; reads no node rows.
SegmentInput make_segment_input(const PreparedGraph& g, const BuiltSegment& built,
                                const ConfigBatch& batch, std::span<const int64_t> configs,
                                SegmentInputBuffers& buf);

/// Tile config rows of `configs` as [K, 24] (copy from `batch`); empty for layout graphs.
Tensor tile_rows(const PreparedGraph& g, const ConfigBatch& batch,
                 std::span<const int64_t> configs);

/// The tile cost features of `configs` (file indices) as [K, kTileCostFeatures] (copy from
/// g.tile_cost); empty when g has none. Throws segrank::Error for a config out of range.
Tensor tile_cost_rows(const PreparedGraph& g, std::span<const int64_t> configs);

/// Adds entry's node features to `fitter`, `chunk_rows` nodes at a time when the source has
/// partial reads (memory O(chunk)), else the whole graph at once.
void add_node_features(NormalizerFitter& fitter, const GraphEntry& entry,
                       int64_t chunk_rows = 8192);

}  // namespace segrank
