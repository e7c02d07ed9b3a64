// The fused dep-row passes (gnn/ops/dep_fused.h) give the bits of the unfused kernels they
// replace. Their gradients are those of the unfused ops (the backward is unchanged); the model's
// finite-difference checks (model_test.cpp, dropout off) run through the fused forward.
#include "gnn/ops/dep_fused.h"

#include <doctest/doctest.h>

#include <cstring>
#include <vector>

#include "gnn/core/parallel.h"
#include "tests/support/grad_check.h"

using namespace segrank;
using segrank::test::random_tensor;

namespace {

// 7 nodes, edges u -> v (v reads u): 1->0, 2->1, 3->2, 3->0, 4->3, 5->4, 5->2, 6->5. Layer l-1
// has dep nodes {1, 4, 5} (the others are base rows), layer l has {0, 1, 2, 4, 5}.
struct Fixture {
    GraphCsr g;
    const int64_t n = 7, k = 3, h = 5;
    std::vector<int32_t> prev_nodes = {1, 4, 5}, out_nodes = {0, 1, 2, 4, 5};
    std::vector<int32_t> in_pos = std::vector<int32_t>(7, -1);
    Tensor base, dep, c, y_self, y_fwd, y_bwd, gamma, beta;

    explicit Fixture(Rng& rng) {
        const std::vector<int32_t> u = {1, 2, 3, 3, 4, 5, 5, 6}, v = {0, 1, 2, 0, 3, 4, 2, 5};
        g = build_graph_csr(n, u, v);
        for (size_t i = 0; i < prev_nodes.size(); ++i)
            in_pos[static_cast<size_t>(prev_nodes[i])] = static_cast<int32_t>(i);
        base = random_tensor(n, h, rng);
        dep = random_tensor(3, k * h, rng);
        c = random_tensor(5, h, rng);
        y_self = random_tensor(3, k * h, rng);
        y_fwd = random_tensor(3, k * h, rng);
        y_bwd = random_tensor(3, k * h, rng);
        gamma = random_tensor(1, h, rng);
        beta = random_tensor(1, h, rng);
    }
    MixedRows prev() const { return MixedRows{base.cview(), dep.cview(), in_pos, k, h}; }
    DepLayerTerms terms(Activation act) const {
        DepLayerTerms t;
        t.c = c.cview();
        t.y_self = y_self.cview();
        t.y_fwd = y_fwd.cview();
        t.y_bwd = y_bwd.cview();
        t.operands = &g.operands;
        t.users = &g.users;
        t.gamma = gamma.data();
        t.beta = beta.data();
        t.act = act;
        return t;
    }
    // The unfused kernels: broadcast c, the three dep_spmm_accumulate terms, the gathered self
    // rows and the fused LayerNorm + activation + residual.
    void unfused(Tensor& out, Tensor& xhat, Tensor& rstd, Activation act, bool with_terms) const {
        const int64_t m = static_cast<int64_t>(out_nodes.size());
        out = Tensor(m, k * h);
        for (int64_t i = 0; i < m; ++i)
            for (int64_t j = 0; j < k; ++j)
                std::memcpy(out.data() + (i * k + j) * h, c.data() + i * h, sizeof(float) * h);
        if (with_terms) {
            dep_spmm_accumulate(out.view(), out_nodes, nullptr, y_self.cview(), in_pos);
            dep_spmm_accumulate(out.view(), out_nodes, &g.operands, y_fwd.cview(), in_pos);
            dep_spmm_accumulate(out.view(), out_nodes, &g.users, y_bwd.cview(), in_pos);
        }
        Tensor self(m, k * h);
        mixed_gather_forward(self.view(), out_nodes, prev());
        xhat = Tensor(m * k, h);
        rstd = Tensor(m * k);
        layernorm_act_residual_forward(MatrixView{out.data(), m * k, h, h}, xhat.view(),
                                       rstd.span(), ConstMatrixView(self.data(), m * k, h, h),
                                       gamma.data(), beta.data(), act);
    }
};

bool same_bits(const Tensor& a, const Tensor& b) {
    return a.size() == b.size() &&
           std::memcmp(a.data(), b.data(), sizeof(float) * static_cast<size_t>(a.size())) == 0;
}

}  // namespace

TEST_CASE(
    "fused dep-layer forward equals the broadcast, the three projected terms and the epilogue bit "
    "for bit, with and without saved state, for every activation") {
    Rng rng(5);
    const Fixture f(rng);
    for (Activation act : {Activation::kGelu, Activation::kRelu, Activation::kLeakyRelu}) {
        INFO(to_string(act));
        Tensor want, want_xhat, want_rstd;
        f.unfused(want, want_xhat, want_rstd, act, true);
        Tensor got(5, f.k * f.h), xhat(5 * f.k, f.h), rstd(5 * f.k), infer(5, f.k * f.h);
        dep_layer_fused_forward(got.view(), xhat.view(), rstd.span(), f.out_nodes, f.terms(act),
                                f.prev());
        dep_layer_fused_forward(infer.view(), MatrixView{}, {}, f.out_nodes, f.terms(act),
                                f.prev());
        CHECK(same_bits(got, want));
        CHECK(same_bits(xhat, want_xhat));
        CHECK(same_bits(rstd, want_rstd));
        CHECK(same_bits(infer, want));
    }
}

