// Model::encode_dedupe: inference with each distinct row of every layer computed once
// (docs/model.md#row-deduplication). A layout config sets a handful of values per configurable
// node; across K configs a node takes few distinct values (the real layout files: at most 8), so
// the row of node v at layer l, a function of the values inside its l-hop receptive field, takes
// far fewer than K distinct values. Rows are grouped into classes per (node, layer):
// - layer 0: configs whose values (and layout feature row) at the node are equal bytes share a
//   class; the input layer runs on K' = max classes pseudo-configs, pseudo-config c holding class
//   c's values at every node;
// - layer l: the class of (v, k) is the tuple of layer l-1 classes of v and of its dependent
//   operands and users at config k (exact: a mixed-radix integer, renumbered when it would
//   overflow 64 bits), so equal classes have equal inputs and hence equal rows.
// Each class computes its row once from a representative config, with the arithmetic of the dense
// kernels (mixed_spmm_forward's sums in adjacency order, the same GEMMs and epilogues).
#include <algorithm>
#include <cstring>
#include <limits>
#include <vector>

#include "gnn/core/hash.h"
#include "gnn/core/parallel.h"
#include "gnn/core/rng.h"
#include "gnn/model.h"
#include "gnn/ops/class_readout.h"
#include "gnn/ops/matmul.h"
#include "gnn/ops/mixed_rows.h"

namespace segrank {

namespace {

// Open-addressed table numbering distinct keys in order of first occurrence; reused across nodes
// (a generation stamp clears it in O(1)).
class ClassTable {
public:
    // Classes of keys 0..k-1: cls[i] in [0, U), first[c] = the first i of class c; returns U.
    // hash(i) -> uint64_t; same(i, j) -> whether keys i and j are equal (called only when their
    // hashes are).
    template <class Hash, class Same>
    int32_t number(int64_t k, const Hash& hash, const Same& same, int32_t* cls,
                   std::vector<int32_t>& first) {
        reset(k);
        first.clear();
        for (int64_t i = 0; i < k; ++i) {
            const uint64_t hv = hash(i);
            size_t slot = static_cast<size_t>(mix64(hv)) & mask_;
            for (;;) {
                if (stamp_[slot] != gen_) {
                    stamp_[slot] = gen_;
                    hash_[slot] = hv;
                    id_[slot] = static_cast<int32_t>(first.size());
                    first.push_back(static_cast<int32_t>(i));
                    cls[i] = id_[slot];
                    break;
                }
                if (hash_[slot] == hv && same(i, first[static_cast<size_t>(id_[slot])])) {
                    cls[i] = id_[slot];
                    break;
                }
                slot = (slot + 1) & mask_;
            }
        }
        return static_cast<int32_t>(first.size());
    }

private:
    void reset(int64_t k) {
        size_t cap = 16;
        while (cap < static_cast<size_t>(2 * k)) cap <<= 1;
        if (cap != stamp_.size()) {
            stamp_.assign(cap, 0);
            hash_.resize(cap);
            id_.resize(cap);
            mask_ = cap - 1;
            gen_ = 0;
        }
        if (++gen_ == 0) {  // wrapped: clear for real
            std::fill(stamp_.begin(), stamp_.end(), 0u);
            gen_ = 1;
        }
    }

    std::vector<uint32_t> stamp_;
    std::vector<uint64_t> hash_;
    std::vector<int32_t> id_;
    size_t mask_ = 0;
    uint32_t gen_ = 0;
};

// One layer's deduplicated dep rows: row (p, k) = uniq[off[p] + cls[p * K + k]]; rep[off[p] + c]
// is the config whose inputs class c's row was computed from.
struct ClassLayer {
    Tensor uniq;                 // [U, H]
    std::vector<int64_t> off;    // [m + 1]
    std::vector<int32_t> count;  // [m]
    std::vector<int32_t> cls;    // [m * K]
    std::vector<int32_t> rep;    // [U]

