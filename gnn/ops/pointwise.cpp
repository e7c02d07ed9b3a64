// Element-wise and row-wise kernels; OpenMP over rows through parallel_for, bodies never throw.
#include "gnn/ops/pointwise.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "gnn/core/op_timer.h"
#include "gnn/core/parallel.h"
#include "gnn/core/rng.h"
#include "gnn/ops/block_partials.h"

namespace segrank {

namespace {
constexpr float kLeakySlope = 0.01f;  // torch default
constexpr float kInvSqrt2 = 0.70710678118654752f;
constexpr float kInvSqrt2Pi = 0.39894228040143268f;

void check_same(const char* op, ConstMatrixView a, ConstMatrixView b) {
    SEGRANK_CHECK(a.rows == b.rows && a.cols == b.cols, op, ": shapes [", a.rows, ",", a.cols,
                  "] and [", b.rows, ",", b.cols, "] differ");
}

// GELU in its erf form (docs/model.md#sage-layers), written so the compiler vectorizes it:
// std::erf/std::exp are scalar libm calls and made GELU the largest non-GEMM cost of a step. erf
// uses Abramowitz & Stegun
// 7.1.26 (|error| <= 1.5e-7) and shares exp(-x^2/2) with the derivative's density term; exp is a
// Cody-Waite range reduction with a degree-7 Taylor polynomial (relative error ~1e-7 in float).
// tests/gnn/ops_test.cpp checks both against the libm erf form to 1e-6.
inline float fast_exp(float x) {
    x = std::min(std::max(x, -87.0f), 88.0f);
    // Round to nearest with the 1.5 * 2^23 trick (plain adds: vectorizes without SSE4.1 rounding).
    const float n = (x * 1.44269504088896341f + 12582912.0f) - 12582912.0f;
    const float r = (x - n * 0.693145751953125f) - n * 1.42860682030941723e-6f;
    float p = 1.0f / 5040.0f;
    p = p * r + 1.0f / 720.0f;
    p = p * r + 1.0f / 120.0f;
    p = p * r + 1.0f / 24.0f;
    p = p * r + 1.0f / 6.0f;
    p = p * r + 0.5f;
    p = p * r + 1.0f;
    p = p * r + 1.0f;
    const int32_t bits = (static_cast<int32_t>(n) + 127) << 23;
    float scale;
    std::memcpy(&scale, &bits, sizeof scale);
    return p * scale;
}

/// Phi(x) = 0.5 (1 + erf(x / sqrt 2)) given e = exp(-x^2 / 2).
inline float normal_cdf(float x, float e) {
    const float u = std::fabs(x) * kInvSqrt2;
    const float t = 1.0f / (1.0f + 0.3275911f * u);
    const float poly =
        t * (0.254829592f +
             t * (-0.284496736f + t * (1.421413741f + t * (-1.453152027f + t * 1.061405429f))));
    const float erf_abs = 1.0f - poly * e;  // erf(|x| / sqrt 2), since exp(-u^2) = e
    return 0.5f + 0.5f * (x < 0.0f ? -erf_abs : erf_abs);
}
inline float gelu(float x) { return x * normal_cdf(x, fast_exp(-0.5f * x * x)); }
inline float gelu_grad(float x) {
    const float e = fast_exp(-0.5f * x * x);
    return normal_cdf(x, e) + x * kInvSqrt2Pi * e;
}

inline bool keep(uint64_t seed, int64_t key, int64_t col, float p) {
    const uint64_t h = mix64(seed ^ mix64(static_cast<uint64_t>(key) * 0x9e3779b97f4a7c15ULL +
                                          static_cast<uint64_t>(col)));
    return static_cast<double>(h >> 11) * 0x1.0p-53 >= p;
}
// Rows [r0, r1) of layernorm_act_residual_forward; cloned for AVX-512 / AVX2 (the library is built
// for baseline x86-64, and these loops are the largest non-GEMM cost of a step).
SEGRANK_SIMD_CLONES
void lnact_forward_rows(MatrixView z, MatrixView xhat, std::span<float> rstd, ConstMatrixView self,
                        const float* gamma, const float* beta, Activation act, int64_t r0,
                        int64_t r1, float* hrow) {
    const bool save = xhat.data != nullptr;
    const int64_t n = z.cols;
    for (int64_t r = r0; r < r1; ++r) {
        float* zi = z.row(r);
        const float* si = self.row(r);
        float mean = 0.0f;
#pragma omp simd reduction(+ : mean)
        for (int64_t c = 0; c < n; ++c) mean += zi[c];
        mean /= static_cast<float>(n);
        float var = 0.0f;
#pragma omp simd reduction(+ : var)
        for (int64_t c = 0; c < n; ++c) var += (zi[c] - mean) * (zi[c] - mean);
        var /= static_cast<float>(n);
        const float rs = 1.0f / std::sqrt(var + kLayerNormEps);
        float* hi = save ? xhat.row(r) : hrow;
        for (int64_t c = 0; c < n; ++c) hi[c] = (zi[c] - mean) * rs;
        if (save) rstd[r] = rs;
        switch (act) {
            case Activation::kGelu:
#pragma omp simd
                for (int64_t c = 0; c < n; ++c) zi[c] = si[c] + gelu(gamma[c] * hi[c] + beta[c]);
                break;
            case Activation::kRelu:
                for (int64_t c = 0; c < n; ++c)
                    zi[c] = si[c] + std::max(gamma[c] * hi[c] + beta[c], 0.0f);
                break;
            case Activation::kLeakyRelu:
                for (int64_t c = 0; c < n; ++c) {
                    const float y = gamma[c] * hi[c] + beta[c];
                    zi[c] = si[c] + (y > 0.0f ? y : kLeakySlope * y);
                }
                break;
        }
    }
}

// Rows [r0, r1) of layernorm_act_backward, accumulating [dgamma | dbeta | dbias] partials into acc
// [3C].
SEGRANK_SIMD_CLONES
void lnact_backward_rows(MatrixView dz, ConstMatrixView g, ConstMatrixView xhat,
                         std::span<const float> rstd, const float* gamma, const float* beta,
                         Activation act, int64_t r0, int64_t r1, float* dy, float* acc) {
    const int64_t n = g.cols;
    for (int64_t r = r0; r < r1; ++r) {
        const float* gi = g.row(r);
        const float* h = xhat.row(r);
        switch (act) {
            case Activation::kGelu:
#pragma omp simd
                for (int64_t c = 0; c < n; ++c)
                    dy[c] = gi[c] * gelu_grad(gamma[c] * h[c] + beta[c]);
                break;
            case Activation::kRelu:
                for (int64_t c = 0; c < n; ++c)
                    dy[c] = gamma[c] * h[c] + beta[c] > 0.0f ? gi[c] : 0.0f;
                break;
            case Activation::kLeakyRelu:
                for (int64_t c = 0; c < n; ++c)
                    dy[c] = gamma[c] * h[c] + beta[c] > 0.0f ? gi[c] : kLeakySlope * gi[c];
                break;
        }
        float sum_g = 0.0f, sum_gh = 0.0f;
#pragma omp simd reduction(+ : sum_g, sum_gh)
        for (int64_t c = 0; c < n; ++c) {
            const float gg = dy[c] * gamma[c];
            sum_g += gg;
            sum_gh += gg * h[c];
            acc[c] += dy[c] * h[c];
            acc[n + c] += dy[c];
        }
        const float mg = sum_g / static_cast<float>(n), mgh = sum_gh / static_cast<float>(n);
        float* d = dz.row(r);  // may alias g: gi is no longer read
        for (int64_t c = 0; c < n; ++c) {
            d[c] = rstd[r] * (dy[c] * gamma[c] - mg - h[c] * mgh);
            acc[2 * n + c] += d[c];
        }
    }
}

// GELU rows for activation_forward / activation_backward (dx += dy * gelu'(x)).
SEGRANK_SIMD_CLONES
void gelu_rows(MatrixView y, ConstMatrixView x, int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
        const float* xi = x.row(r);
        float* yi = y.row(r);
#pragma omp simd
        for (int64_t c = 0; c < x.cols; ++c) yi[c] = gelu(xi[c]);
    }
}
SEGRANK_SIMD_CLONES
void gelu_grad_rows(MatrixView dx, ConstMatrixView dy, ConstMatrixView x, int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
        const float* xi = x.row(r);
        const float* gi = dy.row(r);
        float* di = dx.row(r);
#pragma omp simd
        for (int64_t c = 0; c < x.cols; ++c) di[c] += gi[c] * gelu_grad(xi[c]);
    }
}

