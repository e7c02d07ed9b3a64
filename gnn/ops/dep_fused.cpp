// Fused dep-row passes: OpenMP over output nodes (one writer per row); bodies never throw (shapes
// checked before the loop).
#include "gnn/ops/dep_fused.h"

#include <cstring>
#include <vector>

#include "gnn/core/op_timer.h"
#include "gnn/core/parallel.h"
#include "gnn/ops/block_partials.h"

namespace segrank {

namespace {

void check_terms(MatrixView out, MatrixView xhat, std::span<float> rstd,
                 std::span<const int32_t> out_nodes, const DepLayerTerms& t,
                 const MixedRows& prev) {
    const int64_t m = static_cast<int64_t>(out_nodes.size()), k = prev.k, h = prev.h, w = k * h;
    const auto n = static_cast<int64_t>(prev.pos.size());
    SEGRANK_CHECK(out.rows == m && out.cols == w && t.c.rows == m && t.c.cols == h,
                  "dep_layer_fused_forward: out [", out.rows, ",", out.cols, "] and c [", t.c.rows,
                  ",", t.c.cols, "] for ", m, " nodes, expected [", m, ",", w, "] and [", m, ",", h,
                  "]");
    SEGRANK_CHECK(prev.dep.rows == 0 || prev.dep.cols == w,
                  "dep_layer_fused_forward: prev dep has ", prev.dep.cols,
                  " columns, expected K*H = ", w);
    SEGRANK_CHECK(t.gamma && t.beta,
                  "dep_layer_fused_forward: LayerNorm gamma and beta are required");
    const int64_t mp = t.y_self.rows;
    for (const ConstMatrixView* y : {&t.y_self, &t.y_fwd, &t.y_bwd})
        SEGRANK_CHECK(y->rows == mp && (mp == 0 || (y->cols == w && mp == prev.dep.rows)),
                      "dep_layer_fused_forward: projected terms [", y->rows, ",", y->cols,
                      "], expected [", prev.dep.rows, ",", w, "] for each of the three or none");
    SEGRANK_CHECK(mp == 0 || (t.operands && t.users && t.operands->num_rows() == n &&
                              t.users->num_rows() == n),
                  "dep_layer_fused_forward: the operand and user adjacencies of the ", n,
                  " nodes are required with projected terms");
    if (xhat.data)
        SEGRANK_CHECK(
            xhat.rows == m * k && xhat.cols == h && static_cast<int64_t>(rstd.size()) == m * k,
            "dep_layer_fused_forward: xhat [", xhat.rows, ",", xhat.cols, "] and rstd [",
            rstd.size(), "], expected [", m * k, ",", h, "] and [", m * k, "]");
    for (int32_t v : out_nodes) {
        SEGRANK_CHECK(v >= 0 && v < n, "dep_layer_fused_forward: node ", v, " outside [0, ", n,
                      ")");
        const int32_t p = prev.pos[static_cast<size_t>(v)];
        SEGRANK_CHECK(p >= 0 ? p < prev.dep.rows : v < prev.base.rows,
                      "dep_layer_fused_forward: node ", v, " has no row in the layer-l-1 state");
    }
}

}  // namespace

void dep_layer_fused_forward(MatrixView out, MatrixView xhat, std::span<float> rstd,
                             std::span<const int32_t> out_nodes, const DepLayerTerms& t,
                             const MixedRows& prev) {
    const OpScope op_scope(OpCategory::kSpmm);
    check_terms(out, xhat, rstd, out_nodes, t, prev);
    const int64_t k = prev.k, h = prev.h, w = k * h;
    const bool save = xhat.data != nullptr, terms = t.y_self.rows > 0;
    const std::span<const float> inv_f =
        terms ? t.operands->inverse_degrees() : std::span<const float>{};
    const std::span<const float> inv_b =
        terms ? t.users->inverse_degrees() : std::span<const float>{};
    const auto bytes = sizeof(float) * static_cast<size_t>(h);
    // o += inv(v) * y[p(u)] for every neighbour u of v in adj with a dep row.
    auto add_neighbours = [&](float* o, int32_t v, const Csr& adj, std::span<const float> inv,
                              ConstMatrixView y) {
        const float s = inv[static_cast<size_t>(v)];
        for (int32_t u : adj.row(v)) {
            const int32_t q = prev.pos[static_cast<size_t>(u)];
            if (q >= 0) detail::axpy_to(o, s, y.row(q), w);
        }
    };
    parallel_for(0, out.rows, 4, [&](int64_t i0, int64_t i1) {
        std::vector<float> hrow(static_cast<size_t>(h));
        for (int64_t i = i0; i < i1; ++i) {
            const int32_t v = out_nodes[static_cast<size_t>(i)];
            float* o = out.row(i);
            for (int64_t j = 0; j < k; ++j) std::memcpy(o + j * h, t.c.row(i), bytes);
            if (terms) {  // the order of dep_spmm_accumulate's three calls
                const int32_t p = prev.pos[static_cast<size_t>(v)];
                if (p >= 0) detail::add_to(o, t.y_self.row(p), w);
                add_neighbours(o, v, *t.operands, inv_f, t.y_fwd);
                add_neighbours(o, v, *t.users, inv_b, t.y_bwd);
            }
            const int32_t p = prev.pos[static_cast<size_t>(v)];
            const ConstMatrixView self = p >= 0 ? ConstMatrixView(prev.dep.row(p), k, h, h)
                                                : ConstMatrixView(prev.base.row(v), k, h, 0);
            layernorm_act_residual_rows(
                MatrixView{o, k, h, h}, save ? MatrixView{xhat.row(i * k), k, h, h} : MatrixView{},
                save ? rstd.subspan(static_cast<size_t>(i * k), static_cast<size_t>(k))
                     : std::span<float>{},
                self, t.gamma, t.beta, t.act, hrow.data());
        }
    });
}

void dep_layer_fused_backward(MatrixView g, MatrixView dc, const MixedGrads& prev,
                              std::span<const int32_t> out_nodes, const DepEpilogueState& e) {
    const OpScope op_scope(OpCategory::kPointwise);
    const int64_t m = static_cast<int64_t>(out_nodes.size()), k = prev.k, h = prev.h, rows = m * k;
    const auto n = static_cast<int64_t>(prev.pos.size());
    SEGRANK_CHECK(g.rows == rows && g.cols == h && e.xhat.rows == rows && e.xhat.cols == h &&
                      static_cast<int64_t>(e.rstd.size()) == rows &&
                      (!dc.data || (dc.rows == m && dc.cols == h)),
                  "dep_layer_fused_backward: g [", g.rows, ",", g.cols, "], xhat [", e.xhat.rows,
                  ",", e.xhat.cols, "], rstd [", e.rstd.size(), "], dc [", dc.rows, ",", dc.cols,
                  "] for ", m, " nodes x K = ", k, ", H = ", h);
    SEGRANK_CHECK(
        e.gamma && e.beta && e.dgamma && e.dbeta,
        "dep_layer_fused_backward: LayerNorm parameters and their gradients are required");
    SEGRANK_CHECK(prev.ddep.rows == 0 || prev.ddep.cols == k * h,
                  "dep_layer_fused_backward: the layer-l-1 dep gradient has ", prev.ddep.cols,
                  " columns, expected K*H = ", k * h);
    for (int32_t v : out_nodes) {
        SEGRANK_CHECK(v >= 0 && v < n, "dep_layer_fused_backward: node ", v, " outside [0, ", n,
                      ")");
        const int32_t p = prev.pos[static_cast<size_t>(v)];
        SEGRANK_CHECK(p >= 0 ? p < prev.ddep.rows : v < prev.dbase.rows,
                      "dep_layer_fused_backward: node ", v,
                      " has no row in the layer-l-1 gradient");
    }
    BlockPartials part(rows, 3 * h);
    // A node whose K rows lie in two blocks has its base-row residual added before the blocks and
    // its dc row summed after them, so each sum still runs in config order on one thread.
    std::vector<char> split(static_cast<size_t>(m), 0);
    for (int64_t b = 1; b < part.blocks(); ++b)
        if (part.begin(b) % k != 0) split[static_cast<size_t>(part.begin(b) / k)] = 1;
    auto add_rows = [&](float* d, int64_t i) {  // d [H] += the K rows of node i of g, in order
        for (int64_t j = 0; j < k; ++j) {
            const float* gi = g.row(i * k + j);
            for (int64_t c = 0; c < h; ++c) d[c] += gi[c];
        }
    };
    for (int64_t i = 0; i < m; ++i) {
        const int32_t v = out_nodes[static_cast<size_t>(i)];
        if (split[static_cast<size_t>(i)] && prev.pos[static_cast<size_t>(v)] < 0)
            add_rows(prev.dbase.row(v), i);
    }
    parallel_for(0, part.blocks(), 1, [&](int64_t b0, int64_t b1) {
        std::vector<float> dy(static_cast<size_t>(h));
        for (int64_t b = b0; b < b1; ++b) {
            float* acc = part.block(b);
            for (int64_t r = part.begin(b); r < part.end(b); ++r) {
                const int64_t i = r / k, j = r % k;
                const bool whole = !split[static_cast<size_t>(i)];
                const int32_t v = out_nodes[static_cast<size_t>(i)];
                const int32_t p = prev.pos[static_cast<size_t>(v)];
                const float* gi = g.row(r);
                if (p >= 0) {
                    detail::add_to(prev.ddep.row(p) + j * h, gi, h);
                } else if (whole) {
                    float* d = prev.dbase.row(v);
                    for (int64_t c = 0; c < h; ++c) d[c] += gi[c];
                }
                layernorm_act_backward_rows(g, g, e.xhat, e.rstd, e.gamma, e.beta, e.act, r, r + 1,
                                            dy.data(), acc);
                if (dc.data && whole) {
                    float* d = dc.row(i);
                    for (int64_t c = 0; c < h; ++c) d[c] += gi[c];
                }
            }
        }
    });
    if (dc.data)
        for (int64_t i = 0; i < m; ++i)
            if (split[static_cast<size_t>(i)]) add_rows(dc.row(i), i);
    part.reduce_into(0, h, e.dgamma);
    part.reduce_into(h, h, e.dbeta);
    if (e.dbias) part.reduce_into(2 * h, h, e.dbias);
}

}  // namespace segrank
