// The additive readout (docs/model.md#additive-head): the MLP head runs on every pooled node's
// last-layer row and a segment's value for config k is the sum of those per-node contributions,
// c[v, k] = head(h_L[v, k]), value_k = sum_v c[v, k]. Under score_sum the segments' values add up
// to the graph's sum over all nodes, so a HistoryTable entry is an exact partial sum. A node
// independent of the config at layer L has one row and so one contribution for every config: it is
// computed once (K = 1) and added to every config's sum.
#include <algorithm>
#include <vector>

#include "gnn/model.h"
#include "gnn/ops/mixed_rows.h"

namespace segrank {

namespace {

// The pooled nodes independent at layer L (pos < 0), ascending. Throws segrank::Error when the
// pooled dep nodes are not the first dep positions (the plan lists nodes ascending, so they are).
std::vector<int32_t> pooled_independent(std::span<const int32_t> pos, int64_t num_pooled,
                                        int64_t& pooled_dep) {
    SEGRANK_CHECK(num_pooled >= 1 && num_pooled <= static_cast<int64_t>(pos.size()),
                  "additive readout: num_pooled = ", num_pooled, " outside [1, ", pos.size(), "]");
    std::vector<int32_t> indep;
    pooled_dep = 0;
    for (int32_t v = 0; v < num_pooled; ++v) {
        if (pos[static_cast<size_t>(v)] < 0) {
            indep.push_back(v);
            continue;
        }
        SEGRANK_ASSERT(pos[static_cast<size_t>(v)] == pooled_dep,
                       "additive readout: pooled dep nodes are not the first dep rows");
        ++pooled_dep;
    }
    return indep;
}

// Sum of the head over the base rows of `nodes` (one contribution each), in node order; the
// head's state goes to saved when non-null.
double base_contribution(const MlpHead& head, const ParamStore& params, ConstMatrixView base,
                         const std::vector<int32_t>& nodes, int64_t h, MlpHead::Saved* saved) {
    const auto r = static_cast<int64_t>(nodes.size());
    if (r == 0) return 0.0;
    SEGRANK_CHECK(base.data && base.cols == h,
                  "additive readout: independent pooled nodes but no base rows of width ", h);
    Tensor x = Tensor::uninit(r, h), c(r);
    for (int64_t j = 0; j < r; ++j)
        std::copy_n(base.row(nodes[static_cast<size_t>(j)]), h, x.data() + j * h);
    head.forward(params, c.span(), x.cview(), saved);
    double s = 0.0;
    for (int64_t j = 0; j < r; ++j) s += c[j];
    return s;
}

}  // namespace

void Model::additive_forward(MatrixView out, int64_t num_pooled, const MixedRows& rows,
                             EncodeSaved* st) const {
    const int64_t k = rows.k, h = rows.h;
    SEGRANK_CHECK(out.rows == k && out.cols == 1 && h == cfg_.hidden, "additive readout: out [",
                  out.rows, ", ", out.cols, "] for K = ", k, " (expected [K, 1]), rows of width ",
                  h, " (expected H = ", cfg_.hidden, ")");
    int64_t mp = 0;
    std::vector<int32_t> indep = pooled_independent(rows.pos, num_pooled, mp);
    std::vector<double> acc(
        static_cast<size_t>(k),
        base_contribution(head_, params_, rows.base, indep, h, st ? &st->additive_base : nullptr));
    if (mp > 0) {
        SEGRANK_CHECK(rows.dep.stride == k * h && rows.dep.rows >= mp,
                      "additive readout: dep rows are not [m, K*H]");
        // Row p * K + k of the [m * K, H] dep rows is (dep node p, config k).
        Tensor c(mp * k);
        head_.forward(params_, c.span(), ConstMatrixView(rows.dep.data, mp * k, h, h),
                      st ? &st->additive_dep : nullptr);
        for (int64_t p = 0; p < mp; ++p)
            for (int64_t i = 0; i < k; ++i) acc[static_cast<size_t>(i)] += c[p * k + i];
    } else if (st) {
        st->additive_dep = MlpHead::Saved{};
    }
    for (int64_t i = 0; i < k; ++i) out.at(i, 0) = static_cast<float>(acc[static_cast<size_t>(i)]);
    if (st) st->additive_nodes = std::move(indep);
}

void Model::additive_backward(const MixedGrads& din, ConstMatrixView dout, EncodeSaved& st) {
    const int64_t k = din.k, h = din.h;
    SEGRANK_CHECK(dout.rows == k && dout.cols == 1, "additive readout backward: dout [", dout.rows,
                  ", ", dout.cols, "], expected [", k, ", 1]");
    const auto r = static_cast<int64_t>(st.additive_nodes.size());
    if (r > 0) {
        // An independent node's one contribution is in every config's sum.
        double total = 0.0;
        for (int64_t i = 0; i < k; ++i) total += dout.at(i, 0);
        const std::vector<float> dc(static_cast<size_t>(r), static_cast<float>(total));
        Tensor dx(r, h);
        head_.backward(params_, dx.view(), dc, st.additive_base);
        for (int64_t j = 0; j < r; ++j) {
            float* d = din.dbase.row(st.additive_nodes[static_cast<size_t>(j)]);
            const float* s = dx.data() + j * h;
            for (int64_t c = 0; c < h; ++c) d[c] += s[c];
        }
    }
    const int64_t rows = st.additive_dep.x.rows();
    if (rows > 0) {
        std::vector<float> dc(static_cast<size_t>(rows));
        for (int64_t i = 0; i < rows; ++i) dc[static_cast<size_t>(i)] = dout.at(i % k, 0);
        head_.backward(params_, MatrixView{din.ddep.data, rows, h, h}, dc, st.additive_dep);
    }
    st.additive_base = MlpHead::Saved{};
    st.additive_dep = MlpHead::Saved{};
    st.additive_nodes.clear();
}

void Model::additive_forward_classes(MatrixView out, int64_t num_pooled,
                                     const ClassRows& rows) const {
    const int64_t k = rows.k, h = rows.h;
    SEGRANK_CHECK(out.rows == k && out.cols == 1 && h == cfg_.hidden, "additive readout: out [",
                  out.rows, ", ", out.cols, "] for K = ", k, " (expected [K, 1]), rows of width ",
                  h, " (expected H = ", cfg_.hidden, ")");
    int64_t mp = 0;
    const std::vector<int32_t> indep = pooled_independent(rows.pos, num_pooled, mp);
    std::vector<double> acc(static_cast<size_t>(k),
                            base_contribution(head_, params_, rows.base, indep, h, nullptr));
    if (mp > 0) {
        // The distinct rows of the pooled dep nodes are rows off[0] .. off[mp] of uniq: the head
        // runs once per distinct row, each config adds its class's contribution.
        const int64_t u0 = rows.off[0], u = rows.off[static_cast<size_t>(mp)] - u0;
        Tensor c(u);
        if (u > 0)
            head_.forward(params_, c.span(),
                          ConstMatrixView(rows.uniq.row(u0), u, h, rows.uniq.stride), nullptr);
        for (int64_t p = 0; p < mp; ++p) {
            const float* cp = c.data() + (rows.off[static_cast<size_t>(p)] - u0);
            const int32_t* cls = rows.cls.data() + p * k;
            for (int64_t i = 0; i < k; ++i) acc[static_cast<size_t>(i)] += cp[cls[i]];
        }
    }
    for (int64_t i = 0; i < k; ++i) out.at(i, 0) = static_cast<float>(acc[static_cast<size_t>(i)]);
}

}  // namespace segrank
