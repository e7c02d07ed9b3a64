// Dense matmul: oneDNN and the portable kernel vs the double-accumulating reference over
// transposes, strides, bias, accumulate.
#include "gnn/ops/matmul.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>
#include <utility>
#include <vector>

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

TEST_CASE(
    "matmul and the portable kernel match the reference for every transpose, bias and accumulate "
    "combination, with K below and above the portable kernel's depth block") {
    Rng rng(7);
    for (auto [m, k] : {std::pair<int64_t, int64_t>{1, 19},
                        {5, 19},
                        {37, 19},
                        {300, 19},
                        {37, 600},
                        {300, 257}}) {
        const int64_t n = 23;
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
                        Tensor c1 = c0.clone(), c2 = c0.clone();
                        MatrixView cv0 = c0.view(), cv1 = c1.view(), cv2 = c2.view();
                        cv0.cols = cv1.cols = cv2.cols = n;
                        MatmulArgs args{ta != 0, tb != 0, acc != 0, bias ? bv.data() : nullptr};
                        matmul(cv0, a, b, args);
                        matmul_reference(cv1, a, b, args);
                        matmul_portable(cv2, a, b, args);
                        INFO("m=", m, " k=", k, " ta=", ta, " tb=", tb, " acc=", acc,
                             " bias=", bias);
                        CHECK(max_rel_diff(cv0, cv1) < 1e-5 * (1 + k / 64));
                        CHECK(max_rel_diff(cv2, cv1) < 1e-5 * (1 + k / 64));
                        // Padding columns are untouched.
                        CHECK(c0.at(0, n) == c1.at(0, n));
                        CHECK(c2.at(0, n) == c1.at(0, n));
                    }
    }
}

