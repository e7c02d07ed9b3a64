// npz load/save of TileGraph and LayoutGraph (docs/files.md#keys-and-dtypes). Shapes are checked
// from the npy headers before any payload is read; payloads stream straight into the record's
// buffers.
#include "data/graph.h"

#include <string>

#include "data/input_memory.h"
#include "data/npz.h"
#include "gnn/core/check.h"

namespace segrank {
namespace {

// Header of `key`, requiring `rank` dimensions, checked for an allocation of `target_size`-byte
// elements (NpzReader::header).
NpyHeader header_of(const NpzReader& z, const std::string& key, size_t rank, const char* expected,
                    size_t target_size) {
    NpyHeader h = z.header(key, target_size);
    SEGRANK_CHECK(h.shape.size() == rank, z.where(key), ": shape ", shape_text(h.shape),
                  ", expected ", expected);
    return h;
}

void expect_dim(const NpzReader& z, const std::string& key, const NpyHeader& h, size_t dim,
                int64_t want, const char* other) {
    SEGRANK_CHECK(h.shape[dim] == want, z.where(key), ": shape ", shape_text(h.shape),
                  " disagrees with ", other, ": dimension ", dim, " should be ", want);
}

// Reads the structure keys shared by both tasks into g.
void load_structure(const NpzReader& z, GraphStructure& g) {
    g.name = z.path().stem().string();
    g.source = z.path();
    const NpyHeader op = header_of(z, "node_opcode", 1, "(n,)", sizeof(int64_t));
    const int64_t n = op.shape[0];
    SEGRANK_CHECK(n > 0, z.where("node_opcode"), ": empty graph (0 nodes)");
    const NpyHeader nf = header_of(z, "node_feat", 2, "(n, 140)", sizeof(float));
    expect_dim(z, "node_feat", nf, 0, n, "node_opcode (n,)");
    expect_dim(z, "node_feat", nf, 1, kNodeFeatDim, "the 140 node features");
    NpyHeader ei = z.header("edge_index", sizeof(int64_t));
    const bool empty_1d = ei.shape.size() == 1 && ei.shape[0] == 0;
    SEGRANK_CHECK(empty_1d || (ei.shape.size() == 2 && ei.shape[1] == 2), z.where("edge_index"),
                  ": shape ", shape_text(ei.shape), ", expected (m, 2)");

    std::vector<int64_t> ops(static_cast<size_t>(n));
    z.read_i64("node_opcode", ops);
    g.node_opcode.resize(ops.size());
    for (size_t i = 0; i < ops.size(); ++i) {
        SEGRANK_CHECK(ops[i] >= 0 && ops[i] < kNumOpcodes, z.where("node_opcode"), ": index ", i,
                      " value ", ops[i], " out of range [0, ", kNumOpcodes - 1, "]");
        g.node_opcode[i] = static_cast<int32_t>(ops[i]);
    }
    g.node_feat = Tensor(n, kNodeFeatDim);
    z.read_f32("node_feat", g.node_feat.span());
    g.edge_index.resize(static_cast<size_t>(ei.num_elements()));
    z.read_i64("edge_index", g.edge_index);
}

int64_t load_runtime(const NpzReader& z, std::vector<int64_t>& rt) {
    const NpyHeader h = header_of(z, "config_runtime", 1, "(c,)", sizeof(int64_t));
    SEGRANK_CHECK(h.shape[0] > 0, z.where("config_runtime"), ": no configurations (c = 0)");
    rt.resize(static_cast<size_t>(h.shape[0]));
    z.read_i64("config_runtime", rt);
    return h.shape[0];
}

void write_structure(NpzWriter& w, const GraphStructure& g) {
    const int64_t n = g.num_nodes();
    w.add_f32("node_feat", {n, g.node_feat.cols()}, g.node_feat.span());
    std::vector<uint8_t> ops(g.node_opcode.size());
    for (size_t i = 0; i < ops.size(); ++i) {
        SEGRANK_CHECK(g.node_opcode[i] >= 0 && g.node_opcode[i] < 256, g.name,
                      ": key 'node_opcode': index ", i, " value ", g.node_opcode[i],
                      " does not fit in uint8");
        ops[i] = static_cast<uint8_t>(g.node_opcode[i]);
    }
    w.add_u8("node_opcode", {n}, ops);
    w.add_i64("edge_index", {g.num_edges(), 2}, g.edge_index);
}

TileGraph read_tile_npz(const std::filesystem::path& path, LabelPolicy labels) {
    NpzReader z(path);
    TileGraph g;
    load_structure(z, g);
    const int64_t c = load_runtime(z, g.config_runtime);
    const NpyHeader cf = header_of(z, "config_feat", 2, "(c, 24)", sizeof(float));
    expect_dim(z, "config_feat", cf, 0, c, "config_runtime (c,)");
    expect_dim(z, "config_feat", cf, 1, kTileConfigDim, "the 24 tile config features");
    const NpyHeader nz = header_of(z, "config_runtime_normalizers", 1, "(c,)", sizeof(int64_t));
    expect_dim(z, "config_runtime_normalizers", nz, 0, c, "config_runtime (c,)");
    g.config_feat = Tensor(c, kTileConfigDim);
    z.read_f32("config_feat", g.config_feat.span());
    g.config_runtime_normalizers.resize(static_cast<size_t>(c));
    z.read_i64("config_runtime_normalizers", g.config_runtime_normalizers);
    validate(g, labels, path.string());
    return g;
}

LayoutGraph read_layout_npz(const std::filesystem::path& path, LabelPolicy labels) {
    NpzReader z(path);
    LayoutGraph g;
    load_structure(z, g);
    const int64_t c = load_runtime(z, g.config_runtime);
    const NpyHeader ids = header_of(z, "node_config_ids", 1, "(nc,)", sizeof(int64_t));
    const int64_t nc = ids.shape[0];
    const NpyHeader cf = header_of(z, "node_config_feat", 3, "(c, nc, 18)", sizeof(int8_t));
    expect_dim(z, "node_config_feat", cf, 0, c, "config_runtime (c,)");
    expect_dim(z, "node_config_feat", cf, 1, nc, "node_config_ids (nc,)");
    expect_dim(z, "node_config_feat", cf, 2, kLayoutConfigDim, "the 18 layout config slots");
    const NpyHeader sp = z.header("node_splits", sizeof(int64_t));
    SEGRANK_CHECK(sp.shape.size() == 1 || (sp.shape.size() == 2 && sp.shape[0] == 1),
                  z.where("node_splits"), ": shape ", shape_text(sp.shape), ", expected (1, k)");
    g.node_config_ids.resize(static_cast<size_t>(nc));
    z.read_i64("node_config_ids", g.node_config_ids);
    g.node_config_feat.resize(static_cast<size_t>(cf.num_elements()));
    z.read_i8("node_config_feat", g.node_config_feat);
    g.node_splits.resize(static_cast<size_t>(sp.num_elements()));
    z.read_i64("node_splits", g.node_splits);
    if (z.contains("node_loop_trips")) {  // optional (docs/files.md#loop-trip-counts)
        const NpyHeader lt = header_of(z, "node_loop_trips", 2, "(n, 2)", sizeof(float));
        expect_dim(z, "node_loop_trips", lt, 0, g.num_nodes(), "node_opcode (n,)");
        expect_dim(z, "node_loop_trips", lt, 1, kLoopTripCols, "2 columns (log2 trips, unknown)");
        g.node_loop_trips.resize(static_cast<size_t>(lt.num_elements()));
        z.read_f32("node_loop_trips", g.node_loop_trips);
    }
    validate(g, labels, path.string());
    return g;
}

}  // namespace

TileGraph load_tile_npz(const std::filesystem::path& path, LabelPolicy labels) {
    return naming_file_on_oom(path, [&] { return read_tile_npz(path, labels); });
}

LayoutGraph load_layout_npz(const std::filesystem::path& path, LabelPolicy labels) {
    return naming_file_on_oom(path, [&] { return read_layout_npz(path, labels); });
}

void save_tile_npz(const TileGraph& g, const std::filesystem::path& path) {
    save_tile_npz(g, path, NpzCompression::kDeflate);
}

void save_tile_npz(const TileGraph& g, const std::filesystem::path& path,
                   NpzCompression compression) {
    validate(g, LabelPolicy::kAllowTestZeros, path.string());
    NpzWriter w(path, compression);
    write_structure(w, g);
    w.add_f32("config_feat", {g.num_configs(), kTileConfigDim}, g.config_feat.span());
    w.add_i64("config_runtime", {g.num_configs()}, g.config_runtime);
    w.add_i64("config_runtime_normalizers", {g.num_configs()}, g.config_runtime_normalizers);
    w.finish();
}

void save_layout_npz(const LayoutGraph& g, const std::filesystem::path& path) {
    save_layout_npz(g, path, NpzCompression::kDeflate);
}

void save_layout_npz(const LayoutGraph& g, const std::filesystem::path& path,
                     NpzCompression compression) {
    validate(g, LabelPolicy::kAllowTestZeros, path.string());
    NpzWriter w(path, compression);
    write_structure(w, g);
    w.add_i64("node_config_ids", {g.num_config_nodes()}, g.node_config_ids);
    std::vector<float> feat(g.node_config_feat.begin(), g.node_config_feat.end());
    w.add_f32("node_config_feat", {g.num_configs(), g.num_config_nodes(), kLayoutConfigDim}, feat);
    w.add_i64("config_runtime", {g.num_configs()}, g.config_runtime);
    w.add_i64("node_splits", {1, static_cast<int64_t>(g.node_splits.size())}, g.node_splits);
    if (!g.node_loop_trips.empty())
        w.add_f32("node_loop_trips", {g.num_nodes(), kLoopTripCols}, g.node_loop_trips);
    w.finish();
}

}  // namespace segrank
