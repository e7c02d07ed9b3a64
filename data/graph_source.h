// GraphSource: one interface over a collection split stored as npz files or as an HDF5 store
// (docs/files.md#collections-on-disk), so the trainer's Dataset can list graphs, read structure,
// and read only the K configuration rows it samples.
#pragma once
#include <cstdint>
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "data/collection.h"
#include "data/graph.h"

namespace segrank {

/// Sizes of one graph, available without loading its arrays.
struct GraphInfo {
    std::string name;
    std::filesystem::path source;  ///< npz file (or the npz the store graph was packed from)
    int64_t num_nodes = 0;
    int64_t num_edges = 0;
    int64_t num_configs = 0;
    int64_t num_config_nodes = 0;  ///< layout nc; 0 for tile
};

/// Which configuration rows to load: all of them, or a list (any order, repeats allowed; an empty
/// list loads the structure only, with num_configs() == 0).
struct ConfigRows {
    std::optional<std::vector<int64_t>> rows;  ///< nullopt = all rows

    static ConfigRows all() { return {}; }
    static ConfigRows none() { return {std::vector<int64_t>{}}; }
    static ConfigRows only(std::vector<int64_t> r) { return {std::move(r)}; }
};

/// The config tensors of selected rows of one graph, without the graph structure.
struct ConfigTensors {
    Tensor tile_feat;                          ///< tile: [k, 24] config_feat
    std::vector<int8_t> layout_feat;           ///< layout: [k, nc, 18] node_config_feat
    std::vector<int64_t> runtime;              ///< [k] config_runtime ns
    std::vector<int64_t> runtime_normalizers;  ///< tile: [k] ns

    int64_t num_configs() const { return static_cast<int64_t>(runtime.size()); }
};

/// What a streaming segment builder needs before it reads edges: sizes and the small layout index
/// arrays (docs/config.md#memory-datastore-and-segments). Validated by the source like
/// load_*_structure: n > 0 and equal for node_feat and node_opcode, node_config_ids strictly
/// increasing in [0, n) and non-empty (layout), node_splits non-decreasing from 0 to n (layout).
struct StructureIndex {
    std::string name;                      ///< graph name (file stem)
    std::filesystem::path source;          ///< the npz the graph came from (GraphInfo::source)
    std::string where;                     ///< what was read, for messages (GraphSource::where)
    int64_t num_nodes = 0;                 ///< n
    int64_t num_edges = 0;                 ///< m (rows of edge_index)
    std::vector<int64_t> node_config_ids;  ///< layout: [nc]; tile: empty
    std::vector<int64_t> node_splits;      ///< layout: [k]; tile: empty
};

/// A collection split: graph i in [0, size()) by name order. Implementations are not thread-safe.
///
/// Partial reads (docs/config.md#memory-datastore-and-segments): load_configs, load_structure and
/// load_node_feat_rows let a trainer keep only what one step needs. Sources whose partial_reads()
/// is false (npz: compressed members cannot be read partially) implement them by loading the whole
/// graph and selecting, so callers should then load once and keep the graph in memory instead.
class GraphSource {
public:
    virtual ~GraphSource() = default;
    virtual const CollectionId& collection() const = 0;
    Task task() const { return collection().task; }
    virtual int64_t size() const = 0;
    /// Sizes of graph i (throws for i out of range).
    virtual GraphInfo info(int64_t i) const = 0;
    /// What graph i is read from, for error messages: the npz path (default: info(i).source), or
    /// `store.h5:/graphs/<name>` for an HDF5 store.
    virtual std::string where(int64_t i) const { return info(i).source.string(); }
    /// Graph i with config tensors restricted to `rows` (in that order): config_feat / runtimes /
    /// normalizers (tile) or node_config_feat / runtimes (layout) hold rows.size() entries.
    /// Throws segrank::Error for the wrong task, a row out of range, or invalid data.
    virtual TileGraph load_tile(int64_t i, const ConfigRows& rows) const = 0;
    virtual LayoutGraph load_layout(int64_t i, const ConfigRows& rows) const = 0;

