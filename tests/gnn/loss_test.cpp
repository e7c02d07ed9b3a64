// Losses: hand-computed values, the textbook ListMLE formula, degenerate inputs (K=1, all ties),
// numerical stability, and finite-difference gradient checks of every loss (double precision).
#include "gnn/loss.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <numeric>
#include <string>
#include <vector>

#include "gnn/core/check.h"
#include "gnn/core/rng.h"

using namespace segrank;

namespace {

using LossFn = std::function<double(std::span<const double>, std::span<double>)>;

// Central differences of `f` at s against its analytic gradient; returns the max abs error.
double max_grad_error(const LossFn& f, std::vector<double> s) {
    std::vector<double> g(s.size(), 0.0);
    f(s, g);
    double worst = 0.0;
    const double eps = 1e-6;
    for (size_t i = 0; i < s.size(); ++i) {
        const double keep = s[i];
        s[i] = keep + eps;
        const double up = f(s, {});
        s[i] = keep - eps;
        const double down = f(s, {});
        s[i] = keep;
        worst = std::max(worst, std::fabs((up - down) / (2 * eps) - g[i]));
    }
    return worst;
}

std::vector<double> random_vec(Rng& rng, size_t n, double scale) {
    std::vector<double> v(n);
    for (auto& x : v) x = rng.normal() * scale;
    return v;
}

// Targets with ties: values on a coarse grid (runtime-like, > 0).
std::vector<double> tied_targets(Rng& rng, size_t n, uint64_t levels) {
    std::vector<double> t(n);
    for (auto& x : t) x = 100.0 + 10.0 * static_cast<double>(rng.uniform_int(levels));
    return t;
}

// The textbook form (docs/losses.md#listmle): sort fastest first, sum_i (logsumexp_{j>=i}(-s_j/T) +
// s_i/T); over K.
double listmle_reference(const std::vector<double>& s, const std::vector<double>& t, double temp) {
    std::vector<size_t> idx(s.size());
    std::iota(idx.begin(), idx.end(), size_t{0});
    std::sort(idx.begin(), idx.end(), [&](size_t a, size_t b) { return t[a] < t[b]; });
    double total = 0;
    for (size_t p = 0; p < idx.size(); ++p) {
        double z = 0;
        for (size_t q = p; q < idx.size(); ++q) z += std::exp(-s[idx[q]] / temp);
        total += std::log(z) + s[idx[p]] / temp;
    }
    return total / static_cast<double>(s.size());
}

}  // namespace

TEST_CASE("pairwise hinge on a hand-computed 3-config graph") {
    // pairs (slower, faster): (0,1): 0.1-(0-0.05)=0.15; (0,2): 0.1-(0-0.3)=0.4; (2,1): 0.1-0.25<0.
    const std::vector<double> s = {0.0, 0.05, 0.3};
    const std::vector<double> t = {3, 1, 2};
    std::vector<double> g(3, 0.0);
    CHECK(pairwise_hinge_loss(s, t, 0.1, g) == doctest::Approx(0.55 / 3));
    CHECK(g[0] == doctest::Approx(-2.0 / 3));
    CHECK(g[1] == doctest::Approx(1.0 / 3));
    CHECK(g[2] == doctest::Approx(1.0 / 3));
}

TEST_CASE("pairwise logistic, listmle and mse on hand-computed values") {
    const std::vector<double> zero2 = {0.0, 0.0};
    const std::vector<double> t2 = {2, 1};
    CHECK(pairwise_logistic_loss(zero2, t2, {}) == doctest::Approx(std::log(2.0)));
    // config 1 fastest: its term log(e^0 + e^0) + 0 = log 2; the slowest term is 0; mean over K=2.
    CHECK(listmle_loss(zero2, t2, 1.0, {}) == doctest::Approx(std::log(2.0) / 2));
    // log targets 1 and 3 -> standardized -1, +1; scores 0 -> mean squared error 1.
    const std::vector<double> te = {std::exp(1.0), std::exp(3.0)};
    CHECK(mse_log_loss(zero2, te, {}) == doctest::Approx(1.0));
    const std::vector<double> fit = {-1.0, 1.0};
    CHECK(mse_log_loss(fit, te, {}) == doctest::Approx(0.0));
}

