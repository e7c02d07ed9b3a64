// The grouped class readout: OpenMP over tuple blocks and config blocks, so every written row has
// exactly one writer; bodies never throw (shapes checked before the loops).
#include "gnn/ops/class_readout.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "gnn/core/op_timer.h"
#include "gnn/core/parallel.h"
#include "gnn/ops/readout_common.h"
#include "gnn/ops/tuple_table.h"

namespace segrank {

namespace {

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

// Adds row r (h floats) into the double sums s and, when m is not null, into the running maxima m
// (inlined into every SIMD clone of its callers).
[[gnu::always_inline]] inline void add_row(const float* __restrict r, double* __restrict s,
                                           float* __restrict m, int64_t h) {
    if (!m) {
#pragma omp simd
        for (int64_t c = 0; c < h; ++c) s[c] += r[c];
        return;
    }
#pragma omp simd
    for (int64_t c = 0; c < h; ++c) {
        s[c] += r[c];
        m[c] = r[c] > m[c] ? r[c] : m[c];
    }
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
            add_row(in.row(dep_pos[i], rep[j]), sum + j * h, mx ? mx + j * h : nullptr, h);
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
            // with_max false: readout "mean"
            add_row(g.rows + static_cast<int64_t>(ids[j]) * g.stride, sum + j * h,
                    with_max ? mx + j * h : nullptr, h);
        }
    }
}

// Configs per block of the pooling pass, and tuples per work item of the partial-row pass.
constexpr int64_t kBlock = 32;

void check_class_readout(MatrixView out, int64_t num_pooled, const ClassRows& in) {
    SEGRANK_CHECK(
        in.uniq.cols == in.h && (in.base.rows == 0 || in.base.cols == in.h) &&
            in.cls.size() == (in.off.empty() ? 0 : in.off.size() - 1) * static_cast<size_t>(in.k),
        "class_readout_forward: uniq [", in.uniq.rows, ", ", in.uniq.cols, "], ", in.cls.size(),
        " classes for ", in.off.size(), " offsets, K=", in.k, " H=", in.h);
    check_readout("class_readout_forward", out, {}, false, num_pooled, in.pos.size(), in.k, in.h);
}

// The work of a readout over `groups` of dep_nodes pooled dep nodes, K configs (windows: 0).
ClassReadoutStats readout_work(const std::vector<PoolGroup>& groups, size_t dep_nodes,
                               int64_t k_configs) {
    ClassReadoutStats stats;
    stats.dense_adds = static_cast<int64_t>(dep_nodes) * k_configs;
    stats.groups = static_cast<int64_t>(groups.size());
    stats.adds = stats.groups * k_configs;
    for (const PoolGroup& g : groups) {
        if (g.ids.empty()) continue;
        stats.grouped_nodes += g.end - g.begin;
        stats.partial_rows += g.tuples;
        stats.adds += g.tuples * (g.end - g.begin);
    }
    return stats;
}

// The buffers of the windows, reused from one window to the next. With more than one window the
// running sums of the configs wait in acc ([K, H]) and their maxima in out's max half.
struct WindowState {
    std::vector<double> acc;
    std::vector<double> psum;   // [partial rows, H] of the window
    std::vector<float> pmax;    // [partial rows, H] of the window (mean_max only)
    std::vector<int64_t> prow;  // partial row offset of each window group, then the total
    std::vector<GroupView> views;
    std::vector<std::pair<size_t, int64_t>> items;  // (group, first tuple) of partial-row work
};

// The end g1 of the window of consecutive groups from g0 holding at most budget partial rows (at
// least one group); rows = its partial rows.
size_t window_end(const std::vector<PoolGroup>& groups, size_t g0, int64_t budget, int64_t& rows) {
    size_t g1 = g0;
    rows = 0;
    for (; g1 < groups.size(); ++g1) {
        const int64_t r = groups[g1].ids.empty() ? 0 : groups[g1].tuples;
        if (g1 > g0 && rows + r > budget) break;
        rows += r;
    }
    return g1;
}

