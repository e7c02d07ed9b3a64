// Linear layer on top of linear_forward/linear_backward.
#include "gnn/layers/linear.h"

#include "gnn/ops/matmul.h"

namespace segrank {

Linear Linear::create(ParamStore& store, const std::string& name, int64_t in, int64_t out,
                      bool with_bias) {
    Linear l;
    l.in = in;
    l.out = out;
    l.weight = store.add(name + ".weight", out, in, /*decay=*/true, ParamInit::kUniformFanIn, in);
    if (with_bias)
        l.bias = store.add(name + ".bias", 1, out, /*decay=*/false, ParamInit::kUniformFanIn, in);
    return l;
}

void Linear::forward(const ParamStore& store, MatrixView y, ConstMatrixView x,
                     bool accumulate) const {
    SEGRANK_CHECK(x.cols == in && y.cols == out && x.rows == y.rows, "Linear[", in, "->", out,
                  "]: x[", x.rows, ",", x.cols, "] y[", y.rows, ",", y.cols, "]");
    linear_forward(y, x, store.value(weight), bias >= 0 ? store.value(bias).data : nullptr,
                   accumulate);
}

void Linear::backward(ParamStore& store, MatrixView dx, ConstMatrixView dy,
                      ConstMatrixView x) const {
    linear_backward(dx, store.grad(weight), bias >= 0 ? store.grad(bias).data : nullptr, dy, x,
                    store.value(weight));
}

}  // namespace segrank
