// The projection-first linear of a SAGE layer's dep rows and its adjoint, with the K = 1 inputs
// of the config-independent part (docs/model.md#projection-first).
#include "gnn/dep_linear.h"

#include <cstring>
#include <utility>
#include <vector>

#include "gnn/core/op_timer.h"
#include "gnn/core/parallel.h"
#include "gnn/ops/dep_fused.h"
#include "gnn/ops/matmul.h"

namespace segrank {

K1Inputs k1_inputs(const SegmentInput& in, std::span<const int32_t> nodes, const MixedRows& r) {
    const int64_t m = static_cast<int64_t>(nodes.size()), h = r.h;
    K1Inputs x{Tensor::uninit(m, h), Tensor::uninit(m, h), Tensor::uninit(m, h)};
    mixed_inputs_forward(x.self.view(), x.agg_fwd.view(), x.agg_bwd.view(), nodes, *in.operands,
                         *in.users, r);
    return x;
}

void k1_inputs_backward(const SegmentInput& in, std::span<const int32_t> nodes,
                        std::span<const int32_t> out_pos, const MixedGrads& g,
                        ConstMatrixView d_self, ConstMatrixView d_fwd, ConstMatrixView d_bwd) {
    SEGRANK_ASSERT(d_self.rows == static_cast<int64_t>(nodes.size()));
    mixed_inputs_backward(g, out_pos, *in.operands, *in.users, d_self, d_fwd, d_bwd);
}

namespace {

// The config-independent inputs of the dep rows of layer l (m = |D_l|): the self row of a node
// that was independent at layer l-1 (else 0), and the neighbour means over the neighbours that
// were independent at layer l-1 (the others count as 0). `zeros` [m', H] stands for the dep rows
// (m' = |D_{l-1}|), so the mixed kernels with K = 1 read 0 for them.
MixedRows independent_rows(const MixedRows& prev, const Tensor& zeros) {
    MixedRows r;
    r.base = prev.base;
    r.dep = zeros.cview();
    r.pos = prev.pos;
    r.k = 1;
    r.h = prev.h;
    return r;
}

K1Inputs independent_inputs(const SegmentInput& in, std::span<const int32_t> nodes,
                            const MixedRows& prev) {
    const Tensor zeros(prev.dep.rows, prev.h);
    return k1_inputs(in, nodes, independent_rows(prev, zeros));
}

// The config-independent part c [m, H] of the dep rows of layer l (nodes): b plus the terms of the
// rows independent at layer l-1, computed with K = 1.
Tensor independent_part(const ParamStore& ps, const SageConv& conv, const SegmentInput& in,
                        std::span<const int32_t> nodes, const MixedRows& prev) {
    const int64_t m = static_cast<int64_t>(nodes.size()), h = prev.h;
    const float* bias = ps.value(conv.bias).data;
    Tensor c = Tensor::uninit(m, h);
    if (prev.base.rows > 0) {
        const K1Inputs x = independent_inputs(in, nodes, prev);
        linear_forward(c.view(), x.self.cview(), ps.value(conv.w_self), bias);
        linear_forward(c.view(), x.agg_fwd.cview(), ps.value(conv.w_fwd), nullptr, true);
        linear_forward(c.view(), x.agg_bwd.cview(), ps.value(conv.w_bwd), nullptr, true);
    } else {
        const OpScope op_scope(OpCategory::kGatherScatter);
        for (int64_t i = 0; i < m; ++i) std::memcpy(c.view().row(i), bias, sizeof(float) * h);
    }
    return c;
}

}  // namespace

void dep_linear_forward(const ParamStore& ps, const SageConv& conv, const SegmentInput& in,
                        const DependencePlan& plan, int64_t l, const MixedRows& prev,
                        MatrixView out) {
    const std::vector<int32_t>& nodes = plan.nodes[static_cast<size_t>(l)];
    const int64_t m = static_cast<int64_t>(nodes.size()), k = prev.k, h = prev.h;
    const Tensor c = independent_part(ps, conv, in, nodes, prev);
    {
        const OpScope op_scope(OpCategory::kGatherScatter);  // each node's row to its K rows
        parallel_for(0, m, 16, [&](int64_t r0, int64_t r1) {
            for (int64_t i = r0; i < r1; ++i)
                for (int64_t j = 0; j < k; ++j)
                    std::memcpy(out.row(i * k + j), c.view().row(i),
                                sizeof(float) * static_cast<size_t>(h));
        });
    }
    const int64_t mp = prev.dep.rows;
    if (mp == 0) return;
    const ConstMatrixView x(prev.dep.data, mp * k, h, h);
    const Bf16OperandHold hold_x(x);  // bf16: x is rounded once for its three products
    Tensor y = Tensor::uninit(mp * k, h);
    const MatrixView wide_out{out.data, m, k * h, k * h};
    const ConstMatrixView wide_y(y.data(), mp, k * h, k * h);
    const std::pair<ParamId, const Csr*> terms[] = {
        {conv.w_self, nullptr}, {conv.w_fwd, in.operands}, {conv.w_bwd, in.users}};
    for (const auto& [w, adj] : terms) {
        linear_forward(y.view(), x, ps.value(w), nullptr);
        dep_spmm_accumulate(wide_out, nodes, adj, wide_y, prev.pos);
    }
}

void dep_layer_forward_fused(const ParamStore& ps, const SageConv& conv, const SegmentInput& in,
                             const DependencePlan& plan, int64_t l, const MixedRows& prev,
                             MatrixView out, SageConv::Saved* saved) {
    const std::vector<int32_t>& nodes = plan.nodes[static_cast<size_t>(l)];
    const int64_t m = static_cast<int64_t>(nodes.size()), k = prev.k, h = prev.h;
    SEGRANK_CHECK(out.rows == m * k && out.cols == h, "dep_layer_forward_fused: out [", out.rows,
                  ",", out.cols, "], expected [", m * k, ",", h, "]");
    const Tensor c = independent_part(ps, conv, in, nodes, prev);
    DepLayerTerms t;
    t.c = c.cview();
    t.operands = in.operands;
    t.users = in.users;
    t.gamma = ps.value(conv.ln_gamma).data;
    t.beta = ps.value(conv.ln_beta).data;
    t.act = conv.act;
    const int64_t mp = prev.dep.rows;
    Tensor y_self, y_fwd, y_bwd;  // all three live at once: the sums take them in one pass
    if (mp > 0) {
        const ConstMatrixView x(prev.dep.data, mp * k, h, h);
        const Bf16OperandHold hold_x(x);  // bf16: x is rounded once for its three products
        const std::pair<ParamId, Tensor*> terms[] = {
            {conv.w_self, &y_self}, {conv.w_fwd, &y_fwd}, {conv.w_bwd, &y_bwd}};
        for (const auto& [w, y] : terms) {
            *y = Tensor::uninit(mp * k, h);
            linear_forward(y->view(), x, ps.value(w), nullptr);
        }
        t.y_self = ConstMatrixView(y_self.data(), mp, k * h, k * h);
        t.y_fwd = ConstMatrixView(y_fwd.data(), mp, k * h, k * h);
        t.y_bwd = ConstMatrixView(y_bwd.data(), mp, k * h, k * h);
    }
    if (saved) {  // SageConv::forward_epilogue's saved state
        saved->xhat = Tensor::uninit(m * k, h);
        saved->rstd = Tensor(m * k);
    }
    dep_layer_fused_forward(MatrixView{out.data, m, k * h, k * h},
                            saved ? saved->xhat.view() : MatrixView{},
                            saved ? saved->rstd.span() : std::span<float>{}, nodes, t, prev);
}

void dep_linear_backward(ParamStore& ps, const SageConv& conv, const SegmentInput& in,
                         const DependencePlan& plan, int64_t l, const MixedRows& prev,
                         const MixedGrads& pg, ConstMatrixView dz, ConstMatrixView dc_sums) {
    const std::vector<int32_t>& nodes = plan.nodes[static_cast<size_t>(l)];
    const int64_t m = static_cast<int64_t>(nodes.size()), k = prev.k, h = prev.h;
    if (prev.base.rows > 0) {
        SEGRANK_CHECK(pg.dbase.rows == prev.base.rows, "Model::encode_backward: layer ", l - 1,
                      " has base rows but no gradient");
        SEGRANK_CHECK(!dc_sums.data || (dc_sums.rows == m && dc_sums.cols == h),
                      "dep_linear_backward: dc [", dc_sums.rows, ",", dc_sums.cols, "], expected [",
                      m, ",", h, "]");
        // dC [m, H] = the sum of a node's K rows of dz (unless given); the inputs are recomputed
        // (K = 1).
        Tensor dc_buf;
        ConstMatrixView dc = dc_sums;
        if (!dc.data) {
            dc_buf = Tensor(m, h);
            dc = dc_buf.cview();
            const OpScope op_scope(OpCategory::kPointwise);
            parallel_for(0, m, 16, [&](int64_t r0, int64_t r1) {
                for (int64_t i = r0; i < r1; ++i) {
                    float* d = dc_buf.view().row(i);
                    for (int64_t j = 0; j < k; ++j) {
                        const float* g = dz.row(i * k + j);
                        for (int64_t c = 0; c < h; ++c) d[c] += g[c];
                    }
                }
            });
        }
        const K1Inputs x = independent_inputs(in, nodes, prev);
        Tensor ds(m, h), daf(m, h), dab(m, h);
        linear_backward(ds.view(), ps.grad(conv.w_self), nullptr, dc, x.self.cview(),
                        ps.value(conv.w_self));
        linear_backward(daf.view(), ps.grad(conv.w_fwd), nullptr, dc, x.agg_fwd.cview(),
                        ps.value(conv.w_fwd));
        linear_backward(dab.view(), ps.grad(conv.w_bwd), nullptr, dc, x.agg_bwd.cview(),
                        ps.value(conv.w_bwd));
        Tensor zeros(prev.dep.rows, h);  // the dep rows' share, discarded
        MixedGrads g1;
        g1.dbase = pg.dbase;
        g1.ddep = zeros.view();
        g1.pos = pg.pos;
        g1.k = 1;
        g1.h = h;
        k1_inputs_backward(in, nodes, plan.pos[static_cast<size_t>(l)], g1, ds.cview(), daf.cview(),
                           dab.cview());
    }
    const int64_t mp = prev.dep.rows;
    if (mp == 0) return;
    const std::vector<int32_t>& prev_nodes = plan.nodes[static_cast<size_t>(l - 1)];
    const ConstMatrixView x(prev.dep.data, mp * k, h, h);
    const MatrixView dx{pg.ddep.data, mp * k, h, h};
    const Bf16OperandHold hold_x(x);  // bf16: rounded once for the three weight gradients
    const ConstMatrixView wide_dz(dz.data, m, k * h, k * h);
    Tensor dy_buf;
    struct Term {
        ParamId w;
        const Csr* adj_t;
        std::span<const float> inv;
    };
    const Term terms[] = {{conv.w_self, nullptr, {}},
                          {conv.w_fwd, in.users, in.operands->inverse_degrees()},
                          {conv.w_bwd, in.operands, in.users->inverse_degrees()}};
    for (const Term& t : terms) {
        ConstMatrixView dy = dz;  // the self term of an unchanged node set reads dz as it is
        if (t.adj_t || mp != m) {
            if (dy_buf.size() == 0) dy_buf = Tensor::uninit(mp * k, h);
            dep_spmm_adjoint(MatrixView{dy_buf.data(), mp, k * h, k * h}, prev_nodes, t.adj_t,
                             t.inv, wide_dz, plan.pos[static_cast<size_t>(l)]);
            dy = dy_buf.cview();
        }
        const Bf16OperandHold hold_dy(dy);  // bf16: rounded once for dW and dx
        MatmulArgs wg;
        wg.trans_a = true;
        wg.accumulate = true;
        matmul(ps.grad(t.w), dy, x, wg);  // dW [H, H] += dy^T x
        MatmulArgs acc;
        acc.accumulate = true;
        matmul(dx, dy, ps.value(t.w), acc);  // dx += dy W
    }
}

void dep_layer_backward_fused(ParamStore& ps, const SageConv& conv, const SegmentInput& in,
                              const DependencePlan& plan, int64_t l, const MixedRows& prev,
                              const MixedGrads& pg, MatrixView ddep, const SageConv::Saved& saved) {
    const std::vector<int32_t>& nodes = plan.nodes[static_cast<size_t>(l)];
    const int64_t m = static_cast<int64_t>(nodes.size()), h = prev.h;
    Tensor dc = prev.base.rows > 0 ? Tensor(m, h) : Tensor();
    DepEpilogueState e;
    e.xhat = saved.xhat.cview();
    e.rstd = saved.rstd.span();
    e.gamma = ps.value(conv.ln_gamma).data;
    e.beta = ps.value(conv.ln_beta).data;
    e.act = conv.act;
    e.dgamma = ps.grad(conv.ln_gamma).data;
    e.dbeta = ps.grad(conv.ln_beta).data;
    e.dbias = ps.grad(conv.bias).data;
    dep_layer_fused_backward(ddep, dc.size() > 0 ? dc.view() : MatrixView{}, pg, nodes, e);
    dep_linear_backward(ps, conv, in, plan, l, prev, pg, ddep,
                        dc.size() > 0 ? dc.cview() : ConstMatrixView{});
}

}  // namespace segrank
