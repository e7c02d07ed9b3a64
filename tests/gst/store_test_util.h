// Helpers for tests of graphs read from HDF5 stores: a counting GraphSource and entry/normalizer
// builders over graph 0 of a source.
#pragma once
#include <algorithm>
#include <cstdint>
#include <span>
#include <vector>

#include "data/graph_entry.h"
#include "data/graph_store.h"
#include "data/normalizer.h"
#include "gst/prepared_graph.h"

namespace segrank::test {

/// Delegates every read to a GraphStore (its partial reads included) and records whole-graph loads
/// and the largest config-row and node-row requests.
class CountingSource : public GraphSource {
public:
    explicit CountingSource(const GraphStore& s) : s_(s) {}
    const CollectionId& collection() const override { return s_.collection(); }
    int64_t size() const override { return s_.size(); }
    GraphInfo info(int64_t i) const override { return s_.info(i); }
    std::string where(int64_t i) const override { return s_.where(i); }
    TileGraph load_tile(int64_t i, const ConfigRows& r) const override {
        ++full_loads;
        return s_.load_tile(i, r);
    }
    LayoutGraph load_layout(int64_t i, const ConfigRows& r) const override {
        ++full_loads;
        return s_.load_layout(i, r);
    }
    bool partial_reads() const override { return true; }
    ConfigTensors load_configs(int64_t i, const ConfigRows& r) const override {
        note_config_rows(r.rows ? static_cast<int64_t>(r.rows->size()) : int64_t{1} << 30);
        return s_.load_configs(i, r);
    }
    void read_layout_config_rows(int64_t i, std::span<const int64_t> rows,
                                 std::span<int8_t> out) const override {
        note_config_rows(static_cast<int64_t>(rows.size()));
        s_.read_layout_config_rows(i, rows, out);
    }
    ConfigTensors load_labels(int64_t i) const override { return s_.load_labels(i); }
    TileGraph load_tile_structure(int64_t i) const override { return s_.load_tile_structure(i); }
    LayoutGraph load_layout_structure(int64_t i) const override {
        return s_.load_layout_structure(i);
    }
    Tensor load_node_feat_rows(int64_t i, std::span<const int64_t> nodes) const override {
        max_node_rows = std::max<int64_t>(max_node_rows, static_cast<int64_t>(nodes.size()));
        return s_.load_node_feat_rows(i, nodes);
    }
    StructureIndex load_structure_index(int64_t i) const override {
        return s_.load_structure_index(i);
    }
    std::vector<int64_t> load_edge_range(int64_t i, int64_t b, int64_t e) const override {
        return s_.load_edge_range(i, b, e);
    }
    std::vector<int32_t> load_opcode_range(int64_t i, int64_t b, int64_t e) const override {
        return s_.load_opcode_range(i, b, e);
    }
    /// Largest config-row request, node-row request, and whole-graph loads (load_tile /
    /// load_layout).
    mutable int64_t max_config_rows = 0, max_node_rows = 0, full_loads = 0;

private:
    void note_config_rows(int64_t n) const { max_config_rows = std::max(max_config_rows, n); }
    const GraphStore& s_;
};

/// Normalizer fitted on graph 0 of `src`, node features read 37 rows at a time.
inline Normalizer normalizer_of(const GraphSource& src) {
    NormalizerFitter f(kNodeFeatDim);
    GraphEntry e;
    e.source = &src;
    e.collection = src.collection();
    e.info = src.info(0);
    add_node_features(f, e, 37);  // chunked
    return f.finish();
}

/// Graph 0 of `src` as a dataset entry.
inline GraphEntry entry_of(const GraphSource& src) {
    GraphEntry e;
    e.source = &src;
    e.collection = src.collection();
    e.info = src.info(0);
    e.name = e.info.name;
    return e;
}

}  // namespace segrank::test
