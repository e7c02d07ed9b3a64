// Element-wise, LayerNorm, SpMM, pooling and embedding kernels: values and finite-difference
// gradients.
#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include "gnn/core/csr.h"
#include "gnn/ops/embedding.h"
#include "gnn/ops/pointwise.h"
#include "gnn/ops/segment_pool.h"
#include "gnn/ops/spmm.h"
#include "tests/support/grad_check.h"

using namespace segrank;
using segrank::test::grad_check;
using segrank::test::random_tensor;
using segrank::test::weighted_sum;

namespace {
// 5-node graph with a source (0), a sink (4), fan-in 3 at node 3 and an isolated-ish node 2 read
// twice.
//   operands(1)={0}, operands(3)={0,1,2}, operands(4)={3,2}, operands(2)={}, operands(0)={}
GraphCsr five_nodes() {
    std::vector<int32_t> u = {1, 3, 3, 3, 4, 4};
    std::vector<int32_t> v = {0, 0, 1, 2, 3, 2};
    return build_graph_csr(5, u, v);
}
}  // namespace

TEST_CASE("activations match their formulas and their gradients match finite differences") {
    Rng rng(11);
    for (Activation act : {Activation::kGelu, Activation::kRelu, Activation::kLeakyRelu}) {
        Tensor x = random_tensor(6, 7, rng);
        for (int64_t i = 0; i < x.size(); ++i)
            if (std::abs(x[i]) < 0.05f) x[i] = 0.3f;  // stay off the kink
        Tensor w = random_tensor(6, 7, rng), y(6, 7), dx(6, 7);
        auto loss = [&] {
            activation_forward(y.view(), x.cview(), act);
            return weighted_sum(y.cview(), w);
        };
        activation_backward(dx.view(), w.cview(), x.cview(), act);
        INFO(to_string(act));
        SEGRANK_CHECK_GRAD(grad_check(x.span(), dx.span(), loss, 1e-3));
    }
    Tensor one(1, 1);
    one[0] = 1.0f;
    Tensor out(1, 1);
    activation_forward(out.view(), one.cview(), Activation::kGelu);
    CHECK(out[0] == doctest::Approx(0.8413447460685429).epsilon(1e-6));  // exact erf GELU(1)
    CHECK_THROWS_AS(parse_activation("swish"), Error);
}

TEST_CASE("layernorm normalizes rows and its gradients match finite differences") {
    Rng rng(5);
    Tensor x = random_tensor(4, 9, rng, 2.0), gamma = random_tensor(1, 9, rng),
           beta = random_tensor(1, 9, rng);
    Tensor w = random_tensor(4, 9, rng), y(4, 9), xhat(4, 9), rstd(4);
    auto loss = [&] {
        layernorm_forward(y.view(), xhat.view(), rstd.span(), x.cview(), gamma.data(), beta.data());
        return weighted_sum(y.cview(), w);
    };
    loss();
    double m = 0, v = 0;
    for (int c = 0; c < 9; ++c) m += xhat.at(1, c);
    for (int c = 0; c < 9; ++c) v += xhat.at(1, c) * xhat.at(1, c);
    CHECK(std::abs(m / 9) < 1e-5);
    CHECK(v / 9 == doctest::Approx(1.0).epsilon(1e-3));
    Tensor dx(4, 9), dg(1, 9), db(1, 9);
    layernorm_backward(dx.view(), dg.data(), db.data(), w.cview(), xhat.cview(), rstd.span(),
                       gamma.data());
    SEGRANK_CHECK_GRAD(grad_check(x.span(), dx.span(), loss, 1e-2));
    SEGRANK_CHECK_GRAD(grad_check(gamma.span(), dg.span(), loss, 1e-2));
    SEGRANK_CHECK_GRAD(grad_check(beta.span(), db.span(), loss, 1e-2));
}

