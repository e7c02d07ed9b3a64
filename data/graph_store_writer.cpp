// HDF5 graph store writer (docs/files.md#hdf5-store): whole graphs, or a layout graph in parts;
// the schema is documented in graph_store.h.
#include <algorithm>
#include <memory>
#include <optional>

#include "data/graph_store.h"
#include "data/graph_store_internal.h"
#include "gnn/core/check.h"

namespace segrank {

// ---------------------------------------------------------------------------------------------
// Writer

GraphStoreWriter::GraphStoreWriter(const std::filesystem::path& path, const CollectionId& id,
                                   const std::filesystem::path& source_dir, GraphStoreOptions opt)
    : path_(path), out_(path), id_(id), opt_(opt) {
    SEGRANK_CHECK(opt.chunk_bytes > 0 && opt.deflate_level >= 0 && opt.deflate_level <= 9,
                  path.string(), ": bad store options (chunk_bytes > 0, deflate 0..9)");
    // The 1.8 object format: a chunk_xxh3 attribute of more than 8192 chunks exceeds 64 KiB.
    file_ = std::make_unique<H5File>(H5File::create(out_.temp_path()));
    H5Group root = file_->root();
    root.set_attr("format", std::string(kGraphStoreFormat));
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
    return {rows_per_chunk(8), opt_.deflate_level, true};
}

namespace {

// node_feat, node_opcode and edge_index of `rows` rows of `row_bytes`: chunks of at most about
// 1 MiB (a small graph's dataset is one chunk), so a read of a segment's node rows verifies a few
// chunks' checksums, not the whole dataset's. The rows are spread evenly over the chunks: HDF5
// stores the last chunk at full size, so 1975 node_feat rows in chunks of 1872 would take 2 MiB.
// Uncompressed: node rows are read back as they are.
constexpr int64_t kStructureChunkBytes = int64_t{1} << 20;
H5WriteOptions structure_options(int64_t rows, int64_t row_bytes) {
    const int64_t max_rows = std::max<int64_t>(1, kStructureChunkBytes / row_bytes);
    const int64_t chunks = std::max<int64_t>(1, (rows + max_rows - 1) / max_rows);
    return {std::max<int64_t>(1, (rows + chunks - 1) / chunks), 0, true};
}

// The chunking of datasets grown part by part (size unknown up front): about 1 MiB per chunk.
H5WriteOptions appendable_options(int64_t row_bytes) {
    return {std::max<int64_t>(1, kStructureChunkBytes / row_bytes), 0, true};
}

// Small index datasets (node_config_ids, node_splits, node_loop_trips): one chunk, checksummed.
constexpr H5WriteOptions kOneChunk{0, 0, true};

}  // namespace

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
    gg.write<float>("node_feat", {g.num_nodes(), g.node_feat.cols()}, g.node_feat.span(),
                    structure_options(g.num_nodes(), g.node_feat.cols() * 4));
    std::vector<uint8_t> ops(g.node_opcode.begin(), g.node_opcode.end());
    gg.write<uint8_t>("node_opcode", {g.num_nodes()}, cspan(ops),
                      structure_options(g.num_nodes(), 1));
    gg.write<int64_t>("edge_index", {g.num_edges(), 2}, cspan(g.edge_index),
                      structure_options(g.num_edges(), 16));
    ++count_;
    return gg;
}

void GraphStoreWriter::add(const TileGraph& g) {
    validate(g, LabelPolicy::kAllowTestZeros, g.source.string());
    H5Group gg = begin_graph(g, Task::kTile, g.num_configs(), 0);
    const int64_t c = g.num_configs();
    gg.write<float>("config_feat", {c, kTileConfigDim}, g.config_feat.span(),
                    {rows_per_chunk(kTileConfigDim * 4), opt_.deflate_level, true});
    gg.write<int64_t>("config_runtime", {c}, cspan(g.config_runtime), runtime_options());
    gg.write<int64_t>("config_runtime_normalizers", {c}, cspan(g.config_runtime_normalizers),
                      runtime_options());
}

void GraphStoreWriter::write_layout_configs(H5Group& gg, const LayoutGraph& g) {
    const int64_t c = g.num_configs();
    const int64_t nc = g.num_config_nodes();
    gg.write<int64_t>("node_config_ids", {nc}, cspan(g.node_config_ids), kOneChunk);
    gg.write<int8_t>("node_config_feat", {c, nc, kLayoutConfigDim}, cspan(g.node_config_feat),
                     {rows_per_chunk(nc * kLayoutConfigDim), opt_.deflate_level, true});
    gg.write<int64_t>("config_runtime", {c}, cspan(g.config_runtime), runtime_options());
    gg.write<int64_t>("node_splits", {static_cast<int64_t>(g.node_splits.size())},
                      cspan(g.node_splits), kOneChunk);
    if (!g.node_loop_trips.empty())  // optional (docs/files.md#loop-trip-counts)
        gg.write<float>(
            "node_loop_trips",
            {static_cast<int64_t>(g.node_loop_trips.size()) / kLoopTripCols, kLoopTripCols},
            cspan(g.node_loop_trips), kOneChunk);
}

void GraphStoreWriter::add(const LayoutGraph& g) {
    validate(g, LabelPolicy::kAllowTestZeros, g.source.string());
    H5Group gg = begin_graph(g, Task::kLayout, g.num_configs(), g.num_config_nodes());
    write_layout_configs(gg, g);
}

void GraphStoreWriter::begin_layout_parts(const std::string& name,
                                          const std::filesystem::path& source) {
    H5Group gg = create_graph_group(name, source, Task::kLayout);
    // About 1 MiB per chunk: a segment's node rows come in a few chunk reads.
    const auto chunk = appendable_options;
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

}  // namespace segrank
