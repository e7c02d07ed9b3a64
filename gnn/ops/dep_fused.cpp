// Fused dep-row passes: OpenMP over output nodes (one writer per row); bodies never throw (shapes
// checked before the loop).
#include "gnn/ops/dep_fused.h"

#include <cstring>
#include <vector>

#include "gnn/core/op_timer.h"
#include "gnn/core/parallel.h"

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

}  // namespace segrank
