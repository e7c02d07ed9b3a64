// Node-feature normalizer (docs/model.md#node-features-and-the-normalizer): fit over the train
// split, apply, rebuild from vectors.
#include "data/normalizer.h"

#include <cmath>
#include <limits>

#include "gnn/core/check.h"
#include "gnn/core/parallel.h"

namespace segrank {

double signed_log(double x) { return std::copysign(std::log1p(std::fabs(x)), x); }

Normalizer Normalizer::from_vectors(int64_t input_dim, std::vector<int32_t> kept_columns,
                                    std::vector<double> means, std::vector<double> stds,
                                    const std::string& where) {
    SEGRANK_CHECK(input_dim > 0, where, ": normalizer input_dim must be > 0, got ", input_dim);
    SEGRANK_CHECK(means.size() == kept_columns.size() && stds.size() == kept_columns.size(), where,
                  ": normalizer has ", kept_columns.size(), " kept columns but ", means.size(),
                  " means and ", stds.size(), " stds");
    for (size_t i = 0; i < kept_columns.size(); ++i) {
        SEGRANK_CHECK(kept_columns[i] >= 0 && kept_columns[i] < input_dim, where,
                      ": normalizer kept_columns[", i, "] = ", kept_columns[i],
                      ", expected in [0, ", input_dim, ")");
        SEGRANK_CHECK(i == 0 || kept_columns[i] > kept_columns[i - 1], where,
                      ": normalizer kept_columns must be strictly increasing (index ", i, ")");
        SEGRANK_CHECK(std::isfinite(means[i]), where, ": normalizer means[", i, "] = ", means[i],
                      ", expected finite");
        SEGRANK_CHECK(std::isfinite(stds[i]) && stds[i] > 0, where, ": normalizer stds[", i,
                      "] = ", stds[i], ", expected finite and > 0");
    }
    Normalizer n;
    n.input_dim_ = input_dim;
    n.kept_columns_ = std::move(kept_columns);
    n.means_ = std::move(means);
    n.stds_ = std::move(stds);
    return n;
}

Tensor Normalizer::apply(ConstMatrixView node_feat, const std::string& where) const {
    SEGRANK_CHECK(input_dim_ > 0, where, ": normalizer used before it was fitted or loaded");
    SEGRANK_CHECK(node_feat.cols == input_dim_, where, ": node_feat has ", node_feat.cols,
                  " columns, the normalizer expects ", input_dim_);
    const int64_t out_dim = output_dim();
    Tensor out(node_feat.rows, out_dim);
    std::vector<double> inv_std(stds_.size());
    for (size_t j = 0; j < stds_.size(); ++j) inv_std[j] = 1.0 / stds_[j];
    float* dst = out.data();
    parallel_for(0, node_feat.rows, /*grain=*/512, [&](int64_t begin, int64_t end) {
        for (int64_t r = begin; r < end; ++r) {
            const float* src = node_feat.row(r);
            float* o = dst + r * out_dim;
            for (int64_t j = 0; j < out_dim; ++j) {
                const double x = signed_log(static_cast<double>(src[kept_columns_[j]]));
                o[j] = static_cast<float>((x - means_[j]) * inv_std[j]);
            }
        }
    });
    return out;
}

NormalizerFitter::NormalizerFitter(int64_t input_dim)
    : input_dim_(input_dim),
      min_(static_cast<size_t>(input_dim), std::numeric_limits<double>::infinity()),
      max_(static_cast<size_t>(input_dim), -std::numeric_limits<double>::infinity()),
      mean_(static_cast<size_t>(input_dim), 0.0),
      m2_(static_cast<size_t>(input_dim), 0.0) {
    SEGRANK_CHECK(input_dim > 0, "normalizer: input_dim must be > 0, got ", input_dim);
}

void NormalizerFitter::add(ConstMatrixView node_feat, const std::string& where) {
    SEGRANK_CHECK(node_feat.cols == input_dim_, where, ": node_feat has ", node_feat.cols,
                  " columns, expected ", input_dim_);
    const int64_t n = node_feat.rows;
    if (n == 0) return;
    for (int64_t r = 0; r < n; ++r) {
        const float* row = node_feat.row(r);
        for (int64_t c = 0; c < input_dim_; ++c)
            SEGRANK_CHECK(std::isfinite(row[c]), where, ": node_feat[", r, ", ", c, "] = ", row[c],
                          ", expected finite");
    }
    // Per column: this graph's mean and M2 (two passes, exact in double), then Chan's merge.
    const auto nb = static_cast<double>(n);
    const auto na = static_cast<double>(rows_);
    for (int64_t c = 0; c < input_dim_; ++c) {
        double lo = min_[c], hi = max_[c];
        double sum = 0.0;
        for (int64_t r = 0; r < n; ++r) {
            const double v = node_feat.at(r, c);
            lo = std::min(lo, v);
            hi = std::max(hi, v);
            sum += signed_log(v);
        }
        const double mean_b = sum / nb;
        double m2_b = 0.0;
        for (int64_t r = 0; r < n; ++r) {
            const double d = signed_log(node_feat.at(r, c)) - mean_b;
            m2_b += d * d;
        }
        const double delta = mean_b - mean_[c];
        const double total = na + nb;
        mean_[c] += delta * nb / total;
        m2_[c] += m2_b + delta * delta * na * nb / total;
        min_[c] = lo;
        max_[c] = hi;
    }
    rows_ += n;
}

Normalizer NormalizerFitter::finish() const {
    SEGRANK_CHECK(rows_ > 0, "normalizer: no training nodes to fit on (empty train split?)");
    std::vector<int32_t> kept;
    std::vector<double> means, stds;
    for (int64_t c = 0; c < input_dim_; ++c) {
        const double sd = std::sqrt(m2_[c] / static_cast<double>(rows_));
        if (max_[c] > min_[c] && sd > 0 && std::isfinite(sd)) {
            kept.push_back(static_cast<int32_t>(c));
            means.push_back(mean_[c]);
            stds.push_back(sd);
        }
    }
    return Normalizer::from_vectors(input_dim_, std::move(kept), std::move(means), std::move(stds),
                                    "normalizer fit");
}

}  // namespace segrank
