// Loading, normalizing and segmenting one graph for the model.
#include "trainer/prepared_graph.h"

#include <algorithm>
#include <cstring>
#include <deque>

#include "gnn/core/check.h"
#include "segments/partitioner.h"

namespace segrank {

int64_t PreparedGraph::memory_bytes() const {
    int64_t b = static_cast<int64_t>(targets.size() * sizeof(double) + runtimes_ns.size() * sizeof(int64_t) +
                                     layout_config.size() + configs.size() * sizeof(int64_t));
    b += tile_config.size() * 4;
    for (const auto& s : segments) b += s.memory_bytes();
    for (const auto& t : segment_feat) b += t.size() * 4;
    for (const auto& o : segment_opcode) b += static_cast<int64_t>(o.size() * 4);
    return b;
}

std::vector<int64_t> nodes_near_configurable(const GraphStructure& g, std::span<const int64_t> config_nodes,
                                             int32_t hops) {
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

// Restricts a layout graph to `keep` (ascending global ids): features, opcodes, edges among kept
// nodes, node_config_ids renumbered. node_splits become [0, n'] (boundaries lose meaning).
void prune_graph(LayoutGraph& g, const std::vector<int64_t>& keep) {
    const int64_t n = g.num_nodes();
    std::vector<int64_t> new_id(static_cast<size_t>(n), -1);
    for (size_t i = 0; i < keep.size(); ++i) new_id[static_cast<size_t>(keep[i])] = static_cast<int64_t>(i);
    const int64_t cols = g.node_feat.cols();
    Tensor feat(static_cast<int64_t>(keep.size()), cols);
    std::vector<int32_t> op(keep.size());
    for (size_t i = 0; i < keep.size(); ++i) {
        std::memcpy(feat.data() + static_cast<int64_t>(i) * cols, g.node_feat.data() + keep[i] * cols,
                    static_cast<size_t>(cols) * sizeof(float));
        op[i] = g.node_opcode[static_cast<size_t>(keep[i])];
    }
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
    g.node_feat = std::move(feat);
    g.node_opcode = std::move(op);
    g.edge_index = std::move(edges);
    g.node_splits = {0, static_cast<int64_t>(keep.size())};
}

bool all_zero(const std::vector<int64_t>& v) {
    return std::all_of(v.begin(), v.end(), [](int64_t x) { return x == 0; });
}

void finish_segments(PreparedGraph& pg, const GraphStructure& gs, std::span<const int64_t> node_splits,
                     std::span<const int64_t> config_ids, const Normalizer& normalizer, const Model& model,
                     const PrepareOptions& options, const std::string& where) {
    PartitionParams pp = options.partition;
    if (pp.max_nodes <= 0) pp.max_nodes = std::max<int64_t>(1, gs.num_nodes());
    Tensor feat = normalizer.apply(gs.node_feat.cview(), where);
    pg.segments = build_segments(gs, node_splits, config_ids, pp, pg.id, options.halo_hops);
    const int64_t f = feat.cols();
    SegmentInputBuffers buf;
    const std::vector<int64_t> one_config = {0};
    for (const auto& seg : pg.segments) {
        auto nodes = seg.nodes();
        Tensor sf(static_cast<int64_t>(nodes.size()), f);
        std::vector<int32_t> op(nodes.size());
        for (size_t i = 0; i < nodes.size(); ++i) {
            std::memcpy(sf.data() + static_cast<int64_t>(i) * f, feat.data() + nodes[i] * f,
                        static_cast<size_t>(f) * sizeof(float));
            op[i] = gs.node_opcode[static_cast<size_t>(nodes[i])];
        }
        pg.segment_feat.push_back(std::move(sf));
        pg.segment_opcode.push_back(std::move(op));
    }
    pg.segment_dependent.resize(pg.segments.size());
    for (size_t s = 0; s < pg.segments.size(); ++s) {
        SegmentInput in = make_segment_input(pg, static_cast<int64_t>(s), one_config, buf);
        pg.segment_dependent[s] = model.segment_depends_on_config(in) ? 1 : 0;
    }
}

}  // namespace

std::unique_ptr<PreparedGraph> prepare_graph(const GraphEntry& entry, const Normalizer& normalizer,
                                             const Model& model, const PrepareOptions& options) {
    auto pg = std::make_unique<PreparedGraph>();
    pg->id = entry.id;
    pg->name = entry.name;
    pg->collection = entry.collection;
    pg->task = entry.collection.task;
    const std::string where = entry.info.source.string();
    auto refuse_unlabelled = [&](const std::vector<int64_t>& rt) {
        SEGRANK_CHECK(!options.require_labels || !all_zero(rt), where,
                      ": config_runtime is all 0 (a test split without labels): training and evaluation "
                      "need measured runtimes; use `segrank predict` for test splits");
    };
    if (pg->task == Task::kTile) {
        TileGraph g = entry.source->load_tile(entry.index, ConfigRows::all());
        refuse_unlabelled(g.config_runtime);
        pg->num_nodes = g.num_nodes();
        pg->num_configs = g.num_configs();
        pg->runtimes_ns = g.config_runtime;
        pg->targets.resize(static_cast<size_t>(pg->num_configs));
        for (int64_t i = 0; i < pg->num_configs; ++i) {
            const auto k = static_cast<size_t>(i);
            pg->targets[k] = static_cast<double>(g.config_runtime[k]) /
                             static_cast<double>(std::max<int64_t>(1, g.config_runtime_normalizers[k]));
        }
        pg->tile_config = std::move(g.config_feat);
        finish_segments(*pg, g, {}, {}, normalizer, model, options, where);
    } else {
        LayoutGraph g = entry.source->load_layout(entry.index, ConfigRows::all());
        refuse_unlabelled(g.config_runtime);
        if (options.prune_hops >= 0) prune_graph(g, nodes_near_configurable(g, g.node_config_ids, options.prune_hops));
        pg->num_nodes = g.num_nodes();
        pg->num_configs = g.num_configs();
        pg->num_config_nodes = g.num_config_nodes();
        pg->runtimes_ns = g.config_runtime;
        pg->targets.assign(g.config_runtime.begin(), g.config_runtime.end());
        pg->layout_config = std::move(g.node_config_feat);
        finish_segments(*pg, g, g.node_splits, g.node_config_ids, normalizer, model, options, where);
    }
    if (entry.configs.empty()) {
        pg->configs.resize(static_cast<size_t>(pg->num_configs));
        for (int64_t i = 0; i < pg->num_configs; ++i) pg->configs[static_cast<size_t>(i)] = i;
    } else {
        pg->configs = entry.configs;
    }
    return pg;
}

SegmentInput make_segment_input(const PreparedGraph& g, int64_t s, std::span<const int64_t> configs,
                                SegmentInputBuffers& buf) {
    const Segment& seg = g.segments[static_cast<size_t>(s)];
    const auto k = static_cast<int64_t>(configs.size());
    SegmentInput in;
    in.node_feat = g.segment_feat[static_cast<size_t>(s)].cview();
    in.opcode = g.segment_opcode[static_cast<size_t>(s)];
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
            const int8_t* row = g.layout_config.data() + configs[static_cast<size_t>(c)] * nc * kLayoutConfigDim;
            int8_t* dst = buf.layout_values.data() + c * ncs * kLayoutConfigDim;
            for (int64_t j = 0; j < ncs; ++j)
                std::memcpy(dst + j * kLayoutConfigDim, row + idx[static_cast<size_t>(j)] * kLayoutConfigDim,
                            kLayoutConfigDim);
        }
        in.config_node_local = seg.config_local();
        in.config_values = buf.layout_values;
    } else {
        if (buf.tile_config.rows() != k) buf.tile_config = Tensor(k, kTileConfigDim);
        for (int64_t c = 0; c < k; ++c)
            std::memcpy(buf.tile_config.data() + c * kTileConfigDim,
                        g.tile_config.data() + configs[static_cast<size_t>(c)] * kTileConfigDim,
                        kTileConfigDim * sizeof(float));
        in.tile_config = buf.tile_config.cview();
    }
    return in;
}

}  // namespace segrank
