// Graph instance normalization kernels.
#include "gnn/ops/instance_norm.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace segrank {

namespace {
void check_groups(const char* what, int64_t rows, int64_t cols, int64_t groups, size_t stats) {
    SEGRANK_CHECK(groups >= 1 && rows >= groups && rows % groups == 0 &&
                      stats >= static_cast<size_t>(groups * cols),
                  what, ": ", rows, " rows in ", groups, " groups, ", stats, " statistics for ",
                  cols, " columns");
}

// Dropout when p > 0: y *= mask / (1 - p), in place.
void apply_dropout(MatrixView y, float p, uint64_t seed, std::span<const int32_t> keys,
                   int64_t group) {
    if (p > 0.0f) dropout_forward(y, y, p, seed, keys, group);
}
}  // namespace

void instance_norm_stats(ConstMatrixView z, int64_t groups, std::span<float> mu,
                         std::span<float> rstd) {
    const int64_t rows = z.rows, cols = z.cols;
    check_groups("instance_norm_stats", rows, cols, groups, std::min(mu.size(), rstd.size()));
    const int64_t per = rows / groups;
    std::vector<double> s(static_cast<size_t>(groups * cols), 0.0);
    for (int64_t r = 0; r < rows; ++r) {
        double* sg = s.data() + (r % groups) * cols;
        for (int64_t c = 0; c < cols; ++c) sg[c] += z.at(r, c);
    }
    for (int64_t i = 0; i < groups * cols; ++i) mu[i] = static_cast<float>(s[i] / per);
    std::fill(s.begin(), s.end(), 0.0);
    for (int64_t r = 0; r < rows; ++r) {
        const int64_t g = r % groups;
        double* sg = s.data() + g * cols;
        for (int64_t c = 0; c < cols; ++c) {
            const double d = static_cast<double>(z.at(r, c)) - mu[g * cols + c];
            sg[c] += d * d;
        }
    }
    for (int64_t i = 0; i < groups * cols; ++i)
        rstd[i] = static_cast<float>(1.0 / std::sqrt(s[i] / per + kLayerNormEps));
}

void instance_norm_act_residual_forward(MatrixView z, MatrixView xhat, ConstMatrixView self,
                                        std::span<const float> mu, std::span<const float> rstd,
                                        int64_t groups, const float* gamma, const float* beta,
                                        Activation act, float drop_p, uint64_t drop_seed,
                                        std::span<const int32_t> drop_keys, int64_t drop_group) {
    const int64_t rows = z.rows, cols = z.cols;
    if (rows == 0) return;
    check_groups("instance_norm_act_residual_forward", rows, cols, groups,
                 std::min(mu.size(), rstd.size()));
    SEGRANK_CHECK(self.rows == rows && self.cols == cols &&
                      (!xhat.data || (xhat.rows == rows && xhat.cols == cols)),
                  "instance_norm_act_residual_forward: shapes differ");
    for (int64_t r = 0; r < rows; ++r) {
        const int64_t g = r % groups;
        float* zr = z.row(r);
        for (int64_t c = 0; c < cols; ++c) {
            const float xh = (zr[c] - mu[g * cols + c]) * rstd[g * cols + c];
            if (xhat.data) xhat.at(r, c) = xh;
            zr[c] = gamma[c] * xh + beta[c];
        }
    }
    activation_forward(z, z, act);
    apply_dropout(z, drop_p, drop_seed, drop_keys, drop_group);
    add_inplace(z, self);
}

void instance_norm_act_backward(MatrixView dz, float* dgamma, float* dbeta, std::span<float> s1,
                                std::span<float> s2, ConstMatrixView g, ConstMatrixView xhat,
                                std::span<const float> rstd, int64_t groups, const float* gamma,
                                const float* beta, Activation act, float drop_p, uint64_t drop_seed,
                                std::span<const int32_t> drop_keys, int64_t drop_group) {
    const int64_t rows = g.rows, cols = g.cols;
    if (rows == 0) return;
    check_groups("instance_norm_act_backward", rows, cols, groups,
                 std::min({rstd.size(), s1.size(), s2.size()}));
    SEGRANK_CHECK(xhat.rows == rows && xhat.cols == cols && dz.rows == rows && dz.cols == cols,
                  "instance_norm_act_backward: shapes differ");
    Tensor y = Tensor::uninit(rows, cols), dy(rows, cols);  // activation_backward adds
    for (int64_t r = 0; r < rows; ++r)
        for (int64_t c = 0; c < cols; ++c) y.at(r, c) = gamma[c] * xhat.at(r, c) + beta[c];
    ConstMatrixView ga = g;
    Tensor gd;
    if (drop_p > 0.0f) {
        gd = Tensor(rows, cols);  // dropout_backward adds
        dropout_backward(gd.view(), g, drop_p, drop_seed, drop_keys, drop_group);
        ga = gd.cview();
    }
    activation_backward(dy.view(), ga, y.cview(), act);
    for (int64_t r = 0; r < rows; ++r) {
        const int64_t gr = r % groups;
        for (int64_t c = 0; c < cols; ++c) {
            const float d = dy.at(r, c), xh = xhat.at(r, c);
            dgamma[c] += d * xh;
            dbeta[c] += d;
            const float a = d * gamma[c];
            s1[gr * cols + c] += a;
            s2[gr * cols + c] += a * xh;
            dz.at(r, c) = a * rstd[gr * cols + c];
        }
    }
}

void instance_norm_stats_backward(MatrixView dz, ConstMatrixView xhat, std::span<const float> rstd,
                                  std::span<const float> s1, std::span<const float> s2,
                                  int64_t groups) {
    const int64_t rows = dz.rows, cols = dz.cols;
    if (rows == 0) return;
    check_groups("instance_norm_stats_backward", rows, cols, groups,
                 std::min({rstd.size(), s1.size(), s2.size()}));
    SEGRANK_CHECK(xhat.rows == rows && xhat.cols == cols,
                  "instance_norm_stats_backward: shapes differ");
    const float inv = 1.0f / static_cast<float>(rows / groups);
    for (int64_t r = 0; r < rows; ++r) {
        const int64_t g = r % groups;
        for (int64_t c = 0; c < cols; ++c) {
            const int64_t i = g * cols + c;
            dz.at(r, c) -= rstd[i] * inv * (s1[i] + s2[i] * xhat.at(r, c));
        }
    }
}

}  // namespace segrank
