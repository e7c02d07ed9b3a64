// Mixed-state kernels: OpenMP over output rows (forward) or source rows (backward), so every
// written row has exactly one writer; bodies never throw (shapes checked before the loops).
#include "gnn/ops/mixed_rows.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <limits>
#include <utility>
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

void dep_spmm_accumulate(MatrixView out, std::span<const int32_t> out_nodes, const Csr* adj,
                         ConstMatrixView y, std::span<const int32_t> in_pos) {
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

// ---- The grouped class readout (class_readout_forward; docs/model.md#row-deduplication) ----

// A group of pooled dep nodes holds at most K / kTupleShare distinct class tuples (configs share a
// tuple kTupleShare times on average, or more).
constexpr int64_t kTupleShare = 16;
// Pooled dep nodes per grouping task (fixed, so the groups, and hence the rounding of the sums,
// do not depend on the thread count; a task boundary closes a group).
constexpr int64_t kGroupRange = 128;

// A run of consecutive pooled dep nodes dep_pos[begin, end) of a class readout. With two nodes or
// more, the distinct tuples of their classes over the K configs are numbered 0..tuples-1 in order
// of first occurrence: ids[k] = tuple of config k, rep[t] = first config with tuple t. A group of
// one node keeps no ids (empty): its tuples are the node's classes.
struct PoolGroup {
    int32_t begin = 0;
    int32_t end = 0;
    int64_t tuples = 0;
    std::vector<int32_t> ids;
    std::vector<int32_t> rep;
};

// Numbers pairs (t, c) densely in order of first occurrence, at most cap of them: indexed by the
// key t * c_count + c directly when every key fits the table, else open addressing on the key.
// Holds at most cap entries at a time; each call clears the slots it used.
class TupleTable {
public:
    explicit TupleTable(int64_t cap) {
        size_t s = 64;
        while (s < static_cast<size_t>(4 * (cap + 1))) s *= 2;
        id_.assign(s, -1);
        key_.resize(s);
        shift_ = 64 - std::countr_zero(s);
        used_.reserve(static_cast<size_t>(cap));
    }

    // next[k] = number of the pair (cur[k], c[k]), k < kn (cur[k] < t_count, c[k] < c_count);
    // rep[n] = the first k numbered n. Returns the count, or -1 as soon as it would pass cap (next
    // and rep then hold a prefix).
    int64_t number(const int32_t* cur, int64_t t_count, const int32_t* c, int64_t c_count,
                   int64_t kn, int64_t cap, int32_t* next, std::vector<int32_t>& rep) {
        rep.clear();
        const bool direct = static_cast<uint64_t>(t_count) * static_cast<uint64_t>(c_count) <=
                            static_cast<uint64_t>(id_.size());
        const int64_t n = direct ? number_direct(cur, c, c_count, kn, cap, next, rep)
                                 : number_hashed(cur, c, c_count, kn, cap, next, rep);
        for (const size_t s : used_) id_[s] = -1;
        used_.clear();
        return n;
    }

private:
    int64_t number_direct(const int32_t* cur, const int32_t* c, int64_t c_count, int64_t kn,
                          int64_t cap, int32_t* next, std::vector<int32_t>& rep) {
        int32_t n = 0;
        for (int64_t k = 0; k < kn; ++k) {
            const size_t key = static_cast<size_t>(cur[k]) * static_cast<size_t>(c_count) +
                               static_cast<size_t>(c[k]);
            int32_t id = id_[key];
            if (id < 0) {
                if (n == cap) return -1;
                id = id_[key] = n++;
                used_.push_back(key);
                rep.push_back(static_cast<int32_t>(k));
            }
            next[k] = id;
        }
        return n;
    }

    int64_t number_hashed(const int32_t* cur, const int32_t* c, int64_t c_count, int64_t kn,
                          int64_t cap, int32_t* next, std::vector<int32_t>& rep) {
        const size_t mask = id_.size() - 1;
        int32_t n = 0;
        for (int64_t k = 0; k < kn; ++k) {
            const uint64_t key = static_cast<uint64_t>(cur[k]) * static_cast<uint64_t>(c_count) +
                                 static_cast<uint64_t>(c[k]);
            size_t s = static_cast<size_t>((key * 0x9E3779B97F4A7C15ull) >> shift_);
            while (id_[s] >= 0 && key_[s] != key) s = (s + 1) & mask;
            int32_t id = id_[s];
            if (id < 0) {
                if (n == cap) return -1;
                id = id_[s] = n++;
                key_[s] = key;
                used_.push_back(s);
                rep.push_back(static_cast<int32_t>(k));
            }
            next[k] = id;
        }
        return n;
    }

    std::vector<int32_t> id_;
    std::vector<uint64_t> key_;
    std::vector<size_t> used_;
    int shift_ = 0;
};

// Greedy left-to-right grouping of the pooled dep nodes dep_pos[r0, r1): a group takes the next
// node while the tuples stay at most cap and joining costs fewer partial-row additions than the
// K row additions a new group costs (a node with more than cap classes stays alone).
void group_range(const ClassRows& in, std::span<const int32_t> dep_pos, int32_t r0, int32_t r1,
                 int64_t cap, std::vector<PoolGroup>& groups) {
    const int64_t k_configs = in.k;
    const auto classes = [&](int32_t i) {
        return in.cls.data() + static_cast<size_t>(dep_pos[static_cast<size_t>(i)]) *
                                   static_cast<size_t>(k_configs);
    };
    const auto count = [&](int32_t i) {
        return static_cast<int64_t>(in.count[static_cast<size_t>(dep_pos[static_cast<size_t>(i)])]);
    };
    TupleTable table(cap);
    std::vector<int32_t> a(static_cast<size_t>(k_configs)), b(static_cast<size_t>(k_configs));
    std::vector<int32_t> rep, rep_next;
    int32_t i = r0;
    while (i < r1) {
        PoolGroup g;
        g.begin = i;
        const int32_t* cur = classes(i);
        int64_t t = count(i);
        ++i;
        if (t <= cap) {
            while (i < r1 && count(i) <= cap) {
                int32_t* next = cur == a.data() ? b.data() : a.data();
                const int64_t t2 =
                    table.number(cur, t, classes(i), count(i), k_configs, cap, next, rep_next);
                const int64_t len = i - g.begin;
                if (t2 < 0 || t2 * (len + 1) - t * len >= k_configs) break;
                cur = next;
                t = t2;
                rep.swap(rep_next);
                ++i;
            }
        }
        g.end = i;
        if (g.end - g.begin >= 2) {
            g.tuples = t;
            g.ids.assign(cur, cur + k_configs);
            g.rep = rep;
        } else {
            g.tuples = count(g.begin);
        }
        groups.push_back(std::move(g));
    }
}

// The groups of all pooled dep nodes in node order (group_range over tasks of kGroupRange nodes).
std::vector<PoolGroup> group_pooled_nodes(const ClassRows& in, std::span<const int32_t> dep_pos) {
    const int64_t d = static_cast<int64_t>(dep_pos.size());
    const int64_t tasks = (d + kGroupRange - 1) / kGroupRange;
    const int64_t cap = in.k / kTupleShare;
    std::vector<std::vector<PoolGroup>> per_task(static_cast<size_t>(tasks));
    parallel_for(0, tasks, 1, [&](int64_t q0, int64_t q1) {
        for (int64_t q = q0; q < q1; ++q)
            group_range(in, dep_pos, static_cast<int32_t>(q * kGroupRange),
                        static_cast<int32_t>(std::min(d, (q + 1) * kGroupRange)), cap,
                        per_task[static_cast<size_t>(q)]);
    });
    std::vector<PoolGroup> groups;
    for (auto& task : per_task)
        for (auto& g : task) groups.push_back(std::move(g));
    return groups;
}

// Partial rows of the tuples of a group (nodes dep_pos, two or more) whose first configs are
// rep[0..tn): row j = the sum (double, in node order) into sum + j * h and, when mx is not null,
// the max into mx + j * h of the nodes' rows at config rep[j]. Walks node by node, so tuples that
// share a node's class read its row once.
SEGRANK_SIMD_CLONES
void partial_block(double* __restrict sum, float* __restrict mx, const ClassRows& in,
                   std::span<const int32_t> dep_pos, const int32_t* rep, int64_t tn) {
    const int64_t h = in.h;
    const int64_t row_bytes = h * static_cast<int64_t>(sizeof(float));
    constexpr int64_t kAhead = 8;
    size_t ai = 0;
    int64_t aj = 0;
    const auto prefetch = [&]() {
        if (ai >= dep_pos.size()) return;
        const char* q = reinterpret_cast<const char*>(in.row(dep_pos[ai], rep[aj]));
        for (int64_t b = 0; b < row_bytes; b += 64) __builtin_prefetch(q + b);
        if (++aj == tn) aj = 0, ++ai;
    };
    for (int64_t t = 0; t < kAhead; ++t) prefetch();
    for (int64_t j = 0; j < tn; ++j) {
        prefetch();
        const float* __restrict r = in.row(dep_pos[0], rep[j]);
        for (int64_t c = 0; c < h; ++c) sum[j * h + c] = r[c];
        if (mx)
            for (int64_t c = 0; c < h; ++c) mx[j * h + c] = r[c];
    }
    for (size_t i = 1; i < dep_pos.size(); ++i) {
        for (int64_t j = 0; j < tn; ++j) {
            prefetch();
            const float* __restrict r = in.row(dep_pos[i], rep[j]);
            double* __restrict s = sum + j * h;
            if (!mx) {
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

// What a config of a window reads for one group: row ids[k] of the class rows (rows, a node's
// classes in uniq, float, stride floats apart) or of the partial rows (psum double, pmax float, H
// apart) when psum is not null.
struct GroupView {
    const int32_t* ids = nullptr;
    const float* rows = nullptr;
    const double* psum = nullptr;
    const float* pmax = nullptr;
    int64_t stride = 0;
};

// For the block of kn configs k0.. of a class readout: for each group of groups in order, config j
// adds its group row into sum + j * h and (with_max) takes the max into mx + j * h.
SEGRANK_SIMD_CLONES
void pool_group_block(double* __restrict sum, float* __restrict mx,
                      std::span<const GroupView> groups, int64_t h, int64_t k0, int64_t kn,
                      bool with_max) {
    // The rows are scattered over uniq (hundreds of MB at the last layer) and the partial rows:
    // keep kAhead rows of the walk in flight, across group boundaries.
    constexpr int64_t kAhead = 8;
    size_t ai = 0;
    int64_t aj = 0;
    const auto prefetch = [&]() {
        if (ai >= groups.size()) return;
        const GroupView& g = groups[ai];
        const int64_t id = g.ids[k0 + aj];
        if (g.psum) {
            const char* q = reinterpret_cast<const char*>(g.psum + id * h);
            for (int64_t b = 0; b < h * static_cast<int64_t>(sizeof(double)); b += 64)
                __builtin_prefetch(q + b);
            if (with_max) {
                q = reinterpret_cast<const char*>(g.pmax + id * h);
                for (int64_t b = 0; b < h * static_cast<int64_t>(sizeof(float)); b += 64)
                    __builtin_prefetch(q + b);
            }
        } else {
            const char* q = reinterpret_cast<const char*>(g.rows + id * g.stride);
            for (int64_t b = 0; b < h * static_cast<int64_t>(sizeof(float)); b += 64)
                __builtin_prefetch(q + b);
        }
        if (++aj == kn) aj = 0, ++ai;
    };
    for (int64_t t = 0; t < kAhead; ++t) prefetch();
    for (const GroupView& g : groups) {
        const int32_t* ids = g.ids + k0;
        if (g.psum) {
            for (int64_t j = 0; j < kn; ++j) {
                prefetch();
                const double* __restrict r = g.psum + static_cast<int64_t>(ids[j]) * h;
                double* __restrict s = sum + j * h;
                if (!with_max) {  // readout "mean"
#pragma omp simd
                    for (int64_t c = 0; c < h; ++c) s[c] += r[c];
                    continue;
                }
                const float* __restrict rm = g.pmax + static_cast<int64_t>(ids[j]) * h;
                float* __restrict m = mx + j * h;
#pragma omp simd
                for (int64_t c = 0; c < h; ++c) {
                    s[c] += r[c];
                    m[c] = rm[c] > m[c] ? rm[c] : m[c];
                }
            }
            continue;
        }
        for (int64_t j = 0; j < kn; ++j) {
            prefetch();
            const float* __restrict r = g.rows + static_cast<int64_t>(ids[j]) * g.stride;
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

}  // namespace

void mixed_readout_forward(MatrixView out, std::span<int32_t> argmax, int64_t num_pooled,
                           const MixedRows& in) {
    check_state("mixed_readout_forward", in);
    check_readout("mixed_readout_forward", out, argmax, true, num_pooled, in.pos.size(), in.k,
                  in.h);
    readout_forward(out, argmax, num_pooled, in);
}

// The grouped class readout: (1) group_pooled_nodes numbers the class tuples of runs of pooled dep
// nodes; (2) per window of groups, partial_block sums (and maxes) each distinct tuple's rows once;
// (3) blocks of 32 configs add, group by group in node order, their tuple's partial row (a lone
// node: its class row) onto the base pool's sum and max. A config's sum is thus the dense readout's
// terms, with each group's terms summed among themselves first.
void class_readout_forward(MatrixView out, int64_t num_pooled, const ClassRows& in,
                           ClassReadoutStats* stats) {
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
    const std::vector<PoolGroup> groups = group_pooled_nodes(in, dep_pos);
    if (stats) {
        *stats = ClassReadoutStats{};
        stats->dense_adds = static_cast<int64_t>(dep_pos.size()) * k_configs;
        stats->groups = static_cast<int64_t>(groups.size());
        stats->adds = stats->groups * k_configs;
        for (const PoolGroup& g : groups) {
            if (g.ids.empty()) continue;
            stats->grouped_nodes += g.end - g.begin;
            stats->partial_rows += g.tuples;
            stats->adds += g.tuples * (g.end - g.begin);
        }
    }
    // Windows of consecutive groups holding at most K partial rows (at least one group; one empty
    // window when no pooled node is dependent). With more than one window the running sums of the
    // configs wait in acc and their maxima in out's max half.
    const int64_t budget = std::max<int64_t>(k_configs, 1);
    std::vector<double> acc;
    std::vector<double> psum;
    std::vector<float> pmax;
    std::vector<int64_t> prow;  // partial row offset of each window group, then the total
    std::vector<GroupView> views;
    std::vector<std::pair<size_t, int64_t>> items;  // (group, first tuple) of partial-row work
    size_t g0 = 0;
    do {
        size_t g1 = g0;
        int64_t rows = 0;
        for (; g1 < groups.size(); ++g1) {
            const int64_t r = groups[g1].ids.empty() ? 0 : groups[g1].tuples;
            if (g1 > g0 && rows + r > budget) break;
            rows += r;
        }
        const bool first = g0 == 0, last = g1 == groups.size();
        if (!(first && last) && acc.empty()) acc.resize(static_cast<size_t>(k_configs * h));
        // Partial sum (and max) of every tuple of the window's groups, from its first config.
        prow.assign(1, 0);
        for (size_t g = g0; g < g1; ++g)
            prow.push_back(prow.back() + (groups[g].ids.empty() ? 0 : groups[g].tuples));
        psum.resize(static_cast<size_t>(rows * h));
        pmax.resize(with_max ? static_cast<size_t>(rows * h) : 0);
        // Work items of up to kBlock tuples of one group.
        constexpr int64_t kBlock = 32;
        items.clear();
        for (size_t g = g0; g < g1; ++g)
            if (!groups[g].ids.empty())
                for (int64_t t0 = 0; t0 < groups[g].tuples; t0 += kBlock) items.push_back({g, t0});
        parallel_for(0, static_cast<int64_t>(items.size()), 1, [&](int64_t i0, int64_t i1) {
            for (int64_t i = i0; i < i1; ++i) {
                const auto [g, t0] = items[static_cast<size_t>(i)];
                const PoolGroup& gr = groups[g];
                const int64_t r = prow[g - g0] + t0;
                partial_block(
                    psum.data() + r * h, with_max ? pmax.data() + r * h : nullptr, in,
                    std::span<const int32_t>(dep_pos).subspan(
                        static_cast<size_t>(gr.begin), static_cast<size_t>(gr.end - gr.begin)),
                    gr.rep.data() + t0, std::min(kBlock, gr.tuples - t0));
            }
        });
        views.clear();
        for (size_t g = g0; g < g1; ++g) {
            const PoolGroup& gr = groups[g];
            GroupView v;
            if (gr.ids.empty()) {
                const int32_t p = dep_pos[static_cast<size_t>(gr.begin)];
                v.ids = in.cls.data() + static_cast<size_t>(p) * static_cast<size_t>(k_configs);
                v.rows = in.uniq.data + in.off[static_cast<size_t>(p)] * in.uniq.stride;
                v.stride = in.uniq.stride;
            } else {
                v.ids = gr.ids.data();
                v.psum = psum.data() + prow[g - g0] * h;
                v.pmax = with_max ? pmax.data() + prow[g - g0] * h : nullptr;
                v.stride = h;
            }
            views.push_back(v);
        }
        // Blocks of kBlock configs, each walking the window's groups in node order: a group's rows
        // are read once per block instead of once per config, and the block's sums stay in cache.
        const int64_t blocks = (k_configs + kBlock - 1) / kBlock;
        parallel_for(0, blocks, 1, [&](int64_t b0, int64_t b1) {
            std::vector<double> sum(static_cast<size_t>(kBlock * h));
            std::vector<float> mx(static_cast<size_t>(kBlock * h));
            for (int64_t b = b0; b < b1; ++b) {
                const int64_t k0 = b * kBlock, kn = std::min(kBlock, k_configs - k0);
                for (int64_t j = 0; j < kn; ++j) {
                    double* s = sum.data() + j * h;
                    float* m = mx.data() + j * h;
                    if (first) {
                        std::copy(bp.sum.begin(), bp.sum.end(), s);
                        std::copy(bp.max.begin(), bp.max.end(), m);
                    } else {
                        std::copy_n(acc.data() + (k0 + j) * h, h, s);
                        if (with_max) std::copy_n(out.row(k0 + j) + h, h, m);
                    }
                }
                pool_group_block(sum.data(), mx.data(), views, h, k0, kn, with_max);
                for (int64_t j = 0; j < kn; ++j) {
                    const double* s = sum.data() + j * h;
                    const float* m = mx.data() + j * h;
                    float* o = out.row(k0 + j);
                    if (last) {
                        for (int64_t c = 0; c < h; ++c) o[c] = static_cast<float>(s[c] * inv_n);
                    } else {
                        std::copy_n(s, h, acc.data() + (k0 + j) * h);
                    }
                    if (with_max) std::copy_n(m, h, o + h);
                }
            }
        });
        g0 = g1;
        if (stats) ++stats->windows;
    } while (g0 < groups.size());
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