constexpr EnumName<Activation> kActivationNames[] = {{Activation::kGelu, "gelu"},
                                                     {Activation::kRelu, "relu"},
                                                     {Activation::kLeakyRelu, "leaky_relu"}};

}  // namespace

std::span<const EnumName<Activation>> enum_names(Activation) { return kActivationNames; }
Activation parse_activation(std::string_view s) { return parse_enum<Activation>("activation", s); }
std::string_view to_string(Activation a) { return enum_name(a); }

void activation_forward(MatrixView y, ConstMatrixView x, Activation act) {
    const OpScope op_scope(OpCategory::kPointwise);
    check_same("activation_forward", y, x);
    if (act == Activation::kGelu) {
        parallel_for(0, x.rows, 64, [&](int64_t r0, int64_t r1) { gelu_rows(y, x, r0, r1); });
        return;
    }
    parallel_for(0, x.rows, 64, [&](int64_t r0, int64_t r1) {
        for (int64_t r = r0; r < r1; ++r) {
            const float* xi = x.row(r);
            float* yi = y.row(r);
            switch (act) {
                case Activation::kGelu:
#pragma omp simd
                    for (int64_t c = 0; c < x.cols; ++c) yi[c] = gelu(xi[c]);
                    break;
                case Activation::kRelu:
                    for (int64_t c = 0; c < x.cols; ++c) yi[c] = xi[c] > 0.0f ? xi[c] : 0.0f;
                    break;
                case Activation::kLeakyRelu:
                    for (int64_t c = 0; c < x.cols; ++c)
                        yi[c] = xi[c] > 0.0f ? xi[c] : kLeakySlope * xi[c];
                    break;
            }
        }
    });
}