TEST_CASE("matmul rejects mismatched shapes with a message naming them") {
    Tensor a(3, 4), b(5, 6), c(3, 6);
    CHECK_THROWS_WITH_AS(matmul(c.view(), a.cview(), b.cview()), doctest::Contains("A[3,4]"),
                         Error);
    CHECK_THROWS_WITH_AS(matmul_portable(c.view(), a.cview(), b.cview()),
                         doctest::Contains("A[3,4]"), Error);
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

TEST_CASE("round_to_bf16 rounds to nearest even, keeps NaN, infinities and exact bf16 values") {
    CHECK(round_to_bf16(1.0f) == 1.0f);
    CHECK(round_to_bf16(-2.5f) == -2.5f);
    // 1 + 2^-8 is halfway between 1 and 1 + 2^-7: ties to even -> 1.
    CHECK(round_to_bf16(1.0f + 0x1p-8f) == 1.0f);
    // 1 + 3 * 2^-8 is halfway between 1 + 2^-7 and 1 + 2^-6: ties to even -> 1 + 2^-6.
    CHECK(round_to_bf16(1.0f + 3 * 0x1p-8f) == 1.0f + 0x1p-6f);
    CHECK(round_to_bf16(1.0f + 0x1p-8f + 0x1p-20f) == 1.0f + 0x1p-7f);  // above half: up
    CHECK(std::isnan(round_to_bf16(std::nanf(""))));
    CHECK(round_to_bf16(std::numeric_limits<float>::infinity()) ==
          std::numeric_limits<float>::infinity());
    CHECK(round_to_bf16(std::numeric_limits<float>::max()) ==
          std::numeric_limits<float>::infinity());  // above bf16's largest finite value
    Rng rng(5);
    for (int i = 0; i < 1000; ++i) {
        const float x = static_cast<float>(rng.normal()) * 100.0f;
        CHECK(std::abs(round_to_bf16(x) - x) <= std::abs(x) * 0x1p-8f);  // half an 8-bit ulp
    }
}

TEST_CASE("native bf16 products round every operand value exactly as round_to_bf16 does") {
    // C = A B with B = e_0 e_0^T picks A's column 0 through the bf16 kernel: C[i, 0] is the bf16
    // operand value times 1 accumulated in fp32, so it must equal round_to_bf16(A[i, 0]) bit for
    // bit (ties, carries into the exponent, overflow to infinity, NaN). Denormals are left out:
    // the hardware dot product flushes them.
    const std::vector<float> special = {1.0f + 0x1p-8f,
                                        1.0f + 3 * 0x1p-8f,
                                        1.0f + 0x1p-8f + 0x1p-20f,
                                        -(1.0f + 3 * 0x1p-8f),
                                        0x1.fffffep0f,  // rounds up into the next binade: 2
                                        std::numeric_limits<float>::max(),
                                        std::numeric_limits<float>::infinity(),
                                        -std::numeric_limits<float>::infinity(),
                                        std::nanf(""),
                                        0x1p-126f,
                                        3.0e38f,
                                        0.0f};
    Rng rng(11);
    const int64_t m = 512, k = 128, n = 32;  // above kBf16MinFlops: the bf16 kernel runs
    Tensor a = random_tensor(m, k, rng), b(k, n), c(m, n);
    for (int64_t i = 0; i < m; ++i)
        a.at(i, 0) = i < int64_t(special.size()) ? special[size_t(i)]
                                                 : static_cast<float>(rng.normal()) * 1000.0f;
    b.zero();
    b.at(0, 0) = 1.0f;
    for (MatmulPrecision p : {MatmulPrecision::kBf16Emulated, MatmulPrecision::kBf16}) {
        if (p == MatmulPrecision::kBf16 && !bf16_supported()) continue;
        CAPTURE(to_string(p));
        set_matmul_precision(p);
        matmul(c.view(), a.cview(), b.cview());
        set_matmul_precision(MatmulPrecision::kFp32);
        for (int64_t i = 0; i < m; ++i) {
            CAPTURE(i);
            const float want = round_to_bf16(a.at(i, 0));
            if (std::isnan(want))
                CHECK(std::isnan(c.at(i, 0)));
            else
                CHECK(c.at(i, 0) == want);
        }
    }
}

namespace {
// Max over elements of |c - ref| / sum_k |op(a)_ik op(b)_kj|.
double max_relative_to_abs_sum(const Tensor& c, const Tensor& ref, const Tensor& a, const Tensor& b,
                               const MatmulArgs& args) {
    double worst = 0;
    const int64_t k = args.trans_a ? a.rows() : a.cols();
    for (int64_t i = 0; i < c.rows(); ++i)
        for (int64_t j = 0; j < c.cols(); ++j) {
            double s = 0;
            for (int64_t p = 0; p < k; ++p) {
                const double av = args.trans_a ? a.at(p, i) : a.at(i, p);
                const double bv = args.trans_b ? b.at(j, p) : b.at(p, j);
                s += std::abs(av * bv);
            }
            worst = std::max(worst, std::abs(double(c.at(i, j)) - ref.at(i, j)) / s);
        }
    return worst;
}
}  // namespace

TEST_CASE(
    "bf16 products are within 2^-7 of sum |a b| of fp32 for every transpose, accumulate and bias, "
    "emulated and (where the CPU has it) native") {
    Rng rng(7);
    const int64_t m = 300, k = 128, n = 96;  // 2 m n k = 7.4 MFLOP: above kBf16MinFlops
    REQUIRE(matmul_precision() == MatmulPrecision::kFp32);
    std::vector<float> bias(n);
    for (auto& v : bias) v = static_cast<float>(rng.normal());
    for (int variant = 0; variant < 4; ++variant) {
        MatmulArgs args;
        args.trans_a = variant == 1 || variant == 3;  // 1: the weight-gradient form A^T B
        args.trans_b = variant == 2 || variant == 3;  // 2: the forward form x W^T
        args.accumulate = variant == 3;
        args.bias = variant == 2 ? bias.data() : nullptr;
        CAPTURE(variant);
        Tensor a = args.trans_a ? random_tensor(k, m, rng) : random_tensor(m, k, rng);
        Tensor b = args.trans_b ? random_tensor(n, k, rng) : random_tensor(k, n, rng);
        Tensor init = random_tensor(m, n, rng);
        auto run = [&](MatmulPrecision p, bool reference) {
            Tensor c = init.clone();
            set_matmul_precision(p);
            if (reference)
                matmul_reference(c.view(), a.cview(), b.cview(), args);
            else
                matmul(c.view(), a.cview(), b.cview(), args);
            set_matmul_precision(MatmulPrecision::kFp32);
            return c;
        };
        const Tensor ref = run(MatmulPrecision::kFp32, true);
        const Tensor emu = run(MatmulPrecision::kBf16Emulated, false);
        const double emu_err = max_relative_to_abs_sum(emu, ref, a, b, args);
        CHECK(emu_err <= 0x1p-7 + 1e-4);
        CHECK(emu_err > 1e-6);  // the rounding did happen
        if (bf16_supported()) {
            const Tensor nat = run(MatmulPrecision::kBf16, false);
            CHECK(max_relative_to_abs_sum(nat, ref, a, b, args) <= 0x1p-7 + 1e-4);
            // the same rounding (fp32 results differ from emu by ~1e-3 of sum |a b|)
            CHECK(max_relative_to_abs_sum(nat, emu, a, b, args) <= 1e-4);
        }
    }
    // Small products stay fp32 under bf16.
    Tensor sa = random_tensor(4, 4, rng), sb = random_tensor(4, 4, rng), sc(4, 4), sr(4, 4);
    set_matmul_precision(MatmulPrecision::kBf16Emulated);
    matmul(sc.view(), sa.cview(), sb.cview());
    set_matmul_precision(MatmulPrecision::kFp32);
    matmul(sr.view(), sa.cview(), sb.cview());
    CHECK(std::memcmp(sc.data(), sr.data(), sizeof(float) * 16) == 0);
    if (!bf16_supported()) {
        CHECK(resolve_matmul_precision(MatmulPrecision::kBf16) == MatmulPrecision::kFp32);
        CHECK_THROWS_AS(set_matmul_precision(MatmulPrecision::kBf16), Error);
        MESSAGE("this CPU has no native bf16 matmul: only the emulated path was checked");
    }
}

TEST_CASE(
    "an operand hold rounds a bf16 operand once for every product that reads it, with results bit "
    "for bit those without the hold, and does nothing under fp32") {
    Rng rng(19);
    const int64_t m = 400, k = 128, n = 64;  // above kBf16MinFlops
    Tensor x = random_tensor(m, k, rng), w1 = random_tensor(n, k, rng),
           w2 = random_tensor(n, k, rng);
    Tensor dy = random_tensor(m, n, rng);
    REQUIRE(matmul_precision() == MatmulPrecision::kFp32);
    // Forward x W^T twice and a weight gradient dy^T x: x is A, A, then B.
    auto products = [&](bool hold, Tensor& y1, Tensor& y2, Tensor& dw) {
        MatmulArgs fwd;
        fwd.trans_b = true;
        MatmulArgs wg;
        wg.trans_a = true;
        std::optional<Bf16OperandHold> h;
        if (hold) h.emplace(x.cview());
        matmul(y1.view(), x.cview(), w1.cview(), fwd);
        matmul(y2.view(), x.cview(), w2.cview(), fwd);
        matmul(dw.view(), dy.cview(), x.cview(), wg);
    };
    for (MatmulPrecision p :
         {MatmulPrecision::kFp32, MatmulPrecision::kBf16Emulated, MatmulPrecision::kBf16}) {
        if (p == MatmulPrecision::kBf16 && !bf16_supported()) continue;
        CAPTURE(to_string(p));
        set_matmul_precision(p);
        Tensor a1(m, n), a2(m, n), adw(n, k), b1(m, n), b2(m, n), bdw(n, k);
        reset_matmul_flops();
        products(false, a1, a2, adw);
        const int64_t without = bf16_operand_roundings();
        reset_matmul_flops();
        products(true, b1, b2, bdw);
        const int64_t with = bf16_operand_roundings();
        set_matmul_precision(MatmulPrecision::kFp32);
        CHECK(std::equal(a1.span().begin(), a1.span().end(), b1.span().begin()));
        CHECK(std::equal(a2.span().begin(), a2.span().end(), b2.span().begin()));
        CHECK(std::equal(adw.span().begin(), adw.span().end(), bdw.span().begin()));
        if (p == MatmulPrecision::kFp32) {
            CHECK(without == 0);
            CHECK(with == 0);
        } else {
            CHECK(without == 6);  // both operands of three products
            CHECK(with == 4);     // x once, w1, w2, dy
        }
    }
    // A changed view (another row count) is not the held one: it is rounded on its own.
    set_matmul_precision(MatmulPrecision::kBf16Emulated);
    {
        const Bf16OperandHold h(x.cview());
        Tensor y(m / 2, n);
        MatmulArgs fwd;
        fwd.trans_b = true;
        reset_matmul_flops();
        matmul(y.view(), x.cview().rows_range(0, m / 2), w1.cview(), fwd);
        CHECK(bf16_operand_roundings() == 2);
        Tensor full(m, n);
        matmul(full.view(), x.cview(), w1.cview(), fwd);
        for (int64_t i = 0; i < m / 2; ++i)
            for (int64_t j = 0; j < n; ++j) CHECK(y.at(i, j) == full.at(i, j));
    }
    set_matmul_precision(MatmulPrecision::kFp32);
}