TEST_CASE("listmle equals the textbook formula (divided by K) when targets have no ties") {
    Rng rng(3);
    for (double temp : {1.0, 0.5, 2.0}) {
        for (int trial = 0; trial < 5; ++trial) {
            const size_t k = 2 + rng.uniform_int(30);
            const auto s = random_vec(rng, k, 2.0);
            std::vector<double> t(k);
            for (size_t i = 0; i < k; ++i) t[i] = static_cast<double>(i) * 7.0 + rng.uniform();
            std::reverse(t.begin(), t.end());
            CHECK(listmle_loss(s, t, temp, {}) ==
                  doctest::Approx(listmle_reference(s, t, temp)).epsilon(1e-12));
        }
    }
}

TEST_CASE("listmle never orders tied configs against each other") {
    // Two tied slowest configs and one fastest: the tied pair's terms are 0 whatever their scores.
    const std::vector<double> t = {5, 5, 1};
    const std::vector<double> a = {0.3, -2.0, 0.1};
    const std::vector<double> b = {-2.0, 0.3, 0.1};
    CHECK(listmle_loss(a, t, 1.0, {}) == doctest::Approx(listmle_loss(b, t, 1.0, {})));
    const double fastest = std::log(std::exp(-0.1) + std::exp(-0.3) + std::exp(2.0)) + 0.1;
    CHECK(listmle_loss(a, t, 1.0, {}) == doctest::Approx(fastest / 3));
}

TEST_CASE("every loss is zero with zero gradient for K=1 and for all-tied targets") {
    const std::vector<double> one = {0.7};
    const std::vector<double> t1 = {10};
    const std::vector<double> s = {0.3, -1.0, 2.0, 0.5};
    const std::vector<double> tied = {7, 7, 7, 7};
    for (int kind = 0; kind < 4; ++kind) {
        const LossTerm term{static_cast<LossKind>(kind), 1.0};
        for (int c = 0; c < 2; ++c) {
            const auto& sc = c == 0 ? one : s;
            const auto& tc = c == 0 ? t1 : tied;
            std::vector<float> sf(sc.begin(), sc.end()), g(sc.size(), 0.0f);
            CHECK(compute_loss(std::span(&term, 1), {}, sf, tc, g) == 0.0);
            for (float v : g) CHECK(v == 0.0f);
        }
    }
}

TEST_CASE("every loss matches finite differences on random scores with tied targets") {
    Rng rng(11);
    for (int trial = 0; trial < 12; ++trial) {
        const size_t k = 2 + rng.uniform_int(40);
        const auto t = tied_targets(rng, k, trial % 2 ? 4 : 1000);
        auto s = random_vec(rng, k, 1.5);
        const double margin = 0.1;
        // Keep hinge pairs away from the kink so central differences are valid.
        bool near_kink = true;
        while (near_kink) {
            near_kink = false;
            for (size_t i = 0; i < k && !near_kink; ++i)
                for (size_t j = 0; j < k && !near_kink; ++j)
                    near_kink = t[i] > t[j] && std::fabs(margin - (s[i] - s[j])) < 1e-4;
            if (near_kink) s = random_vec(rng, k, 1.5);
        }
        const double temp = trial % 3 ? 1.0 : 0.7;
        CHECK(max_grad_error([&](auto x, auto g) { return pairwise_hinge_loss(x, t, margin, g); },
                             s) < 1e-7);
        CHECK(max_grad_error([&](auto x, auto g) { return pairwise_logistic_loss(x, t, g); }, s) <
              1e-7);
        CHECK(max_grad_error([&](auto x, auto g) { return listmle_loss(x, t, temp, g); }, s) <
              1e-7);
        CHECK(max_grad_error([&](auto x, auto g) { return mse_log_loss(x, t, g); }, s) < 1e-7);
    }
}

