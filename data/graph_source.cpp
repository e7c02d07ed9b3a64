// NpzGraphSource and config-row selection.
#include "data/graph_source.h"

#include <algorithm>
#include <cstring>

#include "data/input_memory.h"
#include "data/npz.h"
#include "gnn/core/check.h"

namespace segrank {
namespace {

void check_rows(const std::vector<int64_t>& rows, int64_t c, const GraphStructure& g) {
    for (size_t i = 0; i < rows.size(); ++i) {
        SEGRANK_CHECK(rows[i] >= 0 && rows[i] < c, g.source.string(), ": graph '", g.name,
                      "': config row ", rows[i], " (selection index ", i, ") out of range [0, ", c,
                      ")");
    }
}

std::vector<int64_t> pick(const std::vector<int64_t>& v, const std::vector<int64_t>& rows) {
    std::vector<int64_t> out(rows.size());
    for (size_t i = 0; i < rows.size(); ++i) out[i] = v[static_cast<size_t>(rows[i])];
    return out;
}

}  // namespace

void select_config_rows(TileGraph& g, const ConfigRows& sel) {
    if (!sel.rows) return;
    const auto& rows = *sel.rows;
    check_rows(rows, g.num_configs(), g);
    Tensor feat(static_cast<int64_t>(rows.size()), kTileConfigDim);
    for (size_t i = 0; i < rows.size(); ++i) {
        std::memcpy(feat.data() + i * kTileConfigDim,
                    g.config_feat.data() + rows[i] * kTileConfigDim,
                    kTileConfigDim * sizeof(float));
    }
    g.config_feat = std::move(feat);
    g.config_runtime = pick(g.config_runtime, rows);
    g.config_runtime_normalizers = pick(g.config_runtime_normalizers, rows);
}

void select_config_rows(LayoutGraph& g, const ConfigRows& sel) {
    if (!sel.rows) return;
    const auto& rows = *sel.rows;
    check_rows(rows, g.num_configs(), g);
    const size_t row = static_cast<size_t>(g.num_config_nodes()) * kLayoutConfigDim;
    std::vector<int8_t> feat(rows.size() * row);
    for (size_t i = 0; i < rows.size(); ++i) {
        std::memcpy(feat.data() + i * row, g.node_config_feat.data() + rows[i] * row, row);
    }
    g.node_config_feat = std::move(feat);
    g.config_runtime = pick(g.config_runtime, rows);
}

Tensor select_node_rows(ConstMatrixView feat, std::span<const int64_t> nodes,
                        const std::string& where) {
    Tensor out(static_cast<int64_t>(nodes.size()), feat.cols);
    for (size_t i = 0; i < nodes.size(); ++i) {
        SEGRANK_CHECK(nodes[i] >= 0 && nodes[i] < feat.rows, where, ": node_feat row ", nodes[i],
                      " (selection index ", i, ") out of range [0, ", feat.rows, ")");
        std::memcpy(out.data() + static_cast<int64_t>(i) * feat.cols, feat.row(nodes[i]),
                    static_cast<size_t>(feat.cols) * sizeof(float));
    }
    return out;
}

ConfigTensors GraphSource::load_configs(int64_t i, const ConfigRows& rows) const {
    ConfigTensors t;
    if (task() == Task::kTile) {
        TileGraph g = load_tile(i, rows);
        t.tile_feat = std::move(g.config_feat);
        t.runtime = std::move(g.config_runtime);
        t.runtime_normalizers = std::move(g.config_runtime_normalizers);
    } else {
        LayoutGraph g = load_layout(i, rows);
        t.layout_feat = std::move(g.node_config_feat);
        t.runtime = std::move(g.config_runtime);
    }
    return t;
}

ConfigTensors GraphSource::load_labels(int64_t i) const {
    ConfigTensors t = load_configs(i, ConfigRows::all());
    t.tile_feat = Tensor();
    t.layout_feat = {};
    return t;
}

TileGraph GraphSource::load_tile_structure(int64_t i) const {
    TileGraph g = load_tile(i, ConfigRows::none());
    g.node_feat = Tensor(0, kNodeFeatDim);
    return g;
}

LayoutGraph GraphSource::load_layout_structure(int64_t i) const {
    LayoutGraph g = load_layout(i, ConfigRows::none());
    g.node_feat = Tensor(0, kNodeFeatDim);
    return g;
}

Tensor GraphSource::load_node_feat_rows(int64_t i, std::span<const int64_t> nodes) const {
    if (task() == Task::kTile) {
        const TileGraph g = load_tile(i, ConfigRows::none());
        return select_node_rows(g.node_feat.cview(), nodes, g.source.string());
    }
    const LayoutGraph g = load_layout(i, ConfigRows::none());
    return select_node_rows(g.node_feat.cview(), nodes, g.source.string());
}

namespace {

// The structure of graph i (either task) with the layout index arrays, for the default range
// readers.
LayoutGraph any_structure(const GraphSource& src, int64_t i) {
    if (src.task() == Task::kLayout) return src.load_layout_structure(i);
    LayoutGraph g;
    TileGraph t = src.load_tile_structure(i);
    static_cast<GraphStructure&>(g) = std::move(static_cast<GraphStructure&>(t));
    return g;
}

void check_range(int64_t begin, int64_t end, int64_t size, const std::string& where,
                 const char* what) {
    SEGRANK_CHECK(begin >= 0 && begin <= end && end <= size, where, ": ", what, " rows [", begin,
                  ", ", end, ") out of range [0, ", size, "]");
}

}  // namespace

void GraphSource::read_layout_config_rows(int64_t i, std::span<const int64_t> rows,
                                          std::span<int8_t> out) const {
    SEGRANK_CHECK(task() == Task::kLayout, "read_layout_config_rows: the source holds ",
                  collection().name(), ", not layout graphs");
    const ConfigTensors t = load_configs(i, ConfigRows::only({rows.begin(), rows.end()}));
    SEGRANK_CHECK(t.layout_feat.size() == out.size(), "read_layout_config_rows: ", rows.size(),
                  " rows hold ", t.layout_feat.size(), " values, the buffer ", out.size());
    std::copy(t.layout_feat.begin(), t.layout_feat.end(), out.begin());
}

void gather_config_columns(std::span<const int8_t> row, std::span<const int32_t> columns,
                           std::span<int8_t> out, const std::string& where) {
    const auto nc = static_cast<int64_t>(row.size()) / kLayoutConfigDim;
    SEGRANK_CHECK(out.size() == columns.size() * kLayoutConfigDim, where, ": ", columns.size(),
                  " columns hold ", columns.size() * kLayoutConfigDim, " values, the buffer ",
                  out.size());
    for (size_t j = 0; j < columns.size(); ++j) {
        SEGRANK_CHECK(columns[j] >= 0 && columns[j] < nc, where, ": column ", columns[j],
                      " (selection index ", j, ") out of range [0, ", nc, ")");
        std::memcpy(out.data() + j * kLayoutConfigDim,
                    row.data() + static_cast<size_t>(columns[j]) * kLayoutConfigDim,
                    kLayoutConfigDim);
    }
}

void GraphSource::read_layout_config_columns(int64_t i, std::span<const int64_t> rows,
                                             std::span<const int32_t> columns,
                                             std::span<int8_t> out) const {
    SEGRANK_CHECK(task() == Task::kLayout, "read_layout_config_columns: the source holds ",
                  collection().name(), ", not layout graphs");
    const size_t block = columns.size() * kLayoutConfigDim;
    SEGRANK_CHECK(out.size() == rows.size() * block, "read_layout_config_columns: ", rows.size(),
                  " rows of ", columns.size(), " columns hold ", rows.size() * block,
                  " values, the buffer ", out.size());
    // Rows in groups of about 1 MiB (at least one row) through read_layout_config_rows.
    const auto row = static_cast<size_t>(info(i).num_config_nodes) * kLayoutConfigDim;
    const size_t per = std::max<size_t>(1, (size_t{1} << 20) / std::max<size_t>(1, row));
    std::vector<int8_t> scratch;
    for (size_t k = 0; k < rows.size(); k += per) {
        const size_t n = std::min(per, rows.size() - k);
        scratch.resize(n * row);
        read_layout_config_rows(i, rows.subspan(k, n), scratch);
        for (size_t j = 0; j < n; ++j)
            gather_config_columns({scratch.data() + j * row, row}, columns,
                                  out.subspan((k + j) * block, block), where(i));
    }
}

StructureIndex GraphSource::load_structure_index(int64_t i) const {
    LayoutGraph g = any_structure(*this, i);
    StructureIndex x;
    x.name = g.name;
    x.source = g.source;
    x.where = where(i);
    x.num_nodes = g.num_nodes();
    x.num_edges = g.num_edges();
    x.node_config_ids = std::move(g.node_config_ids);
    x.node_splits = std::move(g.node_splits);
    return x;
}

std::vector<int64_t> GraphSource::load_edge_range(int64_t i, int64_t begin, int64_t end) const {
    const LayoutGraph g = any_structure(*this, i);
    check_range(begin, end, g.num_edges(), g.source.string(), "edge_index");
    return {g.edge_index.begin() + 2 * begin, g.edge_index.begin() + 2 * end};
}

std::vector<int32_t> GraphSource::load_opcode_range(int64_t i, int64_t begin, int64_t end) const {
    const LayoutGraph g = any_structure(*this, i);
    check_range(begin, end, g.num_nodes(), g.source.string(), "node_opcode");
    return {g.node_opcode.begin() + begin, g.node_opcode.begin() + end};
}

NpzGraphSource::NpzGraphSource(Collection collection, std::optional<LabelPolicy> labels)
    : c_(std::move(collection)), labels_(labels.value_or(label_policy(c_.id.split))) {}

GraphInfo NpzGraphSource::info(int64_t i) const {
    SEGRANK_CHECK(i >= 0 && i < size(), c_.dir.string(), ": graph index ", i, " out of range [0, ",
                  size(), ")");
    const auto& path = c_.files[static_cast<size_t>(i)];
    NpzReader z(path);
    GraphInfo info;
    info.name = path.stem().string();
    info.source = path;
    const auto dim0 = [&](const std::string& key) {
        const NpyHeader h = z.header(key);
        SEGRANK_CHECK(!h.shape.empty(), z.where(key), ": expected at least one dimension");
        return h.shape[0];
    };
    info.num_nodes = dim0("node_opcode");
    info.num_edges = dim0("edge_index");
    info.num_configs = dim0("config_runtime");
    if (c_.id.task == Task::kLayout) info.num_config_nodes = dim0("node_config_ids");
    return info;
}

TileGraph NpzGraphSource::load_tile(int64_t i, const ConfigRows& rows) const {
    SEGRANK_CHECK(c_.id.task == Task::kTile, c_.dir.string(), ": collection ", c_.id.name(),
                  " holds layout graphs, not tile graphs");
    SEGRANK_CHECK(i >= 0 && i < size(), c_.dir.string(), ": graph index ", i, " out of range");
    TileGraph g = load_tile_npz(c_.files[static_cast<size_t>(i)], labels_);
    select_config_rows(g, rows);
    return g;
}

LayoutGraph NpzGraphSource::load_layout(int64_t i, const ConfigRows& rows) const {
    SEGRANK_CHECK(c_.id.task == Task::kLayout, c_.dir.string(), ": collection ", c_.id.name(),
                  " holds tile graphs, not layout graphs");
    SEGRANK_CHECK(i >= 0 && i < size(), c_.dir.string(), ": graph index ", i, " out of range");
    LayoutGraph g = load_layout_npz(c_.files[static_cast<size_t>(i)], labels_);
    select_config_rows(g, rows);
    return g;
}

ConfigTensors NpzGraphSource::load_labels(int64_t i) const {
    SEGRANK_CHECK(i >= 0 && i < size(), c_.dir.string(), ": graph index ", i, " out of range");
    return naming_file_on_oom(c_.files[static_cast<size_t>(i)], [&] {
        const NpzReader z(c_.files[static_cast<size_t>(i)]);
        auto read = [&](const std::string& key) {
            const NpyHeader h = z.header(key, sizeof(int64_t));
            SEGRANK_CHECK(h.shape.size() == 1, z.where(key), ": expected shape (c,), got ",
                          h.shape.size(), " dimensions");
            std::vector<int64_t> v(static_cast<size_t>(h.shape[0]));
            z.read_i64(key, v);
            return v;
        };
        ConfigTensors t;
        t.runtime = read("config_runtime");
        if (c_.id.task == Task::kTile) t.runtime_normalizers = read("config_runtime_normalizers");
        validate_runtime_rows(t.runtime, t.runtime_normalizers, labels_, z.path().string());
        return t;
    });
}

}  // namespace segrank