TEST_CASE("fused dep-layer forward without projected terms is c broadcast plus the epilogue") {
    Rng rng(6);
    const Fixture f(rng);
    Tensor want, want_xhat, want_rstd;
    f.unfused(want, want_xhat, want_rstd, Activation::kGelu, false);
    DepLayerTerms t = f.terms(Activation::kGelu);
    t.y_self = t.y_fwd = t.y_bwd = ConstMatrixView(nullptr, 0, f.k * f.h, f.k * f.h);
    Tensor got(5, f.k * f.h), xhat(5 * f.k, f.h), rstd(5 * f.k);
    dep_layer_fused_forward(got.view(), xhat.view(), rstd.span(), f.out_nodes, t, f.prev());
    CHECK(same_bits(got, want));
    CHECK(same_bits(xhat, want_xhat));
}

TEST_CASE("fused dep-layer forward gives the same bits on 1 and 2 threads") {
    Rng rng(7);
    const Fixture f(rng);
    auto run = [&](int threads) {
        const int before = num_threads();
        set_num_threads(threads);
        Tensor out(5, f.k * f.h);
        dep_layer_fused_forward(out.view(), MatrixView{}, {}, f.out_nodes,
                                f.terms(Activation::kGelu), f.prev());
        set_num_threads(before);
        return out;
    };
    CHECK(same_bits(run(1), run(2)));
}

TEST_CASE("fused dep-layer forward refuses wrong shapes and a node without a row") {
    Rng rng(8);
    const Fixture f(rng);
    Tensor narrow(5, f.h), short_out(4, f.k * f.h), xhat(2, f.h), rstd(2);
    const DepLayerTerms t = f.terms(Activation::kGelu);
    CHECK_THROWS_AS(
        dep_layer_fused_forward(narrow.view(), MatrixView{}, {}, f.out_nodes, t, f.prev()), Error);
    CHECK_THROWS_AS(
        dep_layer_fused_forward(short_out.view(), MatrixView{}, {}, f.out_nodes, t, f.prev()),
        Error);
    Tensor out(5, f.k * f.h);
    CHECK_THROWS_AS(
        dep_layer_fused_forward(out.view(), xhat.view(), rstd.span(), f.out_nodes, t, f.prev()),
        Error);
    MixedRows no_base = f.prev();
    no_base.base = ConstMatrixView(nullptr, 0, f.h, f.h);  // node 0 is independent at layer l-1
    CHECK_THROWS_WITH_AS(
        dep_layer_fused_forward(out.view(), MatrixView{}, {}, f.out_nodes, t, no_base),
        doctest::Contains("node 0 has no row in the layer-l-1 state"), Error);
}

