// Small synthetic segments for model tests: a "local DAG" where node u reads 1-2 of the 3 nodes
// before it (like an HLO chain with short skips), so hop distances grow with |u - v| and sparse
// configurable nodes leave most of the graph config-independent for 3 layers.
//   0 <- 1 <- 2 <- 3 ...   plus u <- u-2 / u-3 skips
#pragma once
#include <utility>
#include <vector>

#include "gnn/core/csr.h"
#include "gnn/model.h"
#include "tests/support/grad_check.h"

namespace segrank::test {

/// Owns everything a SegmentInput borrows.
struct TinySegment {
    Tensor feat;
    std::vector<int32_t> opcode;
    GraphCsr graph;
    std::vector<int32_t> config_nodes;
    std::vector<int8_t> config_values;  // [K, nc, 18]
    Tensor tile_config;                 // [K, 24]
    std::vector<float> layout_bytes;  // [K, nc, kLayoutByteFeatures] (or set_layout_feature_width)
    bool with_bytes = false;          // input() passes layout_bytes as its layout_features
    Tensor tile_cost;                 // [K, kTileCostFeatures]
    bool with_cost = false;           // input() passes tile_cost
    int64_t k = 0;
    int64_t num_pooled = 0;

    SegmentInput input() const {
        SegmentInput in;
        in.node_feat = feat.cview();
        in.opcode = opcode;
        in.operands = &graph.operands;
        in.users = &graph.users;
        in.num_pooled = num_pooled;
        in.config_node_local = config_nodes;
        in.config_values = config_values;
        in.tile_config = tile_config.cview();
        if (with_cost) in.tile_cost = tile_cost.cview();
        if (with_bytes) in.layout_features = layout_bytes;
        in.k = k;
        return in;
    }
};

/// n nodes, F features, K configs, configurable nodes = the given ids; num_pooled = n - halo.
inline TinySegment make_tiny_segment(int64_t n, int64_t f, int64_t k,
                                     std::vector<int32_t> config_nodes, int64_t halo = 0,
                                     uint64_t seed = 1) {
    Rng rng(seed);
    TinySegment s;
    s.k = k;
    s.num_pooled = n - halo;
    s.feat = random_tensor(n, f, rng);
    for (int64_t v = 0; v < n; ++v) s.opcode.push_back(static_cast<int32_t>(rng.uniform_int(121)));
    std::vector<int32_t> u, p;
    for (int32_t v = 1; v < n; ++v) {
        u.push_back(v);
        p.push_back(v - 1);
        if (v >= 3 && rng.uniform() < 0.5) {
            u.push_back(v);
            p.push_back(v - 2 - static_cast<int32_t>(rng.uniform_int(2)));
        }
    }
    s.graph = build_graph_csr(n, u, p);
    s.config_nodes = std::move(config_nodes);
    const int64_t nc = static_cast<int64_t>(s.config_nodes.size());
    for (int64_t i = 0; i < k * nc * 18; ++i)
        s.config_values.push_back(static_cast<int8_t>(rng.uniform_int(7)) - 1);
    s.tile_config = Tensor(k, 24);
    for (int64_t i = 0; i < s.tile_config.size(); ++i)
        s.tile_config[i] = static_cast<float>(rng.normal() * 3.0);
    // Byte features from their own stream, so the draws above are those of before.
    Rng brng = Rng::derive(seed, 0, 0, "tiny_bytes");
    for (int64_t i = 0; i < k * nc * kLayoutByteFeatures; ++i)
        s.layout_bytes.push_back(static_cast<float>(brng.normal() * 0.5));
    // Tile cost features: values in [-2, 2] like the standardized ones, from their own stream.
    Rng crng = Rng::derive(seed, 0, 0, "tiny_tile_cost");
    s.tile_cost = Tensor(k, kTileCostFeatures);
    for (int64_t i = 0; i < s.tile_cost.size(); ++i)
        s.tile_cost[i] = static_cast<float>(crng.uniform() * 4.0 - 2.0);
    return s;
}

/// Redraws s.layout_bytes with `width` values per (config, configurable node) (the feature rows of
/// model.layout_bytes and / or model.layout_access, ModelConfig::layout_feature_width()), from
/// their own stream.
inline void set_layout_feature_width(TinySegment& s, int64_t width, uint64_t seed = 1) {
    Rng rng = Rng::derive(seed, 0, 0, "tiny_layout_features");
    s.layout_bytes.clear();
    for (int64_t i = 0; i < s.k * static_cast<int64_t>(s.config_nodes.size()) * width; ++i)
        s.layout_bytes.push_back(static_cast<float>(rng.normal() * 0.5));
}

/// A small model config for tests.
inline ModelConfig tiny_config(Task task, int64_t f, ConfigJoin join = ConfigJoin::kEarly) {
    ModelConfig c;
    c.task = task;
    c.feat_dim = f;
    c.hidden = 8;
    c.layers = 3;
    c.opcode_dim = 4;
    c.config_dim = 5;
    c.config_join = join;
    return c;
}

/// Draws every "xattn<l>.w_o" of model.config_attention from N(0, scale^2): it starts at zero,
/// where the attention is the identity and the other attention weights get no gradient.
inline void randomize_attention_output(ParamStore& ps, uint64_t seed, double scale = 0.3) {
    Rng rng(seed);
    for (const ParamRef& r : ps.refs())
        if (r.name.starts_with("xattn") && r.name.ends_with(".w_o"))
            for (int64_t i = r.offset; i < r.offset + r.size(); ++i)
                ps.values()[static_cast<size_t>(i)] = static_cast<float>(scale * rng.normal());
}

}  // namespace segrank::test