    ClassRows view(ConstMatrixView base, std::span<const int32_t> pos, int64_t k, int64_t h) const {
        ClassRows r;
        r.base = base;
        r.uniq = uniq.cview();
        r.off = off;
        r.count = count;
        r.cls = cls;
        r.pos = pos;
        r.k = k;
        r.h = h;
        return r;
    }
    int64_t unique_rows() const {
        int64_t u = 0;
        for (int32_t c : count) u += c;
        return u;
    }
};

// d[c] += s[c] (the mixed kernels' elementwise sums).
SEGRANK_SIMD_CLONES
void add_to(float* __restrict d, const float* __restrict s, int64_t n) {
    for (int64_t c = 0; c < n; ++c) d[c] += s[c];
}

// Row of node u at the previous layer for config k: its dep row or its base row.
inline const float* prev_row(const ClassRows& prev, int32_t u, int64_t k) {
    const int32_t q = prev.pos[u];
    return q >= 0 ? prev.row(q, k) : prev.base.row(u);
}

// The operand (or user) mean of node v for config k, as mixed_spmm_forward computes it for one k
// slice: dep rows summed in adjacency order, base rows into a separate sum, then scaled.
void neighbour_mean(float* o, float* bacc, int32_t v, const Csr& adj, std::span<const float> inv,
                    const ClassRows& prev, int64_t k) {
    const int64_t h = prev.h;
    std::memset(o, 0, sizeof(float) * static_cast<size_t>(h));
    std::memset(bacc, 0, sizeof(float) * static_cast<size_t>(h));
    bool any_base = false;
    for (int32_t u : adj.row(v)) {
        const int32_t q = prev.pos[u];
        if (q >= 0) {
            add_to(o, prev.row(q, k), h);
        } else {
            add_to(bacc, prev.base.row(u), h);
            any_base = true;
        }
    }
    const float s = inv[v];
    if (any_base)
        for (int64_t c = 0; c < h; ++c) o[c] = (o[c] + bacc[c]) * s;
    else
        for (int64_t c = 0; c < h; ++c) o[c] *= s;
}

// Classes of layer l's dep nodes from layer l-1's (prev): cls, count and, in rep_tmp [m * K], the
// first config of each class at p * K + c.
void classify_layer(std::span<const int32_t> nodes, const Csr& operands, const Csr& users,
                    const ClassRows& prev, int64_t k, std::vector<int32_t>& cls,
                    std::vector<int32_t>& count, std::vector<int32_t>& rep_tmp) {
    const auto m = static_cast<int64_t>(nodes.size());
    cls.resize(static_cast<size_t>(m * k));
    count.resize(static_cast<size_t>(m));
    rep_tmp.resize(static_cast<size_t>(m * k));
    parallel_for(0, m, 8, [&](int64_t p0, int64_t p1) {
        std::vector<uint64_t> key(static_cast<size_t>(k));
        std::vector<int32_t> tmp(static_cast<size_t>(k)), first;
        ClassTable table;
        // Renumbers key to dense classes (exact: keys are exact integers); returns their count.
        auto renumber = [&]() {
            const int32_t u = table.number(
                k, [&](int64_t i) { return key[static_cast<size_t>(i)]; },
                [&](int64_t i, int64_t j) {
                    return key[static_cast<size_t>(i)] == key[static_cast<size_t>(j)];
                },
                tmp.data(), first);
            for (int64_t i = 0; i < k; ++i)
                key[static_cast<size_t>(i)] = tmp[static_cast<size_t>(i)];
            return static_cast<uint64_t>(u);
        };
        for (int64_t p = p0; p < p1; ++p) {
            const int32_t v = nodes[static_cast<size_t>(p)];
            std::fill(key.begin(), key.end(), uint64_t{0});
            uint64_t radix = 1;  // key values are below radix
            auto fold = [&](int32_t u) {
                const int32_t q = prev.pos[u];
                if (q < 0) return;  // base row: the same for every config
                const auto nq = static_cast<uint64_t>(prev.count[static_cast<size_t>(q)]);
                if (nq <= 1) return;
                if (radix > std::numeric_limits<uint64_t>::max() / nq) radix = renumber();
                const int32_t* c = prev.cls.data() + static_cast<size_t>(q) * k;
                for (int64_t i = 0; i < k; ++i)
                    key[static_cast<size_t>(i)] =
                        key[static_cast<size_t>(i)] * nq + static_cast<uint64_t>(c[i]);
                radix *= nq;
            };
            fold(v);
            for (int32_t u : operands.row(v)) fold(u);
            for (int32_t u : users.row(v)) fold(u);
            int32_t* out = cls.data() + static_cast<size_t>(p) * k;
            const int32_t n = table.number(
                k, [&](int64_t i) { return key[static_cast<size_t>(i)]; },
                [&](int64_t i, int64_t j) {
                    return key[static_cast<size_t>(i)] == key[static_cast<size_t>(j)];
                },
                out, first);
            count[static_cast<size_t>(p)] = n;
            std::copy(first.begin(), first.end(), rep_tmp.begin() + p * k);
        }
    });
}

// Throws segrank::Error unless in.config_values is [K, nc, 18] and, with layout byte features
// (mf > 0), in.layout_features is [K, nc, mf].
void check_dedupe_input(const SegmentInput& in, int64_t mf) {
    const int64_t k = in.k, nc = static_cast<int64_t>(in.config_node_local.size());
    SEGRANK_CHECK(static_cast<int64_t>(in.config_values.size()) == k * nc * kLayoutConfigDim,
                  "segment input: config_values has ", in.config_values.size(),
                  " values, expected K x nc x 18 = ", k, " x ", nc, " x 18");
    SEGRANK_CHECK(mf == 0 || static_cast<int64_t>(in.layout_features.size()) == k * nc * mf,
                  "segment input: model.layout_bytes / layout_access is on but "
                  "layout_features has ",
                  in.layout_features.size(), " values, expected K x nc x ", mf, " = ", k, " x ", nc,
                  " x ", mf);
}

// Layer-0 classes of the configurable nodes (slots j < nc) over the K configs: configs whose values
// (and layout feature row, mf > 0) at the slot are equal bytes share a class.
struct SlotClasses {
    std::vector<int32_t> cls;    // [nc * K]: class of config k at slot j is cls[j * K + k]
    std::vector<int32_t> count;  // [nc] classes per slot
    std::vector<int32_t> rep;    // [nc * K]: the first config of class c of slot j at j * K + c
};

SlotClasses classify_slots(const SegmentInput& in, int64_t mf) {
    const int64_t k = in.k, nc = static_cast<int64_t>(in.config_node_local.size());
    SlotClasses sc{std::vector<int32_t>(static_cast<size_t>(nc * k)),
                   std::vector<int32_t>(static_cast<size_t>(nc)),
                   std::vector<int32_t>(static_cast<size_t>(nc * k))};
    parallel_for(0, nc, 8, [&](int64_t j0, int64_t j1) {
        ClassTable table;
        std::vector<int32_t> first;
        const size_t vb = kLayoutConfigDim, fb = static_cast<size_t>(mf) * sizeof(float);
        for (int64_t j = j0; j < j1; ++j) {
            auto vals = [&](int64_t i) { return in.config_values.data() + (i * nc + j) * vb; };
            auto feats = [&](int64_t i) { return in.layout_features.data() + (i * nc + j) * mf; };
            const int32_t u = table.number(
                k,
                [&](int64_t i) {
                    const uint64_t a = fnv1a(vals(i), vb);
                    return mf > 0 ? mix64(a ^ fnv1a(feats(i), fb)) : a;
                },
                [&](int64_t i, int64_t r) {
                    return std::memcmp(vals(i), vals(r), vb) == 0 &&
                           (mf == 0 || std::memcmp(feats(i), feats(r), fb) == 0);
                },
                sc.cls.data() + j * k, first);
            sc.count[static_cast<size_t>(j)] = u;
            std::copy(first.begin(), first.end(), sc.rep.begin() + j * k);
        }
    });
    return sc;
}

// The K' = max classes pseudo-configs of the input layer: pseudo-config c holds, at slot j, the
// values (and layout feature row) of class min(c, U_j - 1)'s first config.
struct PseudoConfigs {
    int64_t k = 1;                // K'
    std::vector<int8_t> values;   // [K', nc, 18]
    std::vector<float> features;  // [K', nc, mf]
};

PseudoConfigs pseudo_configs(const SegmentInput& in, const SlotClasses& sc, int64_t mf) {
    const int64_t k = in.k, nc = static_cast<int64_t>(in.config_node_local.size());
    PseudoConfigs pc;
    for (int32_t u : sc.count) pc.k = std::max<int64_t>(pc.k, u);
    const int64_t kp = pc.k;
    pc.values.resize(static_cast<size_t>(kp * nc * kLayoutConfigDim));
    pc.features.resize(static_cast<size_t>(kp * nc * mf));
    for (int64_t c = 0; c < kp; ++c)
        for (int64_t j = 0; j < nc; ++j) {
            const int64_t cj = std::min<int64_t>(c, sc.count[static_cast<size_t>(j)] - 1);
            const int64_t r = sc.rep[static_cast<size_t>(j * k + cj)];
            std::memcpy(pc.values.data() + (c * nc + j) * kLayoutConfigDim,
                        in.config_values.data() + (r * nc + j) * kLayoutConfigDim,
                        kLayoutConfigDim);
            if (mf > 0)
                std::memcpy(pc.features.data() + (c * nc + j) * mf,
                            in.layout_features.data() + (r * nc + j) * mf,
                            sizeof(float) * static_cast<size_t>(mf));
        }
    return pc;
}

// The class layer of layer 0 from the input layer's dep rows dep0 [m * K', H] over the pseudo
// configs (nodes: the dep nodes of layer 0): class c of node p is row p * K' + c; a dep node that
// is not configurable has one class (the zero code) for every config.
ClassLayer input_class_layer(const SegmentInput& in, std::span<const int32_t> nodes,
                             const SlotClasses& sc, Tensor dep0, int64_t kp) {
    const int64_t k = in.k, n = in.num_nodes();
    const int64_t nc = static_cast<int64_t>(in.config_node_local.size());
    const auto m = static_cast<int64_t>(nodes.size());
    std::vector<int32_t> slot(static_cast<size_t>(n), -1);
    for (int64_t j = 0; j < nc; ++j) slot[in.config_node_local[j]] = static_cast<int32_t>(j);
    ClassLayer cur;
    cur.uniq = std::move(dep0);
    cur.off.resize(static_cast<size_t>(m + 1));
    cur.count.resize(static_cast<size_t>(m));
    cur.cls.resize(static_cast<size_t>(m * k));
    for (int64_t p = 0; p < m; ++p) {
        cur.off[static_cast<size_t>(p)] = p * kp;
        const int32_t j = slot[nodes[static_cast<size_t>(p)]];
        int32_t* c = cur.cls.data() + p * k;
        if (j < 0) {  // a dependent node that is not configurable: the zero code for every k
            std::fill(c, c + k, 0);
            cur.count[static_cast<size_t>(p)] = 1;
        } else {
            std::copy_n(sc.cls.data() + j * k, k, c);
            cur.count[static_cast<size_t>(p)] = sc.count[static_cast<size_t>(j)];
        }
    }
    cur.off[static_cast<size_t>(m)] = m * kp;
    return cur;
}

// The classes of layer l's dep nodes from layer l-1's (prev): cls, count, off and rep; uniq is left
// empty (class_layer_rows fills it). rep_tmp: scratch, reused across layers.
ClassLayer next_class_layer(std::span<const int32_t> nodes, const SegmentInput& in,
                            const ClassRows& prev, std::vector<int32_t>& rep_tmp) {
    const int64_t k = in.k;
    const auto m = static_cast<int64_t>(nodes.size());
    ClassLayer next;
    classify_layer(nodes, *in.operands, *in.users, prev, k, next.cls, next.count, rep_tmp);
    next.off.resize(static_cast<size_t>(m + 1));
    next.off[0] = 0;
    for (int64_t p = 0; p < m; ++p)
        next.off[static_cast<size_t>(p + 1)] =
            next.off[static_cast<size_t>(p)] + next.count[static_cast<size_t>(p)];
    const int64_t u = next.off[static_cast<size_t>(m)];
    next.rep.resize(static_cast<size_t>(u));
    for (int64_t p = 0; p < m; ++p)
        std::copy_n(rep_tmp.begin() + p * k, next.count[static_cast<size_t>(p)],
                    next.rep.begin() + next.off[static_cast<size_t>(p)]);
    return next;
}

// The class rows next.uniq [U, H] of SAGE layer conv: the three inputs of every class row from its
// representative config (the rows of prev, the dense kernels' sums), then the layer's GEMMs and
// epilogue over the U rows.
void class_layer_rows(const ParamStore& ps, const SageConv& conv, const SegmentInput& in,
                      std::span<const int32_t> nodes, const ClassRows& prev, ClassLayer& next) {
    const int64_t h = prev.h, m = static_cast<int64_t>(nodes.size());
    const int64_t u = next.off[static_cast<size_t>(m)];
    Tensor self = Tensor::uninit(u, h), af = Tensor::uninit(u, h), ab = Tensor::uninit(u, h);
    const auto inv_f = in.operands->inverse_degrees();
    const auto inv_b = in.users->inverse_degrees();
    parallel_for(0, m, 16, [&](int64_t p0, int64_t p1) {
        std::vector<float> bacc(static_cast<size_t>(h));
        for (int64_t p = p0; p < p1; ++p) {
            const int32_t v = nodes[static_cast<size_t>(p)];
            for (int64_t r = next.off[static_cast<size_t>(p)];
                 r < next.off[static_cast<size_t>(p + 1)]; ++r) {
                const int64_t kr = next.rep[static_cast<size_t>(r)];
                std::memcpy(self.data() + r * h, prev_row(prev, v, kr),
                            sizeof(float) * static_cast<size_t>(h));
                neighbour_mean(af.data() + r * h, bacc.data(), v, *in.operands, inv_f, prev, kr);
                neighbour_mean(ab.data() + r * h, bacc.data(), v, *in.users, inv_b, prev, kr);
            }
        }
    });
    next.uniq = Tensor::uninit(u, h);
    if (u > 0) {
        MatrixView out = next.uniq.view();
        linear_forward(out, self.cview(), ps.value(conv.w_self), ps.value(conv.bias).data);
        linear_forward(out, af.cview(), ps.value(conv.w_fwd), nullptr, true);
        linear_forward(out, ab.cview(), ps.value(conv.w_bwd), nullptr, true);
        af = Tensor();
        ab = Tensor();
        conv.forward_epilogue(ps, out, self.cview(), nullptr, nullptr);
    }
}

}  // namespace

bool Model::dedupes(const SegmentInput& in) const {
    return cfg_.task == Task::kLayout && !attn() && in.k > 1;
}

Tensor Model::encode_dedupe(const SegmentInput& in, const EncodeBase* cached, DedupeStats* stats) {
    if (!dedupes(in)) {
        if (stats) *stats = DedupeStats{};
        return encode(in, nullptr, false, nullptr, cached);
    }
    const int64_t layers = cfg_.layers, h = cfg_.hidden, k = in.k;
    EncodeSaved st;
    st.plan = plan(in);  // validates the input
    if (cached) check_cached(st.plan, *cached);
    st.cached = cached;
    const DependencePlan& pl = st.plan;
    if (stats) {
        stats->dense_rows.assign(static_cast<size_t>(layers + 1), 0);
        stats->unique_rows.assign(static_cast<size_t>(layers + 1), 0);
    }
    // Layer 0: classes of each configurable node's (values, layout feature row) over the K configs;
    // the input layer runs on the K' pseudo-configs.
    const int64_t mf = cfg_.layout_feature_width();
    check_dedupe_input(in, mf);
    const SlotClasses sc = classify_slots(in, mf);
    const PseudoConfigs pc = pseudo_configs(in, sc, mf);
    SegmentInput in2 = in;
    in2.k = pc.k;
    in2.config_values = pc.values;
    in2.layout_features = mf > 0 ? std::span<const float>(pc.features) : std::span<const float>();
    st.input = in2;
    st.base.resize(static_cast<size_t>(layers + 1));
    st.dep.resize(static_cast<size_t>(layers + 1));
    input_forward(in2, pl, st);
    st.pre_base = Tensor();
    st.pre_dep = Tensor();
    st.x_cfg = Tensor();
    st.cfg_features = Tensor();
    st.emb = Tensor();
    ClassLayer cur = input_class_layer(in, pl.nodes[0], sc, std::move(st.dep[0]), pc.k);
    if (stats) {
        stats->dense_rows[0] = static_cast<int64_t>(pl.nodes[0].size()) * k;
        stats->unique_rows[0] = cur.unique_rows();
    }
    auto base_view = [&](int64_t l) -> ConstMatrixView {
        const Tensor& b =
            cached ? cached->base[static_cast<size_t>(l)] : st.base[static_cast<size_t>(l)];
        return b.size() > 0 ? b.cview() : ConstMatrixView{};
    };
    std::vector<int32_t> rep_tmp;
    for (int64_t l = 1; l <= layers; ++l) {
        const std::vector<int32_t>& nodes = pl.nodes[l];
        if (need_base(pl, l) && !cached)
            base_layer_forward(in2, pl, l, st.base[l - 1].cview(), st.base[l], nullptr, nullptr,
                               nullptr);
        const ClassRows prev = cur.view(base_view(l - 1), pl.pos[l - 1], k, h);
        ClassLayer next = next_class_layer(nodes, in, prev, rep_tmp);
        class_layer_rows(params_, convs_[static_cast<size_t>(l - 1)], in, nodes, prev, next);
        if (stats) {
            stats->dense_rows[static_cast<size_t>(l)] = static_cast<int64_t>(nodes.size()) * k;
            stats->unique_rows[static_cast<size_t>(l)] = next.off.back();
        }
        cur = std::move(next);
        if (!cached) st.base[static_cast<size_t>(l - 1)] = Tensor();
    }
    Tensor readout(k, cfg_.readout_width());
    const ClassRows last = cur.view(base_view(layers), pl.pos[static_cast<size_t>(layers)], k, h);
    class_readout_forward(readout.view(), in.num_pooled, last);
    return readout;
}

}  // namespace segrank
