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

// Transposes the rows of a [k, d] block, each minus row 0, into t [d, k]. Products with these
// differences give the scores and their adjoints relative to config 0 (the softmax does not see a
// shift): accurate when a node's rows are nearly equal, exactly 0 when they are equal (a node's K
// equal rows on the naive path then get the base row's result and no q / key gradient).
void transpose_differences(const float* a, int64_t k, int64_t d, float* t) {
    for (int64_t r = 0; r < k; ++r)
        for (int64_t j = 0; j < d; ++j) t[j * k + r] = a[r * d + j] - a[j];
}

// One node's attention: q, key, val [k, d] -> p [k, k] softmax weights and c [k, d] = p val.
// kt: [d, k] scratch. The scores are q . (key_b - key_0) / sqrt(d).
SEGRANK_SIMD_CLONES
void attend_node(const float* q, const float* key, const float* val, float* p, float* c, int64_t k,
                 int64_t d, float scale, float* kt) {
    transpose_differences(key, k, d, kt);
    for (int64_t a = 0; a < k; ++a) {
        float* s = p + a * k;
        std::fill(s, s + k, 0.0f);
        for (int64_t j = 0; j < d; ++j) {
            const float qa = q[a * d + j] * scale;
            const float* kr = kt + j * k;
            for (int64_t b = 0; b < k; ++b) s[b] += qa * kr[b];
        }
        const float mx = *std::max_element(s, s + k);
        float sum = 0.0f;
        for (int64_t b = 0; b < k; ++b) {
            s[b] = std::exp(s[b] - mx);
            sum += s[b];
        }
        const float inv = 1.0f / sum;
        for (int64_t b = 0; b < k; ++b) s[b] *= inv;
        float* cr = c + a * d;
        std::fill(cr, cr + d, 0.0f);
        for (int64_t b = 0; b < k; ++b) {
            const float pb = s[b];
            const float* vr = val + b * d;
            for (int64_t j = 0; j < d; ++j) cr[j] += pb * vr[j];
        }
    }
}

// Adjoint of attend_node: from dc [k, d] writes dq, dkey, dval [k, d]. vt: [d, k], dp: [k]
// scratch. dkey gets no term through key_0's shift: the softmax is invariant to it.
SEGRANK_SIMD_CLONES
void attend_node_backward(const float* q, const float* key, const float* val, const float* p,
                          const float* dc, float* dq, float* dkey, float* dval, int64_t k,
                          int64_t d, float scale, float* vt, float* dp) {
    transpose_differences(val, k, d, vt);
    std::fill(dkey, dkey + k * d, 0.0f);
    std::fill(dval, dval + k * d, 0.0f);
    for (int64_t a = 0; a < k; ++a) {
        const float* pa = p + a * k;
        const float* dca = dc + a * d;
        std::fill(dp, dp + k, 0.0f);
        for (int64_t j = 0; j < d; ++j) {
            const float g = dca[j];
            const float* vr = vt + j * k;
            for (int64_t b = 0; b < k; ++b) dp[b] += g * vr[b];
        }
        // dp[b] = dc_a . (val_b - val_0): dL/dp_ab up to a constant, which dscore cancels.
        float r = 0.0f;
        for (int64_t b = 0; b < k; ++b) r += pa[b] * dp[b];
        float* dqa = dq + a * d;
        std::fill(dqa, dqa + d, 0.0f);
        const float* qa = q + a * d;
        for (int64_t b = 0; b < k; ++b) {
            const float ds = pa[b] * (dp[b] - r) * scale;  // dL/dscore, times the scale
            const float* kb = key + b * d;
            float* dkb = dkey + b * d;
            float* dvb = dval + b * d;
            const float pb = pa[b];
            for (int64_t j = 0; j < d; ++j) {
                dqa[j] += ds * kb[j];
                dkb[j] += ds * qa[j];
                dvb[j] += pb * dca[j];
            }
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
    Tensor probs = Tensor::uninit(r, k), ctx = Tensor::uninit(r, d);
    const float scale = 1.0f / std::sqrt(static_cast<float>(d));
    parallel_for(0, m, node_grain(k, d), [&](int64_t b, int64_t e) {
        std::vector<float> kt(static_cast<size_t>(k * d));
        for (int64_t i = b; i < e; ++i) {
            const int64_t o = i * k * d;
            attend_node(q.data() + o, key.data() + o, val.data() + o, probs.data() + i * k * k,
                        ctx.data() + o, k, d, scale, kt.data());
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
        std::vector<float> vt(static_cast<size_t>(k * d)), dp(static_cast<size_t>(k));
        for (int64_t i = b; i < e; ++i) {
            const int64_t o = i * k * d;
            attend_node_backward(q.data() + o, key.data() + o, val.data() + o,
                                 saved.probs.data() + i * k * k, dctx.data() + o, dq.data() + o,
                                 dkey.data() + o, dval.data() + o, k, d, scale, vt.data(),
                                 dp.data());
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
