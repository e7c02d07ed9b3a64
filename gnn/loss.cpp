// Losses (docs/losses.md; value and d/dscores in one call), computed in double precision.
#include "gnn/loss.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <string>

#include "gnn/core/check.h"

namespace segrank {
namespace {

constexpr double kNegInf = -std::numeric_limits<double>::infinity();

void check_inputs(const char* what, std::span<const double> s, std::span<const double> t,
                  std::span<double> ds) {
    SEGRANK_CHECK(s.size() == t.size(), what, ": ", s.size(), " scores but ", t.size(), " targets");
    SEGRANK_CHECK(ds.empty() || ds.size() == s.size(), what, ": gradient has ", ds.size(),
                  " entries, expected ", s.size());
    for (size_t i = 0; i < t.size(); ++i)
        SEGRANK_CHECK(std::isfinite(t[i]), what, ": target ", i, " is ", t[i], ", expected finite");
}

// log(exp(x) + exp(y)) without overflow; -inf is the identity.
double log_add_exp(double x, double y) {
    if (x < y) std::swap(x, y);
    if (y == kNegInf) return x;
    return x + std::log1p(std::exp(y - x));
}

// log(1 + exp(x)), stable for both signs.
double softplus(double x) { return std::max(x, 0.0) + std::log1p(std::exp(-std::fabs(x))); }

// 1 / (1 + exp(-x)), stable for both signs.
double sigmoid(double x) {
    if (x >= 0) return 1.0 / (1.0 + std::exp(-x));
    const double e = std::exp(x);
    return e / (1.0 + e);
}

// Number of pairs with t_i > t_j.
int64_t ordered_pairs(std::span<const double> t) {
    int64_t n = 0;
    for (size_t i = 0; i < t.size(); ++i)
        for (size_t j = 0; j < t.size(); ++j) n += t[i] > t[j];
    return n;
}

// Indices sorted by target (ascending), ties by index: the groups of equal targets are contiguous.
std::vector<size_t> order_by_target(std::span<const double> t) {
    std::vector<size_t> idx(t.size());
    std::iota(idx.begin(), idx.end(), size_t{0});
    std::sort(idx.begin(), idx.end(),
              [&](size_t a, size_t b) { return t[a] < t[b] || (t[a] == t[b] && a < b); });
    return idx;
}

constexpr EnumName<LossKind> kLossNames[] = {{LossKind::kPairwiseHinge, "pairwise_hinge"},
                                             {LossKind::kPairwiseLogistic, "pairwise_logistic"},
                                             {LossKind::kListMle, "listmle"},
                                             {LossKind::kMse, "mse"}};

}  // namespace

std::span<const EnumName<LossKind>> enum_names(LossKind) { return kLossNames; }
LossKind parse_loss_kind(std::string_view name) { return parse_enum<LossKind>("loss", name); }
std::string_view to_string(LossKind kind) { return enum_name(kind); }

double pairwise_hinge_loss(std::span<const double> s, std::span<const double> t, double margin,
                           std::span<double> ds) {
    check_inputs("pairwise_hinge", s, t, ds);
    const int64_t pairs = ordered_pairs(t);
    if (pairs == 0) return 0.0;
    const double inv = 1.0 / static_cast<double>(pairs);
    double total = 0.0;
    for (size_t i = 0; i < s.size(); ++i) {
        for (size_t j = 0; j < s.size(); ++j) {
            if (!(t[i] > t[j])) continue;
            const double h = margin - (s[i] - s[j]);
            if (h > 0 || std::isnan(h)) {
                total += h;
                if (!ds.empty()) {
                    ds[i] -= inv;
                    ds[j] += inv;
                }
            }
        }
    }
    return total * inv;
}

double pairwise_logistic_loss(std::span<const double> s, std::span<const double> t,
                              std::span<double> ds) {
    check_inputs("pairwise_logistic", s, t, ds);
    const int64_t pairs = ordered_pairs(t);
    if (pairs == 0) return 0.0;
    const double inv = 1.0 / static_cast<double>(pairs);
    double total = 0.0;
    for (size_t i = 0; i < s.size(); ++i) {
        for (size_t j = 0; j < s.size(); ++j) {
            if (!(t[i] > t[j])) continue;
            const double d = s[i] - s[j];
            total += softplus(-d);
            if (!ds.empty()) {
                const double g = sigmoid(-d) * inv;  // d softplus(-d) / d d = -sigmoid(-d)
                ds[i] -= g;
                ds[j] += g;
            }
        }
    }
    return total * inv;
}

double listmle_loss(std::span<const double> s, std::span<const double> t, double temperature,
                    std::span<double> ds) {
    check_inputs("listmle", s, t, ds);
    SEGRANK_CHECK(temperature > 0 && std::isfinite(temperature),
                  "listmle: temperature must be > 0, got ", temperature);
    const size_t k = s.size();
    if (k < 2) return 0.0;
    const std::vector<size_t> asc = order_by_target(t);
    std::vector<double> a(k), log_z(k);
    for (size_t i = 0; i < k; ++i) a[i] = -s[i] / temperature;

    // Slowest group first: `slower` = log sum exp(a_j) over configs strictly slower than the group.
    double total = 0.0;
    double slower = kNegInf;
    for (size_t end = k; end > 0;) {
        size_t begin = end - 1;
        while (begin > 0 && t[asc[begin - 1]] == t[asc[end - 1]]) --begin;
        double group = kNegInf;
        for (size_t p = begin; p < end; ++p) {
            const size_t i = asc[p];
            log_z[i] = log_add_exp(slower, a[i]);
            total += log_z[i] - a[i];
            group = log_add_exp(group, a[i]);
        }
        slower = log_add_exp(slower, group);
        end = begin;
    }
    const double inv_k = 1.0 / static_cast<double>(k);
    if (!ds.empty()) {
        // dL/ds_j = (1/(K T)) [ (1 - exp(a_j - logZ_j)) - exp(a_j) * sum_{i faster than j} 1/Z_i ].
        // Fastest group first: `faster` = log sum exp(-logZ_i) over strictly faster configs.
        const double scale = inv_k / temperature;
        double faster = kNegInf;
        for (size_t begin = 0; begin < k;) {
            size_t end = begin + 1;
            while (end < k && t[asc[end]] == t[asc[begin]]) ++end;
            double group = kNegInf;
            for (size_t p = begin; p < end; ++p) {
                const size_t j = asc[p];
                const double own = -std::expm1(a[j] - log_z[j]);
                const double shared = faster == kNegInf ? 0.0 : std::exp(a[j] + faster);
                ds[j] += scale * (own - shared);
                group = log_add_exp(group, -log_z[j]);
            }
            faster = log_add_exp(faster, group);
            begin = end;
        }
    }
    return total * inv_k;
}

double mse_log_loss(std::span<const double> s, std::span<const double> t, std::span<double> ds) {
    check_inputs("mse", s, t, ds);
    const size_t k = s.size();
    for (size_t i = 0; i < k; ++i)
        SEGRANK_CHECK(t[i] > 0, "mse: target ", i, " is ", t[i], ", expected > 0 (log target)");
    if (k < 2) return 0.0;
    std::vector<double> z(k);
    double mean = 0.0;
    for (size_t i = 0; i < k; ++i) {
        z[i] = std::log(t[i]);
        mean += z[i];
    }
    mean /= static_cast<double>(k);
    double var = 0.0;
    for (size_t i = 0; i < k; ++i) var += (z[i] - mean) * (z[i] - mean);
    var /= static_cast<double>(k);
    if (!(var > 0)) return 0.0;
    const double inv_std = 1.0 / std::sqrt(var);
    const double inv_k = 1.0 / static_cast<double>(k);
    double total = 0.0;
    for (size_t i = 0; i < k; ++i) {
        const double r = s[i] - (z[i] - mean) * inv_std;
        total += r * r;
        if (!ds.empty()) ds[i] += 2.0 * r * inv_k;
    }
    return total * inv_k;
}

double compute_loss(std::span<const LossTerm> terms, const LossOptions& options,
                    std::span<const float> scores, std::span<const double> targets,
                    std::span<float> dscores, double scale, std::span<double> term_values) {
    SEGRANK_CHECK(!terms.empty(), "loss: no loss terms configured");
    SEGRANK_CHECK(term_values.empty() || term_values.size() == terms.size(),
                  "loss: term_values has ", term_values.size(), " entries, expected ",
                  terms.size());
    SEGRANK_CHECK(dscores.empty() || dscores.size() == scores.size(), "loss: dscores has ",
                  dscores.size(), " entries, expected ", scores.size());
    SEGRANK_CHECK(options.margin >= 0 && std::isfinite(options.margin),
                  "loss.margin must be >= 0, got ", options.margin);
    SEGRANK_CHECK(options.temperature > 0 && std::isfinite(options.temperature),
                  "loss.temperature must be > 0, got ", options.temperature);
    const size_t k = scores.size();
    const std::vector<double> s(scores.begin(), scores.end());
    std::vector<double> grad(dscores.empty() ? 0 : k, 0.0);
    std::vector<double> term_grad(grad.size());
    double total = 0.0;
    for (size_t n = 0; n < terms.size(); ++n) {
        const LossTerm& term = terms[n];
        SEGRANK_CHECK(std::isfinite(term.weight), "loss: weight of term ", to_string(term.kind),
                      " is ", term.weight, ", expected finite");
        std::fill(term_grad.begin(), term_grad.end(), 0.0);
        double v = 0.0;
        switch (term.kind) {
            case LossKind::kPairwiseHinge:
                v = pairwise_hinge_loss(s, targets, options.margin, term_grad);
                break;
            case LossKind::kPairwiseLogistic:
                v = pairwise_logistic_loss(s, targets, term_grad);
                break;
            case LossKind::kListMle:
                v = listmle_loss(s, targets, options.temperature, term_grad);
                break;
            case LossKind::kMse:
                v = mse_log_loss(s, targets, term_grad);
                break;
        }
        if (!term_values.empty()) term_values[n] = v;
        total += term.weight * v;
        for (size_t i = 0; i < grad.size(); ++i) grad[i] += term.weight * term_grad[i];
    }
    for (size_t i = 0; i < grad.size(); ++i) dscores[i] += static_cast<float>(scale * grad[i]);
    return scale * total;
}

double compute_loss(std::span<const LossTerm> terms, const LossOptions& options,
                    std::span<const float> scores, std::span<const int64_t> targets_ns,
                    std::span<float> dscores, double scale, std::span<double> term_values) {
    const std::vector<double> t(targets_ns.begin(), targets_ns.end());
    return compute_loss(terms, options, scores, t, dscores, scale, term_values);
}

}  // namespace segrank
