// Normalizer: hand-computed statistics over two graphs, streaming == one-shot, apply, round trip
// through plain vectors, and validation errors.
#include "data/normalizer.h"

#include <doctest/doctest.h>

#include <cmath>

#include "gnn/core/rng.h"

using namespace segrank;

namespace {
Tensor matrix(int64_t rows, int64_t cols, std::initializer_list<float> values) {
    Tensor t(rows, cols);
    int64_t i = 0;
    for (float v : values) t[i++] = v;
    REQUIRE(i == rows * cols);
    return t;
}
}  // namespace

TEST_CASE("normalizer fit on two graphs: drops constant columns, signed log, population z-score") {
    const float e1 = static_cast<float>(std::exp(1.0) - 1.0);  // signed_log -> 1
    const float e2 = static_cast<float>(std::exp(2.0) - 1.0);  // signed_log -> 2
    // Columns: 0 constant (7) everywhere -> dropped; 1 signed logs {0, 1, -1} then {2};
    // 2 constant inside graph A but not over the split -> kept; 3 constant 0 -> dropped.
    const Tensor a = matrix(3, 4, {7, 0, 5, 0, 7, e1, 5, 0, 7, -e1, 5, 0});
    const Tensor b = matrix(1, 4, {7, e2, -e1, 0});
    NormalizerFitter fit(4);
    fit.add(a.view(), "a.npz");
    fit.add(b.view(), "b.npz");
    CHECK(fit.num_rows() == 4);
    const Normalizer n = fit.finish();
    REQUIRE(n.output_dim() == 2);
    CHECK(n.kept_columns() == std::vector<int32_t>{1, 2});
    // col 1: values 0, 1, -1, 2 -> mean 0.5, population var (0.25+0.25+2.25+2.25)/4 = 1.25.
    CHECK(n.means()[0] == doctest::Approx(0.5).epsilon(1e-7));
    CHECK(n.stds()[0] == doctest::Approx(std::sqrt(1.25)).epsilon(1e-7));
    // col 2: signed logs log(6) x3 and -1 -> mean (3 log 6 - 1)/4.
    const double l6 = std::log(6.0);
    const double m2 = (3 * l6 - 1) / 4;
    const double v2 = (3 * (l6 - m2) * (l6 - m2) + (-1 - m2) * (-1 - m2)) / 4;
    CHECK(n.means()[1] == doctest::Approx(m2).epsilon(1e-7));
    CHECK(n.stds()[1] == doctest::Approx(std::sqrt(v2)).epsilon(1e-7));

    const Tensor out = n.apply(b.view(), "b.npz");
    REQUIRE(out.rows() == 1);
    REQUIRE(out.cols() == 2);
    CHECK(out.at(0, 0) == doctest::Approx((2 - 0.5) / std::sqrt(1.25)).epsilon(1e-6));
    CHECK(out.at(0, 1) == doctest::Approx((-1 - m2) / std::sqrt(v2)).epsilon(1e-6));
}

TEST_CASE("normalized train features have mean 0 and population std 1 per kept column") {
    Rng rng(9);
    NormalizerFitter fit(5);
    std::vector<Tensor> graphs;
    for (int g = 0; g < 4; ++g) {
        Tensor x(10 + 7 * g, 5);
        for (int64_t r = 0; r < x.rows(); ++r) {
            x.at(r, 0) = static_cast<float>(rng.normal() * 1e4);
            x.at(r, 1) = static_cast<float>(rng.uniform_int(3));
            x.at(r, 2) = 42.0f;
            x.at(r, 3) = static_cast<float>(-rng.uniform() * 1e6);
            x.at(r, 4) = static_cast<float>(g);  // constant within each graph only
        }
        fit.add(x.view(), "g");
        graphs.push_back(std::move(x));
    }
    const Normalizer n = fit.finish();
    CHECK(n.kept_columns() == std::vector<int32_t>{0, 1, 3, 4});
    std::vector<double> sum(4, 0), sq(4, 0);
    double rows = 0;
    for (const Tensor& x : graphs) {
        const Tensor y = n.apply(x.view(), "g");
        for (int64_t r = 0; r < y.rows(); ++r)
            for (int64_t c = 0; c < 4; ++c) {
                sum[c] += y.at(r, c);
                sq[c] += static_cast<double>(y.at(r, c)) * y.at(r, c);
            }
        rows += static_cast<double>(y.rows());
    }
    for (int c = 0; c < 4; ++c) {
        CHECK(std::fabs(sum[c] / rows) < 1e-5);
        CHECK(sq[c] / rows == doctest::Approx(1.0).epsilon(1e-5));
    }
}

TEST_CASE("normalizer round-trips through plain vectors and validates them") {
    const Tensor a = matrix(2, 2, {1, 2, 3, 2});
    NormalizerFitter fit(2);
    fit.add(a.view(), "a");
    const Normalizer n = fit.finish();
    const Normalizer m =
        Normalizer::from_vectors(n.input_dim(), n.kept_columns(), n.means(), n.stds(), "ckpt.h5");
    const Tensor x = n.apply(a.view(), "a");
    const Tensor y = m.apply(a.view(), "a");
    CHECK(x.at(0, 0) == y.at(0, 0));
    CHECK(x.at(1, 0) == y.at(1, 0));

    CHECK_THROWS_WITH_AS(Normalizer::from_vectors(2, {1, 0}, {0, 0}, {1, 1}, "ckpt.h5"),
                         doctest::Contains("ckpt.h5: normalizer kept_columns must be strictly"),
                         Error);
    CHECK_THROWS_WITH_AS(Normalizer::from_vectors(2, {2}, {0}, {1}, "ckpt.h5"),
                         doctest::Contains("kept_columns[0] = 2"), Error);
    CHECK_THROWS_WITH_AS(Normalizer::from_vectors(2, {0}, {0}, {0}, "ckpt.h5"),
                         doctest::Contains("stds[0]"), Error);
    CHECK_THROWS_AS(Normalizer::from_vectors(2, {0}, {0, 1}, {1}, "ckpt.h5"), Error);
    const Tensor wrong(3, 3);
    CHECK_THROWS_WITH_AS(n.apply(wrong.view(), "w.npz"),
                         doctest::Contains("w.npz: node_feat has 3"), Error);
    CHECK_THROWS_AS(Normalizer().apply(a.view(), "a"), Error);
}

TEST_CASE("normalizer fitter rejects empty splits, bad widths and non-finite features") {
    NormalizerFitter fit(2);
    CHECK_THROWS_WITH_AS(fit.finish(), doctest::Contains("no training nodes"), Error);
    const Tensor wrong(2, 3);
    CHECK_THROWS_AS(fit.add(wrong.view(), "x.npz"), Error);
    Tensor bad = matrix(2, 2, {1, 2, 3, 4});
    bad.at(1, 1) = std::nanf("");
    CHECK_THROWS_WITH_AS(fit.add(bad.view(), "x.npz"), doctest::Contains("x.npz: node_feat[1, 1]"),
                         Error);
    CHECK(signed_log(-(std::exp(3.0) - 1)) == doctest::Approx(-3.0));
    CHECK(signed_log(0.0) == 0.0);
}
