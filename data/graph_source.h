// GraphSource: one interface over a collection split stored as npz files or as an HDF5 store
// (DESIGN.md 10), so the trainer's Dataset can list graphs, read structure, and read only the K
// configuration rows it samples.
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

/// A collection split: graph i in [0, size()) by name order. Implementations are not thread-safe.
class GraphSource {
public:
    virtual ~GraphSource() = default;
    virtual const CollectionId& collection() const = 0;
    Task task() const { return collection().task; }
    virtual int64_t size() const = 0;
    /// Sizes of graph i (throws for i out of range).
    virtual GraphInfo info(int64_t i) const = 0;
    /// Graph i with config tensors restricted to `rows` (in that order): config_feat / runtimes /
    /// normalizers (tile) or node_config_feat / runtimes (layout) hold rows.size() entries.
    /// Throws segrank::Error for the wrong task, a row out of range, or invalid data.
    virtual TileGraph load_tile(int64_t i, const ConfigRows& rows) const = 0;
    virtual LayoutGraph load_layout(int64_t i, const ConfigRows& rows) const = 0;
};

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

private:
    Collection c_;
    LabelPolicy labels_;
};

/// Restricts the config tensors of a loaded graph to `rows` (shared by the sources; throws naming
/// the graph and the row when out of range).
void select_config_rows(TileGraph& g, const ConfigRows& rows);
void select_config_rows(LayoutGraph& g, const ConfigRows& rows);

}  // namespace segrank
