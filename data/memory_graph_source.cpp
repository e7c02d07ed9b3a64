// MemoryGraphSource: partial reads of one held graph, served by copying.
#include "data/memory_graph_source.h"

#include <algorithm>
#include <cstring>

#include "gnn/core/check.h"

namespace segrank {
namespace {

// Copies the structure fields of `from` (node features only when `with_feat`, else [0, 140]).
void copy_structure(const GraphStructure& from, GraphStructure& to, bool with_feat) {
    to.name = from.name;
    to.source = from.source;
    to.node_feat = with_feat ? from.node_feat.clone() : Tensor(0, kNodeFeatDim);
    to.node_opcode = from.node_opcode;
    to.edge_index = from.edge_index;
}

void check_range(int64_t begin, int64_t end, int64_t size, const std::string& where,
                 const char* what) {
    SEGRANK_CHECK(begin >= 0 && begin <= end && end <= size, where, ": ", what, " rows [", begin,
                  ", ", end, ") out of range [0, ", size, "]");
}

}  // namespace

MemoryGraphSource::MemoryGraphSource(TileGraph g, CollectionId id, std::string where)
    : id_(id), where_(std::move(where)), tile_(std::move(g)) {
    check_task(Task::kTile);
}

MemoryGraphSource::MemoryGraphSource(LayoutGraph g, CollectionId id, std::string where)
    : id_(id), where_(std::move(where)), layout_(std::move(g)) {
    check_task(Task::kLayout);
}

std::unique_ptr<MemoryGraphSource> MemoryGraphSource::load(const GraphSource& src, int64_t i) {
    if (src.task() == Task::kTile)
        return std::make_unique<MemoryGraphSource>(src.load_tile(i, ConfigRows::all()),
                                                   src.collection(), src.where(i));
    return std::make_unique<MemoryGraphSource>(src.load_layout(i, ConfigRows::all()),
                                               src.collection(), src.where(i));
}

void MemoryGraphSource::check_index(int64_t i) const {
    SEGRANK_CHECK(i == 0, where_, ": graph index ", i, " out of range [0, 1)");
}

void MemoryGraphSource::check_task(Task t) const {
    SEGRANK_CHECK(id_.task == t, where_, ": collection ", id_.name(), " holds ",
                  id_.task == Task::kTile ? "tile" : "layout", " graphs, not ",
                  t == Task::kTile ? "tile" : "layout", " graphs");
}

const GraphStructure& MemoryGraphSource::structure() const {
    if (id_.task == Task::kTile) return tile_;
    return layout_;
}

GraphInfo MemoryGraphSource::info(int64_t i) const {
    check_index(i);
    const GraphStructure& g = structure();
    GraphInfo x;
    x.name = g.name;
    x.source = g.source;
    x.num_nodes = g.num_nodes();
    x.num_edges = g.num_edges();
    if (id_.task == Task::kTile) {
        x.num_configs = tile_.num_configs();
    } else {
        x.num_configs = layout_.num_configs();
        x.num_config_nodes = layout_.num_config_nodes();
    }
    return x;
}

std::string MemoryGraphSource::where(int64_t i) const {
    check_index(i);
    return where_;
}

ConfigTensors MemoryGraphSource::select_configs(const ConfigRows& sel) const {
    const bool tile = id_.task == Task::kTile;
    const int64_t c = tile ? tile_.num_configs() : layout_.num_configs();
    std::vector<int64_t> all;
    if (!sel.rows) {
        all.resize(static_cast<size_t>(c));
        for (int64_t r = 0; r < c; ++r) all[static_cast<size_t>(r)] = r;
    }
    const std::vector<int64_t>& rows = sel.rows ? *sel.rows : all;
    for (size_t i = 0; i < rows.size(); ++i)
        SEGRANK_CHECK(rows[i] >= 0 && rows[i] < c, where_, ": graph '", structure().name,
                      "': config row ", rows[i], " (selection index ", i, ") out of range [0, ", c,
                      ")");
    ConfigTensors t;
    const auto k = static_cast<int64_t>(rows.size());
    if (tile) {
        t.tile_feat = Tensor(k, kTileConfigDim);
        for (int64_t i = 0; i < k; ++i) {
            const auto r = static_cast<size_t>(rows[static_cast<size_t>(i)]);
            std::memcpy(t.tile_feat.data() + i * kTileConfigDim,
                        tile_.config_feat.data() + r * kTileConfigDim,
                        kTileConfigDim * sizeof(float));
            t.runtime.push_back(tile_.config_runtime[r]);
            t.runtime_normalizers.push_back(tile_.config_runtime_normalizers[r]);
        }
        return t;
    }
    const auto row = static_cast<size_t>(layout_.num_config_nodes() * kLayoutConfigDim);
    t.layout_feat.resize(static_cast<size_t>(k) * row);
    for (int64_t i = 0; i < k; ++i) {
        const auto r = static_cast<size_t>(rows[static_cast<size_t>(i)]);
        std::memcpy(t.layout_feat.data() + static_cast<size_t>(i) * row,
                    layout_.node_config_feat.data() + r * row, row);
        t.runtime.push_back(layout_.config_runtime[r]);
    }
    return t;
}

TileGraph MemoryGraphSource::load_tile(int64_t i, const ConfigRows& rows) const {
    check_index(i);
    check_task(Task::kTile);
    ConfigTensors t = select_configs(rows);
    TileGraph g;
    copy_structure(tile_, g, /*with_feat=*/true);
    g.config_feat = std::move(t.tile_feat);
    g.config_runtime = std::move(t.runtime);
    g.config_runtime_normalizers = std::move(t.runtime_normalizers);
    return g;
}

LayoutGraph MemoryGraphSource::load_layout(int64_t i, const ConfigRows& rows) const {
    check_index(i);
    check_task(Task::kLayout);
    ConfigTensors t = select_configs(rows);
    LayoutGraph g;
    copy_structure(layout_, g, /*with_feat=*/true);
    g.node_config_ids = layout_.node_config_ids;
    g.node_config_feat = std::move(t.layout_feat);
    g.config_runtime = std::move(t.runtime);
    g.node_splits = layout_.node_splits;
    g.node_loop_trips = layout_.node_loop_trips;
    return g;
}

ConfigTensors MemoryGraphSource::load_configs(int64_t i, const ConfigRows& rows) const {
    check_index(i);
    return select_configs(rows);
}

void MemoryGraphSource::read_layout_config_rows(int64_t i, std::span<const int64_t> rows,
                                                std::span<int8_t> out) const {
    check_index(i);
    SEGRANK_CHECK(id_.task == Task::kLayout, "read_layout_config_rows: the source holds ",
                  id_.name(), ", not layout graphs");
    const auto row = static_cast<size_t>(layout_.num_config_nodes() * kLayoutConfigDim);
    SEGRANK_CHECK(out.size() == rows.size() * row, "read_layout_config_rows: ", rows.size(),
                  " rows hold ", rows.size() * row, " values, the buffer ", out.size());
    const int64_t c = layout_.num_configs();
    for (size_t k = 0; k < rows.size(); ++k) {
        SEGRANK_CHECK(rows[k] >= 0 && rows[k] < c, where_, ": graph '", layout_.name,
                      "': config row ", rows[k], " (selection index ", k, ") out of range [0, ", c,
                      ")");
        std::memcpy(out.data() + k * row,
                    layout_.node_config_feat.data() + static_cast<size_t>(rows[k]) * row, row);
    }
}

void MemoryGraphSource::read_layout_config_columns(int64_t i, std::span<const int64_t> rows,
                                                   std::span<const int32_t> columns,
                                                   std::span<int8_t> out) const {
    check_index(i);
    SEGRANK_CHECK(id_.task == Task::kLayout, "read_layout_config_columns: the source holds ",
                  id_.name(), ", not layout graphs");
    const auto row = static_cast<size_t>(layout_.num_config_nodes() * kLayoutConfigDim);
    const size_t block = columns.size() * kLayoutConfigDim;
    SEGRANK_CHECK(out.size() == rows.size() * block, "read_layout_config_columns: ", rows.size(),
                  " rows of ", columns.size(), " columns hold ", rows.size() * block,
                  " values, the buffer ", out.size());
    const int64_t c = layout_.num_configs();
    for (size_t k = 0; k < rows.size(); ++k) {
        SEGRANK_CHECK(rows[k] >= 0 && rows[k] < c, where_, ": graph '", layout_.name,
                      "': config row ", rows[k], " (selection index ", k, ") out of range [0, ", c,
                      ")");
        const std::span<const int8_t> r{
            layout_.node_config_feat.data() + static_cast<size_t>(rows[k]) * row, row};
        gather_config_columns(r, columns, out.subspan(k * block, block), where_);
    }
}

ConfigTensors MemoryGraphSource::load_labels(int64_t i) const {
    check_index(i);
    ConfigTensors t;
    if (id_.task == Task::kTile) {
        t.runtime = tile_.config_runtime;
        t.runtime_normalizers = tile_.config_runtime_normalizers;
    } else {
        t.runtime = layout_.config_runtime;
    }
    return t;
}

TileGraph MemoryGraphSource::load_tile_structure(int64_t i) const {
    check_index(i);
    check_task(Task::kTile);
    TileGraph g;
    copy_structure(tile_, g, /*with_feat=*/false);
    g.config_feat = Tensor(0, kTileConfigDim);
    return g;
}

LayoutGraph MemoryGraphSource::load_layout_structure(int64_t i) const {
    check_index(i);
    check_task(Task::kLayout);
    LayoutGraph g;
    copy_structure(layout_, g, /*with_feat=*/false);
    g.node_config_ids = layout_.node_config_ids;
    g.node_splits = layout_.node_splits;
    g.node_loop_trips = layout_.node_loop_trips;
    return g;
}

Tensor MemoryGraphSource::load_node_feat_rows(int64_t i, std::span<const int64_t> nodes) const {
    check_index(i);
    return select_node_rows(structure().node_feat.cview(), nodes, where_);
}

StructureIndex MemoryGraphSource::load_structure_index(int64_t i) const {
    check_index(i);
    const GraphStructure& g = structure();
    StructureIndex x;
    x.name = g.name;
    x.source = g.source;
    x.where = where_;
    x.num_nodes = g.num_nodes();
    x.num_edges = g.num_edges();
    if (id_.task == Task::kLayout) {
        x.node_config_ids = layout_.node_config_ids;
        x.node_splits = layout_.node_splits;
    }
    return x;
}

std::vector<int64_t> MemoryGraphSource::load_edge_range(int64_t i, int64_t begin,
                                                        int64_t end) const {
    check_index(i);
    const GraphStructure& g = structure();
    check_range(begin, end, g.num_edges(), where_, "edge_index");
    return {g.edge_index.begin() + 2 * begin, g.edge_index.begin() + 2 * end};
}

std::vector<int32_t> MemoryGraphSource::load_opcode_range(int64_t i, int64_t begin,
                                                          int64_t end) const {
    check_index(i);
    const GraphStructure& g = structure();
    check_range(begin, end, g.num_nodes(), where_, "node_opcode");
    return {g.node_opcode.begin() + begin, g.node_opcode.begin() + end};
}

int64_t MemoryGraphSource::memory_bytes() const {
    auto b = [](const auto& v) { return static_cast<int64_t>(v.capacity() * sizeof(v[0])); };
    const GraphStructure& g = structure();
    int64_t n = g.node_feat.size() * 4 + b(g.node_opcode) + b(g.edge_index);
    if (id_.task == Task::kTile)
        return n + tile_.config_feat.size() * 4 + b(tile_.config_runtime) +
               b(tile_.config_runtime_normalizers);
    return n + b(layout_.node_config_ids) + b(layout_.node_config_feat) +
           b(layout_.config_runtime) + b(layout_.node_splits);
}

}  // namespace segrank
