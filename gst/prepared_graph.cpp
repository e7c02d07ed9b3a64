// A prepared graph's segments rebuilt for use, with their node feature rows read from the source
// and normalized (the normalizer's fit reads the same rows); prepare_graph is in prepare_graph.cpp,
// config batches and segment inputs in config_batch.cpp.
#include "gst/prepared_graph.h"

#include <algorithm>
#include <cstring>

#include "gnn/core/check.h"

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

}  // namespace segrank
