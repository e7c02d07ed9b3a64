// Model::encode / encode_backward: the SAGE stack over the two-part layer state (DESIGN.md 4):
// base rows [n, H] (K = 1, valid for config-independent nodes) and dep rows [m_l * K, H] for the
// nodes within l hops of a configurable node. Layer l reads layer l-1 through the mixed kernels;
// a base row is only ever read by base rows (an independent node's neighbours are independent one
// layer earlier), so base rows of dependent nodes are computed but never used and get zero gradient.
#include <cstring>

#include "gnn/model.h"
#include "gnn/ops/mixed_rows.h"
#include "gnn/ops/spmm.h"

namespace segrank {

namespace {

MixedRows rows_of(const EncodeSaved& st, int64_t l, int64_t k, int64_t h) {
    MixedRows r;
    if (st.base[l].size() > 0) r.base = st.base[l].cview();
    const int64_t m = static_cast<int64_t>(st.plan.nodes[l].size());
    r.dep = ConstMatrixView(st.dep[l].data(), m, k * h, k * h);
    r.pos = st.plan.pos[l];
    r.k = k;
    r.h = h;
    return r;
}

MixedGrads grads_of(Tensor& dbase, Tensor& ddep, const DependencePlan& plan, int64_t l, int64_t k, int64_t h) {
    MixedGrads g;
    if (dbase.size() > 0) g.dbase = dbase.view();
    const int64_t m = static_cast<int64_t>(plan.nodes[l].size());
    g.ddep = MatrixView{ddep.data(), m, k * h, k * h};
    g.pos = plan.pos[l];
    g.k = k;
    g.h = h;
    return g;
}

MatrixView as_wide(Tensor& t, int64_t m, int64_t k, int64_t h) { return {t.data(), m, k * h, k * h}; }

uint64_t layer_seed(uint64_t seed, int64_t l) { return mix64(seed ^ (0x632be59bd9b4e019ULL * static_cast<uint64_t>(l + 1))); }

// The three inputs of one SAGE layer's dep rows: self, operand mean, user mean, each [m*K, H].
struct DepInputs {
    Tensor self_buf;  // empty when self aliases the previous dep rows (same node set)
    ConstMatrixView self;
    Tensor agg_fwd, agg_bwd;
};

DepInputs dep_inputs(const EncodeSaved& st, int64_t l, int64_t k, int64_t h) {
    const SegmentInput& in = st.input;
    const std::vector<int32_t>& nodes = st.plan.nodes[l];
    const int64_t m = static_cast<int64_t>(nodes.size());
    const MixedRows prev = rows_of(st, l - 1, k, h);
    DepInputs d;
    if (st.plan.nodes[l - 1].size() == nodes.size()) {
        d.self = st.dep[l - 1].cview();  // D_{l-1} subset of D_l, equal sizes: same sorted node list
    } else {
        d.self_buf = Tensor(m * k, h);
        mixed_gather_forward(as_wide(d.self_buf, m, k, h), nodes, prev);
        d.self = d.self_buf.cview();
    }
    d.agg_fwd = Tensor(m * k, h);
    d.agg_bwd = Tensor(m * k, h);
    mixed_spmm_forward(as_wide(d.agg_fwd, m, k, h), nodes, *in.operands, prev);
    mixed_spmm_forward(as_wide(d.agg_bwd, m, k, h), nodes, *in.users, prev);
    return d;
}

void base_inputs(const EncodeSaved& st, int64_t l, Tensor& agg_fwd, Tensor& agg_bwd) {
    const int64_t n = st.input.num_nodes();
    const int64_t h = st.base[l - 1].cols();
    agg_fwd = Tensor(n, h);
    agg_bwd = Tensor(n, h);
    spmm_forward(agg_fwd.view(), *st.input.operands, st.base[l - 1].cview(), Reduce::kMean);
    spmm_forward(agg_bwd.view(), *st.input.users, st.base[l - 1].cview(), Reduce::kMean);
}

}  // namespace

Tensor Model::encode(const SegmentInput& in, EncodeSaved* saved, bool training, Rng* rng) {
    EncodeSaved local;
    EncodeSaved& st = saved ? *saved : local;
    const bool keep = saved != nullptr;
    st = EncodeSaved{};
    st.plan = plan(in);
    st.input = in;
    st.training = training;
    const bool drop = training && cfg_.dropout > 0.0f;
    if (drop) {
        SEGRANK_CHECK(rng, "Model::encode: training with dropout needs an Rng");
        st.dropout_seed = rng->next_u64();
    }
    const int64_t layers = cfg_.layers, n = in.num_nodes(), h = cfg_.hidden, k = in.k;
    st.base.resize(static_cast<size_t>(layers + 1));
    st.dep.resize(static_cast<size_t>(layers + 1));
    st.base_conv.resize(static_cast<size_t>(layers));
    st.dep_conv.resize(static_cast<size_t>(layers));
    input_forward(in, st.plan, st);
    if (!keep) {
        st.pre_base = Tensor();
        st.pre_dep = Tensor();
        st.x_cfg = Tensor();
        st.emb = Tensor();
    }

    for (int64_t l = 1; l <= layers; ++l) {
        const SageConv& conv = convs_[static_cast<size_t>(l - 1)];
        const std::vector<int32_t>& nodes = st.plan.nodes[l];
        const int64_t m = static_cast<int64_t>(nodes.size());
        if (st.plan.has_base(l)) {
            Tensor af, ab;
            base_inputs(st, l, af, ab);
            DropoutSpec ds{cfg_.dropout, layer_seed(st.dropout_seed, l), {}, 1};
            st.base[l] = Tensor(n, h);
            conv.forward(params_, st.base[l].view(), st.base[l - 1].cview(), af.cview(), ab.cview(),
                         keep ? &st.base_conv[l - 1] : nullptr, drop ? &ds : nullptr);
        }
        st.dep[l] = Tensor(m * k, h);
        if (m > 0) {
            DepInputs d = dep_inputs(st, l, k, h);
            DropoutSpec ds{cfg_.dropout, layer_seed(st.dropout_seed, l), nodes, k};
            conv.forward(params_, st.dep[l].view(), d.self, d.agg_fwd.cview(), d.agg_bwd.cview(),
                         keep ? &st.dep_conv[l - 1] : nullptr, drop ? &ds : nullptr);
        }
        if (!keep) {
            st.base[l - 1] = Tensor();
            st.dep[l - 1] = Tensor();
        }
    }
    Tensor readout(k, 2 * h);
    st.argmax.assign(static_cast<size_t>(k * h), -1);
    mixed_readout_forward(readout.view(), st.argmax, in.num_pooled, rows_of(st, layers, k, h));
    if (!keep) st = EncodeSaved{};
    return readout;
}

void Model::encode_backward(ConstMatrixView dreadout, const EncodeSaved& st) {
    const SegmentInput& in = st.input;
    const int64_t layers = cfg_.layers, n = in.num_nodes(), h = cfg_.hidden, k = in.k;
    SEGRANK_CHECK(static_cast<int64_t>(st.dep.size()) == layers + 1 && st.emb.rows() == n,
                  "Model::encode_backward: the saved state is not from a training encode of this model");
    SEGRANK_CHECK(dreadout.rows == k && dreadout.cols == 2 * h, "Model::encode_backward: dreadout [", dreadout.rows,
                  ", ", dreadout.cols, "], expected [", k, ", ", 2 * h, "]");
    const bool drop = st.training && cfg_.dropout > 0.0f;
    auto alloc = [&](int64_t l, Tensor& db, Tensor& dd) {
        db = st.plan.has_base(l) ? Tensor(n, h) : Tensor();
        dd = Tensor(static_cast<int64_t>(st.plan.nodes[l].size()) * k, h);
    };
    Tensor dbase, ddep;
    alloc(layers, dbase, ddep);
    mixed_readout_backward(grads_of(dbase, ddep, st.plan, layers, k, h), st.argmax, in.num_pooled, dreadout);

    for (int64_t l = layers; l >= 1; --l) {
        const SageConv& conv = convs_[static_cast<size_t>(l - 1)];
        const std::vector<int32_t>& nodes = st.plan.nodes[l];
        const int64_t m = static_cast<int64_t>(nodes.size());
        Tensor pbase, pdep;
        alloc(l - 1, pbase, pdep);
        MixedGrads pg = grads_of(pbase, pdep, st.plan, l - 1, k, h);
        if (m > 0) {
            DepInputs d = dep_inputs(st, l, k, h);
            Tensor dself(m * k, h), daf(m * k, h), dab(m * k, h);
            DropoutSpec ds{cfg_.dropout, layer_seed(st.dropout_seed, l), nodes, k};
            conv.backward(params_, dself.view(), daf.view(), dab.view(), ddep.cview(), d.self, d.agg_fwd.cview(),
                          d.agg_bwd.cview(), st.dep_conv[l - 1], drop ? &ds : nullptr);
            d = DepInputs{};
            mixed_gather_backward(pg, nodes, as_wide(dself, m, k, h));
            // operands aggregation: adjoint runs over users (= operands^T), scaled by operand degrees.
            mixed_spmm_backward(pg, *in.users, st.plan.pos[l], in.operands->inverse_degrees(), as_wide(daf, m, k, h));
            mixed_spmm_backward(pg, *in.operands, st.plan.pos[l], in.users->inverse_degrees(), as_wide(dab, m, k, h));
        }
        if (st.plan.has_base(l)) {
            Tensor af, ab;
            base_inputs(st, l, af, ab);
            Tensor daf(n, h), dab(n, h);
            DropoutSpec ds{cfg_.dropout, layer_seed(st.dropout_seed, l), {}, 1};
            conv.backward(params_, pbase.view(), daf.view(), dab.view(), dbase.cview(), st.base[l - 1].cview(),
                          af.cview(), ab.cview(), st.base_conv[l - 1], drop ? &ds : nullptr);
            spmm_backward(pbase.view(), *in.users, daf.cview(), in.operands->inverse_degrees(), Reduce::kMean);
            spmm_backward(pbase.view(), *in.operands, dab.cview(), in.users->inverse_degrees(), Reduce::kMean);
        }
        dbase = std::move(pbase);
        ddep = std::move(pdep);
    }
    input_backward(st, dbase.size() > 0 ? dbase.cview() : ConstMatrixView{}, ddep.cview());
}

}  // namespace segrank
