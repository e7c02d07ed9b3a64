// Ranking metrics (docs/metrics.md). Kendall tau-b follows scipy.stats.kendalltau (variant 'b'),
// computed with Knight's algorithm: sort by (x, y), then count y's strict inversions by merge sort.
#include "eval/metrics.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "eval/metric_fields.h"
#include "eval/submission.h"
#include "gnn/core/check.h"

namespace segrank {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// Sum over runs of equal values (in sorted order, per `same`) of n*(n-1)/2.
template <typename Same>
int64_t tied_pairs(int64_t c, Same same) {
    int64_t ties = 0;
    int64_t run = 1;
    for (int64_t i = 1; i <= c; ++i) {
        if (i < c && same(i - 1, i)) {
            ++run;
        } else {
            ties += run * (run - 1) / 2;
            run = 1;
        }
    }
    return ties;
}

// Sorts v ascending and returns the number of pairs i < j with v[i] > v[j] (strict inversions).
int64_t sort_count_inversions(std::vector<double>& v) {
    const size_t n = v.size();
    std::vector<double> buf(n);
    int64_t inversions = 0;
    // Bottom-up merge sort; equal elements are taken from the left run first, so ties never count.
    for (size_t width = 1; width < n; width *= 2) {
        for (size_t lo = 0; lo < n; lo += 2 * width) {
            const size_t mid = std::min(lo + width, n);
            const size_t hi = std::min(lo + 2 * width, n);
            size_t i = lo, j = mid, k = lo;
            while (i < mid && j < hi) {
                if (v[j] < v[i]) {
                    inversions += static_cast<int64_t>(mid - i);
                    buf[k++] = v[j++];
                } else {
                    buf[k++] = v[i++];
                }
            }
            while (i < mid) buf[k++] = v[i++];
            while (j < hi) buf[k++] = v[j++];
        }
        std::swap(v, buf);
    }
    return inversions;
}

void check_same_length(size_t a, size_t b, const char* what) {
    SEGRANK_CHECK(a == b, what, ": vectors must have the same length, got ", a, " and ", b);
}

bool any_nan(std::span<const double> v) {
    return std::any_of(v.begin(), v.end(), [](double d) { return std::isnan(d); });
}

}  // namespace

PairCounts count_pairs(std::span<const double> x, std::span<const double> y) {
    check_same_length(x.size(), y.size(), "count_pairs");
    SEGRANK_CHECK(!any_nan(x) && !any_nan(y), "count_pairs: NaN in the input");
    const auto c = static_cast<int64_t>(x.size());
    PairCounts pc;
    pc.total = c * (c - 1) / 2;
    if (c < 2) return pc;

    std::vector<int64_t> perm(static_cast<size_t>(c));
    std::iota(perm.begin(), perm.end(), int64_t{0});
    std::sort(perm.begin(), perm.end(),
              [&](int64_t a, int64_t b) { return x[a] < x[b] || (x[a] == x[b] && y[a] < y[b]); });
    pc.x_ties = tied_pairs(c, [&](int64_t i, int64_t j) { return x[perm[i]] == x[perm[j]]; });
    pc.joint_ties = tied_pairs(c, [&](int64_t i, int64_t j) {
        return x[perm[i]] == x[perm[j]] && y[perm[i]] == y[perm[j]];
    });
    std::vector<double> ys(static_cast<size_t>(c));
    for (int64_t i = 0; i < c; ++i) ys[i] = y[perm[i]];
    // Within a run of tied x, y is ascending, so those pairs are never counted as inversions.
    pc.discordant = sort_count_inversions(ys);
    pc.y_ties = tied_pairs(c, [&](int64_t i, int64_t j) { return ys[i] == ys[j]; });
    return pc;
}

double kendall_tau_b(std::span<const double> x, std::span<const double> y) {
    check_same_length(x.size(), y.size(), "kendall_tau_b");
    if (x.size() < 2 || any_nan(x) || any_nan(y)) return kNaN;
    const PairCounts pc = count_pairs(x, y);
    if (pc.x_ties == pc.total || pc.y_ties == pc.total) return kNaN;
    // Same expression order as scipy, for agreement to the last bits.
    const auto con_minus_dis =
        static_cast<double>(pc.total - pc.x_ties - pc.y_ties + pc.joint_ties - 2 * pc.discordant);
    const double tau = con_minus_dis / std::sqrt(static_cast<double>(pc.total - pc.x_ties)) /
                       std::sqrt(static_cast<double>(pc.total - pc.y_ties));
    return std::clamp(tau, -1.0, 1.0);
}

double ordered_pair_accuracy(std::span<const double> scores, std::span<const double> targets) {
    check_same_length(scores.size(), targets.size(), "ordered_pair_accuracy");
    SEGRANK_CHECK(!any_nan(scores) && !any_nan(targets), "ordered_pair_accuracy: NaN in the input");
    const PairCounts pc = count_pairs(scores, targets);
    const int64_t ordered = pc.total - pc.y_ties;  // pairs with t_i != t_j
    if (ordered == 0) return kNaN;
    return static_cast<double>(pc.concordant()) / static_cast<double>(ordered);
}

