// HDF5 graph store (docs/files.md#hdf5-store): one file per collection split, readable by h5py.
//
// Schema (format_version 2):
//   /                      attrs: format = "segrank-graph-store", format_version = 2,
//                                 task = "tile"|"layout", collection = "layout:xla:default",
//                                 split = "train"|"valid"|"test"|"unknown", source = packed folder
//   /graphs/<name>/        attrs: source_file, num_nodes, num_edges, num_configs, num_config_nodes
//     node_feat            f32 [n, 140]     chunked by ~1 MiB of rows
//     node_opcode          u8  [n]          chunked by ~1 MiB of rows
//     edge_index           i64 [m, 2]       chunked by ~1 MiB of rows (row (u, v): u consumes v)
//     config_runtime       i64 [c] ns       chunked by config rows, deflate
//     tile only:   config_feat                 f32 [c, 24]      chunked by config rows, deflate
//                  config_runtime_normalizers  i64 [c] ns       chunked by config rows, deflate
//     layout only: node_config_ids             i64 [nc]         one chunk
//                  node_config_feat            i8  [c, nc, 18]  chunked by config rows, deflate
//                  node_splits                 i64 [k]          one chunk
// Config tensors are chunked along the config dimension, so reading K sampled rows touches at most
// K chunks and never the rest of the tensor. Every dataset carries two checksums per chunk
// (H5WriteOptions::checksum): HDF5's Fletcher32, and the attribute chunk_xxh3 = xxh3_64 of each
// chunk's rows, verified on every read of the chunk (a mismatch: "<store>:/graphs/<name>/<dataset>:
// checksum mismatch in chunk N (rows a..b): the file is corrupt ..."). format_version 1 stores
// (Fletcher32 only, which misses a 16-bit word changed 0x0000 <-> 0xFFFF) are refused: pack again.
#pragma once
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "data/graph_source.h"
#include "data/h5_file.h"
#include "util/atomic_file.h"

namespace segrank {

/// The store format this build writes and reads (2: chunk_xxh3 on every dataset; 3: also the HDF5
/// 1.10 file format with checksummed metadata and fixed-length string attributes).
inline constexpr int64_t kGraphStoreVersion = 3;

/// Layout knobs of written stores.
struct GraphStoreOptions {
    int64_t chunk_bytes = 32 * 1024;  ///< target bytes per config-tensor chunk (>= 1 row)
    int deflate_level = 4;            ///< 0 = no compression, 1..9 = shuffle + deflate
};

/// Writes a store to `<path>.tmp-<pid>` and commits it onto `path` in finish()
/// (util/atomic_file.h); destroying an unfinished writer removes the temporary file (no partial
/// stores).
class GraphStoreWriter {
public:
    GraphStoreWriter(const std::filesystem::path& path, const CollectionId& id,
                     const std::filesystem::path& source_dir, GraphStoreOptions opt = {});
    ~GraphStoreWriter();
    GraphStoreWriter(const GraphStoreWriter&) = delete;
    GraphStoreWriter& operator=(const GraphStoreWriter&) = delete;

    /// Appends a graph (validated first; its name must be unique in the store and match the task).
    void add(const TileGraph& g);
    void add(const LayoutGraph& g);
    /// Begins a layout graph written in parts, for graphs too large to hold in memory at once
    /// (`segrank synth` of staged graphs, docs/hwmodel.md#very-large-graphs): call
    /// append_layout_part() for consecutive node ranges, then end_layout_parts(). node_feat,
    /// node_opcode and edge_index grow part by part (chunked, about 1 MiB per chunk); readers
    /// see the schema add() writes. One graph at a time: add(), finish() and another begin
    /// refuse while a graph is open. Throws segrank::Error on a bad or duplicate name.
    /// The temporary file written until finish() renames it into place ("<path>.tmp-<pid>").
    const std::filesystem::path& temp_path() const { return out_.temp_path(); }
    void begin_layout_parts(const std::string& name, const std::filesystem::path& source);
    /// Appends the next nodes: part.node_feat [p, 140], part.node_opcode [p], part.edge_index
    /// [m_p, 2] with whole-graph node ids < (nodes so far) + p. Validated (validate_part) first.
    void append_layout_part(const GraphStructure& part);
    /// Ends the open graph with its node_config_ids, node_config_feat, config_runtime and
    /// node_splits (g's structure fields are ignored), validated against the appended node count.
    void end_layout_parts(const LayoutGraph& g);
    int64_t size() const { return count_; }
    /// Closes and commits into place. Throws segrank::Error on HDF5 or file-system failure.
    void finish();

private:
    H5Group begin_graph(const GraphStructure& g, Task task, int64_t num_configs, int64_t nc);
    H5Group create_graph_group(const std::string& name, const std::filesystem::path& source,
                               Task task);
    void write_layout_configs(H5Group& gg, const LayoutGraph& g);
    void check_no_open_parts() const;  // throws while a graph is written in parts
    int64_t rows_per_chunk(int64_t row_bytes) const;
    H5WriteOptions runtime_options() const;

