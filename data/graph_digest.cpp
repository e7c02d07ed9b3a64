// graph_digest (see graph_digest.h).
#include "data/graph_digest.h"

#include <algorithm>
#include <vector>

#include "gnn/core/check.h"
#include "gnn/core/hash.h"

namespace segrank {

namespace {

template <typename T>
void add_array(ContentHasher& h, std::span<const T> v) {
    h.update_int(static_cast<int64_t>(v.size()));
    h.update(v);
}

// Structure arrays after node_feat (the same order for both tasks).
void add_structure_tail(ContentHasher& h, const GraphStructure& g) {
    add_array<int32_t>(h, g.node_opcode);
    add_array<int64_t>(h, g.edge_index);
}

std::vector<int64_t> iota_rows(int64_t begin, int64_t end) {
    std::vector<int64_t> rows(static_cast<size_t>(end - begin));
    for (int64_t r = begin; r < end; ++r) rows[static_cast<size_t>(r - begin)] = r;
    return rows;
}

GraphDigest whole_graph(const GraphSource& src, int64_t i) {
    ContentHasher s, c;
    if (src.task() == Task::kTile) {
        const TileGraph g = src.load_tile(i, ConfigRows::all());
        add_array<float>(s, g.node_feat.span());
        add_structure_tail(s, g);
        add_array<float>(c, g.config_feat.span());
        add_array<int64_t>(c, g.config_runtime);
        add_array<int64_t>(c, g.config_runtime_normalizers);
    } else {
        const LayoutGraph g = src.load_layout(i, ConfigRows::all());
        add_array<float>(s, g.node_feat.span());
        add_structure_tail(s, g);
        add_array<int64_t>(s, g.node_config_ids);
        add_array<int64_t>(s, g.node_splits);
        add_array<int8_t>(c, g.node_config_feat);
        add_array<int64_t>(c, g.config_runtime);
    }
    return {s.digest(), c.digest()};
}

}  // namespace

GraphDigest graph_digest(const GraphSource& src, int64_t i, int64_t chunk_bytes) {
    SEGRANK_CHECK(chunk_bytes > 0, "graph_digest: chunk_bytes must be > 0");
    if (!src.partial_reads()) return whole_graph(src, i);
    const GraphInfo info = src.info(i);
    ContentHasher s, c;
    // node_feat in row chunks: the length first, as add_array writes it.
    const int64_t n = info.num_nodes;
    s.update_int(n * kNodeFeatDim);
    const int64_t node_rows = std::max<int64_t>(1, chunk_bytes / (kNodeFeatDim * 4));
    for (int64_t b = 0; b < n; b += node_rows) {
        const Tensor f = src.load_node_feat_rows(i, iota_rows(b, std::min(n, b + node_rows)));
        s.update(f.span());
    }
    const ConfigTensors labels = src.load_labels(i);
    const int64_t cn = labels.num_configs();
    if (src.task() == Task::kTile) {
        const TileGraph g = src.load_tile_structure(i);
        add_structure_tail(s, g);
        c.update_int(cn * kTileConfigDim);
        const int64_t rows = std::max<int64_t>(1, chunk_bytes / (kTileConfigDim * 4));
        for (int64_t b = 0; b < cn; b += rows) {
            const ConfigTensors t =
                src.load_configs(i, ConfigRows::only(iota_rows(b, std::min(cn, b + rows))));
            c.update(t.tile_feat.span());
        }
        add_array<int64_t>(c, labels.runtime);
        add_array<int64_t>(c, labels.runtime_normalizers);
    } else {
        const LayoutGraph g = src.load_layout_structure(i);
        add_structure_tail(s, g);
        add_array<int64_t>(s, g.node_config_ids);
        add_array<int64_t>(s, g.node_splits);
        const int64_t row_bytes = g.num_config_nodes() * kLayoutConfigDim;
        c.update_int(cn * row_bytes);
        const int64_t rows = std::max<int64_t>(1, chunk_bytes / std::max<int64_t>(1, row_bytes));
        std::vector<int8_t> buf;
        for (int64_t b = 0; b < cn; b += rows) {
            const std::vector<int64_t> r = iota_rows(b, std::min(cn, b + rows));
            buf.resize(r.size() * static_cast<size_t>(row_bytes));
            src.read_layout_config_rows(i, r, buf);
            c.update(buf);
        }
        add_array<int64_t>(c, labels.runtime);
    }
    return {s.digest(), c.digest()};
}

}  // namespace segrank