double slowdown_at_k(std::span<const double> scores, std::span<const double> targets, int64_t k) {
    check_same_length(scores.size(), targets.size(), "slowdown_at_k");
    SEGRANK_CHECK(!scores.empty(), "slowdown_at_k: no configs");
    SEGRANK_CHECK(k >= 1, "slowdown_at_k: K must be >= 1, got ", k);
    SEGRANK_CHECK(!any_nan(scores), "slowdown_at_k: NaN in the scores");
    for (size_t i = 0; i < targets.size(); ++i) {
        SEGRANK_CHECK(targets[i] > 0 && std::isfinite(targets[i]), "slowdown_at_k: target ", i,
                      " is ", targets[i], ", expected a finite runtime > 0 (test splits carry 0)");
    }
    const auto c = static_cast<int64_t>(scores.size());
    k = std::min(k, c);
    std::vector<int64_t> idx(static_cast<size_t>(c));
    std::iota(idx.begin(), idx.end(), int64_t{0});
    std::nth_element(idx.begin(), idx.begin() + (k - 1), idx.end(), [&](int64_t a, int64_t b) {
        return scores[a] < scores[b] || (scores[a] == scores[b] && a < b);
    });
    double best_top = std::numeric_limits<double>::infinity();
    for (int64_t i = 0; i < k; ++i) best_top = std::min(best_top, targets[idx[i]]);
    const double best = *std::min_element(targets.begin(), targets.end());
    return (best_top - best) / best;
}

std::vector<double> select_indices(std::span<const double> values, std::span<const int64_t> indices,
                                   const std::string& where) {
    std::vector<double> out;
    out.reserve(indices.size());
    for (size_t i = 0; i < indices.size(); ++i) {
        const int64_t j = indices[i];
        SEGRANK_CHECK(j >= 0 && static_cast<size_t>(j) < values.size(), where, ": config index ", j,
                      " (entry ", i, ") out of range [0, ", values.size(), ")");
        out.push_back(values[j]);
    }
    return out;
}

std::vector<double> predicted_positions(std::span<const float> scores) {
    const std::vector<double> s(scores.begin(), scores.end());
    // Task::kLayout: the whole order (tile rows are the first 5 of this same order).
    const std::vector<int64_t> order = top_configs(s, Task::kLayout);
    std::vector<double> pos(s.size());
    for (size_t p = 0; p < order.size(); ++p)
        pos[static_cast<size_t>(order[p])] = static_cast<double>(p);
    return pos;
}

GraphMetrics evaluate_graph(const std::string& name, std::span<const float> scores,
                            std::span<const double> targets) {
    SEGRANK_CHECK(scores.size() == targets.size(), name, ": ", scores.size(), " scores but ",
                  targets.size(), " targets");
    SEGRANK_CHECK(!scores.empty(), name, ": no configs to evaluate");
    std::vector<double> s(scores.begin(), scores.end());
    for (size_t i = 0; i < s.size(); ++i) {
        if (!std::isfinite(s[i]))
            throw NonFiniteScore(str(name, ": score of config ", i, " is ", s[i]));
        SEGRANK_CHECK(std::isfinite(targets[i]) && targets[i] > 0, name, ": target of config ", i,
                      " is ", targets[i],
                      ", expected a runtime > 0 (test splits cannot be evaluated)");
    }
    GraphMetrics m;
    m.name = name;
    m.num_configs = static_cast<int64_t>(s.size());
    const double t0 = targets[0];
    m.targets_constant =
        std::all_of(targets.begin(), targets.end(), [&](double t) { return t == t0; });
    // Tie policy (metrics.h, docs/metrics.md): metrics of the predicted order, as a submission.
    const std::vector<double> pos = predicted_positions(scores);
    m.kendall_tau = kendall_tau_b(pos, targets);
    m.opa = ordered_pair_accuracy(pos, targets);
    m.kendall_raw = kendall_tau_b(s, targets);
    m.slowdown_1 = slowdown_at_k(pos, targets, 1);
    m.slowdown_5 = slowdown_at_k(pos, targets, 5);
    m.slowdown_10 = slowdown_at_k(pos, targets, 10);
    return m;
}

RuntimeErrors runtime_errors(const std::string& name, std::span<const double> predicted,
                             std::span<const double> targets) {
    SEGRANK_CHECK(predicted.size() == targets.size(), name, ": ", predicted.size(),
                  " predicted runtimes for ", targets.size(), " targets");
    SEGRANK_CHECK(!targets.empty(), name, ": no configs to compute runtime errors on");
    std::vector<double> ape(targets.size());
    for (size_t i = 0; i < targets.size(); ++i) {
        SEGRANK_CHECK(std::isfinite(targets[i]) && targets[i] > 0, name, ": config ", i,
                      " has target ", targets[i], "; runtime errors need finite targets > 0");
        SEGRANK_CHECK(std::isfinite(predicted[i]), name, ": config ", i,
                      " has a non-finite predicted runtime ", predicted[i]);
        ape[i] = std::abs(predicted[i] - targets[i]) / targets[i];
    }
    RuntimeErrors r;
    r.mape = std::accumulate(ape.begin(), ape.end(), 0.0) / static_cast<double>(ape.size());
    const size_t mid = ape.size() / 2;
    std::nth_element(ape.begin(), ape.begin() + static_cast<std::ptrdiff_t>(mid), ape.end());
    r.median_ape = ape[mid];
    if (ape.size() % 2 == 0)
        r.median_ape =
            0.5 * (r.median_ape +
                   *std::max_element(ape.begin(), ape.begin() + static_cast<std::ptrdiff_t>(mid)));
    return r;
}

