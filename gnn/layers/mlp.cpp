// MLP score head.
#include "gnn/layers/mlp.h"

#include <cstring>

namespace segrank {

MlpHead MlpHead::create(ParamStore& store, const std::string& name, int64_t in, int64_t hidden,
                        Activation act) {
    return {Linear::create(store, name + "1", in, hidden),
            Linear::create(store, name + "2", hidden, 1), act};
}

void MlpHead::forward(const ParamStore& store, std::span<float> scores, ConstMatrixView x,
                      Saved* saved) const {
    const int64_t k = x.rows;
    SEGRANK_CHECK(static_cast<int64_t>(scores.size()) == k && x.cols == l1.in, "MlpHead: x[",
                  x.rows, ",", x.cols, "] for ", scores.size(), " scores, expected in = ", l1.in);
    Tensor pre(k, l1.out), a(k, l1.out), out(k, 1);
    l1.forward(store, pre.view(), x);
    activation_forward(a.view(), pre.cview(), act);
    l2.forward(store, out.view(), a.cview());
    for (int64_t i = 0; i < k; ++i) scores[i] = out[i];
    if (saved) {
        saved->x = Tensor(k, x.cols);
        for (int64_t i = 0; i < k; ++i)
            std::memcpy(saved->x.data() + i * x.cols, x.row(i),
                        sizeof(float) * static_cast<size_t>(x.cols));
        saved->pre = std::move(pre);
        saved->a = std::move(a);
    }
}

void MlpHead::backward(ParamStore& store, MatrixView dx, std::span<const float> dscores,
                       const Saved& saved) const {
    const int64_t k = saved.x.rows();
    SEGRANK_CHECK(static_cast<int64_t>(dscores.size()) == k, "MlpHead::backward: ", dscores.size(),
                  " score grads for ", k, " rows");
    Tensor dout(k, 1);
    for (int64_t i = 0; i < k; ++i) dout[i] = dscores[i];
    Tensor da(k, l1.out), dpre(k, l1.out);
    l2.backward(store, da.view(), dout.cview(), saved.a.cview());
    activation_backward(dpre.view(), da.cview(), saved.pre.cview(), act);
    l1.backward(store, dx, dpre.cview(), saved.x.cview());
}

}  // namespace segrank