TEST_CASE(
    "fused dep-layer forward and backward match finite differences for c, the projected terms, the "
    "layer-l-1 rows and the LayerNorm parameters") {
    Rng rng(9);
    Fixture f(rng);
    const int64_t m = 5, k = f.k, h = f.h;
    std::vector<int32_t> out_pos(static_cast<size_t>(f.n), -1);
    for (size_t i = 0; i < f.out_nodes.size(); ++i)
        out_pos[static_cast<size_t>(f.out_nodes[i])] = static_cast<int32_t>(i);
    const Tensor w = segrank::test::random_tensor(m, k * h, rng);
    Tensor out(m, k * h), xhat(m * k, h), rstd(m * k);
    auto loss = [&] {
        dep_layer_fused_forward(out.view(), xhat.view(), rstd.span(), f.out_nodes,
                                f.terms(Activation::kGelu), f.prev());
        return segrank::test::weighted_sum(out.cview(), w);
    };
    loss();
    Tensor g = w.clone(), dc(m, h), dbase(f.n, h), ddep(3, k * h);
    Tensor dgamma(1, h), dbeta(1, h), dbias(1, h);
    DepEpilogueState e;
    e.xhat = xhat.cview();
    e.rstd = rstd.span();
    e.gamma = f.gamma.data();
    e.beta = f.beta.data();
    e.dgamma = dgamma.data();
    e.dbeta = dbeta.data();
    e.dbias = dbias.data();
    dep_layer_fused_backward(MatrixView{g.data(), m * k, h, h}, dc.view(),
                             MixedGrads{dbase.view(), ddep.view(), f.in_pos, k, h}, f.out_nodes, e);
    // The projected terms' gradients: the adjoints of their sums (g now holds dz).
    Tensor dy_self(3, k * h), dy_fwd(3, k * h), dy_bwd(3, k * h);
    dep_spmm_adjoint(dy_self.view(), f.prev_nodes, nullptr, {}, g.cview(), out_pos);
    dep_spmm_adjoint(dy_fwd.view(), f.prev_nodes, &f.g.users, f.g.operands.inverse_degrees(),
                     g.cview(), out_pos);
    dep_spmm_adjoint(dy_bwd.view(), f.prev_nodes, &f.g.operands, f.g.users.inverse_degrees(),
                     g.cview(), out_pos);
    SEGRANK_CHECK_GRAD(segrank::test::grad_check(f.c.span(), dc.span(), loss));
    SEGRANK_CHECK_GRAD(segrank::test::grad_check(f.y_self.span(), dy_self.span(), loss));
    SEGRANK_CHECK_GRAD(segrank::test::grad_check(f.y_fwd.span(), dy_fwd.span(), loss));
    SEGRANK_CHECK_GRAD(segrank::test::grad_check(f.y_bwd.span(), dy_bwd.span(), loss));
    SEGRANK_CHECK_GRAD(segrank::test::grad_check(f.base.span(), dbase.span(), loss));
    SEGRANK_CHECK_GRAD(segrank::test::grad_check(f.dep.span(), ddep.span(), loss));
    SEGRANK_CHECK_GRAD(segrank::test::grad_check(f.gamma.span(), dgamma.span(), loss));
    SEGRANK_CHECK_GRAD(segrank::test::grad_check(f.beta.span(), dbeta.span(), loss));
    for (int64_t c = 0; c < h; ++c) {  // the bias of z is in every row of c
        double s = 0;
        for (int64_t i = 0; i < m; ++i) s += dc.at(i, c);
        CHECK(dbias[c] == doctest::Approx(s).epsilon(1e-5));
    }
}

TEST_CASE(
    "fused dep-layer backward equals the residual scatter, the epilogue backward and the row sums "
    "bit for bit, also for nodes whose rows straddle two row blocks") {
    // 130 nodes, the first 100 dep at layer l; every third of them is dep at layer l-1, the others
    // read their base row. K = 7: 700 rows in 3 blocks of 233 / 233 / 234 rows, so nodes 33 and 66
    // straddle a block boundary.
    Rng rng(10);
    const int64_t n = 130, m = 100, k = 7, h = 6;
    std::vector<int32_t> out_nodes(static_cast<size_t>(m)), in_pos(static_cast<size_t>(n), -1);
    int32_t mp = 0;
    for (int32_t i = 0; i < m; ++i) {
        out_nodes[static_cast<size_t>(i)] = i;
        if (i % 3 == 0) in_pos[static_cast<size_t>(i)] = mp++;
    }
    const Tensor g0 = random_tensor(m * k, h, rng), xhat = random_tensor(m * k, h, rng);
    const Tensor gamma = random_tensor(1, h, rng), beta = random_tensor(1, h, rng);
    Tensor rstd(m * k);
    rstd.fill(0.8f);
    const Tensor dbase0 = random_tensor(n, h, rng), ddep0 = random_tensor(mp, k * h, rng);
    // Unfused.
    Tensor g_ref = g0.clone(), dbase_ref = dbase0.clone(), ddep_ref = ddep0.clone();
    Tensor dg_ref(1, h), db_ref(1, h), dbias_ref(1, h), dc_ref(m, h);
    mixed_gather_backward(MixedGrads{dbase_ref.view(), ddep_ref.view(), in_pos, k, h}, out_nodes,
                          ConstMatrixView(g_ref.data(), m, k * h, k * h));
    layernorm_act_backward(g_ref.view(), dg_ref.data(), db_ref.data(), dbias_ref.data(),
                           g_ref.cview(), xhat.cview(), rstd.span(), gamma.data(), beta.data(),
                           Activation::kGelu);
    for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < k; ++j)
            for (int64_t c = 0; c < h; ++c) dc_ref.at(i, c) += g_ref.at(i * k + j, c);
    for (int threads : {1, 2}) {
        INFO(threads, " threads");
        const int before = num_threads();
        set_num_threads(threads);
        Tensor g = g0.clone(), dbase = dbase0.clone(), ddep = ddep0.clone();
        Tensor dg(1, h), db(1, h), dbias(1, h), dc(m, h);
        DepEpilogueState e;
        e.xhat = xhat.cview();
        e.rstd = rstd.span();
        e.gamma = gamma.data();
        e.beta = beta.data();
        e.dgamma = dg.data();
        e.dbeta = db.data();
        e.dbias = dbias.data();
        dep_layer_fused_backward(g.view(), dc.view(),
                                 MixedGrads{dbase.view(), ddep.view(), in_pos, k, h}, out_nodes, e);
        set_num_threads(before);
        CHECK(same_bits(g, g_ref));
        CHECK(same_bits(dbase, dbase_ref));
        CHECK(same_bits(ddep, ddep_ref));
        CHECK(same_bits(dc, dc_ref));
        CHECK(same_bits(dg, dg_ref));
        CHECK(same_bits(db, db_ref));
        CHECK(same_bits(dbias, dbias_ref));
    }
    Tensor g = g0.clone(), dg(1, h), db(1, h), wrong_dc(m - 1, h);
    DepEpilogueState e;
    e.xhat = xhat.cview();
    e.rstd = rstd.span();
    e.gamma = gamma.data();
    e.beta = beta.data();
    e.dgamma = dg.data();
    e.dbeta = db.data();
    Tensor dbase = dbase0.clone(), ddep = ddep0.clone();
    CHECK_THROWS_AS(
        dep_layer_fused_backward(g.view(), wrong_dc.view(),
                                 MixedGrads{dbase.view(), ddep.view(), in_pos, k, h}, out_nodes, e),
        Error);
}

