// Element-wise and row-wise kernels; OpenMP over rows through parallel_for, bodies never throw.
#include "gnn/ops/pointwise.h"

#include <cmath>
#include <vector>

#include "gnn/core/parallel.h"
#include "gnn/core/rng.h"

namespace segrank {

namespace {
constexpr float kLeakySlope = 0.01f;  // torch default
constexpr float kInvSqrt2 = 0.70710678118654752f;
constexpr float kInvSqrt2Pi = 0.39894228040143268f;

void check_same(const char* op, ConstMatrixView a, ConstMatrixView b) {
    SEGRANK_CHECK(a.rows == b.rows && a.cols == b.cols, op, ": shapes [", a.rows, ",", a.cols, "] and [", b.rows,
                  ",", b.cols, "] differ");
}

inline float gelu(float x) { return 0.5f * x * (1.0f + std::erf(x * kInvSqrt2)); }
inline float gelu_grad(float x) {
    return 0.5f * (1.0f + std::erf(x * kInvSqrt2)) + x * kInvSqrt2Pi * std::exp(-0.5f * x * x);
}

inline bool keep(uint64_t seed, int64_t key, int64_t col, float p) {
    const uint64_t h = mix64(seed ^ mix64(static_cast<uint64_t>(key) * 0x9e3779b97f4a7c15ULL + static_cast<uint64_t>(col)));
    return static_cast<double>(h >> 11) * 0x1.0p-53 >= p;
}
}  // namespace

Activation parse_activation(std::string_view s) {
    if (s == "gelu") return Activation::kGelu;
    if (s == "relu") return Activation::kRelu;
    if (s == "leaky_relu") return Activation::kLeakyRelu;
    throw Error(str("unknown activation '", s, "': expected one of gelu, relu, leaky_relu"));
}

std::string_view activation_name(Activation a) {
    switch (a) {
        case Activation::kGelu: return "gelu";
        case Activation::kRelu: return "relu";
        case Activation::kLeakyRelu: return "leaky_relu";
    }
    return "?";
}

void activation_forward(MatrixView y, ConstMatrixView x, Activation act) {
    check_same("activation_forward", y, x);
    parallel_for(0, x.rows, 64, [&](int64_t r0, int64_t r1) {
        for (int64_t r = r0; r < r1; ++r) {
            const float* xi = x.row(r);
            float* yi = y.row(r);
            switch (act) {
                case Activation::kGelu:
                    for (int64_t c = 0; c < x.cols; ++c) yi[c] = gelu(xi[c]);
                    break;
                case Activation::kRelu:
                    for (int64_t c = 0; c < x.cols; ++c) yi[c] = xi[c] > 0.0f ? xi[c] : 0.0f;
                    break;
                case Activation::kLeakyRelu:
                    for (int64_t c = 0; c < x.cols; ++c) yi[c] = xi[c] > 0.0f ? xi[c] : kLeakySlope * xi[c];
                    break;
            }
        }
    });
}

void activation_backward(MatrixView dx, ConstMatrixView dy, ConstMatrixView x, Activation act) {
    check_same("activation_backward", dx, dy);
    check_same("activation_backward", dx, x);
    parallel_for(0, x.rows, 64, [&](int64_t r0, int64_t r1) {
        for (int64_t r = r0; r < r1; ++r) {
            const float* xi = x.row(r);
            const float* gi = dy.row(r);
            float* di = dx.row(r);
            switch (act) {
                case Activation::kGelu:
                    for (int64_t c = 0; c < x.cols; ++c) di[c] += gi[c] * gelu_grad(xi[c]);
                    break;
                case Activation::kRelu:
                    for (int64_t c = 0; c < x.cols; ++c) di[c] += xi[c] > 0.0f ? gi[c] : 0.0f;
                    break;
                case Activation::kLeakyRelu:
                    for (int64_t c = 0; c < x.cols; ++c) di[c] += xi[c] > 0.0f ? gi[c] : kLeakySlope * gi[c];
                    break;
            }
        }
    });
}

void dropout_forward(MatrixView y, ConstMatrixView x, float p, uint64_t seed, std::span<const int32_t> keys,
                     int64_t group) {
    check_same("dropout_forward", y, x);
    SEGRANK_CHECK(p >= 0.0f && p < 1.0f, "dropout: p = ", p, ", expected 0 <= p < 1");
    SEGRANK_CHECK(group >= 1 && (keys.empty() || static_cast<int64_t>(keys.size()) * group == x.rows),
                  "dropout: ", keys.size(), " keys x group ", group, " != ", x.rows, " rows");
    const float scale = 1.0f / (1.0f - p);
    parallel_for(0, x.rows, 64, [&](int64_t r0, int64_t r1) {
        for (int64_t r = r0; r < r1; ++r) {
            const int64_t key = keys.empty() ? r / group : keys[r / group];
            for (int64_t c = 0; c < x.cols; ++c)
                y.at(r, c) = keep(seed, key, c, p) ? x.at(r, c) * scale : 0.0f;
        }
    });
}

void dropout_backward(MatrixView dx, ConstMatrixView dy, float p, uint64_t seed, std::span<const int32_t> keys,
                      int64_t group) {
    check_same("dropout_backward", dx, dy);
    SEGRANK_CHECK(group >= 1 && (keys.empty() || static_cast<int64_t>(keys.size()) * group == dy.rows),
                  "dropout: ", keys.size(), " keys x group ", group, " != ", dy.rows, " rows");
    const float scale = 1.0f / (1.0f - p);
    parallel_for(0, dy.rows, 64, [&](int64_t r0, int64_t r1) {
        for (int64_t r = r0; r < r1; ++r) {
            const int64_t key = keys.empty() ? r / group : keys[r / group];
            for (int64_t c = 0; c < dy.cols; ++c)
                if (keep(seed, key, c, p)) dx.at(r, c) += dy.at(r, c) * scale;
        }
    });
}

void layernorm_forward(MatrixView y, MatrixView xhat, std::span<float> rstd, ConstMatrixView x,
                       const float* gamma, const float* beta) {
    check_same("layernorm_forward", y, x);
    const bool save = xhat.data != nullptr;
    if (save) {
        check_same("layernorm_forward", xhat, x);
        SEGRANK_CHECK(static_cast<int64_t>(rstd.size()) == x.rows, "layernorm_forward: rstd has ", rstd.size(),
                      " entries, expected ", x.rows);
    }
    const int64_t n = x.cols;
    parallel_for(0, x.rows, 64, [&](int64_t r0, int64_t r1) {
        for (int64_t r = r0; r < r1; ++r) {
            const float* xi = x.row(r);
            double mean = 0.0;
            for (int64_t c = 0; c < n; ++c) mean += xi[c];
            mean /= static_cast<double>(n);
            double var = 0.0;
            for (int64_t c = 0; c < n; ++c) {
                const double d = xi[c] - mean;
                var += d * d;
            }
            var /= static_cast<double>(n);
            const float rs = static_cast<float>(1.0 / std::sqrt(var + kLayerNormEps));
            const float m = static_cast<float>(mean);
            float* yi = y.row(r);
            if (save) {
                float* hi = xhat.row(r);
                for (int64_t c = 0; c < n; ++c) {
                    const float h = (xi[c] - m) * rs;
                    hi[c] = h;
                    yi[c] = gamma[c] * h + beta[c];
                }
                rstd[r] = rs;
            } else {
                for (int64_t c = 0; c < n; ++c) yi[c] = gamma[c] * ((xi[c] - m) * rs) + beta[c];
            }
        }
    });
}

void layernorm_backward(MatrixView dx, float* dgamma, float* dbeta, ConstMatrixView dy, ConstMatrixView xhat,
                        std::span<const float> rstd, const float* gamma) {
    check_same("layernorm_backward", dy, xhat);
    const int64_t n = dy.cols;
    if (dx.data) {
        check_same("layernorm_backward", dx, dy);
        parallel_for(0, dy.rows, 64, [&](int64_t r0, int64_t r1) {
            for (int64_t r = r0; r < r1; ++r) {
                const float* g = dy.row(r);
                const float* h = xhat.row(r);
                double sum_g = 0.0, sum_gh = 0.0;
                for (int64_t c = 0; c < n; ++c) {
                    const double gg = static_cast<double>(g[c]) * gamma[c];
                    sum_g += gg;
                    sum_gh += gg * h[c];
                }
                const float mg = static_cast<float>(sum_g / static_cast<double>(n));
                const float mgh = static_cast<float>(sum_gh / static_cast<double>(n));
                float* d = dx.row(r);
                for (int64_t c = 0; c < n; ++c) d[c] += rstd[r] * (g[c] * gamma[c] - mg - h[c] * mgh);
            }
        });
    }
    // Parameter gradients: serial over rows, contiguous inner loop (O(R C), cheap next to GEMMs).
    for (int64_t r = 0; r < dy.rows; ++r) {
        const float* g = dy.row(r);
        const float* h = xhat.row(r);
        for (int64_t c = 0; c < n; ++c) {
            dgamma[c] += g[c] * h[c];
            dbeta[c] += g[c];
        }
    }
}

void add_inplace(MatrixView y, ConstMatrixView x) {
    check_same("add_inplace", y, x);
    parallel_for(0, x.rows, 256, [&](int64_t r0, int64_t r1) {
        for (int64_t r = r0; r < r1; ++r) {
            float* yi = y.row(r);
            const float* xi = x.row(r);
            for (int64_t c = 0; c < x.cols; ++c) yi[c] += xi[c];
        }
    });
}

}  // namespace segrank
