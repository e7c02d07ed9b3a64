// HDF5 graph store partial reads (docs/config.md#memory-datastore-and-segments): structure without
// node features, selected config rows, node_feat rows, edge and opcode ranges.
#include <algorithm>
#include <cmath>

#include "data/graph_store.h"
#include "data/graph_store_internal.h"
#include "data/input_memory.h"
#include "gnn/core/check.h"

namespace segrank {

// ---------------------------------------------------------------------------------------------
// Partial reads: structure without node_feat, config rows only, node_feat rows only.

namespace {

// The structure checks of validate() that do not need node_feat (validate() requires it).
void check_structure_only(const GraphStructure& g, int64_t n_expected, const std::string& where) {
    const int64_t n = g.num_nodes();
    SEGRANK_CHECK(n > 0 && n == n_expected, where, ": node_opcode has ", n,
                  " entries, node_feat has ", n_expected, " rows (expected equal and > 0)");
    for (int64_t v = 0; v < n; ++v) {
        const int32_t op = g.node_opcode[static_cast<size_t>(v)];
        SEGRANK_CHECK(op >= 0 && op < kNumOpcodes, where, "/node_opcode: index ", v, " value ", op,
                      " out of range [0, ", kNumOpcodes - 1, "]");
    }
    SEGRANK_CHECK(g.edge_index.size() % 2 == 0, where, "/edge_index: expected shape (m, 2)");
    for (size_t e = 0; e < g.edge_index.size(); ++e)
        SEGRANK_CHECK(g.edge_index[e] >= 0 && g.edge_index[e] < n, where, "/edge_index: row ",
                      e / 2, " column ", e % 2, " value ", g.edge_index[e], " out of range [0, ", n,
                      ")");
}

}  // namespace

ConfigTensors GraphStore::load_configs(int64_t i, const ConfigRows& rows) const {
    return naming_file_on_oom(path(), [&] {
        const H5Group gg = graph_group(i);
        ConfigTensors t;
        if (id_.task == Task::kTile) {
            const H5Dataset cf = gg.open_dataset("config_feat");
            const auto s = cf.shape();
            SEGRANK_CHECK(s.size() == 2 && s[1] == kTileConfigDim, cf.where(),
                          ": expected shape (c, 24)");
            const std::vector<float> feat = rows_of<float>(cf, rows);
            t.tile_feat =
                Tensor(static_cast<int64_t>(feat.size() / kTileConfigDim), kTileConfigDim);
            std::copy(feat.begin(), feat.end(), t.tile_feat.data());
            for (int64_t k = 0; k < t.tile_feat.size(); ++k)
                SEGRANK_CHECK(std::isfinite(t.tile_feat[k]), cf.where(),
                              ": non-finite value in selected row ", k / kTileConfigDim);
            t.runtime_normalizers =
                rows_of<int64_t>(gg.open_dataset("config_runtime_normalizers"), rows);
        } else {
            const H5Dataset cf = gg.open_dataset("node_config_feat");
            const auto s = cf.shape();
            SEGRANK_CHECK(s.size() == 3 && s[2] == kLayoutConfigDim, cf.where(),
                          ": expected shape (c, nc, 18)");
            t.layout_feat = rows_of<int8_t>(cf, rows);
            for (size_t k = 0; k < t.layout_feat.size(); ++k)
                SEGRANK_CHECK(t.layout_feat[k] >= -1 && t.layout_feat[k] <= 5, cf.where(),
                              ": value ", int(t.layout_feat[k]),
                              " out of range [-1, 5] in selected row ",
                              k / static_cast<size_t>(s[1] * kLayoutConfigDim));
        }
        t.runtime = rows_of<int64_t>(gg.open_dataset("config_runtime"), rows);
        validate_runtime_rows(
            t.runtime, t.runtime_normalizers, labels_, gg.where(),
            rows.rows ? std::span<const int64_t>(*rows.rows) : std::span<const int64_t>());
        return t;
    });
}

H5Dataset GraphStore::layout_config_dataset(int64_t i) const {
    SEGRANK_CHECK(id_.task == Task::kLayout, path().string(), ": store holds ", id_.name(),
                  ", not layout graphs");
    H5Dataset cf = graph_group(i).open_dataset("node_config_feat");
    const auto s = cf.shape();
    SEGRANK_CHECK(s.size() == 3 && s[2] == kLayoutConfigDim, cf.where(),
                  ": expected shape (c, nc, 18)");
    return cf;
}

void GraphStore::read_layout_config_rows(int64_t i, std::span<const int64_t> rows,
                                         std::span<int8_t> out) const {
    const H5Dataset cf = layout_config_dataset(i);
    const auto s = cf.shape();
    cf.read_rows<int8_t>(rows, out);
    for (size_t k = 0; k < out.size(); ++k)
        SEGRANK_CHECK(out[k] >= -1 && out[k] <= 5, cf.where(), ": value ", int(out[k]),
                      " out of range [-1, 5] in selected row ",
                      k / static_cast<size_t>(s[1] * kLayoutConfigDim));
}

void GraphStore::read_layout_config_columns(int64_t i, std::span<const int64_t> rows,
                                            std::span<const int32_t> columns,
                                            std::span<int8_t> out) const {
    const H5Dataset cf = layout_config_dataset(i);
    const auto s = cf.shape();
    const auto row = static_cast<size_t>(s[1] * kLayoutConfigDim);
    const size_t block = columns.size() * kLayoutConfigDim;
    SEGRANK_CHECK(out.size() == rows.size() * block, "read_layout_config_columns: ", rows.size(),
                  " rows of ", columns.size(), " columns hold ", rows.size() * block,
                  " values, the buffer ", out.size());
    for (size_t k = 0; k < rows.size(); ++k)
        SEGRANK_CHECK(rows[k] >= 0 && rows[k] < s[0], cf.where(), ": row ", rows[k],
                      " (selection index ", k, ") out of range [0, ", s[0], ")");
    // The rows grouped by the chunk holding them (a contiguous dataset: about 1 MiB of rows per
    // group), each group read whole into `scratch` once, then its rows' columns copied out.
    const int64_t per = cf.chunk_rows() > 0
                            ? cf.chunk_rows()
                            : std::max<int64_t>(1, (int64_t{1} << 20) / std::max<size_t>(1, row));
    std::vector<size_t> order(rows.size());
    for (size_t k = 0; k < order.size(); ++k) order[k] = k;
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t a, size_t b) { return rows[a] < rows[b]; });
    std::vector<int64_t> group;
    std::vector<int8_t> scratch;
    for (size_t k = 0; k < order.size();) {
        size_t end = k;
        while (end < order.size() && rows[order[end]] / per == rows[order[k]] / per) ++end;
        group.clear();
        for (size_t j = k; j < end; ++j) group.push_back(rows[order[j]]);
        scratch.resize(group.size() * row);
        cf.read_rows<int8_t>(group, scratch);
        for (size_t j = k; j < end; ++j) {
            const std::span<int8_t> dst = out.subspan(order[j] * block, block);
            gather_config_columns({scratch.data() + (j - k) * row, row}, columns, dst, cf.where());
            for (size_t v = 0; v < dst.size(); ++v)
                SEGRANK_CHECK(dst[v] >= -1 && dst[v] <= 5, cf.where(), ": value ", int(dst[v]),
                              " out of range [-1, 5] in selected row ", order[j]);
        }
        k = end;
    }
}