TEST_CASE(
    "mixed_inputs_forward gives the gather and both neighbour means of mixed_gather_forward and "
    "mixed_spmm_forward bit for bit, with K = 1 and K = 3") {
    Rng rng(11);
    const Fixture f(rng);
    for (int64_t k : {int64_t{1}, f.k}) {
        INFO("K = ", k);
        const Tensor dep = random_tensor(3, k * f.h, rng);
        const MixedRows in{f.base.cview(), dep.cview(), f.in_pos, k, f.h};
        const int64_t m = 5, w = k * f.h;
        Tensor s_ref(m, w), f_ref(m, w), b_ref(m, w), s(m, w), af(m, w), ab(m, w);
        mixed_gather_forward(s_ref.view(), f.out_nodes, in);
        mixed_spmm_forward(f_ref.view(), f.out_nodes, f.g.operands, in);
        mixed_spmm_forward(b_ref.view(), f.out_nodes, f.g.users, in);
        mixed_inputs_forward(s.view(), af.view(), ab.view(), f.out_nodes, f.g.operands, f.g.users,
                             in);
        CHECK(same_bits(s, s_ref));
        CHECK(same_bits(af, f_ref));
        CHECK(same_bits(ab, b_ref));
        Tensor narrow(m, w - 1);
        CHECK_THROWS_AS(mixed_inputs_forward(s.view(), narrow.view(), ab.view(), f.out_nodes,
                                             f.g.operands, f.g.users, in),
                        Error);
    }
}

TEST_CASE(
    "mixed_inputs_backward equals mixed_gather_backward and both mixed_spmm_backward calls bit for "
    "bit, with K = 1 and K = 3") {
    Rng rng(12);
    const Fixture f(rng);
    std::vector<int32_t> out_pos(static_cast<size_t>(f.n), -1);
    for (size_t i = 0; i < f.out_nodes.size(); ++i)
        out_pos[static_cast<size_t>(f.out_nodes[i])] = static_cast<int32_t>(i);
    for (int64_t k : {int64_t{1}, f.k}) {
        INFO("K = ", k);
        const int64_t m = 5, w = k * f.h;
        const Tensor ds = random_tensor(m, w, rng), dfw = random_tensor(m, w, rng),
                     dbw = random_tensor(m, w, rng);
        const Tensor base0 = random_tensor(f.n, f.h, rng), dep0 = random_tensor(3, w, rng);
        Tensor base_ref = base0.clone(), dep_ref = dep0.clone();
        const MixedGrads ref{base_ref.view(), dep_ref.view(), f.in_pos, k, f.h};
        mixed_gather_backward(ref, f.out_nodes, ds.cview());
        mixed_spmm_backward(ref, f.g.users, out_pos, f.g.operands.inverse_degrees(), dfw.cview());
        mixed_spmm_backward(ref, f.g.operands, out_pos, f.g.users.inverse_degrees(), dbw.cview());
        Tensor base = base0.clone(), dep = dep0.clone();
        mixed_inputs_backward(MixedGrads{base.view(), dep.view(), f.in_pos, k, f.h}, out_pos,
                              f.g.operands, f.g.users, ds.cview(), dfw.cview(), dbw.cview());
        CHECK(same_bits(base, base_ref));
        CHECK(same_bits(dep, dep_ref));
        std::vector<int32_t> far = out_pos;
        far[0] = 9;  // a row the gradients do not have
        CHECK_THROWS_AS(
            mixed_inputs_backward(MixedGrads{base.view(), dep.view(), f.in_pos, k, f.h}, far,
                                  f.g.operands, f.g.users, ds.cview(), dfw.cview(), dbw.cview()),
            Error);
    }
}
