// Model input layer (h0 = act(W_in [x_feat, x_op, x_cfg] + b), docs/model.md#input-layer) and score
// head, fwd + bwd. W_in is one parameter used through column-sliced views (W_feat | W_op | W_cfg):
// the config-independent part P = W_feat x + W_op e + b is computed once per node and broadcast
// over the K config rows.
#include <cstring>

#include "gnn/model.h"
#include "gnn/ops/embedding.h"
#include "gnn/ops/matmul.h"
#include "gnn/ops/pointwise.h"

namespace segrank {

namespace {
// Column block [c0, c0 + cols) of a row-major matrix view.
ConstMatrixView cols_of(ConstMatrixView m, int64_t c0, int64_t cols) {
    return {m.data + c0, m.rows, cols, m.stride};
}
MatrixView cols_of(MatrixView m, int64_t c0, int64_t cols) {
    return {m.data + c0, m.rows, cols, m.stride};
}
}  // namespace

Tensor Model::input_projection(const SegmentInput& in, Tensor& emb) const {
    const int64_t n = in.num_nodes(), h = cfg_.hidden, f = cfg_.feat_dim, od = cfg_.opcode_dim;
    ConstMatrixView w = params_.value(w_in_);
    emb = Tensor(n, od);
    opcode_.forward(params_, emb.view(), in.opcode);
    Tensor p(n, h);  // P = W_feat x + W_op e + b
    linear_forward(p.view(), in.node_feat, cols_of(w, 0, f), params_.value(b_in_).data);
    linear_forward(p.view(), emb.cview(), cols_of(w, f, od), nullptr, true);
    return p;
}

void Model::input_base(const Tensor& p, Tensor& pre_base, Tensor& base0) const {
    const int64_t n = p.rows(), h = cfg_.hidden, f = cfg_.feat_dim, od = cfg_.opcode_dim,
                  cd = cfg_.config_dim;
    pre_base = p.clone();
    if (early()) {  // base rows see the zero one-hot: x_cfg = config bias (layout only reaches
                    // here)
        ConstMatrixView w = params_.value(w_in_);
        Tensor c0(1, cd), u(1, h);
        std::memcpy(c0.data(), layout_cfg_.zero_code(params_).data(),
                    sizeof(float) * static_cast<size_t>(cd));
        linear_forward(u.view(), c0.cview(), cols_of(w, f + od, cd), nullptr);
        for (int64_t v = 0; v < n; ++v)
            for (int64_t c = 0; c < h; ++c) pre_base.at(v, c) += u[c];
    }
    base0 = Tensor(n, h);
    activation_forward(base0.view(), pre_base.cview(), cfg_.activation);
}

void Model::input_forward(const SegmentInput& in, const DependencePlan& plan,
                          EncodeSaved& st) const {
    const int64_t n = in.num_nodes(), h = cfg_.hidden, k = in.k, f = cfg_.feat_dim,
                  od = cfg_.opcode_dim, cd = cfg_.config_dim;
    const std::vector<int32_t>& nodes = plan.nodes[0];
    const int64_t m = static_cast<int64_t>(nodes.size());
    ConstMatrixView w = params_.value(w_in_);
    Tensor p_local;  // P, unless read from st.cached
    if (st.cached) {
        SEGRANK_CHECK(st.cached->input_p.rows() == n && st.cached->input_p.cols() == h,
                      "Model::encode: cached P is [", st.cached->input_p.rows(), ", ",
                      st.cached->input_p.cols(), "], expected [", n, ", ", h, "]");
    } else {
        p_local = input_projection(in, st.emb);
        if (need_base(plan, 0)) input_base(p_local, st.pre_base, st.base[0]);
    }
    const Tensor& p = st.cached ? st.cached->input_p : p_local;
    st.pre_dep = Tensor(m * k, h);
    if (m > 0) {
        if (cfg_.task == Task::kTile) {
            if (early()) {
                st.tile_code = Tensor(k, cd);
                tile_cfg_.forward(params_, st.tile_code.view(), in.tile_config);
                add_tile_cost(st.tile_code.view(), in.tile_cost);
                linear_forward(st.pre_dep.view().rows_range(0, k), st.tile_code.cview(),
                               cols_of(w, f + od, cd), nullptr);
                for (int64_t i = 1; i < m; ++i)
                    std::memcpy(st.pre_dep.data() + i * k * h, st.pre_dep.data(),
                                sizeof(float) * static_cast<size_t>(k * h));
            }
        } else {
            // Layout: configurable dep rows get their encoded values, the others the zero code
            // (bias).
            const int64_t nc = static_cast<int64_t>(in.config_node_local.size());
            std::vector<int32_t> slot(static_cast<size_t>(n), -1);
            for (int64_t j = 0; j < nc; ++j)
                slot[in.config_node_local[j]] = static_cast<int32_t>(j);
            const int64_t mf = cfg_.layout_feature_width();
            const bool mm = mf > 0;
            SEGRANK_CHECK(!mm || static_cast<int64_t>(in.layout_features.size()) == k * nc * mf,
                          "segment input: model.layout_bytes / layout_access is "
                          "on but layout_features has ",
                          in.layout_features.size(), " values, expected K x nc x ", mf, " = ", k,
                          " x ", nc, " x ", mf);
            st.cfg_rows.clear();
            st.cfg_values.clear();
            std::vector<float> feats;
            for (int64_t i = 0; i < m; ++i) {
                const int32_t j = slot[nodes[i]];
                if (j < 0) continue;
                for (int64_t kk = 0; kk < k; ++kk) {
                    st.cfg_rows.push_back(i * k + kk);
                    const int8_t* src = in.config_values.data() + (kk * nc + j) * kLayoutConfigDim;
                    st.cfg_values.insert(st.cfg_values.end(), src, src + kLayoutConfigDim);
                    if (mm) {
                        const float* ms = in.layout_features.data() + (kk * nc + j) * mf;
                        feats.insert(feats.end(), ms, ms + mf);
                    }
                }
            }
            const auto rows = static_cast<int64_t>(st.cfg_rows.size());
            Tensor codes(rows, cd);
            layout_cfg_.forward(params_, codes.view(), st.cfg_values);
            if (mm && rows > 0) {  // code += W_mm x_bytes
                st.cfg_features = Tensor::uninit(rows, mf);
                std::memcpy(st.cfg_features.data(), feats.data(), sizeof(float) * feats.size());
                layout_feat_.forward(params_, codes.view(), st.cfg_features.cview(), true);
            }
            st.x_cfg = Tensor(m * k, cd);
            const auto c0 = layout_cfg_.zero_code(params_);
            for (int64_t r = 0; r < m * k; ++r)
                std::memcpy(st.x_cfg.data() + r * cd, c0.data(),
                            sizeof(float) * static_cast<size_t>(cd));
            for (size_t t = 0; t < st.cfg_rows.size(); ++t)
                std::memcpy(st.x_cfg.data() + st.cfg_rows[t] * cd,
                            codes.data() + static_cast<int64_t>(t) * cd,
                            sizeof(float) * static_cast<size_t>(cd));
            linear_forward(st.pre_dep.view(), st.x_cfg.cview(), cols_of(w, f + od, cd), nullptr);
        }
        for (int64_t i = 0; i < m; ++i) {
            const float* pv = p.data() + nodes[i] * h;
            for (int64_t kk = 0; kk < k; ++kk) {
                float* row = st.pre_dep.data() + (i * k + kk) * h;
                for (int64_t c = 0; c < h; ++c) row[c] += pv[c];
            }
        }
    }
    st.dep[0] = Tensor(m * k, h);
    activation_forward(st.dep[0].view(), st.pre_dep.cview(), cfg_.activation);
}

void Model::input_backward(const EncodeSaved& st, ConstMatrixView dbase, ConstMatrixView ddep) {
    const SegmentInput& in = st.input;
    const int64_t n = in.num_nodes(), h = cfg_.hidden, k = in.k, f = cfg_.feat_dim,
                  od = cfg_.opcode_dim, cd = cfg_.config_dim;
    const std::vector<int32_t>& nodes = st.plan.nodes[0];
    const int64_t m = static_cast<int64_t>(nodes.size());
    ConstMatrixView w = params_.value(w_in_);
    MatrixView dw = params_.grad(w_in_);
    Tensor dp(n, h);
    Tensor dpre_dep(m * k, h);
    if (m > 0) activation_backward(dpre_dep.view(), ddep, st.pre_dep.cview(), cfg_.activation);
    if (need_base(st.plan, 0)) {
        activation_backward(dp.view(), dbase, st.pre_base.cview(), cfg_.activation);
        if (early()) {  // pre_base += W_cfg c0: c0 is the layout config bias
            std::vector<float> s(static_cast<size_t>(h), 0.0f);
            for (int64_t v = 0; v < n; ++v)
                for (int64_t c = 0; c < h; ++c) s[c] += dp.at(v, c);
            const auto c0 = layout_cfg_.zero_code(params_);
            float* dbias = params_.grad(layout_cfg_.linear.bias).data;
            for (int64_t c = 0; c < h; ++c)
                for (int64_t j = 0; j < cd; ++j) {
                    dw.at(c, f + od + j) += s[c] * c0[j];
                    dbias[j] += s[c] * w.at(c, f + od + j);
                }
        }
    }
    if (m > 0) {
        for (int64_t i = 0; i < m; ++i) {
            float* d = dp.data() + nodes[i] * h;
            for (int64_t kk = 0; kk < k; ++kk) {
                const float* g = dpre_dep.data() + (i * k + kk) * h;
                for (int64_t c = 0; c < h; ++c) d[c] += g[c];
            }
        }
        if (cfg_.task == Task::kTile && early()) {
            Tensor dq(k, h), dcode(k, cd);
            for (int64_t i = 0; i < m; ++i)
                for (int64_t r = 0; r < k * h; ++r) dq[r] += dpre_dep[i * k * h + r];
            linear_backward(dcode.view(), cols_of(dw, f + od, cd), nullptr, dq.cview(),
                            st.tile_code.cview(), cols_of(w, f + od, cd));
            tile_cfg_.backward(params_, in.tile_config, dcode.cview());
            if (tile_cost()) cost_.backward(params_, MatrixView{}, dcode.cview(), in.tile_cost);
        } else if (cfg_.task == Task::kLayout) {
            Tensor dx(m * k, cd);
            linear_backward(dx.view(), cols_of(dw, f + od, cd), nullptr, dpre_dep.cview(),
                            st.x_cfg.cview(), cols_of(w, f + od, cd));
            Tensor dcodes(static_cast<int64_t>(st.cfg_rows.size()), cd);
            std::vector<char> is_cfg(static_cast<size_t>(m * k), 0);
            for (size_t t = 0; t < st.cfg_rows.size(); ++t) {
                is_cfg[st.cfg_rows[t]] = 1;
                std::memcpy(dcodes.data() + static_cast<int64_t>(t) * cd,
                            dx.data() + st.cfg_rows[t] * cd,
                            sizeof(float) * static_cast<size_t>(cd));
            }
            float* dbias = params_.grad(layout_cfg_.linear.bias).data;
            for (int64_t r = 0; r < m * k; ++r)
                if (!is_cfg[r])
                    for (int64_t j = 0; j < cd; ++j) dbias[j] += dx.at(r, j);
            layout_cfg_.backward(params_, st.cfg_values, dcodes.cview());
            if (cfg_.layout_feature_width() > 0 && dcodes.rows() > 0)
                layout_feat_.backward(params_, MatrixView{}, dcodes.cview(),
                                      st.cfg_features.cview());
        }
    }
    Tensor demb(n, od);
    linear_backward(MatrixView{}, cols_of(dw, 0, f), params_.grad(b_in_).data, dp.cview(),
                    in.node_feat, cols_of(w, 0, f));
    linear_backward(demb.view(), cols_of(dw, f, od), nullptr, dp.cview(), st.emb.cview(),
                    cols_of(w, f, od));
    opcode_.backward(params_, in.opcode, demb.cview());
}

void Model::add_tile_cost(MatrixView code, ConstMatrixView cost) const {
    if (!tile_cost()) return;
    SEGRANK_CHECK(cost.rows == code.rows && cost.cols == kTileCostFeatures,
                  "segment input: model.tile_cost_features is on but tile_cost is [", cost.rows,
                  ", ", cost.cols, "], expected [K=", code.rows, ", ", kTileCostFeatures,
                  "] (the graph was prepared without the option?)");
    cost_.forward(params_, code, cost, /*accumulate=*/true);
}

Tensor Model::head(ConstMatrixView readout, ConstMatrixView tile_config, HeadSaved* saved,
                   ConstMatrixView tile_cost) const {
    const int64_t k = readout.rows, h2 = cfg_.readout_width();
    SEGRANK_CHECK(readout.cols == h2, "Model::head: readout has ", readout.cols,
                  " columns, expected W = ", h2, " (model.readout = \"", to_string(cfg_.readout),
                  "\")");
    Tensor scores(k);
    if (early()) {
        head_.forward(params_, scores.span(), readout, saved ? &saved->mlp : nullptr);
        return scores;
    }
    SEGRANK_CHECK(tile_config.rows == k && tile_config.cols == kTileConfigDim,
                  "Model::head (late join): tile_config [", tile_config.rows, ", ",
                  tile_config.cols, "], expected [", k, ", 24]");
    const int64_t cd = cfg_.config_dim;
    Tensor x(k, h2 + cd);
    for (int64_t i = 0; i < k; ++i)
        std::memcpy(x.data() + i * (h2 + cd), readout.row(i),
                    sizeof(float) * static_cast<size_t>(h2));
    tile_cfg_.forward(params_, cols_of(x.view(), h2, cd), tile_config);
    add_tile_cost(cols_of(x.view(), h2, cd), tile_cost);
    head_.forward(params_, scores.span(), x.cview(), saved ? &saved->mlp : nullptr);
    if (saved) {
        saved->tile_config = Tensor(k, kTileConfigDim);
        for (int64_t i = 0; i < k; ++i)
            std::memcpy(saved->tile_config.data() + i * kTileConfigDim, tile_config.row(i),
                        sizeof(float) * kTileConfigDim);
        saved->tile_cost = Tensor();
        if (this->tile_cost()) {
            saved->tile_cost = Tensor(k, kTileCostFeatures);
            for (int64_t i = 0; i < k; ++i)
                std::memcpy(saved->tile_cost.data() + i * kTileCostFeatures, tile_cost.row(i),
                            sizeof(float) * kTileCostFeatures);
        }
    }
    return scores;
}

void Model::head_backward(std::span<const float> dscores, const HeadSaved& saved,
                          MatrixView dreadout) {
    const int64_t k = saved.mlp.x.rows(), in = saved.mlp.x.cols(), h2 = cfg_.readout_width();
    Tensor dx(k, in);
    head_.backward(params_, dx.view(), dscores, saved.mlp);
    if (dreadout.data) {
        SEGRANK_CHECK(dreadout.rows == k && dreadout.cols == h2, "Model::head_backward: dreadout [",
                      dreadout.rows, ", ", dreadout.cols, "], expected [", k, ", ", h2, "]");
        add_inplace(dreadout, cols_of(dx.cview(), 0, h2));
    }
    if (!early()) {
        tile_cfg_.backward(params_, saved.tile_config.cview(),
                           cols_of(dx.cview(), h2, cfg_.config_dim));
        if (tile_cost())
            cost_.backward(params_, MatrixView{}, cols_of(dx.cview(), h2, cfg_.config_dim),
                           saved.tile_cost.cview());
    }
}

}  // namespace segrank
