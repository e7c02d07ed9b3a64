// The reads both store harnesses make: GraphStore open, then per graph every read a run or `segrank
// stats` makes (info, structure index, edge and opcode ranges, node_feat rows, labels, selected
// config rows, whole graph and structure loads). segrank::Error is the expected outcome of bad
// content; afterwards no HDF5 id may be left open (H5Handle::open_count()): RAII must close every
// id on every error path.
#pragma once
#include <cstdlib>
#include <filesystem>
#include <vector>

#include "data/graph_store.h"
#include "gnn/core/check.h"

namespace segrank::fuzz {

template <typename F>
void quietly(F&& f) {
    try {
        f();
    } catch (const Error&) {
    }
}

inline void read_every_graph(const std::filesystem::path& path) {
    quietly([&] {
        const GraphStore s(path, LabelPolicy::kAllowTestZeros);
        for (int64_t i = 0; i < s.size() && i < 4; ++i) {
            quietly([&] { (void)s.info(i); });
            quietly([&] { (void)s.where(i); });
            quietly([&] { (void)s.load_structure_index(i); });
            quietly([&] { (void)s.load_edge_range(i, 0, 1); });
            quietly([&] { (void)s.load_opcode_range(i, 0, 1); });
            quietly([&] { (void)s.load_node_feat_rows(i, std::vector<int64_t>{0}); });
            quietly([&] { (void)s.load_labels(i); });
            quietly([&] { (void)s.load_configs(i, ConfigRows::only({0, 1})); });
            if (s.task() == Task::kTile) {
                quietly([&] { (void)s.load_tile(i, ConfigRows::all()); });
                quietly([&] { (void)s.load_tile(i, ConfigRows::only({1, 0, 1})); });
                quietly([&] { (void)s.load_tile_structure(i); });
            } else {
                quietly([&] { (void)s.load_layout(i, ConfigRows::all()); });
                quietly([&] { (void)s.load_layout(i, ConfigRows::only({1, 0, 1})); });
                quietly([&] { (void)s.load_layout_structure(i); });
                quietly([&] {
                    const size_t nc = s.load_structure_index(i).node_config_ids.size();  // checked
                    std::vector<int8_t> out(2 * nc * kLayoutConfigDim);
                    s.read_layout_config_rows(i, std::vector<int64_t>{0, 1}, out);
                });
            }
        }
    });
    if (H5Handle::open_count() != 0) std::abort();
}

}  // namespace segrank::fuzz
