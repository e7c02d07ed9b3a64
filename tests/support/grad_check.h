// Finite-difference gradient checker for any (forward, backward) pair
// (docs/style.md#forward-and-backward, docs/style.md#tests).
// Usage: compute the analytic gradient of a scalar loss L(x) (usually sum(w * f(x)) with fixed
// random w), then `grad_check(x, grad, loss)` perturbs entries of x by +-eps and compares central
// differences with the analytic values. The loss lambda must recompute the forward from the current
// x.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <span>
#include <string>

#include "gnn/core/rng.h"
#include "gnn/core/tensor.h"

namespace segrank::test {

struct GradCheckResult {
    int64_t checked = 0;
    int64_t failed = 0;
    double worst_err =
        0.0;  ///< max over entries of |num - ana| / (atol + rtol * max(|num|, |ana|))
    std::string first_failure;
    bool ok() const { return failed == 0 && checked > 0; }
};

/// (loss(x + eps) - loss(x - eps)) / (2 eps), perturbing the one value x in place and restoring it.
inline double central_difference(float& x, const std::function<double()>& loss, double eps) {
    const float orig = x;
    x = static_cast<float>(orig + eps);
    const double lp = loss();
    x = static_cast<float>(orig - eps);
    const double lm = loss();
    x = orig;
    return (lp - lm) / (2.0 * eps);
}

/// Checks up to max_checks entries of x (all when x is small; else a seeded random sample).
/// Entry i passes when |num - ana| <= atol + rtol * max(|num|, |ana|).
inline GradCheckResult grad_check(std::span<float> x, std::span<const float> grad,
                                  const std::function<double()>& loss, double eps = 1e-2,
                                  double rtol = 2e-2, double atol = 2e-3, int64_t max_checks = 60,
                                  uint64_t seed = 1) {
    GradCheckResult res;
    Rng rng(seed);
    const int64_t n = static_cast<int64_t>(x.size());
    const int64_t count = std::min(n, max_checks);
    for (int64_t t = 0; t < count; ++t) {
        const int64_t i =
            n <= max_checks ? t : static_cast<int64_t>(rng.uniform_int(static_cast<uint64_t>(n)));
        const double num = central_difference(x[i], loss, eps);
        const double ana = grad[i];
        const double tol = atol + rtol * std::max(std::abs(num), std::abs(ana));
        const double err = std::abs(num - ana);
        res.worst_err = std::max(res.worst_err, err / tol);
        ++res.checked;
        if (err > tol) {
            if (res.failed == 0)
                res.first_failure = "entry " + std::to_string(i) + ": numeric " +
                                    std::to_string(num) + " analytic " + std::to_string(ana);
            ++res.failed;
        }
    }
    return res;
}

/// sum_i w[i] * y[i] in double: the scalar the checks differentiate (dL/dy = w).
inline double weighted_sum(ConstMatrixView y, const Tensor& w) {
    double s = 0.0;
    for (int64_t r = 0; r < y.rows; ++r)
        for (int64_t c = 0; c < y.cols; ++c)
            s += static_cast<double>(y.at(r, c)) * w[r * y.cols + c];
    return s;
}

/// A [rows, cols] tensor of N(0, scale^2) values.
inline Tensor random_tensor(int64_t rows, int64_t cols, Rng& rng, double scale = 1.0) {
    Tensor t(rows, cols);
    for (int64_t i = 0; i < t.size(); ++i) t[i] = static_cast<float>(scale * rng.normal());
    return t;
}

}  // namespace segrank::test

/// doctest assertion with the first failing entry in the message.
#define SEGRANK_CHECK_GRAD(result)                                                           \
    do {                                                                                     \
        const auto& r_ = (result);                                                           \
        INFO("checked ", r_.checked, " failed ", r_.failed, " worst err/tol ", r_.worst_err, \
             " first: ", r_.first_failure);                                                  \
        CHECK(r_.ok());                                                                      \
    } while (0)