std::vector<double> destandardized_runtimes(const std::string& name, std::span<const float> scores,
                                            std::span<const double> targets) {
    SEGRANK_CHECK(scores.size() == targets.size(), name, ": ", scores.size(), " scores for ",
                  targets.size(), " targets");
    SEGRANK_CHECK(!targets.empty(), name, ": no configs to predict runtimes for");
    double mean = 0;
    for (size_t i = 0; i < targets.size(); ++i) {
        SEGRANK_CHECK(std::isfinite(targets[i]) && targets[i] > 0, name, ": config ", i,
                      " has target ", targets[i], "; runtimes need finite targets > 0");
        SEGRANK_CHECK(std::isfinite(scores[i]), name, ": config ", i, " has a non-finite score");
        mean += std::log(targets[i]);
    }
    const auto c = static_cast<double>(targets.size());
    mean /= c;
    double var = 0;
    for (double t : targets) var += (std::log(t) - mean) * (std::log(t) - mean);
    const double sd = std::sqrt(var / c);
    std::vector<double> out(targets.size());
    for (size_t i = 0; i < targets.size(); ++i)
        out[i] = std::exp(mean + sd * static_cast<double>(scores[i]));
    return out;
}

CollectionMetrics aggregate_collection(const std::string& collection, Task task,
                                       std::span<const GraphMetrics> graphs) {
    SEGRANK_CHECK(!graphs.empty(), collection, ": no graphs to aggregate");
    CollectionMetrics cm;
    cm.collection = collection;
    cm.task = task;
    cm.num_graphs = static_cast<int64_t>(graphs.size());
    double tau_sum = 0, raw_sum = 0, opa_sum = 0, s1 = 0, s5 = 0, s10 = 0;
    int64_t informative = 0;
    for (const GraphMetrics& g : graphs) {
        s1 += g.slowdown_1;
        s5 += g.slowdown_5;
        s10 += g.slowdown_10;
        if (g.targets_constant || g.num_configs < 2) {
            ++cm.num_uninformative;
            continue;
        }
        ++informative;
        // Varying targets: NaN tau can only mean constant scores, which predict no order (only
        // possible for kendall_raw; positions are never constant).
        tau_sum += std::isnan(g.kendall_tau) ? 0.0 : g.kendall_tau;
        raw_sum += std::isnan(g.kendall_raw) ? 0.0 : g.kendall_raw;
        opa_sum += std::isnan(g.opa) ? 0.0 : g.opa;
    }
    const auto n = static_cast<double>(graphs.size());
    cm.kendall_tau = informative > 0 ? tau_sum / static_cast<double>(informative) : kNaN;
    cm.kendall_raw = informative > 0 ? raw_sum / static_cast<double>(informative) : kNaN;
    cm.opa = informative > 0 ? opa_sum / static_cast<double>(informative) : kNaN;
    cm.slowdown_1 = s1 / n;
    cm.slowdown_5 = s5 / n;
    cm.slowdown_10 = s10 / n;
    cm.score = task == Task::kTile ? 1.0 - cm.slowdown_5 : cm.kendall_tau;
    double mape_sum = 0, median_sum = 0;
    int64_t regressed = 0;
    for (const GraphMetrics& g : graphs) {
        if (std::isnan(g.mape)) continue;
        mape_sum += g.mape;
        median_sum += g.median_ape;
        ++regressed;
    }
    if (regressed > 0) {
        cm.mape = mape_sum / static_cast<double>(regressed);
        cm.median_ape = median_sum / static_cast<double>(regressed);
    }
    return cm;
}

double overall_score(std::span<const CollectionMetrics> collections) {
    SEGRANK_CHECK(!collections.empty(), "overall_score: no collections");
    double sum = 0;
    for (const CollectionMetrics& c : collections) sum += c.score;
    return sum / static_cast<double>(collections.size());
}

namespace {

// The identity keys, then the metric fields in visit_metric_fields order; the runtime regression
// keys exist only where it was computed (tile graphs, an mse term).
template <typename M>
Json metrics_json(Json j, const M& m) {
    const bool regression = !std::isnan(m.mape);
    visit_metric_fields(
        [&](const MetricField& f, const auto& value) {
            if (!f.regression_only || regression) j[f.key] = value;
        },
        m);
    return j;
}

}  // namespace

Json to_json(const GraphMetrics& m) { return metrics_json(Json{{"graph", m.name}}, m); }

Json to_json(const CollectionMetrics& m) {
    return metrics_json(
        Json{{"collection", m.collection}, {"task", m.task == Task::kTile ? "tile" : "layout"}}, m);
}

}  // namespace segrank
