// Reference computations for the GST tests: a whole graph as ONE SegmentInput built straight from
// the LayoutGraph record (not through segments/ or PreparedGraph), and the plain full-graph
// encode -> head -> loss -> backward step that GST with S = 1 must reproduce.
#pragma once
#include <algorithm>
#include <cmath>
#include <span>
#include <vector>

#include "data/graph.h"
#include "data/normalizer.h"
#include "gnn/core/csr.h"
#include "gnn/loss.h"
#include "gnn/model.h"

namespace segrank::test {

/// Owns what the whole-graph SegmentInput borrows.
struct WholeGraphInput {
    Tensor feat;                  ///< [n, F'] normalized
    std::vector<int32_t> opcode;  ///< [n]
    GraphCsr csr;
    std::vector<int32_t> config_nodes;  ///< [nc]
    std::vector<int8_t> values;         ///< [K, nc, 18]
    int64_t k = 0;

    SegmentInput input() const {
        SegmentInput in;
        in.node_feat = feat.cview();
        in.opcode = opcode;
        in.operands = &csr.operands;
        in.users = &csr.users;
        in.num_pooled = feat.rows();
        in.config_node_local = config_nodes;
        in.config_values = values;
        in.k = k;
        return in;
    }
};

/// The whole layout graph g for `configs` (file indices), features normalized by `norm`.
inline WholeGraphInput whole_graph_input(const LayoutGraph& g, const Normalizer& norm,
                                         std::span<const int64_t> configs) {
    WholeGraphInput w;
    w.feat = norm.apply(g.node_feat.cview(), g.name);
    w.opcode = g.node_opcode;
    w.csr = build_graph_csr(g.num_nodes(), g.edge_index);
    w.config_nodes.assign(g.node_config_ids.begin(), g.node_config_ids.end());
    const int64_t row = g.num_config_nodes() * kLayoutConfigDim;
    for (int64_t c : configs)
        w.values.insert(w.values.end(), g.node_config_feat.begin() + c * row,
                        g.node_config_feat.begin() + (c + 1) * row);
    w.k = static_cast<int64_t>(configs.size());
    return w;
}

/// One full-graph training step: gradients accumulate into model.params().grads(); returns the
/// scores.
inline std::vector<float> full_graph_step(Model& model, const WholeGraphInput& w,
                                          std::span<const double> targets,
                                          std::span<const LossTerm> terms, const LossOptions& opt,
                                          double scale) {
    SegmentInput in = w.input();
    EncodeSaved es;
    Tensor r = model.encode(in, &es, /*training=*/true, nullptr);
    HeadSaved hs;
    Tensor s = model.head(r.cview(), {}, &hs);
    std::vector<float> ds(static_cast<size_t>(w.k), 0.0f);
    compute_loss(terms, opt, s.span(), targets, ds, scale);
    Tensor dr(w.k, r.cols());
    model.head_backward(ds, hs, dr.view());
    model.encode_backward(dr.cview(), es);
    return {s.span().begin(), s.span().end()};
}

/// max_i |a_i - b_i|.
inline double max_abs_diff(std::span<const float> a, std::span<const float> b) {
    double m = 0.0;
    for (size_t i = 0; i < a.size() && i < b.size(); ++i)
        m = std::max(m, std::abs(static_cast<double>(a[i]) - static_cast<double>(b[i])));
    return m;
}

/// max_i |a_i|.
inline double max_abs(std::span<const float> a) {
    double m = 0.0;
    for (float x : a) m = std::max(m, std::abs(static_cast<double>(x)));
    return m;
}

/// max_i |(a_i - b_i) - (a_0 - b_0)|: how far a - b is from a constant.
inline double max_dev_from_constant_shift(std::span<const float> a, std::span<const float> b) {
    if (a.empty()) return 0.0;
    const double c = static_cast<double>(a[0]) - static_cast<double>(b[0]);
    double m = 0.0;
    for (size_t i = 0; i < a.size(); ++i)
        m = std::max(m, std::abs(static_cast<double>(a[i]) - static_cast<double>(b[i]) - c));
    return m;
}

}  // namespace segrank::test