ConfigTensors GraphStore::load_labels(int64_t i) const {
    return naming_file_on_oom(path(), [&] {
        const H5Group gg = graph_group(i);
        ConfigTensors t;
        t.runtime = gg.open_dataset("config_runtime").read<int64_t>();
        if (id_.task == Task::kTile)
            t.runtime_normalizers = gg.open_dataset("config_runtime_normalizers").read<int64_t>();
        validate_runtime_rows(t.runtime, t.runtime_normalizers, labels_, gg.where());
        return t;
    });
}

TileGraph GraphStore::load_tile_structure(int64_t i) const {
    return naming_file_on_oom(path(), [&] {
        SEGRANK_CHECK(id_.task == Task::kTile, path().string(), ": store holds ", id_.name(),
                      ", not tile graphs");
        const H5Group gg = graph_group(i);
        TileGraph g;
        load_structure(gg, i, g, /*node_feat=*/false);
        check_structure_only(g, gg.open_dataset("node_feat").shape()[0], gg.where());
        return g;
    });
}

namespace {

// Rows of an edge_index dataset, checked to be (m, 2) (or an empty rank-1 dataset).
int64_t edge_rows(const H5Dataset& ei) {
    const auto es = ei.shape();
    SEGRANK_CHECK((es.size() == 2 && es[1] == 2) || (es.size() == 1 && es[0] == 0), ei.where(),
                  ": expected shape (m, 2)");
    return es[0];
}

// node_config_ids (strictly increasing in [0, n), non-empty) and node_splits (0 .. n,
// non-decreasing) of a layout graph group, checked.
void read_layout_index(const H5Group& gg, int64_t n, std::vector<int64_t>& ids,
                       std::vector<int64_t>& splits) {
    ids = gg.open_dataset("node_config_ids").read<int64_t>();
    splits = gg.open_dataset("node_splits").read<int64_t>();
    for (size_t k = 0; k < ids.size(); ++k)
        SEGRANK_CHECK(ids[k] >= 0 && ids[k] < n && (k == 0 || ids[k] > ids[k - 1]), gg.where(),
                      "/node_config_ids: index ", k, " value ", ids[k],
                      " not strictly increasing in [0, ", n, ")");
    SEGRANK_CHECK(!ids.empty(), gg.where(), "/node_config_ids: no configurable nodes");
    SEGRANK_CHECK(!splits.empty() && splits.front() == 0 && splits.back() == n &&
                      std::is_sorted(splits.begin(), splits.end()),
                  gg.where(), "/node_splits: must be non-decreasing from 0 to n = ", n);
}

}  // namespace

