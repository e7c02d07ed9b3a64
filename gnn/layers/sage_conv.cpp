// SAGEConv dense part: three accumulating GEMMs, LayerNorm, activation, dropout, residual.
#include "gnn/layers/sage_conv.h"

#include <algorithm>

#include "gnn/ops/matmul.h"

namespace segrank {

SageConv SageConv::create(ParamStore& store, const std::string& name, int64_t hidden,
                          Activation act) {
    SageConv s;
    s.hidden = hidden;
    s.act = act;
    s.w_self = store.add(name + ".w_self", hidden, hidden, true, ParamInit::kUniformFanIn, hidden);
    s.w_fwd = store.add(name + ".w_fwd", hidden, hidden, true, ParamInit::kUniformFanIn, hidden);
    s.w_bwd = store.add(name + ".w_bwd", hidden, hidden, true, ParamInit::kUniformFanIn, hidden);
    s.bias = store.add(name + ".bias", 1, hidden, false, ParamInit::kUniformFanIn, hidden);
    s.ln_gamma = store.add(name + ".ln_gamma", 1, hidden, false, ParamInit::kOnes);
    s.ln_beta = store.add(name + ".ln_beta", 1, hidden, false, ParamInit::kZeros);
    return s;
}

void SageConv::forward(const ParamStore& store, MatrixView out, ConstMatrixView self,
                       ConstMatrixView agg_fwd, ConstMatrixView agg_bwd, Saved* saved,
                       const DropoutSpec* drop) const {
    const int64_t r = self.rows;
    SEGRANK_CHECK(self.cols == hidden && agg_fwd.rows == r && agg_bwd.rows == r && out.rows == r &&
                      out.cols == hidden && agg_fwd.cols == hidden && agg_bwd.cols == hidden,
                  "SageConv: rows/cols of self [", self.rows, ",", self.cols,
                  "], aggregates and out [", out.rows, ",", out.cols, "] must all be [R, ", hidden,
                  "]");
    if (r == 0) return;
    forward_linear(store, out, self, agg_fwd, agg_bwd);
    forward_epilogue(store, out, self, saved, drop);
}

void SageConv::forward_linear(const ParamStore& store, MatrixView out, ConstMatrixView self,
                              ConstMatrixView agg_fwd, ConstMatrixView agg_bwd) const {
    if (out.rows == 0) return;
    linear_forward(out, self, store.value(w_self), store.value(bias).data);
    linear_forward(out, agg_fwd, store.value(w_fwd), nullptr, true);
    linear_forward(out, agg_bwd, store.value(w_bwd), nullptr, true);
}

void SageConv::backward_linear(ParamStore& store, MatrixView d_self, MatrixView d_agg_fwd,
                               MatrixView d_agg_bwd, ConstMatrixView dz, ConstMatrixView self,
                               ConstMatrixView agg_fwd, ConstMatrixView agg_bwd) const {
    if (dz.rows == 0) return;
    const Bf16OperandHold hold_dz(dz);  // bf16: dz is rounded once for its six products
    linear_backward(d_self, store.grad(w_self), nullptr, dz, self, store.value(w_self));
    linear_backward(d_agg_fwd, store.grad(w_fwd), nullptr, dz, agg_fwd, store.value(w_fwd));
    linear_backward(d_agg_bwd, store.grad(w_bwd), nullptr, dz, agg_bwd, store.value(w_bwd));
}

void SageConv::forward_epilogue(const ParamStore& store, MatrixView out, ConstMatrixView self,
                                Saved* saved, const DropoutSpec* drop) const {
    const int64_t r = out.rows;
    const float* gamma = store.value(ln_gamma).data;
    const float* beta = store.value(ln_beta).data;
    if (saved) {
        saved->xhat = Tensor::uninit(r, hidden);
        saved->rstd = Tensor(r);
    }
    if (!drop || drop->p <= 0.0f) {
        layernorm_act_residual_forward(out, saved ? saved->xhat.view() : MatrixView{},
                                       saved ? saved->rstd.span() : std::span<float>{}, self, gamma,
                                       beta, act);
        return;
    }
    if (saved)
        layernorm_forward(out, saved->xhat.view(), saved->rstd.span(), out, gamma, beta);
    else
        layernorm_forward(out, MatrixView{}, {}, out, gamma, beta);
    activation_forward(out, out, act);
    dropout_forward(out, out, drop->p, drop->seed, drop->keys, drop->group);
    add_inplace(out, self);
}

void SageConv::backward_epilogue(ParamStore& store, MatrixView dz, ConstMatrixView dout,
                                 const Saved& saved, const DropoutSpec* drop) const {
    const int64_t r = dout.rows;
    SEGRANK_CHECK(
        saved.xhat.rows() == r && dout.cols == hidden && dz.rows == r && dz.cols == hidden,
        "SageConv::backward_epilogue: saved state has ", saved.xhat.rows(), " rows, dout [", r, ",",
        dout.cols, "], dz [", dz.rows, ",", dz.cols, "]");
    if (r == 0) return;
    Tensor da;
    ConstMatrixView g = dout;
    if (drop && drop->p > 0.0f) {
        da = Tensor(r, hidden);
        dropout_backward(da.view(), dout, drop->p, drop->seed, drop->keys, drop->group);
        g = da.cview();
    }
    layernorm_act_backward(dz, store.grad(ln_gamma).data, store.grad(ln_beta).data,
                           store.grad(bias).data, g, saved.xhat.cview(), saved.rstd.span(),
                           store.value(ln_gamma).data, store.value(ln_beta).data, act);
}

void SageConv::backward(ParamStore& store, MatrixView d_self, MatrixView d_agg_fwd,
                        MatrixView d_agg_bwd, ConstMatrixView dout, ConstMatrixView self,
                        ConstMatrixView agg_fwd, ConstMatrixView agg_bwd, const Saved& saved,
                        const DropoutSpec* drop) const {
    const int64_t r = dout.rows;
    SEGRANK_CHECK(saved.xhat.rows() == r && dout.cols == hidden,
                  "SageConv::backward: saved state has ", saved.xhat.rows(), " rows, dout ", r);
    if (r == 0) return;
    add_inplace(d_self, dout);  // residual
    Tensor dz = Tensor::uninit(r, hidden);
    backward_epilogue(store, dz.view(), dout, saved, drop);
    backward_linear(store, d_self, d_agg_fwd, d_agg_bwd, dz.cview(), self, agg_fwd, agg_bwd);
}

}  // namespace segrank
