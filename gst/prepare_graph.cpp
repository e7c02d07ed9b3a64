// prepare_graph (see prepared_graph.h): one graph loaded, labelled, segmented and given the
// features derived from it, as a sequence of phases.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <string>

#include "data/loop_depth.h"
#include "gnn/core/check.h"
#include "gst/prepared_graph.h"
#include "hwmodel/graph_estimates.h"
#include "hwmodel/hardware.h"
#include "hwmodel/tile_cost_features.h"
#include "segments/partition_cache.h"
#include "segments/partitioner.h"
#include "segments/prune.h"

namespace segrank {

namespace {

bool all_zero(const std::vector<int64_t>& v) {
    return std::all_of(v.begin(), v.end(), [](int64_t x) { return x == 0; });
}

// Whether segment `seg` (opcodes `op`, normalized features `feat` [n_s, F']) depends on the config
// under `model`. Dependence is structural (the plan looks at node counts, edges and configurable
// nodes, not at feature values), so a zero block of the segment's shape serves as `feat`.
uint8_t segment_dependence(const Model& model, Task task, const Segment& seg,
                           std::span<const int32_t> op, ConstMatrixView feat) {
    SegmentInput in;
    in.node_feat = feat;
    in.opcode = op;
    in.operands = &seg.operands();
    in.users = &seg.users();
    in.num_pooled = seg.num_pooled();
    in.k = 1;
    std::vector<int8_t> one_row;
    Tensor one_tile;
    if (task == Task::kLayout) {
        one_row.assign(seg.config_index().size() * kLayoutConfigDim, 0);
        in.config_node_local = seg.config_local();
        in.config_values = one_row;
    } else {
        one_tile = Tensor(1, kTileConfigDim);
        in.tile_config = one_tile.cview();
    }
    return model.segment_depends_on_config(in) ? 1 : 0;
}

// Partitions a loaded structure (through the cache) and appends its segments, built one at a time,
// to the compact table.
void segments_by_builder(PreparedGraph& pg, const GraphStructure& gs,
                         std::span<const int64_t> node_splits, std::span<const int64_t> config_ids,
                         const PrepareOptions& options) {
    PartitionParams pp = options.partition;
    if (pp.max_nodes <= 0) pp.max_nodes = std::max<int64_t>(1, gs.num_nodes());
    bool hit = false;
    Partition part = partition_graph_cached(gs, node_splits, pp, options.partition_cache_dir, &hit);
    pg.partition_from_cache = hit;
    SegmentBuilder builder(gs, config_ids, std::move(part), pg.id, options.halo_hops);
    pg.segment_table = SegmentTable(pg.id);
    std::vector<int32_t> op;
    for (int32_t s = 0; s < builder.num_segments(); ++s) {
        const Segment seg = builder.build(s);
        auto nodes = seg.nodes();
        op.resize(nodes.size());
        for (size_t i = 0; i < nodes.size(); ++i)
            op[i] = gs.node_opcode[static_cast<size_t>(nodes[i])];
        pg.segment_table.append(seg, op);
    }
    pg.segment_table.shrink_to_fit();
}

// Range partitions with no halo and no pruning: the structure is never held. Sizes and index arrays
// come from load_structure_index, edges and opcodes are read in chunks.
void segments_by_range(PreparedGraph& pg, const StructureIndex& idx,
                       const PrepareOptions& options) {
    PartitionParams pp = options.partition;
    if (pp.max_nodes <= 0) pp.max_nodes = std::max<int64_t>(1, idx.num_nodes);
    const std::string& where = idx.where;
    std::vector<int64_t> bounds;
    try {
        bounds = range_partition_bounds(idx.num_nodes, idx.node_splits, pp);
    } catch (const Error& e) {
        throw Error(str(where, ": ", e.what()));
    }
    const GraphSource* src = pg.source;
    const int64_t gi = pg.source_index;
    RangeSegmentsOptions ro;
    ro.num_nodes = idx.num_nodes;
    ro.num_edges = idx.num_edges;
    ro.bounds = bounds;
    ro.node_config_ids = idx.node_config_ids;
    ro.graph_id = pg.id;
    ro.edges = [src, gi](int64_t b, int64_t e) { return src->load_edge_range(gi, b, e); };
    ro.opcodes = [src, gi](int64_t b, int64_t e) { return src->load_opcode_range(gi, b, e); };
    ro.where = where;
    pg.segment_table = build_range_segments(ro);
    pg.partition_from_cache = false;
}

// Phase 4: which segments depend on the config (structural: a zero feature block of each segment's
// shape serves), then the rebuilt segments of a graph held in memory, kept while they fit the
// bound.
void finish_segments(PreparedGraph& pg, const Model& model, const PrepareOptions& options) {
    const int64_t f = pg.normalizer.output_dim() + (pg.loop_depth.empty() ? 0 : 1) +
                      (pg.loop_trips.empty() ? 0 : kLoopTripCols);
    std::vector<int32_t> op;
    for (int32_t s = 0; s < pg.segment_table.num_segments(); ++s) {
        const Segment seg = pg.segment_table.segment(s);
        pg.segment_table.opcodes(s, op);
        const Tensor zeros(seg.num_nodes(), f);
        pg.segment_dependent.push_back(segment_dependence(model, pg.task, seg, op, zeros.cview()));
    }
    if (!pg.held || options.max_kept_segment_bytes <= 0) return;
    int64_t bytes = 0;
    for (int64_t s = 0; s < pg.num_segments(); ++s) {
        BuiltSegment b;
        build_segment(pg, s, b);
        bytes += b.memory_bytes();
        if (bytes > options.max_kept_segment_bytes) {
            pg.kept_segments.clear();
            pg.kept_segments.shrink_to_fit();
            return;
        }
        pg.kept_segments.push_back(std::move(b));
    }
}

}  // namespace

std::vector<float> prior_values_from_estimates(std::span<const double> est) {
    return hw::standardized_log(est);
}

std::vector<double> hwmodel_estimates(const GraphSource& src, int64_t gi, int64_t chunk_bytes,
                                      std::string_view hardware) {
    const hw::HwParams hw = hw::hardware_by_name(hardware);
    if (src.task() == Task::kTile)
        return hw::tile_estimates_ns(src.load_tile(gi, ConfigRows::all()), hw);
    std::vector<double> out;
    int64_t configs = 0;
    std::vector<int8_t> rows;
    {
        const LayoutGraph g = src.load_layout(gi, ConfigRows::none());  // structure + node_feat
        hw::LayoutEstimator est(g, hw);
        configs = src.info(gi).num_configs;
        const int64_t row = g.num_config_nodes() * kLayoutConfigDim;
        const int64_t chunk = std::max<int64_t>(1, chunk_bytes / std::max<int64_t>(1, row));
        out.reserve(static_cast<size_t>(configs));
        std::vector<int64_t> ids;
        for (int64_t b = 0; b < configs; b += chunk) {
            const int64_t e = std::min(configs, b + chunk);
            ids.resize(static_cast<size_t>(e - b));
            for (int64_t i = b; i < e; ++i) ids[static_cast<size_t>(i - b)] = i;
            rows.resize(static_cast<size_t>((e - b) * row));
            src.read_layout_config_rows(gi, ids, rows);
            est.estimate(rows, out);
        }
    }
    return out;
}

namespace {

// Phase 1: the graph's identity and where its rows are read: the entry's source when
// options.stream and the source reads partially (HDF5 stores), else a copy loaded once into memory
// (npz). Throws segrank::Error when the graph cannot be loaded.
std::unique_ptr<PreparedGraph> open_graph(const GraphEntry& entry, const Normalizer& normalizer,
                                          const PrepareOptions& options) {
    auto pg = std::make_unique<PreparedGraph>();
    pg->id = entry.id;
    pg->name = entry.name;
    pg->collection = entry.collection;
    pg->task = entry.collection.task;
    if (options.stream && entry.source->partial_reads()) {
        pg->source = entry.source;
        pg->source_index = entry.index;
    } else {
        pg->held = MemoryGraphSource::load(*entry.source, entry.index);
        pg->source = pg->held.get();
        pg->source_index = 0;
    }
    pg->normalizer = normalizer;
    return pg;
}

// Phase 2: the labels: num_configs, the raw runtimes [c] and the ranking targets [c] (runtime ns
// for layout, runtime / normalizer for tile). Throws segrank::Error naming `where` for a graph
// without configs, runtimes all 0 under options.require_labels (a test split), or a
// config_runtime_normalizers of another length.
void read_targets(PreparedGraph& pg, const std::string& where, const PrepareOptions& options) {
    ConfigTensors labels = pg.source->load_labels(pg.source_index);
    SEGRANK_CHECK(labels.num_configs() > 0, where,
                  ": 0 configs (config_runtime is empty): a graph needs at least one "
                  "configuration to score");
    SEGRANK_CHECK(
        !options.require_labels || !all_zero(labels.runtime), where,
        ": config_runtime is all 0 (a test split without labels): training and evaluation "
        "need measured runtimes; use `segrank predict` for test splits");
    pg.num_configs = labels.num_configs();
    pg.runtimes_ns = labels.runtime;
    if (pg.task == Task::kTile) {
        SEGRANK_CHECK(labels.runtime_normalizers.size() == labels.runtime.size(), where,
                      ": config_runtime_normalizers has ", labels.runtime_normalizers.size(),
                      " entries, config_runtime ", labels.runtime.size());
        pg.targets.resize(static_cast<size_t>(pg.num_configs));
        for (size_t k = 0; k < pg.targets.size(); ++k)
            pg.targets[k] =
                static_cast<double>(labels.runtime[k]) /
                static_cast<double>(std::max<int64_t>(1, labels.runtime_normalizers[k]));
    } else {
        pg.targets.assign(labels.runtime.begin(), labels.runtime.end());
    }
}

// The per-node columns the model appends to the normalized node features (layout graphs only).
struct NodeColumns {
    bool loop_depth = false;   // model.loop_depth: PreparedGraph::loop_depth
    bool trip_counts = false;  // model.trip_counts: PreparedGraph::loop_trips
};

// The while-loop depth [n] of each node of the whole structure g, from its edges and its is_root
// column (node_feat column 0, read from pg's source in chunks: memory O(chunk), not O(n x 140)).
std::vector<uint8_t> loop_depth_of(const PreparedGraph& pg, LayoutGraph& g) {
    const int64_t n = g.num_nodes();
    constexpr int64_t kChunk = 8192;                 // rows read at a time
    Tensor structure_feat = std::move(g.node_feat);  // [0, 140]: a structure has no rows
    g.node_feat = Tensor(n, 1);
    std::vector<int64_t> rows;
    for (int64_t b = 0; b < n; b += kChunk) {
        rows.resize(static_cast<size_t>(std::min(n, b + kChunk) - b));
        for (size_t i = 0; i < rows.size(); ++i) rows[i] = b + static_cast<int64_t>(i);
        const Tensor raw = pg.source->load_node_feat_rows(pg.source_index, rows);
        for (size_t i = 0; i < rows.size(); ++i)
            g.node_feat.at(rows[i], 0) = raw.at(static_cast<int64_t>(i), 0);
    }
    std::vector<uint8_t> depth = while_loop_depth(g);
    g.node_feat = std::move(structure_feat);
    return depth;
}

// The graph's node_loop_trips [n, 2] (moved out of g); without them (published npz files, HDF5
// stores) every node inside a while loop is marked unknown (docs/model.md#loop-trip-counts), from
// pg.loop_depth when cols.loop_depth computed it. Throws segrank::Error when node_loop_trips does
// not have 2 values per node.
std::vector<float> loop_trips_of(const PreparedGraph& pg, const NodeColumns& cols, LayoutGraph& g) {
    std::vector<float> trips = std::move(g.node_loop_trips);
    if (!trips.empty()) {
        SEGRANK_CHECK(static_cast<int64_t>(trips.size()) == g.num_nodes() * kLoopTripCols,
                      pg.source->where(pg.source_index), ": node_loop_trips has ", trips.size(),
                      " values for ", g.num_nodes(), " nodes");
        return trips;
    }
    const std::vector<uint8_t> depth = cols.loop_depth ? pg.loop_depth : loop_depth_of(pg, g);
    trips.assign(depth.size() * kLoopTripCols, 0.0f);
    for (size_t v = 0; v < depth.size(); ++v)
        trips[v * kLoopTripCols + 1] = depth[v] > 0 ? 1.0f : 0.0f;
    return trips;
}

// pg.loop_depth and pg.loop_trips of the whole structure g, as `cols` asks.
void add_node_columns(PreparedGraph& pg, const NodeColumns& cols, LayoutGraph& g) {
    if (cols.loop_depth) pg.loop_depth = loop_depth_of(pg, g);
    if (cols.trip_counts) pg.loop_trips = loop_trips_of(pg, cols, g);
}

// model.prune_hops: g restricted to the nodes within `hops` hops of a configurable node
// (segments/prune.h), pg's node columns restricted alike, and pg.source_node mapping each kept
// node to its row in the source.
void prune_to_configurable(PreparedGraph& pg, const NodeColumns& cols, LayoutGraph& g,
                           int32_t hops) {
    std::vector<int64_t> keep = nodes_near_configurable(g, g.node_config_ids, hops);
    prune_graph(g, keep);
    if (cols.loop_depth) {
        std::vector<uint8_t> kept(keep.size());
        for (size_t i = 0; i < keep.size(); ++i)
            kept[i] = pg.loop_depth[static_cast<size_t>(keep[i])];
        pg.loop_depth = std::move(kept);
    }
    if (cols.trip_counts) {
        std::vector<float> kept(keep.size() * kLoopTripCols);
        for (size_t i = 0; i < keep.size(); ++i)
            for (size_t k = 0; k < kLoopTripCols; ++k)
                kept[i * kLoopTripCols + k] =
                    pg.loop_trips[static_cast<size_t>(keep[i]) * kLoopTripCols + k];
        pg.loop_trips = std::move(kept);
    }
    pg.source_node = std::move(keep);
}

// Phase 3: the node columns, the pruning and the segments of pg. A range partition with no halo
// and no pruning never holds the structure (segments_by_range, edges read in chunks; the structure
// is loaded only for the node columns); a tile graph, or a layout graph after its node columns and
// pruning, is partitioned whole through the partition cache (segments_by_builder).
void segment_graph(PreparedGraph& pg, const Model& model, const PrepareOptions& options) {
    const GraphSource& src = *pg.source;
    const int64_t gi = pg.source_index;
    const bool layout = pg.task == Task::kLayout;
    const NodeColumns cols{layout && model.config().loop_depth,
                           layout && model.config().trip_counts};
    if (is_range_method(options.partition.method) && options.halo_hops == 0 &&
        options.prune_hops < 0) {
        if (cols.loop_depth || cols.trip_counts) {
            LayoutGraph g = src.load_layout_structure(gi);
            add_node_columns(pg, cols, g);
        }
        const StructureIndex idx = src.load_structure_index(gi);
        pg.num_nodes = idx.num_nodes;
        pg.num_config_nodes = static_cast<int64_t>(idx.node_config_ids.size());
        segments_by_range(pg, idx, options);
    } else if (pg.task == Task::kTile) {
        const TileGraph g = src.load_tile_structure(gi);
        pg.num_nodes = g.num_nodes();
        segments_by_builder(pg, g, {}, {}, options);
    } else {
        LayoutGraph g = src.load_layout_structure(gi);
        add_node_columns(pg, cols, g);
        if (options.prune_hops >= 0) prune_to_configurable(pg, cols, g, options.prune_hops);
        pg.num_nodes = g.num_nodes();
        pg.num_config_nodes = g.num_config_nodes();
        segments_by_builder(pg, g, g.node_splits, g.node_config_ids, options);
    }
}

// Phase 5 (model.hwmodel_prior): the analytical prior's z [num_configs]
// (docs/model.md#analytical-prior). A graph the hwmodel cannot cost gets z = 0 for every config and
// a warning naming `where`. Throws segrank::Error when the estimates do not cover the configs.
std::vector<float> prior_z_of(const PreparedGraph& pg, const std::string& where,
                              const PrepareOptions& options) {
    std::vector<double> est;
    try {
        est = hwmodel_estimates(*pg.source, pg.source_index, int64_t{8} << 20, options.hardware);
    } catch (const Error& e) {  // the hwmodel's limits, not bad data (that failed above)
        std::fprintf(stderr,
                     "warning: %s: the hwmodel cannot cost this graph (%s); its analytical "
                     "prior is 0 for every config\n",
                     where.c_str(), e.what());
        est.assign(static_cast<size_t>(pg.num_configs), 0.0);
    }
    SEGRANK_CHECK(static_cast<int64_t>(est.size()) == pg.num_configs, where,
                  ": the hwmodel costed ", est.size(), " configs, the graph has ", pg.num_configs);
    return prior_values_from_estimates(est);
}

// Phase 5 (model.tile_cost_features, tile): the kernel model's features [num_configs,
// kTileCostFeatures] of every config (docs/model.md#tile-cost-features); all 0 with a warning
// naming `where` when the hwmodel cannot cost the graph. Throws segrank::Error when they do not
// cover the configs.
std::vector<float> tile_cost_of(const PreparedGraph& pg, const std::string& where,
                                const PrepareOptions& options) {
    static_assert(hw::kTileCostFeatures == kTileCostFeatures);
    std::vector<float> cost;
    try {
        cost = hw::tile_cost_features(pg.source->load_tile(pg.source_index, ConfigRows::all()),
                                      hw::hardware_by_name(options.hardware));
    } catch (const Error& e) {  // the hwmodel's limits, not bad data (that failed above)
        std::fprintf(stderr,
                     "warning: %s: the hwmodel cannot cost this graph (%s); its tile cost "
                     "features are 0 for every config\n",
                     where.c_str(), e.what());
        cost.assign(static_cast<size_t>(pg.num_configs * kTileCostFeatures), 0.0f);
    }
    SEGRANK_CHECK(static_cast<int64_t>(cost.size()) == pg.num_configs * kTileCostFeatures, where,
                  ": the hwmodel gave ", cost.size(), " tile cost features for ", pg.num_configs,
                  " configs");
    return cost;
}

// Phase 6: the configs this role may use: the entry's list, or all 0..num_configs-1.
std::vector<int64_t> usable_configs(const GraphEntry& entry, int64_t num_configs) {
    if (!entry.configs.empty()) return entry.configs;
    std::vector<int64_t> configs(static_cast<size_t>(num_configs));
    for (int64_t i = 0; i < num_configs; ++i) configs[static_cast<size_t>(i)] = i;
    return configs;
}

}  // namespace

std::unique_ptr<PreparedGraph> prepare_graph(const GraphEntry& entry, const Normalizer& normalizer,
                                             const Model& model, const PrepareOptions& options) {
    std::unique_ptr<PreparedGraph> pg = open_graph(entry, normalizer, options);
    const std::string where = pg->source->where(pg->source_index);  // store group or npz read
    read_targets(*pg, where, options);
    segment_graph(*pg, model, options);
    finish_segments(*pg, model, options);  // phase 4: config dependence, kept segments
    if (model.has_prior()) pg->prior_z = prior_z_of(*pg, where, options);
    if (pg->task == Task::kTile && model.config().tile_cost_features)
        pg->tile_cost = tile_cost_of(*pg, where, options);
    const hw::LayoutFeatureSets sets = {model.config().layout_bytes, model.config().layout_access};
    if (pg->task == Task::kLayout && sets.width() > 0) {
        pg->layout_neighbourhood = std::make_shared<const hw::LayoutNeighbourhood>(
            hw::layout_neighbourhood(*pg->source, pg->source_index));
        pg->layout_feature_sets = sets;
    }
    pg->configs = usable_configs(entry, pg->num_configs);
    return pg;
}

}  // namespace segrank
