// HDF5 graph store writer and reader (docs/files.md#hdf5-store); schema documented in
// graph_store.h.
#include "data/graph_store.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <optional>

#include "data/input_memory.h"
#include "gnn/core/check.h"
#include "util/user_input.h"

namespace segrank {
namespace {

constexpr const char* kFormat = "segrank-graph-store";

template <typename T>
std::span<const T> cspan(const std::vector<T>& v) {
    return {v.data(), v.size()};
}

}  // namespace

bool is_graph_store_file(const std::filesystem::path& path) {
    if (!is_hdf5_file(path)) return false;
    try {
        const H5File file = H5File::open_read(path);
        const auto format = file.root().attr_string("format");
        return format && *format == kFormat;
    } catch (const std::exception&) {
        return false;
    }
}

bool is_hdf5_file(const std::filesystem::path& path) {
    std::ifstream f(path, std::ios::binary);
    char sig[8] = {};
    f.read(sig, 8);
    return f.gcount() == 8 && std::memcmp(sig, "\x89HDF\r\n\x1a\n", 8) == 0;
}

std::vector<std::filesystem::path> list_graph_stores(const std::filesystem::path& dir) {
    std::vector<std::filesystem::path> stores;
    for (const auto& e : std::filesystem::directory_iterator(dir)) {
        if (e.path().extension() != ".h5") continue;
        check_listed_file(e, "h5");
        SEGRANK_CHECK(is_hdf5_file(e.path()), e.path().string(),
                      ": not an HDF5 file (no HDF5 signature); every .h5 in a store folder must be "
                      "a graph store written by `segrank pack`");
        stores.push_back(e.path());
    }
    std::sort(stores.begin(), stores.end());
    return stores;
}

// ---------------------------------------------------------------------------------------------
// Writer

GraphStoreWriter::GraphStoreWriter(const std::filesystem::path& path, const CollectionId& id,
                                   const std::filesystem::path& source_dir, GraphStoreOptions opt)
    : path_(path), out_(path), id_(id), opt_(opt) {
    SEGRANK_CHECK(opt.chunk_bytes > 0 && opt.deflate_level >= 0 && opt.deflate_level <= 9,
                  path.string(), ": bad store options (chunk_bytes > 0, deflate 0..9)");
    file_ = std::make_unique<H5File>(H5File::create(out_.temp_path()));
    H5Group root = file_->root();
    root.set_attr("format", std::string(kFormat));
    root.set_attr("format_version", kGraphStoreVersion);
    root.set_attr("task", std::string(to_string(id.task)));
    root.set_attr("collection", id.name());
    root.set_attr("split", std::string(to_string(id.split)));
    root.set_attr("source", source_dir.string());
    root.create_group("graphs");
}

GraphStoreWriter::~GraphStoreWriter() {
    parts_.reset();  // its datasets and group close before the file
    file_.reset();   // closed first; out_ then removes the temporary file unless finished
}

int64_t GraphStoreWriter::rows_per_chunk(int64_t row_bytes) const {
    return std::max<int64_t>(1, opt_.chunk_bytes / std::max<int64_t>(1, row_bytes));
}

// Runtimes are chunked like the config tensors, so K sampled rows do not pull in the whole vector
// (a contiguous dataset would be read through HDF5's 64 KiB sieve buffer).
H5WriteOptions GraphStoreWriter::runtime_options() const {
    return {rows_per_chunk(8), opt_.deflate_level};
}

struct GraphStoreWriter::OpenParts {
    H5Group group;
    std::string name;
    std::filesystem::path source;
    std::optional<H5Dataset> node_feat, node_opcode, edge_index;
    int64_t nodes = 0, edges = 0;
};

void GraphStoreWriter::check_no_open_parts() const {
    SEGRANK_CHECK(!parts_, path_.string(), ": graph '", parts_ ? parts_->name : "",
                  "' is still being written in parts (end_layout_parts first)");
}

H5Group GraphStoreWriter::create_graph_group(const std::string& name,
                                             const std::filesystem::path& source, Task task) {
    SEGRANK_CHECK(!finished_, path_.string(), ": store already finished");
    check_no_open_parts();
    SEGRANK_CHECK(task == id_.task, path_.string(), ": graph '", name, "' is a ", to_string(task),
                  " graph but the store holds ", id_.name());
    SEGRANK_CHECK(
        !name.empty() && name.find('/') == std::string::npos && name != "." && name != "..",
        path_.string(), ": graph name '", name, "' is not a valid HDF5 group name");
    H5Group graphs = file_->root().open_group("graphs");
    SEGRANK_CHECK(!graphs.has(name), path_.string(), ": duplicate graph name '", name, "'");
    H5Group gg = graphs.create_group(name);
    gg.set_attr("source_file", source.string());
    return gg;
}

H5Group GraphStoreWriter::begin_graph(const GraphStructure& g, Task task, int64_t num_configs,
                                      int64_t nc) {
    H5Group gg = create_graph_group(g.name, g.source, task);
    gg.set_attr("num_nodes", g.num_nodes());
    gg.set_attr("num_edges", g.num_edges());
    gg.set_attr("num_configs", num_configs);
    gg.set_attr("num_config_nodes", nc);
    const H5WriteOptions small{0, 0};
    gg.write<float>("node_feat", {g.num_nodes(), g.node_feat.cols()}, g.node_feat.span(), small);
    std::vector<uint8_t> ops(g.node_opcode.begin(), g.node_opcode.end());
    gg.write<uint8_t>("node_opcode", {g.num_nodes()}, cspan(ops), small);
    gg.write<int64_t>("edge_index", {g.num_edges(), 2}, cspan(g.edge_index), small);
    ++count_;
    return gg;
}

void GraphStoreWriter::add(const TileGraph& g) {
    validate(g, LabelPolicy::kAllowTestZeros, g.source.string());
    H5Group gg = begin_graph(g, Task::kTile, g.num_configs(), 0);
    const int64_t c = g.num_configs();
    gg.write<float>("config_feat", {c, kTileConfigDim}, g.config_feat.span(),
                    {rows_per_chunk(kTileConfigDim * 4), opt_.deflate_level});
    gg.write<int64_t>("config_runtime", {c}, cspan(g.config_runtime), runtime_options());
    gg.write<int64_t>("config_runtime_normalizers", {c}, cspan(g.config_runtime_normalizers),
                      runtime_options());
}

void GraphStoreWriter::write_layout_configs(H5Group& gg, const LayoutGraph& g) {
    const int64_t c = g.num_configs();
    const int64_t nc = g.num_config_nodes();
    gg.write<int64_t>("node_config_ids", {nc}, cspan(g.node_config_ids));
    gg.write<int8_t>("node_config_feat", {c, nc, kLayoutConfigDim}, cspan(g.node_config_feat),
                     {rows_per_chunk(nc * kLayoutConfigDim), opt_.deflate_level});
    gg.write<int64_t>("config_runtime", {c}, cspan(g.config_runtime), runtime_options());
    gg.write<int64_t>("node_splits", {static_cast<int64_t>(g.node_splits.size())},
                      cspan(g.node_splits));
    if (!g.node_loop_trips.empty())  // optional (docs/files.md#loop-trip-counts)
        gg.write<float>(
            "node_loop_trips",
            {static_cast<int64_t>(g.node_loop_trips.size()) / kLoopTripCols, kLoopTripCols},
            cspan(g.node_loop_trips));
}

namespace {

// The optional node_loop_trips dataset of a layout graph of n nodes (empty when absent).
std::vector<float> read_loop_trips(const H5Group& gg, int64_t n) {
    if (!gg.has("node_loop_trips")) return {};
    const H5Dataset d = gg.open_dataset("node_loop_trips");
    const auto s = d.shape();
    SEGRANK_CHECK(s.size() == 2 && s[0] == n && s[1] == kLoopTripCols, d.where(),
                  ": expected shape (n, 2) with n = ", n);
    std::vector<float> trips = d.read<float>();
    validate_loop_trips(trips, n, d.where());
    return trips;
}

}  // namespace

void GraphStoreWriter::add(const LayoutGraph& g) {
    validate(g, LabelPolicy::kAllowTestZeros, g.source.string());
    H5Group gg = begin_graph(g, Task::kLayout, g.num_configs(), g.num_config_nodes());
    write_layout_configs(gg, g);
}

void GraphStoreWriter::begin_layout_parts(const std::string& name,
                                          const std::filesystem::path& source) {
    H5Group gg = create_graph_group(name, source, Task::kLayout);
    // About 1 MiB per chunk: a segment's node rows come in a few chunk reads.
    constexpr int64_t kPartChunkBytes = int64_t{1} << 20;
    auto chunk = [&](int64_t row_bytes) -> H5WriteOptions {
        return {std::max<int64_t>(1, kPartChunkBytes / row_bytes), 0};
    };
    auto p = std::make_unique<OpenParts>(OpenParts{std::move(gg), name, source, {}, {}, {}, 0, 0});
    p->node_feat =
        p->group.create_appendable<float>("node_feat", {kNodeFeatDim}, chunk(kNodeFeatDim * 4));
    p->node_opcode = p->group.create_appendable<uint8_t>("node_opcode", {}, chunk(1));
    p->edge_index = p->group.create_appendable<int64_t>("edge_index", {2}, chunk(16));
    parts_ = std::move(p);
}

void GraphStoreWriter::append_layout_part(const GraphStructure& part) {
    SEGRANK_CHECK(parts_, path_.string(), ": append_layout_part without begin_layout_parts");
    validate_part(part, parts_->nodes,
                  str(path_.string(), ": graph '", parts_->name, "' part at node ", parts_->nodes));
    parts_->node_feat->append<float>(part.node_feat.span());
    std::vector<uint8_t> ops(part.node_opcode.begin(), part.node_opcode.end());
    parts_->node_opcode->append<uint8_t>(cspan(ops));
    parts_->edge_index->append<int64_t>(cspan(part.edge_index));
    parts_->nodes += part.num_nodes();
    parts_->edges += part.num_edges();
}

void GraphStoreWriter::end_layout_parts(const LayoutGraph& g) {
    SEGRANK_CHECK(parts_, path_.string(), ": end_layout_parts without begin_layout_parts");
    const std::string where = str(path_.string(), ": graph '", parts_->name, "'");
    SEGRANK_CHECK(parts_->nodes > 0, where, ": no parts were appended");
    validate_layout_configs(g, parts_->nodes, LabelPolicy::kAllowTestZeros, where);
    const std::unique_ptr<OpenParts> p = std::move(parts_);
    H5Group& gg = p->group;
    gg.set_attr("num_nodes", p->nodes);
    gg.set_attr("num_edges", p->edges);
    gg.set_attr("num_configs", g.num_configs());
    gg.set_attr("num_config_nodes", g.num_config_nodes());
    write_layout_configs(gg, g);
    ++count_;
}

void GraphStoreWriter::finish() {
    SEGRANK_CHECK(!finished_, path_.string(), ": store already finished");
    check_no_open_parts();
    file_->root().set_attr("num_graphs", count_);
    file_->close();
    file_.reset();
    finished_ = true;
    out_.commit();
}

// ---------------------------------------------------------------------------------------------
// Reader

namespace {

// The collection split a store holds, from its root attributes `collection` (one of the five
// collection names, exactly as the writer writes CollectionId::name()), `task` (which must be the
// collection's) and `split`. Throws naming the file, the attribute and the allowed values.
CollectionId read_store_id(const H5Group& root, const std::filesystem::path& path) {
    const auto coll = root.attr_string("collection");
    SEGRANK_CHECK(coll, path.string(), ": attribute 'collection' required");
    constexpr const char* kNames =
        "tile:xla, layout:xla:default, layout:xla:random, layout:nlp:default, layout:nlp:random";
    std::optional<CollectionId> id;
    try {
        id = CollectionId::parse(*coll);
    } catch (const Error&) {
    }
    SEGRANK_CHECK(id && id->name() == *coll, path.string(), ": attribute 'collection' = '",
                  echo_value(*coll), "' names no collection (expected one of ", kNames, ")");
    const auto task = root.attr_string("task");
    SEGRANK_CHECK(task, path.string(), ": attribute 'task' required");
    SEGRANK_CHECK(*task == "tile" || *task == "layout", path.string(), ": attribute 'task' = '",
                  echo_value(*task), "' is not a task (expected tile or layout)");
    SEGRANK_CHECK(*task == to_string(id->task), path.string(), ": attribute 'task' = '", *task,
                  "' but attribute 'collection' = '", *coll, "' is a ", to_string(id->task),
                  " collection (expected task '", to_string(id->task), "')");
    const auto split = root.attr_string("split");
    SEGRANK_CHECK(split, path.string(), ": attribute 'split' required");
    try {
        id->split = parse_split(*split);
    } catch (const Error& e) {
        throw Error(str(path.string(), ": attribute 'split': ", e.what()));
    }
    return *id;
}

}  // namespace

GraphStore::GraphStore(const std::filesystem::path& path, std::optional<LabelPolicy> labels)
    : file_(H5File::open_read(path)) {
    const H5Group root = file_.root();
    const auto format = root.attr_string("format");
    SEGRANK_CHECK(format && *format == kFormat, path.string(),
                  ": not a segrank graph store (attribute 'format' is missing or not '", kFormat,
                  "')");
    const int64_t version = root.attr_int("format_version").value_or(-1);
    SEGRANK_CHECK(version >= 1 && version <= kGraphStoreVersion, path.string(),
                  ": attribute 'format_version' = ", version, ", this build reads 1..",
                  kGraphStoreVersion);
    id_ = read_store_id(root, path);
    labels_ = labels.value_or(label_policy(id_.split));
    names_ = root.open_group("graphs").children();
}

H5Group GraphStore::graph_group(int64_t i) const {
    SEGRANK_CHECK(i >= 0 && i < size(), path().string(), ": graph index ", i, " out of range [0, ",
                  size(), ")");
    return file_.root().open_group("graphs").open_group(names_[static_cast<size_t>(i)]);
}

std::string GraphStore::where(int64_t i) const { return graph_group(i).where(); }

GraphInfo GraphStore::info(int64_t i) const {
    const H5Group gg = graph_group(i);
    GraphInfo info;
    info.name = names_[static_cast<size_t>(i)];
    info.source = gg.attr_string("source_file").value_or("");
    auto need = [&](const char* a) {
        const auto v = gg.attr_int(a);
        SEGRANK_CHECK(v.has_value(), gg.where(), ": missing attribute '", a, "'");
        return *v;
    };
    info.num_nodes = need("num_nodes");
    info.num_edges = need("num_edges");
    info.num_configs = need("num_configs");
    info.num_config_nodes = need("num_config_nodes");
    SEGRANK_CHECK(info.num_configs > 0, gg.where(),
                  ": 0 configs (attribute num_configs = ", info.num_configs,
                  "): a graph needs at least one configuration");
    // The attributes size every chunked read; a store edited by hand must not disagree with its
    // data.
    auto rows_of_dataset = [&](const char* name) {
        const auto shape = gg.open_dataset(name).shape();
        return shape.empty() ? int64_t{0} : shape[0];
    };
    auto agree = [&](const char* attr, int64_t value, const char* dataset) {
        const int64_t rows = rows_of_dataset(dataset);
        SEGRANK_CHECK(rows == value, gg.where(), ": attribute ", attr, " = ", value, " but ",
                      dataset, " has ", rows, " rows");
    };
    agree("num_nodes", info.num_nodes, "node_feat");
    agree("num_edges", info.num_edges, "edge_index");
    agree("num_configs", info.num_configs, "config_runtime");
    if (id_.task == Task::kLayout)
        agree("num_config_nodes", info.num_config_nodes, "node_config_ids");
    return info;
}

void GraphStore::load_structure(const H5Group& gg, int64_t i, GraphStructure& g,
                                bool node_feat) const {
    g.name = names_[static_cast<size_t>(i)];
    g.source = gg.attr_string("source_file").value_or(path().string());
    const H5Dataset nf = gg.open_dataset("node_feat");
    const auto s = nf.shape();
    SEGRANK_CHECK(s.size() == 2 && s[1] == kNodeFeatDim, nf.where(), ": expected shape (n, ",
                  kNodeFeatDim, ")");
    if (node_feat) {
        nf.stored_elements();  // the shape is checked against the file before allocating for it
        g.node_feat = Tensor(s[0], s[1]);
        nf.read<float>(g.node_feat.span());
    } else {
        g.node_feat = Tensor(0, kNodeFeatDim);
    }
    g.node_opcode = gg.open_dataset("node_opcode").read<int32_t>();
    g.edge_index = gg.open_dataset("edge_index").read<int64_t>();
}

namespace {

// Reads `rows` of a [c, ...] dataset (all rows when not given).
template <typename T>
std::vector<T> rows_of(const H5Dataset& ds, const ConfigRows& rows) {
    if (!rows.rows) return ds.read<T>();
    std::vector<T> out(rows.rows->size() * static_cast<size_t>(ds.row_elements()));
    ds.read_rows<T>(cspan(*rows.rows), std::span<T>(out));
    return out;
}

}  // namespace

TileGraph GraphStore::load_tile(int64_t i, const ConfigRows& rows) const {
    return naming_file_on_oom(path(), [&] {
        SEGRANK_CHECK(id_.task == Task::kTile, path().string(), ": store holds ", id_.name(),
                      ", not tile graphs");
        const H5Group gg = graph_group(i);
        TileGraph g;
        load_structure(gg, i, g);
        const H5Dataset cf = gg.open_dataset("config_feat");
        const auto s = cf.shape();
        SEGRANK_CHECK(s.size() == 2 && s[1] == kTileConfigDim, cf.where(),
                      ": expected shape (c, 24)");
        const std::vector<float> feat = rows_of<float>(cf, rows);
        g.config_feat = Tensor(static_cast<int64_t>(feat.size() / kTileConfigDim), kTileConfigDim);
        std::copy(feat.begin(), feat.end(), g.config_feat.data());
        g.config_runtime = rows_of<int64_t>(gg.open_dataset("config_runtime"), rows);
        g.config_runtime_normalizers =
            rows_of<int64_t>(gg.open_dataset("config_runtime_normalizers"), rows);
        validate(g, labels_, gg.where());
        return g;
    });
}

LayoutGraph GraphStore::load_layout(int64_t i, const ConfigRows& rows) const {
    return naming_file_on_oom(path(), [&] {
        SEGRANK_CHECK(id_.task == Task::kLayout, path().string(), ": store holds ", id_.name(),
                      ", not layout graphs");
        const H5Group gg = graph_group(i);
        LayoutGraph g;
        load_structure(gg, i, g);
        g.node_config_ids = gg.open_dataset("node_config_ids").read<int64_t>();
        const H5Dataset cf = gg.open_dataset("node_config_feat");
        const auto s = cf.shape();
        SEGRANK_CHECK(s.size() == 3 && s[1] == static_cast<int64_t>(g.node_config_ids.size()) &&
                          s[2] == kLayoutConfigDim,
                      cf.where(), ": expected shape (c, nc, 18)");
        g.node_config_feat = rows_of<int8_t>(cf, rows);
        g.config_runtime = rows_of<int64_t>(gg.open_dataset("config_runtime"), rows);
        g.node_splits = gg.open_dataset("node_splits").read<int64_t>();
        g.node_loop_trips = read_loop_trips(gg, g.num_nodes());
        validate(g, labels_, gg.where());
        return g;
    });
}

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

void GraphStore::read_layout_config_rows(int64_t i, std::span<const int64_t> rows,
                                         std::span<int8_t> out) const {
    SEGRANK_CHECK(id_.task == Task::kLayout, path().string(), ": store holds ", id_.name(),
                  ", not layout graphs");
    const H5Group gg = graph_group(i);
    const H5Dataset cf = gg.open_dataset("node_config_feat");
    const auto s = cf.shape();
    SEGRANK_CHECK(s.size() == 3 && s[2] == kLayoutConfigDim, cf.where(),
                  ": expected shape (c, nc, 18)");
    cf.read_rows<int8_t>(rows, out);
    for (size_t k = 0; k < out.size(); ++k)
        SEGRANK_CHECK(out[k] >= -1 && out[k] <= 5, cf.where(), ": value ", int(out[k]),
                      " out of range [-1, 5] in selected row ",
                      k / static_cast<size_t>(s[1] * kLayoutConfigDim));
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