StructureIndex GraphStore::load_structure_index(int64_t i) const {
    const H5Group gg = graph_group(i);
    StructureIndex x;
    x.name = names_[static_cast<size_t>(i)];
    x.source = gg.attr_string("source_file").value_or(path().string());
    x.where = gg.where();
    const H5Dataset nf = gg.open_dataset("node_feat");
    const auto fs = nf.shape();
    SEGRANK_CHECK(fs.size() == 2 && fs[1] == kNodeFeatDim, nf.where(), ": expected shape (n, ",
                  kNodeFeatDim, ")");
    const H5Dataset op = gg.open_dataset("node_opcode");
    const auto os = op.shape();
    SEGRANK_CHECK(os.size() == 1 && os[0] == fs[0] && fs[0] > 0, gg.where(),
                  ": node_opcode has shape (", os.empty() ? -1 : os[0], "), node_feat has ", fs[0],
                  " rows (expected equal and > 0)");
    const H5Dataset ei = gg.open_dataset("edge_index");
    const int64_t m = edge_rows(ei);
    x.num_nodes = fs[0];
    x.num_edges = m;
    if (id_.task == Task::kLayout) {
        read_layout_index(gg, x.num_nodes, x.node_config_ids, x.node_splits);
    }
    return x;
}

std::vector<int64_t> GraphStore::load_edge_range(int64_t i, int64_t begin, int64_t end) const {
    const H5Group gg = graph_group(i);
    const H5Dataset ei = gg.open_dataset("edge_index");
    const int64_t m = edge_rows(ei);
    SEGRANK_CHECK(begin >= 0 && begin <= end && end <= m, ei.where(), ": rows [", begin, ", ", end,
                  ") out of range [0, ", m, "]");
    std::vector<int64_t> out(static_cast<size_t>(2 * (end - begin)));
    if (end > begin) ei.read_range<int64_t>(begin, end - begin, out);
    return out;
}

std::vector<int32_t> GraphStore::load_opcode_range(int64_t i, int64_t begin, int64_t end) const {
    const H5Group gg = graph_group(i);
    const H5Dataset op = gg.open_dataset("node_opcode");
    const auto os = op.shape();
    SEGRANK_CHECK(os.size() == 1, op.where(), ": expected shape (n,)");
    SEGRANK_CHECK(begin >= 0 && begin <= end && end <= os[0], op.where(), ": rows [", begin, ", ",
                  end, ") out of range [0, ", os[0], "]");
    std::vector<int32_t> out(static_cast<size_t>(end - begin));
    if (end > begin) op.read_range<int32_t>(begin, end - begin, out);
    for (size_t k = 0; k < out.size(); ++k)
        SEGRANK_CHECK(out[k] >= 0 && out[k] < kNumOpcodes, op.where(), ": index ",
                      begin + static_cast<int64_t>(k), " value ", out[k], " out of range [0, ",
                      kNumOpcodes - 1, "]");
    return out;
}

LayoutGraph GraphStore::load_layout_structure(int64_t i) const {
    return naming_file_on_oom(path(), [&] {
        SEGRANK_CHECK(id_.task == Task::kLayout, path().string(), ": store holds ", id_.name(),
                      ", not layout graphs");
        const H5Group gg = graph_group(i);
        LayoutGraph g;
        load_structure(gg, i, g, /*node_feat=*/false);
        check_structure_only(g, gg.open_dataset("node_feat").shape()[0], gg.where());
        read_layout_index(gg, g.num_nodes(), g.node_config_ids, g.node_splits);
        g.node_loop_trips = read_loop_trips(gg, g.num_nodes());
        return g;
    });
}

Tensor GraphStore::load_node_feat_rows(int64_t i, std::span<const int64_t> nodes) const {
    const H5Group gg = graph_group(i);
    const H5Dataset nf = gg.open_dataset("node_feat");
    const auto s = nf.shape();
    SEGRANK_CHECK(s.size() == 2 && s[1] == kNodeFeatDim, nf.where(), ": expected shape (n, ",
                  kNodeFeatDim, ")");
    Tensor out(static_cast<int64_t>(nodes.size()), kNodeFeatDim);
    nf.read_rows<float>(nodes, out.span());
    for (int64_t k = 0; k < out.size(); ++k)
        SEGRANK_CHECK(std::isfinite(out[k]), nf.where(), ": non-finite value ", out[k], " at node ",
                      nodes[static_cast<size_t>(k / kNodeFeatDim)], " column ", k % kNodeFeatDim);
    return out;
}

}  // namespace segrank
