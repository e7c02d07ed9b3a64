// A tiny hand-built tile:xla collection for GST and trainer tests, packed into HDF5 stores, with a
// learnable runtime signal and per-config normalizers that matter.
//
// Graph g (n nodes): node u reads u-1 and sometimes u-2 / u-3 (a "local DAG"); 10 varying feature
// columns, the other 130 constant; opcodes from a small set.
// Config c: config_feat [c, 24] with integer values 0..7 (tile sizes are small integers);
//   normalizer[c] = 1000 * (1 + c % 4) ns
//   runtime[c]    = normalizer[c] * (10 + g % 3 + sum_{d < 4} w[d] * feat[c][d]),  w = {0.5, -0.25,
//   0.75, 0.25}
// so target = runtime / normalizer is linear in four of the 24 config columns (always >= 3.75 > 0),
// while raw runtimes are dominated by the normalizer: a test that used runtimes as targets would
// see it.
#pragma once
#include <cstdint>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "data/collection.h"
#include "data/graph.h"
#include "data/graph_store.h"
#include "gnn/core/rng.h"
#include "tests/support/tiny_layout_data.h"

namespace segrank::test {

struct TinyTileSpec {
    int64_t min_nodes = 30;
    int64_t max_nodes = 60;
    int64_t configs = 40;
    uint64_t seed = 7;
};

/// normalizer[c] of the tiny tile graphs (see the file comment).
inline int64_t tiny_tile_normalizer(int64_t c) { return 1000 * (1 + c % 4); }

/// One graph of the tiny tile collection (see the file comment); `index` varies size and offset.
inline TileGraph tiny_tile_graph(const std::string& name, int64_t index, const TinyTileSpec& spec) {
    Rng rng = Rng::derive(spec.seed, static_cast<uint64_t>(index), 0, "tiny_tile_graph");
    TileGraph g;
    g.name = name;
    const int64_t n = spec.min_nodes + static_cast<int64_t>(rng.uniform_int(static_cast<uint64_t>(
                                           spec.max_nodes - spec.min_nodes + 1)));
    fill_tiny_structure(g, rng, n, 10);
    const int64_t c = spec.configs;
    g.config_feat = Tensor(c, kTileConfigDim);
    static const double kW[4] = {0.5, -0.25, 0.75, 0.25};
    for (int64_t i = 0; i < c; ++i) {
        double target = 10.0 + static_cast<double>(index % 3);
        for (int64_t d = 0; d < kTileConfigDim; ++d) {
            const auto x = static_cast<float>(rng.uniform_int(8));
            g.config_feat.at(i, d) = x;
            if (d < 4) target += kW[d] * x;
        }
        const int64_t norm = tiny_tile_normalizer(i);
        g.config_runtime_normalizers.push_back(norm);
        g.config_runtime.push_back(static_cast<int64_t>(target * static_cast<double>(norm)));
    }
    return g;
}

/// Packs `graphs` tiny tile graphs named "<split>_<i>" into <dir>/<split>.h5 (collection tile:xla,
/// split `split`) and returns the store path. `first_index` offsets the graph indices (so a valid
/// split's graphs differ from the train split's).
inline std::filesystem::path write_tiny_tile_store(const std::filesystem::path& dir, Split split,
                                                   int graphs, const TinyTileSpec& spec = {},
                                                   int64_t first_index = 0) {
    std::filesystem::create_directories(dir);
    CollectionId id = CollectionId::parse("tile:xla");
    id.split = split;
    const std::string split_name = split == Split::kTrain   ? "train"
                                   : split == Split::kValid ? "valid"
                                                            : "test";
    const std::filesystem::path path = dir / (split_name + ".h5");
    GraphStoreWriter w(path, id, dir);
    for (int i = 0; i < graphs; ++i)
        w.add(tiny_tile_graph(split_name + "_" + std::to_string(i), first_index + i, spec));
    w.finish();
    return path;
}

}  // namespace segrank::test