TEST_CASE("logistic and listmle stay finite for extreme score gaps") {
    const std::vector<double> s = {-1e4, 1e4, 0.0, 3e3};
    const std::vector<double> t = {4, 1, 2, 3};
    std::vector<double> g(4, 0.0);
    const double logistic = pairwise_logistic_loss(s, t, g);
    CHECK(std::isfinite(logistic));
    CHECK(logistic > 1e3);
    for (double v : g) CHECK(std::isfinite(v));
    std::fill(g.begin(), g.end(), 0.0);
    const double mle = listmle_loss(s, t, 1.0, g);
    CHECK(std::isfinite(mle));
    for (double v : g) CHECK(std::isfinite(v));
    // Perfectly ordered with huge gaps: ListMLE -> 0 and its gradient -> 0.
    const std::vector<double> good = {1e4, -1e4, 0.0, 3e3};
    CHECK(listmle_loss(good, t, 1.0, {}) == doctest::Approx(0.0));
}

TEST_CASE("compute_loss is the scaled weighted sum of its terms and accumulates into dscores") {
    Rng rng(5);
    const size_t k = 9;
    const auto s = random_vec(rng, k, 1.0);
    const auto t = tied_targets(rng, k, 5);
    std::vector<int64_t> t_ns(k);
    for (size_t i = 0; i < k; ++i) t_ns[i] = static_cast<int64_t>(t[i]);
    const std::vector<LossTerm> terms = {
        {LossKind::kListMle, 1.0}, {LossKind::kMse, 0.02}, {LossKind::kPairwiseHinge, 0.5}};
    LossOptions opt;
    opt.temperature = 0.5;
    opt.margin = 0.2;
    std::vector<double> g1(k, 0.0), g2(k, 0.0), g3(k, 0.0);
    const double want = 1.0 * listmle_loss(s, t, 0.5, g1) + 0.02 * mse_log_loss(s, t, g2) +
                        0.5 * pairwise_hinge_loss(s, t, 0.2, g3);
    std::vector<float> sf(s.begin(), s.end());
    std::vector<float> ds(k, 1.0f);  // pre-existing gradient: must be added to, not overwritten
    std::vector<double> values(3);
    const double got = compute_loss(terms, opt, sf, t_ns, ds, 0.25, values);
    CHECK(got == doctest::Approx(0.25 * want).epsilon(1e-6));
    CHECK(values[1] == doctest::Approx(mse_log_loss(s, t, {})).epsilon(1e-6));
    for (size_t i = 0; i < k; ++i)
        CHECK(ds[i] ==
              doctest::Approx(1.0 + 0.25 * (g1[i] + 0.02 * g2[i] + 0.5 * g3[i])).epsilon(1e-5));
}

TEST_CASE("loss inputs are validated with messages naming the problem") {
    const std::vector<float> s = {1, 2};
    const std::vector<double> t = {1, 2};
    const LossTerm hinge{LossKind::kPairwiseHinge, 1.0};
    CHECK_THROWS_WITH_AS(parse_loss_kind("listnet"),
                         "unknown loss \"listnet\" (valid: \"pairwise_hinge\", "
                         "\"pairwise_logistic\", \"listmle\", \"mse\")",
                         Error);
    CHECK(parse_loss_kind("listmle") == LossKind::kListMle);
    CHECK(to_string(LossKind::kPairwiseLogistic) == "pairwise_logistic");
    CHECK_THROWS_AS(compute_loss(std::span(&hinge, 1), {}, s, std::vector<double>{1}, {}), Error);
    CHECK_THROWS_AS(compute_loss({}, {}, s, t, {}), Error);
    LossOptions bad;
    bad.temperature = 0;
    CHECK_THROWS_AS(compute_loss(std::span(&hinge, 1), bad, s, t, {}), Error);
    const std::vector<double> zero = {0, 1};
    CHECK_THROWS_WITH_AS(mse_log_loss(std::vector<double>{0, 0}, zero, {}),
                         doctest::Contains("> 0"), Error);
    // NaN scores propagate into the value (the trainer reports them), they do not throw.
    const std::vector<float> nan_s = {std::nanf(""), 0.0f};
    CHECK(std::isnan(compute_loss(std::span(&hinge, 1), {}, nan_s, t, {})));
}
