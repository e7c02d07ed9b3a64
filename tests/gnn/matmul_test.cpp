// Dense matmul: oneDNN vs the double-accumulating reference over transposes, strides, bias,
// accumulate.
#include "gnn/ops/matmul.h"

#include <doctest/doctest.h>

#include <cmath>

#include "gnn/core/rng.h"

using namespace segrank;

namespace {
Tensor random_tensor(int64_t r, int64_t c, Rng& rng) {
    Tensor t(r, c);
    for (int64_t i = 0; i < t.size(); ++i) t[i] = static_cast<float>(rng.normal());
    return t;
}
double max_rel_diff(ConstMatrixView a, ConstMatrixView b) {
    double m = 0;
    for (int64_t i = 0; i < a.rows; ++i)
        for (int64_t j = 0; j < a.cols; ++j)
            m = std::max(m, std::abs(double(a.at(i, j)) - b.at(i, j)) /
                                (1.0 + std::abs(double(b.at(i, j)))));
    return m;
}
}  // namespace

TEST_CASE("matmul matches the reference for every transpose, bias and accumulate combination") {
    Rng rng(7);
    for (int64_t m : {1, 5, 37, 300}) {
        const int64_t k = 19, n = 23;
        for (int ta = 0; ta < 2; ++ta)
            for (int tb = 0; tb < 2; ++tb)
                for (int acc = 0; acc < 2; ++acc)
                    for (int bias = 0; bias < 2; ++bias) {
                        // Operands are column slices of wider buffers, so strides != cols.
                        Tensor abuf =
                            ta ? random_tensor(k, m + 3, rng) : random_tensor(m, k + 3, rng);
                        Tensor bbuf =
                            tb ? random_tensor(n, k + 2, rng) : random_tensor(k, n + 2, rng);
                        ConstMatrixView a = abuf.cview();
                        a.cols = ta ? m : k;
                        ConstMatrixView b = bbuf.cview();
                        b.cols = tb ? k : n;
                        Tensor bv = random_tensor(1, n, rng);
                        Tensor c0 = random_tensor(m, n + 4, rng);
                        Tensor c1 = c0.clone();
                        MatrixView cv0 = c0.view(), cv1 = c1.view();
                        cv0.cols = cv1.cols = n;
                        MatmulArgs args{ta != 0, tb != 0, acc != 0, bias ? bv.data() : nullptr};
                        matmul(cv0, a, b, args);
                        matmul_reference(cv1, a, b, args);
                        INFO("m=", m, " ta=", ta, " tb=", tb, " acc=", acc, " bias=", bias);
                        CHECK(max_rel_diff(cv0, cv1) < 1e-5);
                        // Padding columns are untouched.
                        CHECK(c0.at(0, n) == c1.at(0, n));
                    }
    }
}

TEST_CASE("matmul rejects mismatched shapes with a message naming them") {
    Tensor a(3, 4), b(5, 6), c(3, 6);
    CHECK_THROWS_WITH_AS(matmul(c.view(), a.cview(), b.cview()), doctest::Contains("A[3,4]"),
                         Error);
}

TEST_CASE("linear backward equals the explicit products") {
    Rng rng(3);
    Tensor x = random_tensor(50, 8, rng), w = random_tensor(6, 8, rng),
           dy = random_tensor(50, 6, rng);
    Tensor dx(50, 8), dw(6, 8), db(1, 6);
    linear_backward(dx.view(), dw.view(), db.data(), dy.cview(), x.cview(), w.cview());
    for (int64_t i = 0; i < 50; i += 7)
        for (int64_t j = 0; j < 8; ++j) {
            double s = 0;
            for (int64_t o = 0; o < 6; ++o) s += double(dy.at(i, o)) * w.at(o, j);
            CHECK(dx.at(i, j) == doctest::Approx(s).epsilon(1e-4));
        }
    for (int64_t o = 0; o < 6; ++o) {
        double s = 0, sb = 0;
        for (int64_t i = 0; i < 50; ++i) s += double(dy.at(i, o)) * x.at(i, 3), sb += dy.at(i, o);
        CHECK(dw.at(o, 3) == doctest::Approx(s).epsilon(1e-4));
        CHECK(db[o] == doctest::Approx(sb).epsilon(1e-4));
    }
}

#if defined(SEGRANK_WITH_DNNL)
TEST_CASE("the oneDNN cache serves every row count with one primitive per operand layout") {
    Rng rng(1);
    Tensor w = random_tensor(16, 12, rng);
    const int64_t before = detail::dnnl_cache_size();
    for (int64_t m : {10, 20, 30}) {
        Tensor x = random_tensor(m, 12, rng), y(m, 16);
        linear_forward(y.view(), x.cview(), w.cview(), nullptr);
    }
    CHECK(detail::dnnl_cache_size() - before <= 1);
}
#endif

TEST_CASE("matmul_flops counts 2 m n k per product, transposed or not, and resets to 0") {
    Rng rng(3);
    reset_matmul_flops();
    CHECK(matmul_flops() == 0);
    Tensor a = random_tensor(7, 5, rng), b = random_tensor(5, 3, rng), c(7, 3);
    matmul(c.view(), a.cview(), b.cview());
    CHECK(matmul_flops() == 2 * 7 * 3 * 5);
    Tensor at = random_tensor(5, 7, rng), ct(7, 3);
    MatmulArgs args;
    args.trans_a = true;
    matmul(ct.view(), at.cview(), b.cview(), args);
    CHECK(matmul_flops() == 2 * (2 * 7 * 3 * 5));
    Tensor x = random_tensor(4, 5, rng), w = random_tensor(6, 5, rng), y(4, 6), dy(4, 6);
    reset_matmul_flops();
    linear_forward(y.view(), x.cview(), w.cview(), nullptr);
    Tensor dx(4, 5), dw(6, 5);
    linear_backward(dx.view(), dw.view(), nullptr, dy.cview(), x.cview(), w.cview());
    CHECK(matmul_flops() == 3 * (2 * 4 * 6 * 5));  // forward, dX and dW products
}
