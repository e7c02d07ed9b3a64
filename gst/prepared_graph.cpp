// Loading, normalizing and segmenting one graph for the model.
#include "gst/prepared_graph.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <deque>

#include "data/loop_depth.h"
#include "gnn/core/check.h"
#include "hwmodel/graph_estimates.h"
#include "hwmodel/hardware.h"
#include "hwmodel/tile_cost_features.h"
#include "segments/partition_cache.h"
#include "segments/partitioner.h"

namespace segrank {

int64_t BuiltSegment::memory_bytes() const {
    return (segment ? segment->memory_bytes() : 0) +
           static_cast<int64_t>(opcode.capacity() * sizeof(int32_t)) +
           node_feat.size() * static_cast<int64_t>(sizeof(float));
}

int64_t PreparedGraph::memory_bytes() const {
    int64_t b = static_cast<int64_t>(
        targets.size() * sizeof(double) + runtimes_ns.size() * sizeof(int64_t) +
        configs.size() * sizeof(int64_t) + source_node.size() * sizeof(int64_t) +
        segment_dependent.size() + loop_depth.size() +
        (prior_z.size() + tile_cost.size() + loop_trips.size()) * sizeof(float));
    b += segment_table.memory_bytes();
    for (const auto& k : kept_segments) b += k.memory_bytes();
    if (held) b += held->memory_bytes();
    if (layout_neighbourhood) b += layout_neighbourhood->memory_bytes();
    return b;
}

std::vector<int64_t> nodes_near_configurable(const GraphStructure& g,
                                             std::span<const int64_t> config_nodes, int32_t hops) {
    const int64_t n = g.num_nodes();
    std::vector<int64_t> deg(static_cast<size_t>(n + 1), 0);
    const int64_t m = g.num_edges();
    for (int64_t e = 0; e < m; ++e) {
        deg[static_cast<size_t>(g.edge_index[2 * e]) + 1]++;
        deg[static_cast<size_t>(g.edge_index[2 * e + 1]) + 1]++;
    }
    for (int64_t i = 0; i < n; ++i) deg[static_cast<size_t>(i + 1)] += deg[static_cast<size_t>(i)];
    std::vector<int64_t> adj(static_cast<size_t>(2 * m));
    std::vector<int64_t> pos(deg.begin(), deg.end() - 1);
    for (int64_t e = 0; e < m; ++e) {
        int64_t u = g.edge_index[2 * e], v = g.edge_index[2 * e + 1];
        adj[static_cast<size_t>(pos[static_cast<size_t>(u)]++)] = v;
        adj[static_cast<size_t>(pos[static_cast<size_t>(v)]++)] = u;
    }
    std::vector<int32_t> dist(static_cast<size_t>(n), -1);
    std::deque<int64_t> q;
    for (int64_t c : config_nodes) {
        dist[static_cast<size_t>(c)] = 0;
        q.push_back(c);
    }
    while (!q.empty()) {
        int64_t v = q.front();
        q.pop_front();
        if (dist[static_cast<size_t>(v)] >= hops) continue;
        for (int64_t k = deg[static_cast<size_t>(v)]; k < deg[static_cast<size_t>(v + 1)]; ++k) {
            int64_t u = adj[static_cast<size_t>(k)];
            if (dist[static_cast<size_t>(u)] < 0) {
                dist[static_cast<size_t>(u)] = dist[static_cast<size_t>(v)] + 1;
                q.push_back(u);
            }
        }
    }
    std::vector<int64_t> keep;
    for (int64_t v = 0; v < n; ++v)
        if (dist[static_cast<size_t>(v)] >= 0) keep.push_back(v);
    return keep;
}

namespace {

// Restricts a layout structure (loaded without node features) to `keep` (ascending global ids):
// opcodes, edges among kept nodes, node_config_ids renumbered. node_splits become [0, n']
// (boundaries lose meaning). Node features are read later through PreparedGraph::source_node.
void prune_graph(LayoutGraph& g, const std::vector<int64_t>& keep) {
    const int64_t n = g.num_nodes();
    std::vector<int64_t> new_id(static_cast<size_t>(n), -1);
    for (size_t i = 0; i < keep.size(); ++i)
        new_id[static_cast<size_t>(keep[i])] = static_cast<int64_t>(i);
    std::vector<int32_t> op(keep.size());
    for (size_t i = 0; i < keep.size(); ++i) op[i] = g.node_opcode[static_cast<size_t>(keep[i])];
    std::vector<int64_t> edges;
    for (int64_t e = 0; e < g.num_edges(); ++e) {
        int64_t u = new_id[static_cast<size_t>(g.edge_index[2 * e])];
        int64_t v = new_id[static_cast<size_t>(g.edge_index[2 * e + 1])];
        if (u >= 0 && v >= 0) {
            edges.push_back(u);
            edges.push_back(v);
        }
    }
    for (auto& c : g.node_config_ids) c = new_id[static_cast<size_t>(c)];
    g.node_opcode = std::move(op);
    g.edge_index = std::move(edges);
    g.node_splits = {0, static_cast<int64_t>(keep.size())};
}

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
                         const PrepareOptions& options, std::vector<int32_t>& op) {
    PartitionParams pp = options.partition;
    if (pp.max_nodes <= 0) pp.max_nodes = std::max<int64_t>(1, gs.num_nodes());
    bool hit = false;
    Partition part = partition_graph_cached(gs, node_splits, pp, options.partition_cache_dir, &hit);
    pg.partition_from_cache = hit;
    SegmentBuilder builder(gs, config_ids, std::move(part), pg.id, options.halo_hops);
    pg.segment_table = SegmentTable(pg.id);
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

// Which segments depend on the config (structural: a zero feature block of each segment's shape
// serves), then the rebuilt segments of a graph held in memory, kept while they fit the bound.
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

std::unique_ptr<PreparedGraph> prepare_graph(const GraphEntry& entry, const Normalizer& normalizer,
                                             const Model& model, const PrepareOptions& options) {
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
    const GraphSource& src = *pg->source;
    const int64_t gi = pg->source_index;
    const std::string where = src.where(gi);  // the store group or the npz read

    ConfigTensors labels = src.load_labels(gi);
    SEGRANK_CHECK(labels.num_configs() > 0, where,
                  ": 0 configs (config_runtime is empty): a graph needs at least one "
                  "configuration to score");
    SEGRANK_CHECK(
        !options.require_labels || !all_zero(labels.runtime), where,
        ": config_runtime is all 0 (a test split without labels): training and evaluation "
        "need measured runtimes; use `segrank predict` for test splits");
    pg->num_configs = labels.num_configs();
    pg->runtimes_ns = labels.runtime;
    if (pg->task == Task::kTile) {
        SEGRANK_CHECK(labels.runtime_normalizers.size() == labels.runtime.size(), where,
                      ": config_runtime_normalizers has ", labels.runtime_normalizers.size(),
                      " entries, config_runtime ", labels.runtime.size());
        pg->targets.resize(static_cast<size_t>(pg->num_configs));
        for (size_t k = 0; k < pg->targets.size(); ++k)
            pg->targets[k] =
                static_cast<double>(labels.runtime[k]) /
                static_cast<double>(std::max<int64_t>(1, labels.runtime_normalizers[k]));
    } else {
        pg->targets.assign(labels.runtime.begin(), labels.runtime.end());
    }

    std::vector<int32_t> op;
    const bool loop_depth = pg->task == Task::kLayout && model.config().loop_depth;
    // The depth of each node from the whole graph's structure and is_root column.
    const auto depth_of = [&](LayoutGraph& g) {
        const int64_t n = g.num_nodes();
        constexpr int64_t kChunk = 8192;  // rows read at a time: memory O(chunk), not O(n x 140)
        Tensor structure_feat = std::move(g.node_feat);  // [0, 140]: a structure has no rows
        g.node_feat = Tensor(n, 1);
        std::vector<int64_t> rows;
        for (int64_t b = 0; b < n; b += kChunk) {
            rows.resize(static_cast<size_t>(std::min(n, b + kChunk) - b));
            for (size_t i = 0; i < rows.size(); ++i) rows[i] = b + static_cast<int64_t>(i);
            const Tensor raw = src.load_node_feat_rows(gi, rows);
            for (size_t i = 0; i < rows.size(); ++i)
                g.node_feat.at(rows[i], 0) = raw.at(static_cast<int64_t>(i), 0);
        }
        std::vector<uint8_t> depth = while_loop_depth(g);
        g.node_feat = std::move(structure_feat);
        return depth;
    };
    const bool trip_counts = pg->task == Task::kLayout && model.config().trip_counts;
    // The graph's node_loop_trips; without them (published npz files, HDF5 stores) every node
    // inside a while loop is marked unknown (docs/model.md#loop-trip-counts).
    const auto trips_of = [&](LayoutGraph& g) {
        std::vector<float> trips = std::move(g.node_loop_trips);
        if (!trips.empty()) {
            SEGRANK_CHECK(static_cast<int64_t>(trips.size()) == g.num_nodes() * kLoopTripCols,
                          src.where(gi), ": node_loop_trips has ", trips.size(), " values for ",
                          g.num_nodes(), " nodes");
            return trips;
        }
        const std::vector<uint8_t> depth = loop_depth ? pg->loop_depth : depth_of(g);
        trips.assign(depth.size() * kLoopTripCols, 0.0f);
        for (size_t v = 0; v < depth.size(); ++v)
            trips[v * kLoopTripCols + 1] = depth[v] > 0 ? 1.0f : 0.0f;
        return trips;
    };
    if (is_range_method(options.partition.method) && options.halo_hops == 0 &&
        options.prune_hops < 0) {
        if (loop_depth || trip_counts) {
            LayoutGraph g = src.load_layout_structure(gi);
            if (loop_depth) pg->loop_depth = depth_of(g);
            if (trip_counts) pg->loop_trips = trips_of(g);
        }
        const StructureIndex idx = src.load_structure_index(gi);
        pg->num_nodes = idx.num_nodes;
        pg->num_config_nodes = static_cast<int64_t>(idx.node_config_ids.size());
        segments_by_range(*pg, idx, options);
    } else if (pg->task == Task::kTile) {
        const TileGraph g = src.load_tile_structure(gi);
        pg->num_nodes = g.num_nodes();
        segments_by_builder(*pg, g, {}, {}, options, op);
    } else {
        LayoutGraph g = src.load_layout_structure(gi);
        if (loop_depth) pg->loop_depth = depth_of(g);
        if (trip_counts) pg->loop_trips = trips_of(g);
        if (options.prune_hops >= 0) {
            std::vector<int64_t> keep =
                nodes_near_configurable(g, g.node_config_ids, options.prune_hops);
            prune_graph(g, keep);
            if (loop_depth) {
                std::vector<uint8_t> kept(keep.size());
                for (size_t i = 0; i < keep.size(); ++i)
                    kept[i] = pg->loop_depth[static_cast<size_t>(keep[i])];
                pg->loop_depth = std::move(kept);
            }
            if (trip_counts) {
                std::vector<float> kept(keep.size() * kLoopTripCols);
                for (size_t i = 0; i < keep.size(); ++i)
                    for (size_t k = 0; k < kLoopTripCols; ++k)
                        kept[i * kLoopTripCols + k] =
                            pg->loop_trips[static_cast<size_t>(keep[i]) * kLoopTripCols + k];
                pg->loop_trips = std::move(kept);
            }
            pg->source_node = std::move(keep);
        }
        pg->num_nodes = g.num_nodes();
        pg->num_config_nodes = g.num_config_nodes();
        segments_by_builder(*pg, g, g.node_splits, g.node_config_ids, options, op);
    }
    finish_segments(*pg, model, options);
    if (model.has_prior()) {
        std::vector<double> est;
        try {
            est = hwmodel_estimates(src, gi, int64_t{8} << 20, options.hardware);
        } catch (const Error& e) {  // the hwmodel's limits, not bad data (that failed above)
            std::fprintf(stderr,
                         "warning: %s: the hwmodel cannot cost this graph (%s); its analytical "
                         "prior is 0 for every config\n",
                         where.c_str(), e.what());
            est.assign(static_cast<size_t>(pg->num_configs), 0.0);
        }
        SEGRANK_CHECK(static_cast<int64_t>(est.size()) == pg->num_configs, where,
                      ": the hwmodel costed ", est.size(), " configs, the graph has ",
                      pg->num_configs);
        pg->prior_z = prior_values_from_estimates(est);
    }
    if (pg->task == Task::kTile && model.config().tile_cost_features) {
        static_assert(hw::kTileCostFeatures == kTileCostFeatures);
        try {
            pg->tile_cost = hw::tile_cost_features(src.load_tile(gi, ConfigRows::all()),
                                                   hw::hardware_by_name(options.hardware));
        } catch (const Error& e) {  // the hwmodel's limits, not bad data (that failed above)
            std::fprintf(stderr,
                         "warning: %s: the hwmodel cannot cost this graph (%s); its tile cost "
                         "features are 0 for every config\n",
                         where.c_str(), e.what());
            pg->tile_cost.assign(static_cast<size_t>(pg->num_configs * kTileCostFeatures), 0.0f);
        }
        SEGRANK_CHECK(
            static_cast<int64_t>(pg->tile_cost.size()) == pg->num_configs * kTileCostFeatures,
            where, ": the hwmodel gave ", pg->tile_cost.size(), " tile cost features for ",
            pg->num_configs, " configs");
    }
    if (pg->task == Task::kLayout && model.config().layout_bytes)
        pg->layout_neighbourhood =
            std::make_shared<const hw::LayoutNeighbourhood>(hw::layout_neighbourhood(src, gi));
    if (entry.configs.empty()) {
        pg->configs.resize(static_cast<size_t>(pg->num_configs));
        for (int64_t i = 0; i < pg->num_configs; ++i) pg->configs[static_cast<size_t>(i)] = i;
    } else {
        pg->configs = entry.configs;
    }
    return pg;
}

int64_t ConfigBatch::position(int64_t id) const {
    for (size_t i = 0; i < ids.size(); ++i)
        if (ids[i] == id) return static_cast<int64_t>(i);
    throw Error(str("config ", id, " is not in the loaded config batch (", ids.size(), " rows)"));
}

ConfigBatch load_config_batch(const PreparedGraph& g, std::span<const int64_t> configs) {
    ConfigBatch b;
    load_config_batch(g, configs, b);
    return b;
}

void load_config_batch(const PreparedGraph& g, std::span<const int64_t> configs, ConfigBatch& b) {
    b.ids.assign(configs.begin(), configs.end());
    const auto k = static_cast<int64_t>(configs.size());
    for (int64_t c : configs)
        SEGRANK_CHECK(c >= 0 && c < g.num_configs, "graph '", g.name, "': config index ", c,
                      " out of range [0, ", g.num_configs, ")");
    if (g.task == Task::kLayout) {
        const int64_t row = g.num_config_nodes * kLayoutConfigDim;
        b.layout.resize(static_cast<size_t>(k * row));  // keeps the capacity of earlier chunks
        b.tile = Tensor();
        g.source->read_layout_config_rows(g.source_index, b.ids, b.layout);
        return;
    }
    b.layout.clear();
    ConfigTensors t = g.source->load_configs(g.source_index, ConfigRows::only(b.ids));
    SEGRANK_CHECK(t.num_configs() == k && t.tile_feat.rows() == k, "graph '", g.name,
                  "': source returned ", t.tile_feat.rows(), " config rows for ", k, " requested");
    b.tile = std::move(t.tile_feat);
}

namespace {

// Positions of `configs` in `batch` (identity when they are the batch's ids in order).
std::vector<int64_t> batch_positions(const ConfigBatch& batch, std::span<const int64_t> configs) {
    std::vector<int64_t> pos(configs.size());
    const bool same = configs.size() <= batch.ids.size() &&
                      std::equal(configs.begin(), configs.end(), batch.ids.begin());
    for (size_t i = 0; i < configs.size(); ++i)
        pos[i] = same ? static_cast<int64_t>(i) : batch.position(configs[i]);
    return pos;
}

}  // namespace

Tensor tile_rows(const PreparedGraph& g, const ConfigBatch& batch,
                 std::span<const int64_t> configs) {
    if (g.task != Task::kTile) return {};
    const std::vector<int64_t> pos = batch_positions(batch, configs);
    Tensor t(static_cast<int64_t>(configs.size()), kTileConfigDim);
    for (size_t i = 0; i < pos.size(); ++i)
        std::memcpy(t.data() + static_cast<int64_t>(i) * kTileConfigDim,
                    batch.tile.data() + pos[i] * kTileConfigDim, kTileConfigDim * sizeof(float));
    return t;
}

Tensor tile_cost_rows(const PreparedGraph& g, std::span<const int64_t> configs) {
    if (g.tile_cost.empty()) return {};
    constexpr int64_t m = kTileCostFeatures;
    Tensor t = Tensor::uninit(static_cast<int64_t>(configs.size()), m);
    for (size_t i = 0; i < configs.size(); ++i) {
        SEGRANK_CHECK(configs[i] >= 0 && configs[i] < g.num_configs, "graph '", g.name,
                      "': config index ", configs[i], " out of range [0, ", g.num_configs, ")");
        std::memcpy(t.data() + static_cast<int64_t>(i) * m, g.tile_cost.data() + configs[i] * m,
                    m * sizeof(float));
    }
    return t;
}

void add_node_features(NormalizerFitter& fitter, const GraphEntry& e, int64_t chunk_rows) {
    const std::string where = e.info.source.string();
    if (!e.source->partial_reads()) {
        if (e.collection.task == Task::kTile) {
            TileGraph g = e.source->load_tile(e.index, ConfigRows::none());
            fitter.add(g.node_feat.cview(), where);
        } else {
            LayoutGraph g = e.source->load_layout(e.index, ConfigRows::none());
            fitter.add(g.node_feat.cview(), where);
        }
        return;
    }
    SEGRANK_CHECK(chunk_rows >= 1, "add_node_features: chunk_rows must be >= 1");
    const int64_t n = e.info.num_nodes;
    std::vector<int64_t> rows;
    for (int64_t b = 0; b < n; b += chunk_rows) {
        const int64_t end = std::min(n, b + chunk_rows);
        rows.resize(static_cast<size_t>(end - b));
        for (int64_t v = b; v < end; ++v) rows[static_cast<size_t>(v - b)] = v;
        Tensor f = e.source->load_node_feat_rows(e.index, rows);
        fitter.add(f.cview(), where);
    }
}

Segment PreparedGraph::segment(int64_t s) const {
    SEGRANK_CHECK(s >= 0 && s < num_segments(), "graph '", name, "': segment ", s, " outside [0, ",
                  num_segments(), ")");
    return segment_table.segment(static_cast<int32_t>(s));
}

void build_segment(const PreparedGraph& g, int64_t s, BuiltSegment& out) {
    SEGRANK_CHECK(s >= 0 && s < g.num_segments(), "graph '", g.name, "': segment ", s,
                  " outside [0, ", g.num_segments(), ")");
    out.segment.emplace(g.segment_table.segment(static_cast<int32_t>(s)));
    g.segment_table.opcodes(static_cast<int32_t>(s), out.opcode);
    auto nodes = out.segment->nodes();
    std::vector<int64_t> rows(nodes.begin(), nodes.end());
    if (!g.source_node.empty())
        for (auto& v : rows) v = g.source_node[static_cast<size_t>(v)];
    const Tensor raw = g.source->load_node_feat_rows(g.source_index, rows);
    out.node_feat = g.normalizer.apply(raw.cview(), g.name);
    if (!g.loop_depth.empty()) {  // the depth as one more column
        const int64_t n = out.node_feat.rows(), f = out.node_feat.cols();
        Tensor wide = Tensor::uninit(n, f + 1);
        for (int64_t v = 0; v < n; ++v) {
            std::memcpy(wide.data() + v * (f + 1), out.node_feat.data() + v * f,
                        static_cast<size_t>(f) * sizeof(float));
            wide.at(v, f) = static_cast<float>(g.loop_depth[static_cast<size_t>(nodes[v])]);
        }
        out.node_feat = std::move(wide);
    }
    if (!g.loop_trips.empty()) {  // the two trip columns after the rest
        const int64_t n = out.node_feat.rows(), f = out.node_feat.cols();
        const int64_t w = f + kLoopTripCols;
        Tensor wide = Tensor::uninit(n, w);
        for (int64_t v = 0; v < n; ++v) {
            std::memcpy(wide.data() + v * w, out.node_feat.data() + v * f,
                        static_cast<size_t>(f) * sizeof(float));
            const auto at = static_cast<size_t>(nodes[v]) * kLoopTripCols;
            for (int64_t k = 0; k < kLoopTripCols; ++k)
                wide.at(v, f + k) = g.loop_trips[at + static_cast<size_t>(k)];
        }
        out.node_feat = std::move(wide);
    }
}

const BuiltSegment& built_segment(const PreparedGraph& g, int64_t s, BuiltSegment& scratch) {
    if (!g.kept_segments.empty()) {
        SEGRANK_CHECK(s >= 0 && s < g.num_segments(), "graph '", g.name, "': segment ", s,
                      " outside [0, ", g.num_segments(), ")");
        return g.kept_segments[static_cast<size_t>(s)];
    }
    build_segment(g, s, scratch);
    return scratch;
}

SegmentInput make_segment_input(const PreparedGraph& g, int64_t s, const ConfigBatch& batch,
                                std::span<const int64_t> configs, SegmentInputBuffers& buf) {
    return make_segment_input(g, built_segment(g, s, buf.segment), batch, configs, buf);
}

SegmentInput make_segment_input(const PreparedGraph& g, const BuiltSegment& built,
                                const ConfigBatch& batch, std::span<const int64_t> configs,
                                SegmentInputBuffers& buf) {
    const Segment& seg = *built.segment;
    const auto k = static_cast<int64_t>(configs.size());
    const std::vector<int64_t> pos = batch_positions(batch, configs);
    SegmentInput in;
    in.node_feat = built.node_feat.cview();
    in.opcode = built.opcode;
    in.operands = &seg.operands();
    in.users = &seg.users();
    in.num_pooled = seg.num_pooled();
    in.k = k;
    if (g.task == Task::kLayout) {
        auto idx = seg.config_index();
        const auto ncs = static_cast<int64_t>(idx.size());
        const int64_t nc = g.num_config_nodes;
        buf.layout_values.resize(static_cast<size_t>(k * ncs * kLayoutConfigDim));
        for (int64_t c = 0; c < k; ++c) {
            const int8_t* row =
                batch.layout.data() + pos[static_cast<size_t>(c)] * nc * kLayoutConfigDim;
            int8_t* dst = buf.layout_values.data() + c * ncs * kLayoutConfigDim;
            for (int64_t j = 0; j < ncs; ++j)
                std::memcpy(dst + j * kLayoutConfigDim,
                            row + idx[static_cast<size_t>(j)] * kLayoutConfigDim, kLayoutConfigDim);
        }
        in.config_node_local = seg.config_local();
        in.config_values = buf.layout_values;
        if (g.layout_neighbourhood) {
            static_assert(hw::kLayoutByteFeatures == kLayoutByteFeatures);
            constexpr int64_t bf = kLayoutByteFeatures;
            buf.layout_features.resize(static_cast<size_t>(k * ncs * bf));
            for (int64_t c = 0; c < k; ++c) {
                const int8_t* row =
                    batch.layout.data() + pos[static_cast<size_t>(c)] * nc * kLayoutConfigDim;
                const std::span<const int8_t> values{row,
                                                     static_cast<size_t>(nc * kLayoutConfigDim)};
                hw::layout_byte_features(
                    *g.layout_neighbourhood, values, idx,
                    {buf.layout_features.data() + c * ncs * bf, static_cast<size_t>(ncs * bf)});
            }
            in.layout_features = buf.layout_features;
        }
    } else {
        buf.tile_config = tile_rows(g, batch, configs);
        in.tile_config = buf.tile_config.cview();
        buf.tile_cost = tile_cost_rows(g, configs);
        in.tile_cost = buf.tile_cost.cview();
    }
    return in;
}

}  // namespace segrank
