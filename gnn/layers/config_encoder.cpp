// Layout and tile config encoders.
#include "gnn/layers/config_encoder.h"

#include <cmath>

namespace segrank {

LayoutConfigEncoder LayoutConfigEncoder::create(ParamStore& store, const std::string& name,
                                                int64_t config_dim) {
    return {Linear::create(store, name, kLayoutConfigDim * kLayoutValues, config_dim)};
}

void LayoutConfigEncoder::forward(const ParamStore& store, MatrixView out,
                                  std::span<const int8_t> values) const {
    const int64_t rows = static_cast<int64_t>(values.size()) / kLayoutConfigDim;
    SEGRANK_CHECK(static_cast<int64_t>(values.size()) == out.rows * kLayoutConfigDim &&
                      out.cols == linear.out,
                  "LayoutConfigEncoder: ", values.size(), " values for out[", out.rows, ",",
                  out.cols, "]");
    for (size_t i = 0; i < values.size(); ++i)
        SEGRANK_CHECK(values[i] >= -1 && values[i] <= 5, "layout config value ",
                      static_cast<int>(values[i]), " at row ", i / kLayoutConfigDim, " slot ",
                      i % kLayoutConfigDim, " outside -1..5");
    ConstMatrixView w = store.value(linear.weight);  // [D, 126]
    const float* b = store.value(linear.bias).data;
    const int64_t d = linear.out;
    for (int64_t r = 0; r < rows; ++r) {
        float* o = out.row(r);
        for (int64_t j = 0; j < d; ++j) {
            const float* wj = w.row(j);
            float s = b[j];
            for (int64_t slot = 0; slot < kLayoutConfigDim; ++slot)
                s += wj[slot * kLayoutValues + values[r * kLayoutConfigDim + slot] + 1];
            o[j] = s;
        }
    }
}

void LayoutConfigEncoder::backward(ParamStore& store, std::span<const int8_t> values,
                                   ConstMatrixView dout) const {
    const int64_t rows = static_cast<int64_t>(values.size()) / kLayoutConfigDim;
    SEGRANK_CHECK(rows == dout.rows && dout.cols == linear.out,
                  "LayoutConfigEncoder::backward: shapes");
    MatrixView dw = store.grad(linear.weight);
    float* db = store.grad(linear.bias).data;
    for (int64_t r = 0; r < rows; ++r) {
        const float* g = dout.row(r);
        for (int64_t j = 0; j < linear.out; ++j) {
            float* dwj = dw.row(j);
            db[j] += g[j];
            for (int64_t slot = 0; slot < kLayoutConfigDim; ++slot)
                dwj[slot * kLayoutValues + values[r * kLayoutConfigDim + slot] + 1] += g[j];
        }
    }
}

std::span<const float> LayoutConfigEncoder::zero_code(const ParamStore& store) const {
    return {store.value(linear.bias).data, static_cast<size_t>(linear.out)};
}

void signed_log(MatrixView out, ConstMatrixView in) {
    SEGRANK_CHECK(out.rows == in.rows && out.cols == in.cols, "signed_log: shapes differ");
    for (int64_t r = 0; r < in.rows; ++r)
        for (int64_t c = 0; c < in.cols; ++c) {
            const float x = in.at(r, c);
            out.at(r, c) = std::copysign(std::log1p(std::abs(x)), x);
        }
}

TileConfigEncoder TileConfigEncoder::create(ParamStore& store, const std::string& name,
                                            int64_t config_dim) {
    return {Linear::create(store, name, kTileConfigDim, config_dim)};
}

void TileConfigEncoder::forward(const ParamStore& store, MatrixView out,
                                ConstMatrixView config) const {
    SEGRANK_CHECK(config.cols == kTileConfigDim, "TileConfigEncoder: tile config has ", config.cols,
                  " columns, expected 24");
    Tensor x(config.rows, config.cols);
    signed_log(x.view(), config);
    linear.forward(store, out, x.cview());
}

void TileConfigEncoder::backward(ParamStore& store, ConstMatrixView config,
                                 ConstMatrixView dout) const {
    Tensor x(config.rows, config.cols);
    signed_log(x.view(), config);
    linear.backward(store, MatrixView{}, dout, x.cview());
}

}  // namespace segrank