    std::filesystem::path path_;
    AtomicOutput out_;  // declared before file_: the file is closed before its removal
    CollectionId id_;
    GraphStoreOptions opt_;
    std::unique_ptr<H5File> file_;
    int64_t count_ = 0;
    bool finished_ = false;
    struct OpenParts;  // the graph begun by begin_layout_parts, if any
    std::unique_ptr<OpenParts> parts_;
};

/// Reads a store written by GraphStoreWriter. Structure and selected config rows are read on
/// demand with hyperslab selections; nothing is cached. Throws when the file is not a store or
/// has a newer format version.
class GraphStore : public GraphSource {
public:
    /// `labels` defaults to label_policy(split attribute).
    explicit GraphStore(const std::filesystem::path& path, std::optional<LabelPolicy> labels = {});
    const CollectionId& collection() const override { return id_; }
    int64_t size() const override { return static_cast<int64_t>(names_.size()); }
    GraphInfo info(int64_t i) const override;
    /// `<store path>:/graphs/<name>` (the HDF5 group read), not the npz it was packed from.
    std::string where(int64_t i) const override;
    TileGraph load_tile(int64_t i, const ConfigRows& rows) const override;
    LayoutGraph load_layout(int64_t i, const ConfigRows& rows) const override;
    /// Partial reads touch only the requested rows' chunks (config tensors) or rows (node_feat).
    bool partial_reads() const override { return true; }
    ConfigTensors load_configs(int64_t i, const ConfigRows& rows) const override;
    ConfigTensors load_labels(int64_t i) const override;
    /// Reads the rows' chunks straight into `out`.
    void read_layout_config_rows(int64_t i, std::span<const int64_t> rows,
                                 std::span<int8_t> out) const override;
    /// Reads the rows one HDF5 chunk at a time (each chunk read once, its rows' columns copied
    /// out), so the scratch is one chunk's rows, not K full rows.
    void read_layout_config_columns(int64_t i, std::span<const int64_t> rows,
                                    std::span<const int32_t> columns,
                                    std::span<int8_t> out) const override;
    TileGraph load_tile_structure(int64_t i) const override;
    LayoutGraph load_layout_structure(int64_t i) const override;
    /// Reads only `nodes` of node_feat (hyperslab selection); non-finite values are refused,
    /// naming the dataset, node and column.
    Tensor load_node_feat_rows(int64_t i, std::span<const int64_t> nodes) const override;
    /// Reads dataset shapes and the two small index arrays only (same checks as load_*_structure,
    /// plus edge_index of shape (m, 2)).
    StructureIndex load_structure_index(int64_t i) const override;
    /// One hyperslab of edge_index rows.
    std::vector<int64_t> load_edge_range(int64_t i, int64_t begin, int64_t end) const override;
    /// One hyperslab of node_opcode, values checked.
    std::vector<int32_t> load_opcode_range(int64_t i, int64_t begin, int64_t end) const override;

    const std::filesystem::path& path() const { return file_.path(); }
    /// Graph names in index order (sorted).
    const std::vector<std::string>& names() const { return names_; }
    /// The underlying file, for inspection (e.g. dataset storage sizes in tests).
    const H5File& file() const { return file_; }

private:
    H5Group graph_group(int64_t i) const;
    /// Graph i's node_config_feat, checked to be (c, nc, 18); throws segrank::Error naming the
    /// store when it holds tile graphs, the dataset when its shape is another.
    H5Dataset layout_config_dataset(int64_t i) const;
    void load_structure(const H5Group& gg, int64_t i, GraphStructure& g,
                        bool node_feat = true) const;

    H5File file_;
    CollectionId id_;
    LabelPolicy labels_;
    std::vector<std::string> names_;
};

/// True when `path` looks like an HDF5 file (by its 8-byte signature).
bool is_hdf5_file(const std::filesystem::path& path);

/// True when `path` is a segrank graph store: an HDF5 file whose root attribute `format` is
/// "segrank-graph-store" (a checkpoint, which is HDF5 too, is not). Never throws: an unreadable
/// or damaged file is no store.
bool is_graph_store_file(const std::filesystem::path& path);

/// The HDF5 graph stores in `dir` (a folder written by `segrank pack`): its `*.h5` files, sorted by
/// path; empty when there are none. Throws std::filesystem errors if
/// `dir` cannot be listed, segrank::Error naming the file for a `*.h5` that is not a regular file
/// or lacks the HDF5 signature (it is not skipped).
std::vector<std::filesystem::path> list_graph_stores(const std::filesystem::path& dir);

}  // namespace segrank
