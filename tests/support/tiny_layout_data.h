// A tiny hand-built layout collection for GST and trainer tests, with a learnable runtime signal.
//
// Graph g (n nodes): node u reads u-1 and sometimes u-2 / u-3 (a "local DAG", so hop distances grow
// with |u - v|); 12 varying feature columns, the other 128 constant (dropped by the normalizer);
// opcodes from a small set; `config_nodes` configurable nodes spread over the graph.
// Config c: values -1..5 per (configurable node, 18 dims), drawn at random; runtime (ns)
//   1e6 * (1 + g % 3) + 1000 * sum_{j, d < 6} w[d] * (value[c][j][d] + 1),  w = {3, -2, 2, -1, 1,
//   -3}
// i.e. a linear function of six of the 18 config slots, shared by every node and graph — a model
// that reads the configs can rank them, random scores cannot.
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

namespace segrank::test {

struct TinyLayoutSpec {
    int train_graphs = 4;
    int valid_graphs = 0;
    int64_t min_nodes = 40;
    int64_t max_nodes = 70;
    int64_t configs = 96;
    int64_t config_nodes = 2;
    uint64_t seed = 1;
    /// Give every node a real array shape (node_feat: the f32 one-hot f13, rank 2-4 dims of 1..300
    /// in f21-24, a random minor_to_major in f134-137; docs/files.md#node-features), drawn from
    /// a stream of its own so the other draws stay those of shapes = false.
    bool shapes = false;
};

/// Structure shared by the tiny graphs: n nodes whose first `feat_cols` features are N(0, (1+f)^2),
/// opcodes from a small set, a chain v -> v-1 plus random skips of 2-3; draws from `rng` in that
/// order.
inline void fill_tiny_structure(GraphStructure& g, Rng& rng, int64_t n, int64_t feat_cols) {
    g.node_feat = Tensor(n, kNodeFeatDim);
    for (int64_t v = 0; v < n; ++v)
        for (int64_t f = 0; f < feat_cols; ++f)
            g.node_feat.at(v, f) = static_cast<float>(rng.normal() * (1.0 + f));
    static const int32_t kOps[] = {26, 10, 41, 63, 95, 99, 5, 7};
    for (int64_t v = 0; v < n; ++v) g.node_opcode.push_back(kOps[rng.uniform_int(8)]);
    for (int64_t u = 1; u < n; ++u) {
        g.edge_index.push_back(u);
        g.edge_index.push_back(u - 1);
        if (u >= 3 && rng.uniform() < 0.5) {
            g.edge_index.push_back(u);
            g.edge_index.push_back(u - 2 - static_cast<int64_t>(rng.uniform_int(2)));
        }
    }
}

/// One graph of the tiny collection (see the file comment); `index` varies size and offset.
inline LayoutGraph tiny_layout_graph(const std::string& name, int64_t index,
                                     const TinyLayoutSpec& spec) {
    Rng rng = Rng::derive(spec.seed, static_cast<uint64_t>(index), 0, "tiny_layout_graph");
    LayoutGraph g;
    g.name = name;
    const int64_t n = spec.min_nodes + static_cast<int64_t>(rng.uniform_int(static_cast<uint64_t>(
                                           spec.max_nodes - spec.min_nodes + 1)));
    fill_tiny_structure(g, rng, n, 12);
    const int64_t nc = spec.config_nodes;
    for (int64_t j = 0; j < nc; ++j) g.node_config_ids.push_back((2 * j + 1) * n / (2 * nc));
    const int64_t c = spec.configs;
    g.node_config_feat.resize(static_cast<size_t>(c * nc * kLayoutConfigDim));
    for (auto& x : g.node_config_feat)
        x = static_cast<int8_t>(static_cast<int>(rng.uniform_int(7)) - 1);
    for (int64_t i = 0; i < c; ++i) {
        double rt = 1e6 * static_cast<double>(1 + index % 3);
        static const double kW[6] = {3, -2, 2, -1, 1, -3};
        for (int64_t j = 0; j < nc; ++j)
            for (int64_t d = 0; d < 6; ++d)
                rt +=
                    1000.0 * kW[d] *
                    (g.node_config_feat[static_cast<size_t>((i * nc + j) * kLayoutConfigDim + d)] +
                     1);
        g.config_runtime.push_back(static_cast<int64_t>(rt));
    }
    g.node_splits = {0, n};
    if (spec.shapes) {
        Rng srng = Rng::derive(spec.seed, static_cast<uint64_t>(index), 0, "tiny_layout_shapes");
        for (int64_t v = 0; v < n; ++v) {
            const int rank = 2 + static_cast<int>(srng.uniform_int(3));
            int perm[4] = {0, 1, 2, 3};
            for (int i = rank - 1; i > 0; --i)
                std::swap(perm[i], perm[srng.uniform_int(static_cast<uint64_t>(i + 1))]);
            for (int64_t f = 2; f <= 20; ++f) g.node_feat.at(v, f) = 0.0f;
            g.node_feat.at(v, 13) = 1.0f;
            for (int d = 0; d < 6; ++d) {
                g.node_feat.at(v, 21 + d) =
                    d < rank ? static_cast<float>(1 + srng.uniform_int(300)) : 0.0f;
                g.node_feat.at(v, 134 + d) = d < rank ? static_cast<float>(perm[d]) : 0.0f;
            }
        }
    }
    return g;
}

/// Writes root/npz/layout/xla/random/{train,valid}/tiny_NN.npz and returns root.
inline std::filesystem::path write_tiny_layout_collection(const std::filesystem::path& root,
                                                          const TinyLayoutSpec& spec = {}) {
    const auto base = root / "npz/layout/xla/random";
    int64_t index = 0;
    for (const auto& [split, count] :
         {std::pair{"train", spec.train_graphs}, std::pair{"valid", spec.valid_graphs}}) {
        if (count == 0) continue;
        std::filesystem::create_directories(base / split);
        for (int i = 0; i < count; ++i, ++index) {
            const std::string name = std::string("tiny_") + split + "_" + std::to_string(i);
            save_layout_npz(tiny_layout_graph(name, index, spec), base / split / (name + ".npz"));
        }
    }
    return root;
}

/// Packs `graphs` tiny layout graphs named "big_<i>" into <dir>/store/train.h5 (collection
/// layout:xla:random, split train) and returns the store path.
inline std::filesystem::path write_tiny_layout_store(const std::filesystem::path& dir,
                                                     const TinyLayoutSpec& spec, int graphs = 1) {
    std::filesystem::create_directories(dir / "store");
    const std::filesystem::path path = dir / "store" / "train.h5";
    CollectionId id = CollectionId::parse("layout:xla:random");
    id.split = Split::kTrain;
    GraphStoreWriter w(path, id, dir);
    for (int i = 0; i < graphs; ++i) w.add(tiny_layout_graph("big_" + std::to_string(i), i, spec));
    w.finish();
    return path;
}

}  // namespace segrank::test