void activation_backward(MatrixView dx, ConstMatrixView dy, ConstMatrixView x, Activation act) {
    const OpScope op_scope(OpCategory::kPointwise);
    check_same("activation_backward", dx, dy);
    check_same("activation_backward", dx, x);
    if (act == Activation::kGelu) {
        parallel_for(0, x.rows, 64,
                     [&](int64_t r0, int64_t r1) { gelu_grad_rows(dx, dy, x, r0, r1); });
        return;
    }
    parallel_for(0, x.rows, 64, [&](int64_t r0, int64_t r1) {
        for (int64_t r = r0; r < r1; ++r) {
            const float* xi = x.row(r);
            const float* gi = dy.row(r);
            float* di = dx.row(r);
            switch (act) {
                case Activation::kGelu:
#pragma omp simd
                    for (int64_t c = 0; c < x.cols; ++c) di[c] += gi[c] * gelu_grad(xi[c]);
                    break;
                case Activation::kRelu:
                    for (int64_t c = 0; c < x.cols; ++c) di[c] += xi[c] > 0.0f ? gi[c] : 0.0f;
                    break;
                case Activation::kLeakyRelu:
                    for (int64_t c = 0; c < x.cols; ++c)
                        di[c] += xi[c] > 0.0f ? gi[c] : kLeakySlope * gi[c];
                    break;
            }
        }
    });
}