// Partial sum (and max) of every tuple of the groups [g0, g1), from its first config, into
// ws.psum / ws.pmax at the rows ws.prow gives each group.
void sum_partial_rows(const ClassRows& in, std::span<const int32_t> dep_pos,
                      const std::vector<PoolGroup>& groups, size_t g0, size_t g1, int64_t rows,
                      bool with_max, WindowState& ws) {
    const int64_t h = in.h;
    ws.prow.assign(1, 0);
    for (size_t g = g0; g < g1; ++g)
        ws.prow.push_back(ws.prow.back() + (groups[g].ids.empty() ? 0 : groups[g].tuples));
    ws.psum.resize(static_cast<size_t>(rows * h));
    ws.pmax.resize(with_max ? static_cast<size_t>(rows * h) : 0);
    // Work items of up to kBlock tuples of one group.
    ws.items.clear();
    for (size_t g = g0; g < g1; ++g)
        if (!groups[g].ids.empty())
            for (int64_t t0 = 0; t0 < groups[g].tuples; t0 += kBlock) ws.items.push_back({g, t0});
    parallel_for(0, static_cast<int64_t>(ws.items.size()), 1, [&](int64_t i0, int64_t i1) {
        for (int64_t i = i0; i < i1; ++i) {
            const auto [g, t0] = ws.items[static_cast<size_t>(i)];
            const PoolGroup& gr = groups[g];
            const int64_t r = ws.prow[g - g0] + t0;
            partial_block(ws.psum.data() + r * h, with_max ? ws.pmax.data() + r * h : nullptr, in,
                          dep_pos.subspan(static_cast<size_t>(gr.begin),
                                          static_cast<size_t>(gr.end - gr.begin)),
                          gr.rep.data() + t0, std::min(kBlock, gr.tuples - t0));
        }
    });
}

// What each group of [g0, g1) reads per config into ws.views: a lone node its class rows, a group
// of two or more its partial rows (sum_partial_rows).
void window_views(const ClassRows& in, std::span<const int32_t> dep_pos,
                  const std::vector<PoolGroup>& groups, size_t g0, size_t g1, bool with_max,
                  WindowState& ws) {
    const int64_t h = in.h, k_configs = in.k;
    ws.views.clear();
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
            v.psum = ws.psum.data() + ws.prow[g - g0] * h;
            v.pmax = with_max ? ws.pmax.data() + ws.prow[g - g0] * h : nullptr;
            v.stride = h;
        }
        ws.views.push_back(v);
    }
}

// Blocks of kBlock configs, each walking the window's groups (ws.views) in node order: a group's
// rows are read once per block instead of once per config, and the block's sums stay in cache.
// The first window starts from the base pool, later ones from ws.acc and out's max half; the last
// writes the mean (sum * inv_n) into out, the others their sums into ws.acc.
void pool_window(MatrixView out, const BasePool& bp, int64_t k_configs, int64_t h, bool first,
                 bool last, bool with_max, double inv_n, WindowState& ws) {
    const int64_t blocks = (k_configs + kBlock - 1) / kBlock;
    std::vector<double>& acc = ws.acc;
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
            pool_group_block(sum.data(), mx.data(), ws.views, h, k0, kn, with_max);
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
}

}  // namespace

// The grouped class readout: (1) group_pooled_nodes numbers the class tuples of runs of pooled dep
// nodes; (2) per window of groups, partial_block sums (and maxes) each distinct tuple's rows once;
// (3) blocks of 32 configs add, group by group in node order, their tuple's partial row (a lone
// node: its class row) onto the base pool's sum and max. A config's sum is thus the dense readout's
// terms, with each group's terms summed among themselves first.
void class_readout_forward(MatrixView out, int64_t num_pooled, const ClassRows& in,
                           ClassReadoutStats* stats) {
    const OpScope op_scope(OpCategory::kGatherScatter);
    check_class_readout(out, num_pooled, in);
    const int64_t h = in.h, k_configs = in.k;
    const bool with_max = out.cols == 2 * h;
    const BasePool bp = pool_base(in.base, in.pos, num_pooled, h);
    std::vector<int32_t> dep_pos(bp.dep_nodes.size());
    for (size_t i = 0; i < dep_pos.size(); ++i) dep_pos[i] = in.pos[bp.dep_nodes[i]];
    const double inv_n = 1.0 / static_cast<double>(num_pooled);
    const std::vector<PoolGroup> groups = group_pooled_nodes(in, dep_pos);
    if (stats) *stats = readout_work(groups, dep_pos.size(), k_configs);
    // Windows of consecutive groups holding at most K partial rows (one empty window when no pooled
    // node is dependent).
    const int64_t budget = std::max<int64_t>(k_configs, 1);
    WindowState ws;
    size_t g0 = 0;
    do {
        int64_t rows = 0;
        const size_t g1 = window_end(groups, g0, budget, rows);
        const bool first = g0 == 0, last = g1 == groups.size();
        if (!(first && last) && ws.acc.empty()) ws.acc.resize(static_cast<size_t>(k_configs * h));
        sum_partial_rows(in, dep_pos, groups, g0, g1, rows, with_max, ws);
        window_views(in, dep_pos, groups, g0, g1, with_max, ws);
        pool_window(out, bp, k_configs, h, first, last, with_max, inv_n, ws);
        g0 = g1;
        if (stats) ++stats->windows;
    } while (g0 < groups.size());
}

}  // namespace segrank
