// Mixed-state kernels: OpenMP over output rows (forward) or source rows (backward), so every
// written row has exactly one writer; bodies never throw (shapes checked before the loops).
#include "gnn/ops/mixed_rows.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "gnn/core/op_timer.h"
#include "gnn/core/parallel.h"
#include "gnn/ops/readout_common.h"

namespace segrank {

// Cloned for AVX-512 / AVX2: rows are K*H = thousands of floats.
SEGRANK_SIMD_CLONES
void detail::add_to(float* __restrict d, const float* __restrict s, int64_t n) {
    for (int64_t c = 0; c < n; ++c) d[c] += s[c];
}
SEGRANK_SIMD_CLONES
void detail::axpy_to(float* __restrict d, float a, const float* __restrict s, int64_t n) {
    for (int64_t c = 0; c < n; ++c) d[c] += a * s[c];
}

namespace {

void check_state(const char* op, const MixedRows& in) {
    SEGRANK_CHECK(in.dep.cols == in.k * in.h || in.dep.rows == 0, op, ": dep has ", in.dep.cols,
                  " columns, expected K*H = ", in.k * in.h);
    SEGRANK_CHECK(in.base.rows == 0 || in.base.cols == in.h, op, ": base has ", in.base.cols,
                  " columns, expected ", in.h);
}

using detail::add_to;
using detail::axpy_to;
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

// Adds row(u) of the mixed state into acc (K*H) — dep rows directly, base rows into bacc (H).
inline void add_row(float* acc, float* bacc, int32_t u, const MixedRows& in, int64_t w) {
    const int32_t p = in.pos[u];
    if (p >= 0)
        add_to(acc, in.dep.row(p), w);
    else
        add_to(bacc, in.base.row(u), in.h);
}

// Row of mixed_gather_forward: node v's K*H values (its dep row, or its base row K times).
void gather_row(float* o, int32_t v, const MixedRows& in, int64_t w) {
    const int32_t p = in.pos[v];
    if (p >= 0) {
        std::memcpy(o, in.dep.row(p), sizeof(float) * static_cast<size_t>(w));
    } else {
        for (int64_t k = 0; k < in.k; ++k)
            std::memcpy(o + k * in.h, in.base.row(v), sizeof(float) * static_cast<size_t>(in.h));
    }
}

// Row of mixed_spmm_forward: the mean of node v's neighbours in adj (bacc: [H] scratch).
void spmm_row(float* o, float* bacc, int32_t v, const Csr& adj, std::span<const float> inv,
              const MixedRows& in, int64_t w) {
    std::memset(o, 0, sizeof(float) * static_cast<size_t>(w));
    std::fill(bacc, bacc + in.h, 0.0f);
    bool any_base = false;
    for (int32_t u : adj.row(v)) {
        add_row(o, bacc, u, in, w);
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

// Row of mixed_gather_backward: node v's row of din += g (K*H values; a base row gets their sum
// over the K configs).
void add_grad_row(const MixedGrads& din, int32_t v, const float* g, int64_t w) {
    const int32_t p = din.pos[v];
    float* d = p >= 0 ? din.ddep.row(p) : din.dbase.row(v);
    if (p >= 0) {
        add_to(d, g, w);
    } else {
        for (int64_t k = 0; k < din.k; ++k)
            for (int64_t c = 0; c < din.h; ++c) d[c] += g[k * din.h + c];
    }
}

// Row of mixed_spmm_backward: node u's row of din += fwd_inv_deg[v] * dout[out_pos[v]] for every
// v in adj_t.row(u) with a row in dout.
void spmm_grad_row(const MixedGrads& din, int32_t u, const Csr& adj_t,
                   std::span<const int32_t> out_pos, std::span<const float> fwd_inv_deg,
                   ConstMatrixView dout, int64_t w) {
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

}  // namespace

void mixed_gather_forward(MatrixView out, std::span<const int32_t> out_nodes, const MixedRows& in) {
    const OpScope op_scope(OpCategory::kGatherScatter);
    check_state("mixed_gather_forward", in);
    const int64_t w = in.k * in.h;
    SEGRANK_CHECK(out.rows == static_cast<int64_t>(out_nodes.size()) && out.cols == w,
                  "mixed_gather_forward: out[", out.rows, ",", out.cols, "] for ", out_nodes.size(),
                  " nodes x ", w);
    parallel_for(0, out.rows, 16, [&](int64_t r0, int64_t r1) {
        for (int64_t i = r0; i < r1; ++i) gather_row(out.row(i), out_nodes[i], in, w);
    });
}

void mixed_gather_backward(const MixedGrads& din, std::span<const int32_t> out_nodes,
                           ConstMatrixView dout) {
    const OpScope op_scope(OpCategory::kGatherScatter);
    const int64_t w = din.k * din.h;
    SEGRANK_CHECK(dout.rows == static_cast<int64_t>(out_nodes.size()) && dout.cols == w,
                  "mixed_gather_backward: dout[", dout.rows, ",", dout.cols, "] for ",
                  out_nodes.size(), " nodes");
    parallel_for(0, dout.rows, 16, [&](int64_t r0, int64_t r1) {
        for (int64_t i = r0; i < r1; ++i) add_grad_row(din, out_nodes[i], dout.row(i), w);
    });
}

void mixed_spmm_forward(MatrixView out, std::span<const int32_t> out_nodes, const Csr& adj,
                        const MixedRows& in) {
    const OpScope op_scope(OpCategory::kSpmm);
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
        for (int64_t i = r0; i < r1; ++i)
            spmm_row(out.row(i), bacc.data(), out_nodes[i], adj, inv, in, w);
    });
}

void mixed_inputs_forward(MatrixView self, MatrixView agg_fwd, MatrixView agg_bwd,
                          std::span<const int32_t> out_nodes, const Csr& operands, const Csr& users,
                          const MixedRows& in) {
    const OpScope op_scope(OpCategory::kSpmm);
    check_state("mixed_inputs_forward", in);
    const int64_t w = in.k * in.h, m = static_cast<int64_t>(out_nodes.size());
    for (MatrixView out : {self, agg_fwd, agg_bwd})
        SEGRANK_CHECK(out.rows == m && out.cols == w, "mixed_inputs_forward: out[", out.rows, ",",
                      out.cols, "] for ", m, " nodes x ", w);
    SEGRANK_CHECK(operands.num_rows() == static_cast<int64_t>(in.pos.size()) &&
                      users.num_rows() == static_cast<int64_t>(in.pos.size()),
                  "mixed_inputs_forward: adjacencies have ", operands.num_rows(), " and ",
                  users.num_rows(), " rows for ", in.pos.size(), " nodes");
    const auto inv_f = operands.inverse_degrees(), inv_b = users.inverse_degrees();
    parallel_for(0, m, 16, [&](int64_t r0, int64_t r1) {
        std::vector<float> bacc(static_cast<size_t>(in.h));
        for (int64_t i = r0; i < r1; ++i) {
            const int32_t v = out_nodes[static_cast<size_t>(i)];
            gather_row(self.row(i), v, in, w);
            spmm_row(agg_fwd.row(i), bacc.data(), v, operands, inv_f, in, w);
            spmm_row(agg_bwd.row(i), bacc.data(), v, users, inv_b, in, w);
        }
    });
}

void mixed_spmm_backward(const MixedGrads& din, const Csr& adj_t, std::span<const int32_t> out_pos,
                         std::span<const float> fwd_inv_deg, ConstMatrixView dout) {
    const OpScope op_scope(OpCategory::kSpmm);
    const int64_t w = din.k * din.h;
    SEGRANK_CHECK(dout.cols == w && static_cast<int64_t>(out_pos.size()) == adj_t.num_cols() &&
                      static_cast<int64_t>(fwd_inv_deg.size()) == adj_t.num_cols() &&
                      static_cast<int64_t>(din.pos.size()) == adj_t.num_rows(),
                  "mixed_spmm_backward: dout[", dout.rows, ",", dout.cols, "] with ",
                  out_pos.size(), " positions, ", fwd_inv_deg.size(), " degrees for a ",
                  adj_t.num_rows(), "-node graph");
    parallel_for(0, adj_t.num_rows(), 16, [&](int64_t r0, int64_t r1) {
        for (int64_t u = r0; u < r1; ++u)
            spmm_grad_row(din, static_cast<int32_t>(u), adj_t, out_pos, fwd_inv_deg, dout, w);
    });
}

void mixed_inputs_backward(const MixedGrads& din, std::span<const int32_t> out_pos,
                           const Csr& operands, const Csr& users, ConstMatrixView d_self,
                           ConstMatrixView d_fwd, ConstMatrixView d_bwd) {
    const OpScope op_scope(OpCategory::kSpmm);
    const int64_t w = din.k * din.h, n = static_cast<int64_t>(din.pos.size());
    for (ConstMatrixView d : {d_self, d_fwd, d_bwd})
        SEGRANK_CHECK(d.rows == d_self.rows && d.cols == w, "mixed_inputs_backward: gradient [",
                      d.rows, ",", d.cols, "], expected [", d_self.rows, ",", w, "]");
    SEGRANK_CHECK(static_cast<int64_t>(out_pos.size()) == n && operands.num_rows() == n &&
                      users.num_rows() == n,
                  "mixed_inputs_backward: ", out_pos.size(), " positions, adjacencies of ",
                  operands.num_rows(), " and ", users.num_rows(), " rows for ", n, " nodes");
    for (int32_t o : out_pos)
        SEGRANK_CHECK(o < d_self.rows, "mixed_inputs_backward: position ", o, " outside the ",
                      d_self.rows, " gradient rows");
    const auto inv_f = operands.inverse_degrees(), inv_b = users.inverse_degrees();
    parallel_for(0, n, 16, [&](int64_t r0, int64_t r1) {
        for (int64_t u = r0; u < r1; ++u) {  // the three kernels' order: gather, users, operands
            const int32_t o = out_pos[static_cast<size_t>(u)];
            const auto v = static_cast<int32_t>(u);
            if (o >= 0) add_grad_row(din, v, d_self.row(o), w);
            spmm_grad_row(din, v, users, out_pos, inv_f, d_fwd, w);
            spmm_grad_row(din, v, operands, out_pos, inv_b, d_bwd, w);
        }
    });
}

void dep_spmm_accumulate(MatrixView out, std::span<const int32_t> out_nodes, const Csr* adj,
                         ConstMatrixView y, std::span<const int32_t> in_pos) {
    const OpScope op_scope(OpCategory::kSpmm);
    const int64_t w = out.cols;
    SEGRANK_CHECK(
        out.rows == static_cast<int64_t>(out_nodes.size()) && (y.rows == 0 || y.cols == w),
        "dep_spmm_accumulate: out[", out.rows, ",", out.cols, "] for ", out_nodes.size(),
        " nodes, y[", y.rows, ",", y.cols, "]");
    SEGRANK_CHECK(!adj || adj->num_rows() == static_cast<int64_t>(in_pos.size()),
                  "dep_spmm_accumulate: adjacency has ", adj ? adj->num_rows() : 0, " rows for ",
                  in_pos.size(), " nodes");
    if (y.rows == 0) return;
    const std::span<const float> inv = adj ? adj->inverse_degrees() : std::span<const float>{};
    parallel_for(0, out.rows, 16, [&](int64_t r0, int64_t r1) {
        for (int64_t i = r0; i < r1; ++i) {
            const int32_t v = out_nodes[static_cast<size_t>(i)];
            float* o = out.row(i);
            if (!adj) {
                const int32_t p = in_pos[static_cast<size_t>(v)];
                if (p >= 0) add_to(o, y.row(p), w);
                continue;
            }
            const float s = inv[static_cast<size_t>(v)];
            for (int32_t u : adj->row(v)) {
                const int32_t p = in_pos[static_cast<size_t>(u)];
                if (p >= 0) axpy_to(o, s, y.row(p), w);
            }
        }
    });
}

void dep_spmm_adjoint(MatrixView dy, std::span<const int32_t> in_nodes, const Csr* adj_t,
                      std::span<const float> fwd_inv_deg, ConstMatrixView dout,
                      std::span<const int32_t> out_pos) {
    const OpScope op_scope(OpCategory::kSpmm);
    const int64_t w = dy.cols;
    SEGRANK_CHECK(
        dy.rows == static_cast<int64_t>(in_nodes.size()) && (dout.rows == 0 || dout.cols == w),
        "dep_spmm_adjoint: dy[", dy.rows, ",", dy.cols, "] for ", in_nodes.size(), " nodes, dout[",
        dout.rows, ",", dout.cols, "]");
    SEGRANK_CHECK(!adj_t || (adj_t->num_rows() == static_cast<int64_t>(out_pos.size()) &&
                             fwd_inv_deg.size() == out_pos.size()),
                  "dep_spmm_adjoint: adjacency has ", adj_t ? adj_t->num_rows() : 0, " rows, ",
                  fwd_inv_deg.size(), " degrees for ", out_pos.size(), " nodes");
    if (!adj_t)
        for (int32_t u : in_nodes)
            SEGRANK_CHECK(out_pos[static_cast<size_t>(u)] >= 0, "dep_spmm_adjoint: dep node ", u,
                          " of layer l-1 has no row in layer l");
    parallel_for(0, dy.rows, 16, [&](int64_t r0, int64_t r1) {
        for (int64_t p = r0; p < r1; ++p) {
            const int32_t u = in_nodes[static_cast<size_t>(p)];
            float* d = dy.row(p);
            std::memset(d, 0, sizeof(float) * static_cast<size_t>(w));
            if (!adj_t) {
                add_to(d, dout.row(out_pos[static_cast<size_t>(u)]), w);
                continue;
            }
            for (int32_t v : adj_t->row(u)) {
                const int32_t o = out_pos[static_cast<size_t>(v)];
                if (o >= 0) axpy_to(d, fwd_inv_deg[static_cast<size_t>(v)], dout.row(o), w);
            }
        }
    });
}

namespace {

// The readout of mixed_readout_forward: base pooled nodes are summed once, then every config adds
// its dep rows in node order (class_readout_forward adds the same rows, partly pre-summed).
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

}  // namespace

void mixed_readout_forward(MatrixView out, std::span<int32_t> argmax, int64_t num_pooled,
                           const MixedRows& in) {
    const OpScope op_scope(OpCategory::kGatherScatter);
    check_state("mixed_readout_forward", in);
    check_readout("mixed_readout_forward", out, argmax, true, num_pooled, in.pos.size(), in.k,
                  in.h);
    readout_forward(out, argmax, num_pooled, in);
}

void mixed_readout_backward(const MixedGrads& din, std::span<const int32_t> argmax,
                            int64_t num_pooled, ConstMatrixView dout) {
    const OpScope op_scope(OpCategory::kGatherScatter);
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
