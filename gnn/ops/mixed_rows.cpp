// Mixed-state kernels: OpenMP over output rows (forward) or source rows (backward), so every
// written row has exactly one writer; bodies never throw (shapes checked before the loops).
#include "gnn/ops/mixed_rows.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <vector>

#include "gnn/core/parallel.h"

namespace segrank {

namespace {

void check_state(const char* op, const MixedRows& in) {
    SEGRANK_CHECK(in.dep.cols == in.k * in.h || in.dep.rows == 0, op, ": dep has ", in.dep.cols,
                  " columns, expected K*H = ", in.k * in.h);
    SEGRANK_CHECK(in.base.rows == 0 || in.base.cols == in.h, op, ": base has ", in.base.cols,
                  " columns, expected ", in.h);
}

// d[c] += s[c] and d[c] += a * s[c], c < n (cloned for AVX-512 / AVX2: rows are K*H = thousands of
// floats).
SEGRANK_SIMD_CLONES
void add_to(float* __restrict d, const float* __restrict s, int64_t n) {
    for (int64_t c = 0; c < n; ++c) d[c] += s[c];
}
SEGRANK_SIMD_CLONES
void axpy_to(float* __restrict d, float a, const float* __restrict s, int64_t n) {
    for (int64_t c = 0; c < n; ++c) d[c] += a * s[c];
}
// Max pooling step with the first argmax kept on ties: one pooled node's row r [H].
SEGRANK_SIMD_CLONES
void pool_row(double* __restrict sum, float* __restrict mx, int32_t* __restrict arg,
              const float* __restrict r, int32_t v, int64_t h) {
#pragma omp simd
    for (int64_t c = 0; c < h; ++c) {
        sum[c] += r[c];
        const bool gt = r[c] > mx[c] || arg[c] < 0;
        mx[c] = gt ? r[c] : mx[c];
        arg[c] = gt ? v : arg[c];
    }
}

// The sum half of pool_row (readout "mean"): sum[c] += r[c], c < h.
SEGRANK_SIMD_CLONES
void add_to_double(double* __restrict sum, const float* __restrict r, int64_t h) {
#pragma omp simd
    for (int64_t c = 0; c < h; ++c) sum[c] += r[c];
}

// pool_row without the argmax (inference; the same sums and, for rows without NaN, the same max)
// for the block of kn configs k0.. of a class readout: for each pooled dep node p of dep_pos in
// order, config j adds its class row (uniq row off[p] + cls[p * k_configs + k0 + j]) into
// sum + j * h and mx + j * h.
SEGRANK_SIMD_CLONES
void pool_class_block(double* __restrict sum, float* __restrict mx, const ClassRows& in,
                      std::span<const int32_t> dep_pos, int64_t k0, int64_t kn, bool with_max) {
    const int64_t h = in.h, k_configs = in.k, stride = in.uniq.stride;
    const auto row_of = [&](size_t i, int64_t j) {
        const int32_t p = dep_pos[i];
        return in.uniq.data + (in.off[static_cast<size_t>(p)] +
                               in.cls[static_cast<size_t>(p) * static_cast<size_t>(k_configs) +
                                      static_cast<size_t>(k0 + j)]) *
                                  stride;
    };
    // The class rows are scattered over uniq (hundreds of MB at the last layer): keep kAhead rows
    // of the walk in flight, across node boundaries.
    constexpr int64_t kAhead = 8;
    const int64_t row_bytes = h * static_cast<int64_t>(sizeof(float));
    size_t ai = 0;
    int64_t aj = 0;
    auto advance = [&]() {
        if (++aj == kn) aj = 0, ++ai;
    };
    for (int64_t t = 0; t < kAhead && ai < dep_pos.size(); ++t) advance();
    for (size_t i = 0; i < dep_pos.size(); ++i) {
        for (int64_t j = 0; j < kn; ++j) {
            if (ai < dep_pos.size()) {
                const char* q = reinterpret_cast<const char*>(row_of(ai, aj));
                for (int64_t b = 0; b < row_bytes; b += 64) __builtin_prefetch(q + b);
                advance();
            }
            const float* __restrict r = row_of(i, j);
            double* __restrict s = sum + j * h;
            if (!with_max) {  // readout "mean"
#pragma omp simd
                for (int64_t c = 0; c < h; ++c) s[c] += r[c];
                continue;
            }
            float* __restrict m = mx + j * h;
#pragma omp simd
            for (int64_t c = 0; c < h; ++c) {
                s[c] += r[c];
                m[c] = r[c] > m[c] ? r[c] : m[c];
            }
        }
    }
}

// Adds row(u) of the mixed state into acc (K*H) — dep rows directly, base rows into bacc (H).
inline void add_row(float* acc, float* bacc, int32_t u, const MixedRows& in, int64_t w) {
    const int32_t p = in.pos[u];
    if (p >= 0)
        add_to(acc, in.dep.row(p), w);
    else
        add_to(bacc, in.base.row(u), in.h);
}

}  // namespace

void mixed_gather_forward(MatrixView out, std::span<const int32_t> out_nodes, const MixedRows& in) {
    check_state("mixed_gather_forward", in);
    const int64_t w = in.k * in.h;
    SEGRANK_CHECK(out.rows == static_cast<int64_t>(out_nodes.size()) && out.cols == w,
                  "mixed_gather_forward: out[", out.rows, ",", out.cols, "] for ", out_nodes.size(),
                  " nodes x ", w);
    parallel_for(0, out.rows, 16, [&](int64_t r0, int64_t r1) {
        for (int64_t i = r0; i < r1; ++i) {
            const int32_t v = out_nodes[i];
            float* o = out.row(i);
            const int32_t p = in.pos[v];
            if (p >= 0) {
                std::memcpy(o, in.dep.row(p), sizeof(float) * static_cast<size_t>(w));
            } else {
                for (int64_t k = 0; k < in.k; ++k)
                    std::memcpy(o + k * in.h, in.base.row(v),
                                sizeof(float) * static_cast<size_t>(in.h));
            }
        }
    });
}

void mixed_gather_backward(const MixedGrads& din, std::span<const int32_t> out_nodes,
                           ConstMatrixView dout) {
    const int64_t w = din.k * din.h;
    SEGRANK_CHECK(dout.rows == static_cast<int64_t>(out_nodes.size()) && dout.cols == w,
                  "mixed_gather_backward: dout[", dout.rows, ",", dout.cols, "] for ",
                  out_nodes.size(), " nodes");
    parallel_for(0, dout.rows, 16, [&](int64_t r0, int64_t r1) {
        for (int64_t i = r0; i < r1; ++i) {
            const int32_t v = out_nodes[i];
            const float* g = dout.row(i);
            const int32_t p = din.pos[v];
            float* d = p >= 0 ? din.ddep.row(p) : din.dbase.row(v);
            if (p >= 0) {
                add_to(d, g, w);
            } else {
                for (int64_t k = 0; k < din.k; ++k)
                    for (int64_t c = 0; c < din.h; ++c) d[c] += g[k * din.h + c];
            }
        }
    });
}

void mixed_spmm_forward(MatrixView out, std::span<const int32_t> out_nodes, const Csr& adj,
                        const MixedRows& in) {
    check_state("mixed_spmm_forward", in);
    const int64_t w = in.k * in.h;
    SEGRANK_CHECK(out.rows == static_cast<int64_t>(out_nodes.size()) && out.cols == w,
                  "mixed_spmm_forward: out[", out.rows, ",", out.cols, "] for ", out_nodes.size(),
                  " nodes x ", w);
    SEGRANK_CHECK(adj.num_rows() == static_cast<int64_t>(in.pos.size()),
                  "mixed_spmm_forward: adjacency has ", adj.num_rows(), " rows for ", in.pos.size(),
                  " nodes");
    const auto inv = adj.inverse_degrees();
    parallel_for(0, out.rows, 16, [&](int64_t r0, int64_t r1) {
        std::vector<float> bacc(static_cast<size_t>(in.h));
        for (int64_t i = r0; i < r1; ++i) {
            const int32_t v = out_nodes[i];
            float* o = out.row(i);
            std::memset(o, 0, sizeof(float) * static_cast<size_t>(w));
            std::fill(bacc.begin(), bacc.end(), 0.0f);
            bool any_base = false;
            for (int32_t u : adj.row(v)) {
                add_row(o, bacc.data(), u, in, w);
                any_base |= in.pos[u] < 0;
            }
            const float s = inv[v];
            if (any_base) {
                for (int64_t k = 0; k < in.k; ++k) {
                    float* ok = o + k * in.h;
                    for (int64_t c = 0; c < in.h; ++c) ok[c] = (ok[c] + bacc[c]) * s;
                }
            } else {
                for (int64_t c = 0; c < w; ++c) o[c] *= s;
            }
        }
    });
}

void mixed_spmm_backward(const MixedGrads& din, const Csr& adj_t, std::span<const int32_t> out_pos,
                         std::span<const float> fwd_inv_deg, ConstMatrixView dout) {
    const int64_t w = din.k * din.h;
    SEGRANK_CHECK(dout.cols == w && static_cast<int64_t>(out_pos.size()) == adj_t.num_cols() &&
                      static_cast<int64_t>(fwd_inv_deg.size()) == adj_t.num_cols() &&
                      static_cast<int64_t>(din.pos.size()) == adj_t.num_rows(),
                  "mixed_spmm_backward: dout[", dout.rows, ",", dout.cols, "] with ",
                  out_pos.size(), " positions, ", fwd_inv_deg.size(), " degrees for a ",
                  adj_t.num_rows(), "-node graph");
    parallel_for(0, adj_t.num_rows(), 16, [&](int64_t r0, int64_t r1) {
        for (int64_t u = r0; u < r1; ++u) {
            const int32_t p = din.pos[u];
            float* d = p >= 0 ? din.ddep.row(p) : din.dbase.row(u);
            for (int32_t v : adj_t.row(u)) {
                const int32_t o = out_pos[v];
                if (o < 0) continue;
                const float s = fwd_inv_deg[v];
                const float* g = dout.row(o);
                if (p >= 0) {
                    axpy_to(d, s, g, w);
                } else {
                    for (int64_t k = 0; k < din.k; ++k)
                        for (int64_t c = 0; c < din.h; ++c) d[c] += s * g[k * din.h + c];
                }
            }
        }
    });
}

namespace {

// The independent pooled nodes of a readout: their column sums and maxima (first argmax; -1 while
// there is none), shared by every config, and the pooled dep nodes in node order.
struct BasePool {
    std::vector<double> sum;
    std::vector<float> max;
    std::vector<int32_t> arg;
    std::vector<int32_t> dep_nodes;
};

BasePool pool_base(ConstMatrixView base, std::span<const int32_t> pos, int64_t num_pooled,
                   int64_t h) {
    BasePool bp{std::vector<double>(static_cast<size_t>(h), 0.0),
                std::vector<float>(static_cast<size_t>(h), -std::numeric_limits<float>::infinity()),
                std::vector<int32_t>(static_cast<size_t>(h), -1),
                {}};
    for (int32_t v = 0; v < num_pooled; ++v) {
        if (pos[v] >= 0) {
            bp.dep_nodes.push_back(v);
            continue;
        }
        const float* r = base.row(v);
        for (int64_t c = 0; c < h; ++c) {
            bp.sum[c] += r[c];
            if (r[c] > bp.max[c] || bp.arg[c] < 0) bp.max[c] = r[c], bp.arg[c] = v;
        }
    }
    return bp;
}

// The readout of mixed_readout_forward: base pooled nodes are summed once, then every config adds
// its dep rows in node order (class_readout_forward keeps this order per config).
void readout_forward(MatrixView out, std::span<int32_t> argmax, int64_t num_pooled,
                     const MixedRows& in) {
    const int64_t h = in.h;
    const BasePool bp = pool_base(in.base, in.pos, num_pooled, h);
    const double inv_n = 1.0 / static_cast<double>(num_pooled);
    const bool with_max = out.cols == 2 * h;
    parallel_for(0, in.k, 1, [&](int64_t k0, int64_t k1) {
        std::vector<double> sum(static_cast<size_t>(h));
        for (int64_t k = k0; k < k1; ++k) {
            float* mean = out.row(k);
            if (with_max) {
                float* mx = mean + h;
                int32_t* arg = argmax.data() + k * h;
                for (int64_t c = 0; c < h; ++c)
                    sum[c] = bp.sum[c], mx[c] = bp.max[c], arg[c] = bp.arg[c];
                for (int32_t v : bp.dep_nodes)
                    pool_row(sum.data(), mx, arg, in.dep.row(in.pos[v]) + k * h, v, h);
            } else {  // readout "mean": the same sums in the same order, no max
                std::copy(bp.sum.begin(), bp.sum.end(), sum.begin());
                for (int32_t v : bp.dep_nodes)
                    add_to_double(sum.data(), in.dep.row(in.pos[v]) + k * h, h);
            }
            for (int64_t c = 0; c < h; ++c) mean[c] = static_cast<float>(sum[c] * inv_n);
        }
    });
}

void check_readout(const char* op, MatrixView out, std::span<int32_t> argmax, bool need_argmax,
                   int64_t num_pooled, size_t n, int64_t k, int64_t h) {
    const bool with_max = out.cols == 2 * h;
    SEGRANK_CHECK(
        out.rows == k && (with_max || out.cols == h) &&
            (need_argmax ? static_cast<int64_t>(argmax.size()) == (with_max ? k * h : 0) : true),
        op, ": out[", out.rows, ",", out.cols, "] argmax ", argmax.size(), " for K=", k, " H=", h,
        " (expected out [K, 2H] with K*H argmax ids, or [K, H] without)");
    SEGRANK_CHECK(num_pooled >= 1 && num_pooled <= static_cast<int64_t>(n), op,
                  ": num_pooled = ", num_pooled, " outside [1, ", n, "]");
}

}  // namespace

void mixed_readout_forward(MatrixView out, std::span<int32_t> argmax, int64_t num_pooled,
                           const MixedRows& in) {
    check_state("mixed_readout_forward", in);
    check_readout("mixed_readout_forward", out, argmax, true, num_pooled, in.pos.size(), in.k,
                  in.h);
    readout_forward(out, argmax, num_pooled, in);
}

void class_readout_forward(MatrixView out, int64_t num_pooled, const ClassRows& in) {
    SEGRANK_CHECK(
        in.uniq.cols == in.h && (in.base.rows == 0 || in.base.cols == in.h) &&
            in.cls.size() == (in.off.empty() ? 0 : in.off.size() - 1) * static_cast<size_t>(in.k),
        "class_readout_forward: uniq [", in.uniq.rows, ", ", in.uniq.cols, "], ", in.cls.size(),
        " classes for ", in.off.size(), " offsets, K=", in.k, " H=", in.h);
    check_readout("class_readout_forward", out, {}, false, num_pooled, in.pos.size(), in.k, in.h);
    const int64_t h = in.h, k_configs = in.k;
    const bool with_max = out.cols == 2 * h;
    const BasePool bp = pool_base(in.base, in.pos, num_pooled, h);
    std::vector<int32_t> dep_pos(bp.dep_nodes.size());
    for (size_t i = 0; i < dep_pos.size(); ++i) dep_pos[i] = in.pos[bp.dep_nodes[i]];
    const double inv_n = 1.0 / static_cast<double>(num_pooled);
    // Blocks of kBlock configs, each walking the pooled dep nodes in node order: every config adds
    // the same rows in the same order as readout_forward (so the same bits), but a node's class
    // rows are read once per block instead of once per config, and the block's sums stay in cache.
    constexpr int64_t kBlock = 32;
    const int64_t blocks = (k_configs + kBlock - 1) / kBlock;
    parallel_for(0, blocks, 1, [&](int64_t b0, int64_t b1) {
        std::vector<double> sum(static_cast<size_t>(kBlock * h));
        std::vector<float> mx(static_cast<size_t>(kBlock * h));
        for (int64_t b = b0; b < b1; ++b) {
            const int64_t k0 = b * kBlock, kn = std::min(kBlock, k_configs - k0);
            for (int64_t j = 0; j < kn; ++j) {
                std::copy(bp.sum.begin(), bp.sum.end(), sum.begin() + j * h);
                std::copy(bp.max.begin(), bp.max.end(), mx.begin() + j * h);
            }
            pool_class_block(sum.data(), mx.data(), in, dep_pos, k0, kn, with_max);
            for (int64_t j = 0; j < kn; ++j) {
                float* mean = out.row(k0 + j);
                for (int64_t c = 0; c < h; ++c)
                    mean[c] = static_cast<float>(sum[static_cast<size_t>(j * h + c)] * inv_n);
                if (with_max)
                    for (int64_t c = 0; c < h; ++c)
                        mean[h + c] = mx[static_cast<size_t>(j * h + c)];
            }
        }
    });
}

void mixed_readout_backward(const MixedGrads& din, std::span<const int32_t> argmax,
                            int64_t num_pooled, ConstMatrixView dout) {
    const int64_t h = din.h;
    const bool with_max = dout.cols == 2 * h;
    SEGRANK_CHECK(dout.rows == din.k && (with_max || dout.cols == h) &&
                      static_cast<int64_t>(argmax.size()) == (with_max ? din.k * h : 0),
                  "mixed_readout_backward: dout[", dout.rows, ",", dout.cols, "] argmax ",
                  argmax.size(), " for K=", din.k, " H=", h,
                  " (expected dout [K, 2H] with K*H argmax ids, or [K, H] without)");
    const float inv_n = 1.0f / static_cast<float>(num_pooled);
    // Mean part: base rows get the sum over k; dep rows get their own k slice.
    std::vector<float> gsum(static_cast<size_t>(h), 0.0f);
    for (int64_t k = 0; k < din.k; ++k)
        for (int64_t c = 0; c < h; ++c) gsum[c] += dout.at(k, c) * inv_n;
    parallel_for(0, num_pooled, 64, [&](int64_t r0, int64_t r1) {
        for (int64_t v = r0; v < r1; ++v) {
            const int32_t p = din.pos[v];
            if (p >= 0) {
                float* d = din.ddep.row(p);
                for (int64_t k = 0; k < din.k; ++k)
                    for (int64_t c = 0; c < h; ++c) d[k * h + c] += dout.at(k, c) * inv_n;
            } else {
                float* d = din.dbase.row(v);
                for (int64_t c = 0; c < h; ++c) d[c] += gsum[c];
            }
        }
    });
    if (!with_max) return;  // readout "mean"
    // Max part: serial scatter (K*H entries; several may hit one base row).
    for (int64_t k = 0; k < din.k; ++k)
        for (int64_t c = 0; c < h; ++c) {
            const int32_t v = argmax[k * h + c];
            if (v < 0) continue;
            const float g = dout.at(k, h + c);
            const int32_t p = din.pos[v];
            if (p >= 0)
                din.ddep.at(p, k * h + c) += g;
            else
                din.dbase.at(v, c) += g;
        }
}

}  // namespace segrank
