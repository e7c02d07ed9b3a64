// Model::encode / encode_backward: the SAGE stack over the two-part layer state
// (docs/model.md#config-independence): base rows [n, H] (K = 1, for config-independent nodes) and
// dep rows [m_l * K, H] for the nodes within l hops of a configurable node. A layer's dep rows are
// computed projection first (docs/model.md#projection-first): the weights multiply the dep rows of
// layer l-1, the mixed kernels sum the products over neighbours, and a per-node config-independent
// part (K = 1) is added. A base row is only ever read by base rows (an independent node's
// neighbours are independent one layer earlier), so base rows are computed only for the nodes
// independent at that layer (BaseSubset).
#include <cstring>
#include <utility>
#include <vector>

#include "gnn/core/op_timer.h"
#include "gnn/core/parallel.h"
#include "gnn/dep_linear.h"
#include "gnn/model.h"
#include "gnn/ops/mixed_rows.h"
#include "gnn/ops/spmm.h"

namespace segrank {

namespace {

// The base rows of layer l: st.cached's when inference reads them from a cache, else st.base[l].
const Tensor& base_rows(const EncodeSaved& st, int64_t l) {
    return st.cached ? st.cached->base[static_cast<size_t>(l)] : st.base[static_cast<size_t>(l)];
}

MixedRows rows_of(const EncodeSaved& st, int64_t l, int64_t k, int64_t h) {
    MixedRows r;
    if (base_rows(st, l).size() > 0) r.base = base_rows(st, l).cview();
    const int64_t m = static_cast<int64_t>(st.plan.nodes[l].size());
    r.dep = ConstMatrixView(st.dep[l].data(), m, k * h, k * h);
    r.pos = st.plan.pos[l];
    r.k = k;
    r.h = h;
    return r;
}

MixedGrads grads_of(Tensor& dbase, Tensor& ddep, const DependencePlan& plan, int64_t l, int64_t k,
                    int64_t h) {
    MixedGrads g;
    if (dbase.size() > 0) g.dbase = dbase.view();
    const int64_t m = static_cast<int64_t>(plan.nodes[l].size());
    g.ddep = MatrixView{ddep.data(), m, k * h, k * h};
    g.pos = plan.pos[l];
    g.k = k;
    g.h = h;
    return g;
}

MatrixView as_wide(Tensor& t, int64_t m, int64_t k, int64_t h) {
    return {t.data(), m, k * h, k * h};
}

uint64_t layer_seed(uint64_t seed, int64_t l) {
    return mix64(seed ^ (0x632be59bd9b4e019ULL * static_cast<uint64_t>(l + 1)));
}

// The self input of layer l's dep rows [m*K, H]: the previous dep rows themselves when the node set
// did not grow (D_{l-1} is a subset of D_l, so equal sizes mean the same sorted list), else
// gathered into buf.
ConstMatrixView dep_self(const EncodeSaved& st, int64_t l, int64_t k, int64_t h, Tensor& buf) {
    const std::vector<int32_t>& nodes = st.plan.nodes[l];
    const int64_t m = static_cast<int64_t>(nodes.size());
    if (st.plan.nodes[l - 1].size() == nodes.size()) return st.dep[l - 1].cview();
    if (buf.size() != m * k * h) buf = Tensor::uninit(m * k, h);
    mixed_gather_forward(as_wide(buf, m, k, h), nodes, rows_of(st, l - 1, k, h));
    return ConstMatrixView(buf.data(), m * k, h, h);
}

// The two neighbour means [n, H] of the base rows prev [n, H] (the SAGE layer's base inputs).
void base_inputs(const SegmentInput& in, ConstMatrixView prev, Tensor& agg_fwd, Tensor& agg_bwd) {
    const int64_t n = in.num_nodes();
    const int64_t h = prev.cols;
    agg_fwd = Tensor(n, h);
    agg_bwd = Tensor(n, h);
    spmm_forward(agg_fwd.view(), *in.operands, prev, Reduce::kMean);
    spmm_forward(agg_bwd.view(), *in.users, prev, Reduce::kMean);
}

void base_inputs(const EncodeSaved& st, int64_t l, Tensor& agg_fwd, Tensor& agg_bwd) {
    base_inputs(st.input, st.base[l - 1].cview(), agg_fwd, agg_bwd);
}

// The inputs of a base layer restricted to the nodes independent at layer l (Model::
// base_rows_subset): their self rows and neighbour means of the layer-l-1 base rows, [r, H] each.
// An independent node's neighbours are independent one layer earlier, so every row read is a base
// row.
struct BaseSubset {
    std::vector<int32_t> nodes;  ///< the independent nodes of layer l, ascending
    std::vector<int32_t> none;   ///< [n] all -1: every row read as a base row
    K1Inputs x;                  ///< self, agg_fwd, agg_bwd [r, H]