TEST_CASE("dropout keeps the same mask for rows sharing a key and its backward uses that mask") {
    Tensor x(8, 50);
    x.fill(1.0f);
    Tensor y(8, 50), dx(8, 50), ones(8, 50);
    ones.fill(1.0f);
    std::vector<int32_t> keys = {3, 9};  // rows 0-3 use key 3, rows 4-7 key 9
    dropout_forward(y.view(), x.cview(), 0.5f, 42, keys, 4);
    int kept = 0;
    for (int c = 0; c < 50; ++c) {
        CHECK(y.at(0, c) == y.at(3, c));
        CHECK((y.at(0, c) == 0.0f || y.at(0, c) == 2.0f));
        kept += y.at(0, c) != 0.0f;
    }
    CHECK(kept > 10);
    CHECK(kept < 40);
    dropout_backward(dx.view(), ones.cview(), 0.5f, 42, keys, 4);
    for (int64_t i = 0; i < y.size(); ++i) CHECK(dx[i] == y[i]);
}

TEST_CASE("spmm sum and mean equal the dense adjacency product") {
    GraphCsr g = five_nodes();
    Rng rng(2);
    Tensor x = random_tensor(5, 6, rng), out(5, 6);
    for (Reduce red : {Reduce::kSum, Reduce::kMean}) {
        spmm_forward(out.view(), g.operands, x.cview(), red);
        for (int64_t v = 0; v < 5; ++v)
            for (int64_t c = 0; c < 6; ++c) {
                double s = 0;
                for (int32_t u : g.operands.row(v)) s += x.at(u, c);
                if (red == Reduce::kMean && g.operands.degree(v) > 0)
                    s /= double(g.operands.degree(v));
                CHECK(out.at(v, c) == doctest::Approx(s).epsilon(1e-6));
            }
    }
    CHECK(out.at(0, 0) == 0.0f);  // mean over no neighbours is 0
}

TEST_CASE("spmm backward on the transposed csr matches finite differences") {
    GraphCsr g = five_nodes();
    Rng rng(3);
    for (Reduce red : {Reduce::kSum, Reduce::kMean}) {
        Tensor x = random_tensor(5, 4, rng), w = random_tensor(5, 4, rng), out(5, 4), dx(5, 4);
        auto loss = [&] {
            spmm_forward(out.view(), g.operands, x.cview(), red);
            return weighted_sum(out.cview(), w);
        };
        spmm_backward(dx.view(), g.users, w.cview(), g.operands.inverse_degrees(), red);
        SEGRANK_CHECK_GRAD(grad_check(x.span(), dx.span(), loss));
    }
}

TEST_CASE("pooling sum, mean and max forward values and gradients") {
    Rng rng(4);
    for (Pooling p : {Pooling::kSum, Pooling::kMean, Pooling::kMax}) {
        Tensor x = random_tensor(7, 5, rng), w = random_tensor(1, 5, rng), out(1, 5), dx(7, 5);
        std::vector<int32_t> arg(5);
        auto loss = [&] {
            pool_forward(out.span(), arg, x.cview(), p);
            return weighted_sum(out.cview(), w);
        };
        loss();
        if (p == Pooling::kMax)
            for (int c = 0; c < 5; ++c)
                for (int r = 0; r < 7; ++r) CHECK(x.at(r, c) <= x.at(arg[c], c));
        pool_backward(dx.view(), w.span(), arg, p);
        SEGRANK_CHECK_GRAD(grad_check(x.span(), dx.span(), loss, 1e-3));
    }
}

TEST_CASE("embedding lookup copies rows and its gradient touches only looked-up rows") {
    Rng rng(6);
    Tensor table = random_tensor(10, 3, rng), w = random_tensor(4, 3, rng), out(4, 3), dt(10, 3);
    std::vector<int32_t> ids = {2, 7, 2, 0};
    auto loss = [&] {
        embedding_forward(out.view(), table.cview(), ids);
        return weighted_sum(out.cview(), w);
    };
    loss();
    CHECK(out.at(1, 2) == table.at(7, 2));
    embedding_backward(dt.view(), ids, w.cview());
    for (int c = 0; c < 3; ++c) CHECK(dt.at(5, c) == 0.0f);
    SEGRANK_CHECK_GRAD(grad_check(table.span(), dt.span(), loss));
    std::vector<int32_t> bad = {10};
    Tensor o1(1, 3);
    CHECK_THROWS_AS(embedding_forward(o1.view(), table.cview(), bad), Error);
}