void dropout_forward(MatrixView y, ConstMatrixView x, float p, uint64_t seed,
                     std::span<const int32_t> keys, int64_t group) {
    const OpScope op_scope(OpCategory::kPointwise);
    check_same("dropout_forward", y, x);
    SEGRANK_CHECK(p >= 0.0f && p < 1.0f, "dropout: p = ", p, ", expected 0 <= p < 1");
    SEGRANK_CHECK(
        group >= 1 && (keys.empty() || static_cast<int64_t>(keys.size()) * group == x.rows),
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

void dropout_backward(MatrixView dx, ConstMatrixView dy, float p, uint64_t seed,
                      std::span<const int32_t> keys, int64_t group) {
    const OpScope op_scope(OpCategory::kPointwise);
    check_same("dropout_backward", dx, dy);
    SEGRANK_CHECK(
        group >= 1 && (keys.empty() || static_cast<int64_t>(keys.size()) * group == dy.rows),
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
    const OpScope op_scope(OpCategory::kPointwise);
    check_same("layernorm_forward", y, x);
    const bool save = xhat.data != nullptr;
    if (save) {
        check_same("layernorm_forward", xhat, x);
        SEGRANK_CHECK(static_cast<int64_t>(rstd.size()) == x.rows, "layernorm_forward: rstd has ",
                      rstd.size(), " entries, expected ", x.rows);
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

void layernorm_backward(MatrixView dx, float* dgamma, float* dbeta, ConstMatrixView dy,
                        ConstMatrixView xhat, std::span<const float> rstd, const float* gamma) {
    const OpScope op_scope(OpCategory::kPointwise);
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
                for (int64_t c = 0; c < n; ++c)
                    d[c] += rstd[r] * (g[c] * gamma[c] - mg - h[c] * mgh);
            }
        });
    }
    // Parameter gradients: per-block partial sums, reduced in block order (thread-count
    // independent).
    BlockPartials part(dy.rows, 2 * n);
    parallel_for(0, part.blocks(), 1, [&](int64_t b0, int64_t b1) {
        for (int64_t b = b0; b < b1; ++b) {
            float* acc = part.block(b);
            for (int64_t r = part.begin(b); r < part.end(b); ++r) {
                const float* g = dy.row(r);
                const float* h = xhat.row(r);
                for (int64_t c = 0; c < n; ++c) {
                    acc[c] += g[c] * h[c];
                    acc[n + c] += g[c];
                }
            }
        }
    });
    part.reduce_into(0, n, dgamma);
    part.reduce_into(n, n, dbeta);
}

void layernorm_act_residual_forward(MatrixView z, MatrixView xhat, std::span<float> rstd,
                                    ConstMatrixView self, const float* gamma, const float* beta,
                                    Activation act) {
    const OpScope op_scope(OpCategory::kPointwise);
    check_same("layernorm_act_residual_forward", z, self);
    const bool save = xhat.data != nullptr;
    if (save) {
        check_same("layernorm_act_residual_forward", xhat, z);
        SEGRANK_CHECK(static_cast<int64_t>(rstd.size()) == z.rows,
                      "layernorm_act_residual_forward: rstd has ", rstd.size(),
                      " entries, expected ", z.rows);
    }
    const int64_t n = z.cols;
    parallel_for(0, z.rows, 64, [&](int64_t r0, int64_t r1) {
        std::vector<float> hrow(static_cast<size_t>(n));
        lnact_forward_rows(z, xhat, rstd, self, gamma, beta, act, r0, r1, hrow.data());
    });
}

void layernorm_act_residual_rows(MatrixView z, MatrixView xhat, std::span<float> rstd,
                                 ConstMatrixView self, const float* gamma, const float* beta,
                                 Activation act, float* hrow) {
    lnact_forward_rows(z, xhat, rstd, self, gamma, beta, act, 0, z.rows, hrow);
}

void layernorm_act_backward_rows(MatrixView dz, ConstMatrixView g, ConstMatrixView xhat,
                                 std::span<const float> rstd, const float* gamma, const float* beta,
                                 Activation act, int64_t r0, int64_t r1, float* dy, float* acc) {
    lnact_backward_rows(dz, g, xhat, rstd, gamma, beta, act, r0, r1, dy, acc);
}

void layernorm_act_backward(MatrixView dz, float* dgamma, float* dbeta, float* dbias,
                            ConstMatrixView g, ConstMatrixView xhat, std::span<const float> rstd,
                            const float* gamma, const float* beta, Activation act) {
    const OpScope op_scope(OpCategory::kPointwise);
    check_same("layernorm_act_backward", dz, g);
    check_same("layernorm_act_backward", xhat, g);
    SEGRANK_CHECK(static_cast<int64_t>(rstd.size()) == g.rows, "layernorm_act_backward: rstd has ",
                  rstd.size(), " entries, expected ", g.rows);
    const int64_t n = g.cols;
    BlockPartials part(g.rows, 3 * n);
    parallel_for(0, part.blocks(), 1, [&](int64_t b0, int64_t b1) {
        std::vector<float> dy(static_cast<size_t>(n));
        for (int64_t b = b0; b < b1; ++b)
            lnact_backward_rows(dz, g, xhat, rstd, gamma, beta, act, part.begin(b), part.end(b),
                                dy.data(), part.block(b));
    });
    part.reduce_into(0, n, dgamma);
    part.reduce_into(n, n, dbeta);
    if (dbias) part.reduce_into(2 * n, n, dbias);
}

void add_inplace(MatrixView y, ConstMatrixView x) {
    const OpScope op_scope(OpCategory::kPointwise);
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