    BaseSubset(const SegmentInput& in, const DependencePlan& plan, int64_t l,
               ConstMatrixView prev) {
        const std::vector<int32_t>& pos = plan.pos[static_cast<size_t>(l)];
        const int64_t n = static_cast<int64_t>(pos.size()), h = prev.cols;
        for (int32_t v = 0; v < n; ++v)
            if (pos[static_cast<size_t>(v)] < 0) nodes.push_back(v);
        none.assign(static_cast<size_t>(n), -1);
        x = k1_inputs(in, nodes, MixedRows{prev, ConstMatrixView(nullptr, 0, h, h), none, 1, h});
    }
    int64_t size() const { return static_cast<int64_t>(nodes.size()); }
    // out rows of the subset's nodes <- rows [r, H].
    void scatter(ConstMatrixView rows, MatrixView out) const {
        const OpScope op_scope(OpCategory::kGatherScatter);
        parallel_for(0, size(), 256, [&](int64_t r0, int64_t r1) {
            for (int64_t i = r0; i < r1; ++i)
                std::memcpy(out.row(nodes[static_cast<size_t>(i)]), rows.row(i),
                            sizeof(float) * static_cast<size_t>(rows.cols));
        });
    }
    // rows [r, H] <- out rows of the subset's nodes.
    void gather(ConstMatrixView full, MatrixView rows) const {
        const OpScope op_scope(OpCategory::kGatherScatter);
        parallel_for(0, size(), 256, [&](int64_t r0, int64_t r1) {
            for (int64_t i = r0; i < r1; ++i)
                std::memcpy(rows.row(i), full.row(nodes[static_cast<size_t>(i)]),
                            sizeof(float) * static_cast<size_t>(rows.cols));
        });
    }
    // Adjoint of the inputs: d_base [n, H] (layer l-1) += the gradients of self, agg_fwd, agg_bwd.
    void backward(const SegmentInput& in, MatrixView d_base, ConstMatrixView d_self,
                  ConstMatrixView d_fwd, ConstMatrixView d_bwd) const {
        const int64_t h = d_base.cols;
        MixedGrads g;
        g.dbase = d_base;
        g.ddep = MatrixView{nullptr, 0, h, h};
        g.pos = none;
        g.k = 1;
        g.h = h;
        std::vector<int32_t> out_pos(none.size(), -1);
        for (size_t i = 0; i < nodes.size(); ++i)
            out_pos[static_cast<size_t>(nodes[i])] = static_cast<int32_t>(i);
        k1_inputs_backward(in, nodes, out_pos, g, d_self, d_fwd, d_bwd);
    }
};

}  // namespace

int64_t EncodeBase::memory_bytes() const {
    int64_t b = input_p.size() * static_cast<int64_t>(sizeof(float));
    for (const Tensor& t : base) b += t.size() * static_cast<int64_t>(sizeof(float));
    for (const auto& v : plan.nodes) b += static_cast<int64_t>(v.size() * sizeof(int32_t));
    for (const auto& v : plan.pos) b += static_cast<int64_t>(v.size() * sizeof(int32_t));
    return b;
}

int64_t Model::encode_base_bytes(int64_t n) const {
    const int64_t h = cfg_.hidden, levels = cfg_.layers + 1;
    const int64_t tensors = levels + 1;
    return tensors * n * h * static_cast<int64_t>(sizeof(float)) +
           levels * 2 * n * static_cast<int64_t>(sizeof(int32_t));
}

void Model::base_layer_forward(const SegmentInput& in, const DependencePlan& plan, int64_t l,
                               ConstMatrixView prev, Tensor& out, SageConv::Saved* saved,
                               ConfigAttention::Saved* xsaved, const DropoutSpec* ds) const {
    const SageConv& conv = convs_[static_cast<size_t>(l - 1)];
    const int64_t h = cfg_.hidden;
    if (base_rows_subset(plan, l)) {
        const BaseSubset sub(in, plan, l, prev);
        Tensor rows = Tensor::uninit(sub.size(), h);
        DropoutSpec dsr;
        if (ds) dsr = {ds->p, ds->seed, sub.nodes, 1};
        conv.forward(params_, rows.view(), sub.x.self.cview(), sub.x.agg_fwd.cview(),
                     sub.x.agg_bwd.cview(), saved, ds ? &dsr : nullptr);
        if (attn()) xattn_[static_cast<size_t>(l - 1)].forward_base(params_, rows.view(), xsaved);
        out = Tensor(in.num_nodes(), h);
        sub.scatter(rows.cview(), out.view());
        return;
    }
    Tensor af, ab;
    base_inputs(in, prev, af, ab);
    out = Tensor(in.num_nodes(), h);
    conv.forward(params_, out.view(), prev, af.cview(), ab.cview(), saved, ds);
    if (attn()) xattn_[static_cast<size_t>(l - 1)].forward_base(params_, out.view(), xsaved);
}

EncodeBase Model::encode_base(const SegmentInput& in) const {
    EncodeBase b;
    b.plan = plan(in);
    Tensor emb, pre_base;
    b.input_p = input_projection(in, emb);
    b.base.resize(static_cast<size_t>(cfg_.layers + 1));
    if (need_base(b.plan, 0)) input_base(b.input_p, pre_base, b.base[0]);
    for (int64_t l = 1; l <= cfg_.layers; ++l) {
        if (!need_base(b.plan, l)) continue;
        base_layer_forward(in, b.plan, l, b.base[static_cast<size_t>(l - 1)].cview(),
                           b.base[static_cast<size_t>(l)], nullptr, nullptr, nullptr);
    }
    return b;
}

void Model::check_cached(const DependencePlan& p, const EncodeBase& cached) const {
    SEGRANK_CHECK(
        cached.plan.nodes == p.nodes && static_cast<int64_t>(cached.base.size()) == cfg_.layers + 1,
        "Model::encode: the cached base rows are not of this segment");
}

void Model::encode_setup(const SegmentInput& in, EncodeSaved& st, bool training, Rng* rng,
                         const EncodeBase* cached) const {
    st = EncodeSaved{};
    st.plan = plan(in);
    st.input = in;
    st.training = training;
    st.cached = cached;
    if (cached) check_cached(st.plan, *cached);
    if (training && cfg_.dropout > 0.0f) {
        SEGRANK_CHECK(rng, "Model::encode: training with dropout needs an Rng");
        st.dropout_seed = rng->next_u64();
    }
    const int64_t layers = cfg_.layers;
    st.base.resize(static_cast<size_t>(layers + 1));
    st.dep.resize(static_cast<size_t>(layers + 1));
    st.base_conv.resize(static_cast<size_t>(layers));
    st.dep_conv.resize(static_cast<size_t>(layers));
    if (attn()) {
        st.base_xattn.resize(static_cast<size_t>(layers));
        st.dep_xattn.resize(static_cast<size_t>(layers));
    }
}

void Model::dep_layer_forward(EncodeSaved& st, int64_t l, bool keep) const {
    const SegmentInput& in = st.input;
    const SageConv& conv = convs_[static_cast<size_t>(l - 1)];
    const std::vector<int32_t>& nodes = st.plan.nodes[l];
    const int64_t h = cfg_.hidden, k = in.k;
    const bool drop = st.training && cfg_.dropout > 0.0f;
    // z = W_self self + W_fwd mean_operands + W_bwd mean_users + b, projection first, then the
    // fused epilogue with the residual.
    const MixedRows prev = rows_of(st, l - 1, k, h);
    MatrixView out = st.dep[l].view();
    if (drop) {
        dep_linear_forward(params_, conv, in, st.plan, l, prev, out);
        Tensor self_buf;
        ConstMatrixView self = dep_self(st, l, k, h, self_buf);
        DropoutSpec ds{cfg_.dropout, layer_seed(st.dropout_seed, l), nodes, k};
        conv.forward_epilogue(params_, out, self, keep ? &st.dep_conv[l - 1] : nullptr, &ds);
    } else {  // one fused pass over the dep rows after the products (the same bits)
        dep_layer_forward_fused(params_, conv, in, st.plan, l, prev, out,
                                keep ? &st.dep_conv[l - 1] : nullptr);
    }
    // Cross-config attention over each node's K rows (base rows: in base_layer_forward).
    if (attn())
        xattn_[static_cast<size_t>(l - 1)].forward(params_, out, k,
                                                   keep ? &st.dep_xattn[l - 1] : nullptr);
}

void Model::layer_forward(EncodeSaved& st, int64_t l, bool keep) const {
    const SegmentInput& in = st.input;
    const int64_t m = static_cast<int64_t>(st.plan.nodes[l].size());
    const bool drop = st.training && cfg_.dropout > 0.0f;
    if (need_base(st.plan, l) && !st.cached) {
        DropoutSpec ds{cfg_.dropout, layer_seed(st.dropout_seed, l), {}, 1};
        base_layer_forward(in, st.plan, l, st.base[l - 1].cview(), st.base[l],
                           keep ? &st.base_conv[l - 1] : nullptr,
                           keep && attn() ? &st.base_xattn[l - 1] : nullptr, drop ? &ds : nullptr);
    }
    st.dep[l] = Tensor::uninit(m * in.k, cfg_.hidden);
    if (m > 0) dep_layer_forward(st, l, keep);
    if (!keep) {
        st.base[l - 1] = Tensor();
        st.dep[l - 1] = Tensor();
    }
}

Tensor Model::encode(const SegmentInput& in, EncodeSaved* saved, bool training, Rng* rng,
                     const EncodeBase* cached) {
    SEGRANK_CHECK(!cached || (!saved && !training),
                  "Model::encode: cached base rows are for inference only (no saved state, no "
                  "training)");
    EncodeSaved local;
    EncodeSaved& st = saved ? *saved : local;
    const bool keep = saved != nullptr;
    encode_setup(in, st, training, rng, cached);
    const int64_t layers = cfg_.layers, h = cfg_.hidden, k = in.k;
    input_forward(in, st.plan, st);
    if (!keep) {
        st.pre_base = Tensor();
        st.pre_dep = Tensor();
        st.x_cfg = Tensor();
        st.cfg_features = Tensor();
        st.emb = Tensor();
    }
    for (int64_t l = 1; l <= layers; ++l) layer_forward(st, l, keep);
    const int64_t w = cfg_.readout_width();
    Tensor readout(k, w);
    // The max half's argmax (mean_max); the mean readout needs none.
    st.argmax.assign(w == 2 * h ? static_cast<size_t>(k * h) : 0, -1);
    mixed_readout_forward(readout.view(), st.argmax, in.num_pooled, rows_of(st, layers, k, h));
    if (!keep)
        st = EncodeSaved{};
    else
        st.dep[layers] = Tensor(),
        st.base[layers] = Tensor();  // the readout backward needs argmax only
    return readout;
}

void Model::layer_grads(const EncodeSaved& st, int64_t l, Tensor& dbase, Tensor& ddep) const {
    const int64_t n = st.input.num_nodes(), h = cfg_.hidden, k = st.input.k;
    dbase = need_base(st.plan, l) ? Tensor(n, h) : Tensor();
    ddep = Tensor(static_cast<int64_t>(st.plan.nodes[l].size()) * k, h);
}

void Model::attention_backward(EncodeSaved& st, int64_t l, Tensor& dbase, Tensor& ddep) {
    const ConfigAttention& xa = xattn_[static_cast<size_t>(l - 1)];
    if (!st.plan.nodes[l].empty()) xa.backward(params_, ddep.view(), st.dep_xattn[l - 1]);
    if (need_base(st.plan, l) && !base_rows_subset(st.plan, l)) {
        xa.backward_base(params_, dbase.view(), st.base_xattn[l - 1]);
        st.base_xattn[l - 1] = ConfigAttention::Saved{};
    }
    st.dep_xattn[l - 1] = ConfigAttention::Saved{};
}

void Model::dep_layer_backward(EncodeSaved& st, int64_t l, Tensor& ddep, const MixedGrads& pg) {
    const SegmentInput& in = st.input;
    const SageConv& conv = convs_[static_cast<size_t>(l - 1)];
    const std::vector<int32_t>& nodes = st.plan.nodes[l];
    const int64_t m = static_cast<int64_t>(nodes.size()), h = cfg_.hidden, k = in.k;
    const bool drop = st.training && cfg_.dropout > 0.0f;
    // The residual goes to the previous layer and dz overwrites ddep in place (without dropout in
    // one pass that also sums each node's K rows of dz, gnn/ops/dep_fused.h); then per term (self,
    // operand mean, user mean) dY = the adjoint of its sum, dW += dY^T x and dx += dY W
    // (dep_linear_backward).
    const MixedRows prev = rows_of(st, l - 1, k, h);
    if (!drop) {  // residual, epilogue and dz's row sums in one pass (the same bits)
        dep_layer_backward_fused(params_, conv, in, st.plan, l, prev, pg, ddep.view(),
                                 st.dep_conv[l - 1]);
        return;
    }
    mixed_gather_backward(pg, nodes, as_wide(ddep, m, k, h));  // residual
    DropoutSpec ds{cfg_.dropout, layer_seed(st.dropout_seed, l), nodes, k};
    conv.backward_epilogue(params_, ddep.view(), ddep.cview(), st.dep_conv[l - 1], &ds);
    dep_linear_backward(params_, conv, in, st.plan, l, prev, pg,
                        ConstMatrixView(ddep.data(), m * k, h, h));
}

void Model::base_subset_backward(EncodeSaved& st, int64_t l, const Tensor& dbase, Tensor& pbase) {
    const SegmentInput& in = st.input;
    const SageConv& conv = convs_[static_cast<size_t>(l - 1)];
    const int64_t h = cfg_.hidden;
    const bool drop = st.training && cfg_.dropout > 0.0f;
    const BaseSubset sub(in, st.plan, l, st.base[l - 1].cview());
    const int64_t r = sub.size();
    Tensor drows = Tensor::uninit(r, h), dself(r, h), daf(r, h), dab(r, h);
    sub.gather(dbase.cview(), drows.view());
    if (attn()) {  // from d(after attention) to d(the SAGE layer's output), these rows
        xattn_[static_cast<size_t>(l - 1)].backward_base(params_, drows.view(),
                                                         st.base_xattn[l - 1]);
        st.base_xattn[l - 1] = ConfigAttention::Saved{};
    }
    DropoutSpec ds{cfg_.dropout, layer_seed(st.dropout_seed, l), sub.nodes, 1};
    conv.backward(params_, dself.view(), daf.view(), dab.view(), drows.cview(), sub.x.self.cview(),
                  sub.x.agg_fwd.cview(), sub.x.agg_bwd.cview(), st.base_conv[l - 1],
                  drop ? &ds : nullptr);
    sub.backward(in, pbase.view(), dself.cview(), daf.cview(), dab.cview());
}

void Model::base_full_backward(EncodeSaved& st, int64_t l, const Tensor& dbase, Tensor& pbase) {
    const SegmentInput& in = st.input;
    const SageConv& conv = convs_[static_cast<size_t>(l - 1)];
    const int64_t n = in.num_nodes(), h = cfg_.hidden;
    const bool drop = st.training && cfg_.dropout > 0.0f;
    Tensor af, ab;
    base_inputs(st, l, af, ab);
    Tensor daf(n, h), dab(n, h);
    DropoutSpec ds{cfg_.dropout, layer_seed(st.dropout_seed, l), {}, 1};
    conv.backward(params_, pbase.view(), daf.view(), dab.view(), dbase.cview(),
                  st.base[l - 1].cview(), af.cview(), ab.cview(), st.base_conv[l - 1],
                  drop ? &ds : nullptr);
    spmm_backward(pbase.view(), *in.users, daf.cview(), in.operands->inverse_degrees(),
                  Reduce::kMean);
    spmm_backward(pbase.view(), *in.operands, dab.cview(), in.users->inverse_degrees(),
                  Reduce::kMean);
}

void Model::encode_backward(ConstMatrixView dreadout, EncodeSaved& st) {
    const SegmentInput& in = st.input;
    const int64_t layers = cfg_.layers, n = in.num_nodes(), h = cfg_.hidden, k = in.k;
    SEGRANK_CHECK(static_cast<int64_t>(st.dep.size()) == layers + 1 && st.emb.rows() == n,
                  "Model::encode_backward: the saved state is not from a training encode of this "
                  "model (or was "
                  "already consumed by encode_backward)");
    SEGRANK_CHECK(dreadout.rows == k && dreadout.cols == cfg_.readout_width(),
                  "Model::encode_backward: dreadout [", dreadout.rows, ", ", dreadout.cols,
                  "], expected [", k, ", ", cfg_.readout_width(), "]");
    Tensor dbase, ddep;
    layer_grads(st, layers, dbase, ddep);
    mixed_readout_backward(grads_of(dbase, ddep, st.plan, layers, k, h), st.argmax, in.num_pooled,
                           dreadout);
    for (int64_t l = layers; l >= 1; --l) {
        // dbase / ddep: from d(after attention) to d(the SAGE layer's output)
        if (attn()) attention_backward(st, l, dbase, ddep);
        Tensor pbase, pdep;
        layer_grads(st, l - 1, pbase, pdep);
        const MixedGrads pg = grads_of(pbase, pdep, st.plan, l - 1, k, h);
        if (!st.plan.nodes[l].empty()) dep_layer_backward(st, l, ddep, pg);
        // Only the rows of nodes independent at layer l were computed (base_layer_forward).
        if (need_base(st.plan, l) && base_rows_subset(st.plan, l))
            base_subset_backward(st, l, dbase, pbase);
        else if (need_base(st.plan, l))
            base_full_backward(st, l, dbase, pbase);
        dbase = std::move(pbase);
        ddep = std::move(pdep);
        // Layer l is done: its saved LN state and its inputs (layer l-1 rows) are never read again.
        st.dep_conv[l - 1] = SageConv::Saved{};
        st.base_conv[l - 1] = SageConv::Saved{};
        st.dep[l - 1] = Tensor();
        st.base[l - 1] = Tensor();
    }
    input_backward(st, dbase.size() > 0 ? dbase.cview() : ConstMatrixView{}, ddep.cview());
    st.emb = Tensor();  // consumed: a second backward on this state is refused by the check above
}

}  // namespace segrank
