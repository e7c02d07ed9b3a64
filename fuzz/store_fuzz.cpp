// HDF5 graph store: the bytes as a file opened by GraphStore, then every read a run or `segrank
// stats` makes of each graph (info, structure index, ranges, whole graphs, selected config rows,
// node_feat rows, labels). Afterwards no HDF5 id may be left open (H5Handle::open_count()): RAII
// must close every id on every error path. HDF5's own leaks on corrupt files (e.g. H5Dopen2
// failing inside H5D__layout_oh_read) are suppressed by fuzz/lsan.supp.
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "data/graph_store.h"
#include "fuzz/fuzz_util.h"
#include "gnn/core/check.h"

using namespace segrank;

namespace {

template <typename F>
void quietly(F&& f) {
    try {
        f();
    } catch (const Error&) {
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const auto path = fuzz::write_temp("h5", data, size);
    if (!is_hdf5_file(path)) return 0;
    quietly([&] {
        const GraphStore s(path, LabelPolicy::kAllowTestZeros);
        for (int64_t i = 0; i < s.size() && i < 4; ++i) {
            quietly([&] { (void)s.info(i); });
            quietly([&] { (void)s.load_structure_index(i); });
            quietly([&] { (void)s.load_edge_range(i, 0, 1); });
            quietly([&] { (void)s.load_opcode_range(i, 0, 1); });
            quietly([&] { (void)s.load_node_feat_rows(i, std::vector<int64_t>{0}); });
            quietly([&] { (void)s.load_labels(i); });
            quietly([&] { (void)s.load_configs(i, ConfigRows::only({0, 1})); });
            if (s.task() == Task::kTile) {
                quietly([&] { (void)s.load_tile(i, ConfigRows::all()); });
                quietly([&] { (void)s.load_tile_structure(i); });
            } else {
                quietly([&] { (void)s.load_layout(i, ConfigRows::all()); });
                quietly([&] { (void)s.load_layout_structure(i); });
            }
        }
    });
    if (H5Handle::open_count() != 0) std::abort();
    return 0;
}