    /// True when the partial reads below touch only the requested data on disk (HDF5 store).
    virtual bool partial_reads() const { return false; }
    /// Config tensors of `rows` of graph i (in that order), without the structure. Same errors as
    /// load_tile / load_layout. Default: load the graph with `rows` and move the config part out.
    virtual ConfigTensors load_configs(int64_t i, const ConfigRows& rows) const;
    /// Layout graph i's node_config_feat rows `rows` (in that order, repeats allowed) written into
    /// `out` ([rows.size(), nc, 18]), so a caller can reuse one buffer for every chunk. Values are
    /// checked as by load_configs. Throws segrank::Error for a tile source, a size mismatch, a row
    /// out of range or a bad value. Default: load_configs and copy.
    virtual void read_layout_config_rows(int64_t i, std::span<const int64_t> rows,
                                         std::span<int8_t> out) const;
    /// Columns `columns` (positions on the nc axis, each in [0, nc), in the order given) of layout
    /// graph i's node_config_feat rows `rows`, written into `out` ([rows.size(), columns.size(),
    /// 18]): a column block of the rows, so a caller holds K x |columns| x 18 bytes instead of
    /// K x nc x 18 (docs/gst.md#inference). The values written are checked as by
    /// read_layout_config_rows. Same errors, and a column out of range. Default: one row at a time
    /// through read_layout_config_rows (nc x 18 bytes of scratch).
    virtual void read_layout_config_columns(int64_t i, std::span<const int64_t> rows,
                                            std::span<const int32_t> columns,
                                            std::span<int8_t> out) const;
    /// Runtimes (and tile normalizers) of every config of graph i; feature tensors left empty.
    virtual ConfigTensors load_labels(int64_t i) const;
    /// Graph i without node features and config rows: node_feat is [0, 140]; opcodes, edges (and
    /// for layout node_config_ids, node_splits) are filled. Structure invariants are validated;
    /// node features are checked when read.
    virtual TileGraph load_tile_structure(int64_t i) const;
    virtual LayoutGraph load_layout_structure(int64_t i) const;
    /// Raw node_feat rows `nodes` of graph i ([nodes.size(), 140], in the order given, repeats
    /// allowed). Throws segrank::Error naming the source when a node is out of range.
    virtual Tensor load_node_feat_rows(int64_t i, std::span<const int64_t> nodes) const;
    /// Sizes, node_config_ids and node_splits of graph i without edges or opcodes. Default: from
    /// load_*_structure.
    virtual StructureIndex load_structure_index(int64_t i) const;
    /// Rows [begin, end) of graph i's edge_index as [end - begin, 2] row-major (u, v): u consumes
    /// v. Ids are not range-checked here (the caller checks them against n). Throws segrank::Error
    /// naming the source when the range leaves [0, m]. Default: from load_*_structure.
    virtual std::vector<int64_t> load_edge_range(int64_t i, int64_t begin, int64_t end) const;
    /// node_opcode[begin, end) of graph i, each checked to be in [0, kNumOpcodes). Throws
    /// segrank::Error naming the source for a range outside [0, n] or a bad opcode. Default: from
    /// load_*_structure.
    virtual std::vector<int32_t> load_opcode_range(int64_t i, int64_t begin, int64_t end) const;
};

/// Copies columns `columns` of one node_config_feat row `row` ([nc, 18]) into `out`
/// ([columns.size(), 18]). Throws segrank::Error naming `where` for a size mismatch or a column
/// outside [0, nc).
void gather_config_columns(std::span<const int8_t> row, std::span<const int32_t> columns,
                           std::span<int8_t> out, const std::string& where);

/// GraphSource over the npz files of a Collection. npz members are compressed streams, so a row
/// subset is read by loading the whole graph and selecting; info() reads npy headers only.
class NpzGraphSource : public GraphSource {
public:
    /// `labels` defaults to label_policy(collection.id.split).
    explicit NpzGraphSource(Collection collection, std::optional<LabelPolicy> labels = {});
    const CollectionId& collection() const override { return c_.id; }
    int64_t size() const override { return static_cast<int64_t>(c_.files.size()); }
    GraphInfo info(int64_t i) const override;
    TileGraph load_tile(int64_t i, const ConfigRows& rows) const override;
    LayoutGraph load_layout(int64_t i, const ConfigRows& rows) const override;
    /// Reads only the config_runtime (and tile config_runtime_normalizers) members; checks as
    /// GraphStore::load_labels (runtimes >= 0, normalizers > 0, equal lengths).
    ConfigTensors load_labels(int64_t i) const override;

private:
    Collection c_;
    LabelPolicy labels_;
};

/// Restricts the config tensors of a loaded graph to `rows` (shared by the sources; throws naming
/// the graph and the row when out of range).
void select_config_rows(TileGraph& g, const ConfigRows& rows);
void select_config_rows(LayoutGraph& g, const ConfigRows& rows);

/// Copies rows `nodes` of a [n, F] feature matrix (throws naming `where` for a node out of range).
Tensor select_node_rows(ConstMatrixView feat, std::span<const int64_t> nodes,
                        const std::string& where);

}  // namespace segrank
