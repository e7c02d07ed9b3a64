// Cross-config attention: the projections and W_o through matmul over all rows, the per-node
// K x K softmax in a parallel loop.
#include "gnn/layers/config_attention.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "gnn/core/parallel.h"
#include "gnn/ops/matmul.h"

namespace segrank {

namespace {

// y[0..n) += a x[0..n) (y and x do not overlap).
inline void axpy(float* __restrict y, const float* __restrict x, float a, int64_t n) {
    for (int64_t i = 0; i < n; ++i) y[i] += a * x[i];
}

// Transposes the rows of a [k, d] block, each minus row 0, into t [d, k]. Products with these
// differences give the scores and their adjoints relative to config 0 (the softmax does not see a
// shift): accurate when a node's rows are nearly equal, exactly 0 when they are equal (a node's K
// equal rows on the naive path then get the base row's result and no q / key gradient).
inline void transpose_differences(const float* __restrict a, int64_t k, int64_t d,
                                  float* __restrict t) {
    for (int64_t r = 0; r < k; ++r)
        for (int64_t j = 0; j < d; ++j) t[j * k + r] = a[r * d + j] - a[j];
}

// One node's attention: q, key, val [k, d] -> p [k, k] softmax weights and c [k, d] = p val.
// kt: [d, k] scratch. The scores are q . (key_b - key_0) / sqrt(d).
SEGRANK_SIMD_CLONES
void attend_node(const float* __restrict q, const float* __restrict key,
                 const float* __restrict val, float* __restrict p, float* __restrict c, int64_t k,
                 int64_t d, float scale, float* __restrict kt) {
    transpose_differences(key, k, d, kt);
    std::fill(c, c + k * d, 0.0f);
    for (int64_t a = 0; a < k; ++a) {
        float* s = p + a * k;
        std::fill(s, s + k, 0.0f);
        for (int64_t j = 0; j < d; ++j) axpy(s, kt + j * k, q[a * d + j] * scale, k);
        const float mx = *std::max_element(s, s + k);
        float sum = 0.0f;
        for (int64_t b = 0; b < k; ++b) {
            s[b] = std::exp(s[b] - mx);
            sum += s[b];
        }
        const float inv = 1.0f / sum;
        for (int64_t b = 0; b < k; ++b) s[b] *= inv;
        for (int64_t b = 0; b < k; ++b) axpy(c + a * d, val + b * d, s[b], d);
    }
}

// Adjoint of attend_node: from dc [k, d] writes dq, dkey, dval [k, d]. vt: [d, k], ds: [k]
// scratch. dkey gets no term through key_0's shift: the softmax is invariant to it.
SEGRANK_SIMD_CLONES
void attend_node_backward(const float* __restrict q, const float* __restrict key,
                          const float* __restrict val, const float* __restrict p,
                          const float* __restrict dc, float* __restrict dq, float* __restrict dkey,
                          float* __restrict dval, int64_t k, int64_t d, float scale,
                          float* __restrict vt, float* __restrict ds) {
    transpose_differences(val, k, d, vt);
    std::fill(dq, dq + k * d, 0.0f);
    std::fill(dkey, dkey + k * d, 0.0f);
    std::fill(dval, dval + k * d, 0.0f);
    for (int64_t a = 0; a < k; ++a) {
        const float* pa = p + a * k;
        const float* dca = dc + a * d;
        // ds[b] = dc_a . (val_b - val_0): dL/dp_ab up to a constant, which the softmax cancels.
        std::fill(ds, ds + k, 0.0f);
        for (int64_t j = 0; j < d; ++j) axpy(ds, vt + j * k, dca[j], k);
        float r = 0.0f;
        for (int64_t b = 0; b < k; ++b) r += pa[b] * ds[b];
        for (int64_t b = 0; b < k; ++b)
            ds[b] = pa[b] * (ds[b] - r) * scale;  // dL/dscore, times the scale
        for (int64_t b = 0; b < k; ++b) {
            axpy(dq + a * d, key + b * d, ds[b], d);
            axpy(dkey + b * d, q + a * d, ds[b], d);
            axpy(dval + b * d, dca, pa[b], d);
        }
    }
}

void check_rows(const ConfigAttention& a, ConstMatrixView rows, int64_t k) {
    SEGRANK_CHECK(k >= 1 && rows.cols == a.hidden && rows.rows % k == 0 && rows.contiguous(),
                  "ConfigAttention: rows [", rows.rows, ", ", rows.cols,
                  "] must be contiguous [m*K, ", a.hidden, "] with K = ", k, " >= 1");
}

// Per-node loops: about this many nodes per chunk.
int64_t node_grain(int64_t k, int64_t d) { return std::max<int64_t>(1, 65536 / (k * k * d + 1)); }

}  // namespace

ConfigAttention ConfigAttention::create(ParamStore& store, const std::string& name, int64_t hidden,
                                        int64_t dim) {
    ConfigAttention a;
    a.hidden = hidden;
    a.dim = dim;
    a.w_q = store.add(name + ".w_q", dim, hidden, true, ParamInit::kUniformFanIn, hidden);
    a.w_k = store.add(name + ".w_k", dim, hidden, true, ParamInit::kUniformFanIn, hidden);
    a.w_v = store.add(name + ".w_v", dim, hidden, true, ParamInit::kUniformFanIn, hidden);
    a.w_o = store.add(name + ".w_o", hidden, dim, true, ParamInit::kZeros);
    return a;
}

void ConfigAttention::forward(const ParamStore& store, MatrixView rows, int64_t k,
                              Saved* saved) const {
    check_rows(*this, rows, k);
    const int64_t r = rows.rows, d = dim, m = r / k;
    if (r == 0) return;
    const ConstMatrixView x{rows.data, r, rows.cols, rows.stride};
    Tensor q = Tensor::uninit(r, d), key = Tensor::uninit(r, d), val = Tensor::uninit(r, d);
    linear_forward(q.view(), x, store.value(w_q), nullptr);
    linear_forward(key.view(), x, store.value(w_k), nullptr);
    linear_forward(val.view(), x, store.value(w_v), nullptr);
    // The weights are kept only for the backward; inference uses one node's [K, K] at a time.
    Tensor probs = saved ? Tensor::uninit(r, k) : Tensor(), ctx = Tensor::uninit(r, d);
    const float scale = 1.0f / std::sqrt(static_cast<float>(d));
    parallel_for(0, m, node_grain(k, d), [&](int64_t b, int64_t e) {
        std::vector<float> kt(static_cast<size_t>(k * d)),
            p1(saved ? 0 : static_cast<size_t>(k * k));
        for (int64_t i = b; i < e; ++i) {
            const int64_t o = i * k * d;
            float* p = saved ? probs.data() + i * k * k : p1.data();
            attend_node(q.data() + o, key.data() + o, val.data() + o, p, ctx.data() + o, k, d,
                        scale, kt.data());
        }
    });
    if (saved) {
        saved->x = Tensor::uninit(r, hidden);
        std::memcpy(saved->x.data(), rows.data, sizeof(float) * static_cast<size_t>(r * hidden));
    }
    linear_forward(rows, ctx.cview(), store.value(w_o), nullptr, true);
    if (saved) {
        saved->probs = std::move(probs);
        saved->ctx = std::move(ctx);
        saved->k = k;
    }
}

void ConfigAttention::backward(ParamStore& store, MatrixView drows, const Saved& saved) const {
    const int64_t r = saved.x.rows(), k = saved.k, d = dim;
    SEGRANK_CHECK(drows.rows == r && saved.probs.rows() == r, "ConfigAttention::backward: drows [",
                  drows.rows, ", ", drows.cols, "] for ", r, " saved rows");
    check_rows(*this, drows, std::max<int64_t>(1, k));
    if (r == 0) return;
    const int64_t m = r / k;
    const ConstMatrixView x = saved.x.cview();
    Tensor q = Tensor::uninit(r, d), key = Tensor::uninit(r, d), val = Tensor::uninit(r, d);
    linear_forward(q.view(), x, store.value(w_q), nullptr);
    linear_forward(key.view(), x, store.value(w_k), nullptr);
    linear_forward(val.view(), x, store.value(w_v), nullptr);
    // dW_o += dY^T ctx, dctx = dY W_o (dY = drows before the input gradients are added to it).
    Tensor dctx(r, d);
    const ConstMatrixView dy{drows.data, r, drows.cols, drows.stride};
    linear_backward(dctx.view(), store.grad(w_o), nullptr, dy, saved.ctx.cview(), store.value(w_o));
    Tensor dq = Tensor::uninit(r, d), dkey = Tensor::uninit(r, d), dval = Tensor::uninit(r, d);
    const float scale = 1.0f / std::sqrt(static_cast<float>(d));
    parallel_for(0, m, node_grain(k, d), [&](int64_t b, int64_t e) {
        std::vector<float> vt(static_cast<size_t>(k * d)), ds(static_cast<size_t>(k));
        for (int64_t i = b; i < e; ++i) {
            const int64_t o = i * k * d;
            attend_node_backward(q.data() + o, key.data() + o, val.data() + o,
                                 saved.probs.data() + i * k * k, dctx.data() + o, dq.data() + o,
                                 dkey.data() + o, dval.data() + o, k, d, scale, vt.data(),
                                 ds.data());
        }
    });
    // dh = dY (residual) + dq W_q + dkey W_k + dval W_v, and the three weight gradients.
    linear_backward(drows, store.grad(w_q), nullptr, dq.cview(), x, store.value(w_q));
    linear_backward(drows, store.grad(w_k), nullptr, dkey.cview(), x, store.value(w_k));
    linear_backward(drows, store.grad(w_v), nullptr, dval.cview(), x, store.value(w_v));
}

void ConfigAttention::forward_base(const ParamStore& store, MatrixView rows, Saved* saved) const {
    check_rows(*this, rows, 1);
    const int64_t r = rows.rows;
    if (r == 0) return;
    const ConstMatrixView x{rows.data, r, rows.cols, rows.stride};
    Tensor val = Tensor::uninit(r, dim);
    linear_forward(val.view(), x, store.value(w_v), nullptr);
    if (saved) {
        saved->x = Tensor::uninit(r, hidden);
        std::memcpy(saved->x.data(), rows.data, sizeof(float) * static_cast<size_t>(r * hidden));
    }
    linear_forward(rows, val.cview(), store.value(w_o), nullptr, true);
    if (saved) {
        saved->probs = Tensor();
        saved->ctx = std::move(val);
        saved->k = 1;
    }
}

void ConfigAttention::backward_base(ParamStore& store, MatrixView drows, const Saved& saved) const {
    const int64_t r = saved.x.rows();
    SEGRANK_CHECK(drows.rows == r, "ConfigAttention::backward_base: drows [", drows.rows, ", ",
                  drows.cols, "] for ", r, " saved rows");
    check_rows(*this, drows, 1);
    if (r == 0) return;
    Tensor dval(r, dim);
    const ConstMatrixView dy{drows.data, r, drows.cols, drows.stride};
    linear_backward(dval.view(), store.grad(w_o), nullptr, dy, saved.ctx.cview(), store.value(w_o));
    linear_backward(drows, store.grad(w_v), nullptr, dval.cview(), saved.x.cview(),
                    store.value(w_v));
}

}  // namespace segrank
