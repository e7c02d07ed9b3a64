// MemoryGraphSource: one graph held in memory behind the GraphSource interface, with every partial
// read (config rows, node_feat rows, edge and opcode ranges) served by copying from memory. The GST
// layer reads npz graphs through it: their members are compressed streams that cannot be read
// partially, so the graph is loaded once and every later read uses the same calls as an HDF5 store.
#pragma once
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "data/graph_source.h"

namespace segrank {

/// A GraphSource of size 1 (graph index 0) over a graph record it owns. Not thread-safe, like
/// every GraphSource; immutable after construction.
class MemoryGraphSource : public GraphSource {
public:
    /// Takes `g` as graph 0 of collection `id` (id.task must be kTile); `where` names it in
    /// messages (GraphSource::where). The record is not re-validated: it comes from a validating
    /// loader.
    MemoryGraphSource(TileGraph g, CollectionId id, std::string where);
    /// The same for a layout graph (id.task must be kLayout).
    MemoryGraphSource(LayoutGraph g, CollectionId id, std::string where);

    /// Graph i of `src` read whole (every config row) into memory; messages keep naming
    /// src.where(i). Throws segrank::Error from the source.
    static std::unique_ptr<MemoryGraphSource> load(const GraphSource& src, int64_t i);

    const CollectionId& collection() const override { return id_; }
    int64_t size() const override { return 1; }
    GraphInfo info(int64_t i) const override;
    std::string where(int64_t i) const override;
    TileGraph load_tile(int64_t i, const ConfigRows& rows) const override;
    LayoutGraph load_layout(int64_t i, const ConfigRows& rows) const override;

    /// Every read below copies only what is asked for.
    bool partial_reads() const override { return true; }
    ConfigTensors load_configs(int64_t i, const ConfigRows& rows) const override;
    void read_layout_config_rows(int64_t i, std::span<const int64_t> rows,
                                 std::span<int8_t> out) const override;
    void read_layout_config_columns(int64_t i, std::span<const int64_t> rows,
                                    std::span<const int32_t> columns,
                                    std::span<int8_t> out) const override;
    ConfigTensors load_labels(int64_t i) const override;
    TileGraph load_tile_structure(int64_t i) const override;
    LayoutGraph load_layout_structure(int64_t i) const override;
    Tensor load_node_feat_rows(int64_t i, std::span<const int64_t> nodes) const override;
    StructureIndex load_structure_index(int64_t i) const override;
    std::vector<int64_t> load_edge_range(int64_t i, int64_t begin, int64_t end) const override;
    std::vector<int32_t> load_opcode_range(int64_t i, int64_t begin, int64_t end) const override;

    /// Heap bytes of the held record (features, edges, opcodes, config tensors, runtimes).
    int64_t memory_bytes() const;

private:
    void check_index(int64_t i) const;
    void check_task(Task t) const;
    const GraphStructure& structure() const;
    // The config rows `rows` (nullopt = all) of the held graph, without the structure.
    ConfigTensors select_configs(const ConfigRows& rows) const;

    CollectionId id_;
    std::string where_;
    TileGraph tile_;      // the graph when id_.task is kTile
    LayoutGraph layout_;  // the graph when id_.task is kLayout
};

}  // namespace segrank
