// The fused SAGE epilogue kernels and the vectorized GELU (gnn/ops/pointwise.h): equal to the
// unfused composition, gradients match finite differences, and GELU matches the libm erf form.
#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include "gnn/core/parallel.h"
#include "gnn/ops/pointwise.h"
#include "tests/support/grad_check.h"

using namespace segrank;
using segrank::test::grad_check;
using segrank::test::random_tensor;
using segrank::test::weighted_sum;

namespace {
double gelu_exact(double x) { return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0))); }
double gelu_grad_exact(double x) {
    return 0.5 * (1.0 + std::erf(x / std::sqrt(2.0))) +
           x * std::exp(-0.5 * x * x) / std::sqrt(2.0 * M_PI);
}
}  // namespace

TEST_CASE("vectorized gelu and its derivative match the libm erf form to 1e-6 on [-12, 12]") {
    const int64_t n = 240001;  // step 1e-4
    Tensor x(1, n), y(1, n), g(1, n), dy(1, n);
    for (int64_t i = 0; i < n; ++i)
        x[i] = static_cast<float>(-12.0 + 24.0 * static_cast<double>(i) / (n - 1));
    dy.fill(1.0f);
    activation_forward(y.view(), x.cview(), Activation::kGelu);
    activation_backward(g.view(), dy.cview(), x.cview(), Activation::kGelu);
    double worst_y = 0, worst_g = 0;
    for (int64_t i = 0; i < n; ++i) {
        worst_y = std::max(worst_y, std::abs(y[i] - gelu_exact(x[i])));
        worst_g = std::max(worst_g, std::abs(g[i] - gelu_grad_exact(x[i])));
    }
    INFO("max |gelu error| ", worst_y, ", max |gelu' error| ", worst_g);
    CHECK(worst_y < 1e-6);
    CHECK(worst_g < 1e-6);
    Tensor big(1, 4), out(1, 4);
    big[0] = 100.0f, big[1] = -100.0f, big[2] = 0.0f, big[3] = -1e-30f;
    activation_forward(out.view(), big.cview(), Activation::kGelu);
    CHECK(out[0] == 100.0f);
    CHECK(out[1] == 0.0f);
    CHECK(out[2] == 0.0f);
    CHECK(std::isfinite(out[3]));
}

TEST_CASE(
    "fused layernorm + activation + residual equals the unfused kernels for every activation") {
    Rng rng(3);
    for (Activation act : {Activation::kGelu, Activation::kRelu, Activation::kLeakyRelu}) {
        INFO(to_string(act));
        const int64_t r = 300, c = 24;
        Tensor z = random_tensor(r, c, rng, 2.0), self = random_tensor(r, c, rng);
        Tensor gamma = random_tensor(1, c, rng), beta = random_tensor(1, c, rng);
        Tensor ref = z.clone(), xhat_ref(r, c), rstd_ref(r);
        layernorm_forward(ref.view(), xhat_ref.view(), rstd_ref.span(), ref.cview(), gamma.data(),
                          beta.data());
        activation_forward(ref.view(), ref.cview(), act);
        add_inplace(ref.view(), self.cview());
        Tensor fused = z.clone(), xhat(r, c), rstd(r);
        layernorm_act_residual_forward(fused.view(), xhat.view(), rstd.span(), self.cview(),
                                       gamma.data(), beta.data(), act);
        Tensor infer = z.clone();
        layernorm_act_residual_forward(infer.view(), MatrixView{}, {}, self.cview(), gamma.data(),
                                       beta.data(), act);
        double worst = 0;
        for (int64_t i = 0; i < ref.size(); ++i) {
            worst = std::max(worst, static_cast<double>(std::abs(fused[i] - ref[i])));
            CHECK(infer[i] == fused[i]);
            CHECK(xhat[i] == doctest::Approx(xhat_ref[i]).epsilon(1e-4));
        }
        CHECK(worst < 1e-5);
    }
}

TEST_CASE(
    "fused layernorm + activation backward matches finite differences, including the bias sums") {
    Rng rng(8);
    for (Activation act : {Activation::kGelu, Activation::kLeakyRelu}) {
        INFO(to_string(act));
        const int64_t r = 5, c = 9;
        Tensor z = random_tensor(r, c, rng, 2.0), zero(r, c), w = random_tensor(r, c, rng);
        Tensor gamma = random_tensor(1, c, rng), beta = random_tensor(1, c, rng),
               bias = random_tensor(1, c, rng);
        // L = sum w * act(LN(z + bias)) (self = 0, so the residual adds nothing).
        Tensor out(r, c), xhat(r, c), rstd(r);
        auto loss = [&] {
            for (int64_t i = 0; i < r; ++i)
                for (int64_t j = 0; j < c; ++j) out.at(i, j) = z.at(i, j) + bias[j];
            layernorm_act_residual_forward(out.view(), xhat.view(), rstd.span(), zero.cview(),
                                           gamma.data(), beta.data(), act);
            return weighted_sum(out.cview(), w);
        };
        loss();
        Tensor dz(r, c), dg(1, c), db(1, c), dbias(1, c);
        layernorm_act_backward(dz.view(), dg.data(), db.data(), dbias.data(), w.cview(),
                               xhat.cview(), rstd.span(), gamma.data(), beta.data(), act);
        SEGRANK_CHECK_GRAD(grad_check(z.span(), dz.span(), loss, 1e-2));
        SEGRANK_CHECK_GRAD(grad_check(gamma.span(), dg.span(), loss, 1e-2));
        SEGRANK_CHECK_GRAD(grad_check(beta.span(), db.span(), loss, 1e-2));
        SEGRANK_CHECK_GRAD(grad_check(bias.span(), dbias.span(), loss, 1e-2));
        // In place (dz aliases g) gives the same dz (recompute the saved state: the checks
        // perturbed it).
        loss();
        Tensor dz2(r, c), g = w.clone(), dg2(1, c), db2(1, c);
        layernorm_act_backward(dz2.view(), dg2.data(), db2.data(), nullptr, w.cview(), xhat.cview(),
                               rstd.span(), gamma.data(), beta.data(), act);
        layernorm_act_backward(g.view(), dg2.data(), db2.data(), nullptr, g.cview(), xhat.cview(),
                               rstd.span(), gamma.data(), beta.data(), act);
        for (int64_t i = 0; i < g.size(); ++i) CHECK(g[i] == dz2[i]);
    }
}

TEST_CASE("fused backward parameter sums do not depend on the thread count") {
    Rng rng(21);
    const int64_t r = 5000, c = 32;
    Tensor g = random_tensor(r, c, rng), xhat = random_tensor(r, c, rng), rstd(r);
    Tensor gamma = random_tensor(1, c, rng), beta = random_tensor(1, c, rng);
    rstd.fill(0.7f);
    auto run = [&](int threads, Tensor& dg) {
        const int before = num_threads();
        set_num_threads(threads);
        Tensor dz(r, c), db(1, c), dbias(1, c);
        layernorm_act_backward(dz.view(), dg.data(), db.data(), dbias.data(), g.cview(),
                               xhat.cview(), rstd.span(), gamma.data(), beta.data(),
                               Activation::kGelu);
        set_num_threads(before);
    };
    Tensor a(1, c), b(1, c);
    run(1, a);
    run(2, b);
    for (int64_t i = 0; i < c; ++i) CHECK(a[i] == b[i]);
}
