// Layout embedding: per-value table, per-position projection, size features.
#include "gnn/layers/layout_embedding.h"

#include <cmath>
#include <vector>

#include "gnn/ops/matmul.h"

namespace segrank {

namespace {
double pad_log(double s, double tile) { return std::log(std::ceil(s / tile) * tile / s); }
}  // namespace

void layout_embedding_row(const int8_t* own_m2m, const float* dims, const int8_t* cfg, int8_t* idx,
                          float* sizes) {
    int rank = 0;
    while (rank < kLayoutRankMax && own_m2m[rank] >= 0) ++rank;
    bool cfg_out = false;
    if (cfg)
        for (int i = 0; i < kLayoutRankMax; ++i) cfg_out = cfg_out || cfg[i] >= 0;
    const int8_t* out = cfg_out ? cfg : own_m2m;
    for (int i = 0; i < kLayoutRankMax; ++i) {
        const int v = out[i];
        idx[i] = static_cast<int8_t>(i >= rank ? 0 : v < 0 ? 1 : 2 + v);
        const bool known = i < rank && v >= 0 && v < rank;
        sizes[i] = known ? static_cast<float>(std::log1p(static_cast<double>(dims[v]))) : 0.0f;
    }
    for (int i = kLayoutRankMax; i < kLayoutEmbedPositions; ++i)
        idx[i] = static_cast<int8_t>(!cfg ? 8 : cfg[i] < 0 ? 1 : 2 + cfg[i]);
    double pad = 0.0;
    for (int i = 0; i < 2 && i < rank; ++i) {
        const int v = out[i];
        if (v >= 0 && v < rank && dims[v] > 0) pad += pad_log(dims[v], i == 0 ? 128.0 : 8.0);
    }
    sizes[kLayoutRankMax] = static_cast<float>(pad);
}

LayoutEmbedding LayoutEmbedding::create(ParamStore& store, const std::string& name, int64_t width,
                                        int64_t hidden) {
    LayoutEmbedding e;
    e.width = width;
    e.hidden = hidden;
    const int64_t in = kLayoutEmbedPositions * width;
    e.table = store.add(name + ".table", kLayoutEmbedValues, width, false, ParamInit::kNormal);
    e.weight = store.add(name + ".weight", hidden, in, true, ParamInit::kUniformFanIn,
                         in + kLayoutEmbedSizes);
    e.size_weight = store.add(name + ".size_weight", hidden, kLayoutEmbedSizes, true,
                              ParamInit::kUniformFanIn, in + kLayoutEmbedSizes);
    return e;
}

void LayoutEmbedding::forward(const ParamStore& store, MatrixView out, std::span<const int8_t> idx,
                              std::span<const float> sizes) const {
    const int64_t rows = out.rows, h = hidden, d = width;
    SEGRANK_CHECK(out.cols == h &&
                      static_cast<int64_t>(idx.size()) == rows * kLayoutEmbedPositions &&
                      static_cast<int64_t>(sizes.size()) == rows * kLayoutEmbedSizes,
                  "LayoutEmbedding: out [", out.rows, ", ", out.cols, "], ", idx.size(),
                  " indices, ", sizes.size(), " sizes; expected [R, ", h, "], R x 18, R x 7");
    for (size_t i = 0; i < idx.size(); ++i)
        SEGRANK_CHECK(idx[i] >= 0 && idx[i] < kLayoutEmbedValues, "LayoutEmbedding: index ",
                      static_cast<int>(idx[i]), " at row ", i / kLayoutEmbedPositions, " position ",
                      i % kLayoutEmbedPositions, " outside 0..8");
    if (rows == 0) return;
    // U[p][v] = W_p E[v] ([18 * 9, H]): every row is then a sum of 18 rows of U.
    ConstMatrixView e = store.value(table), w = store.value(weight);
    std::vector<float> u(static_cast<size_t>(kLayoutEmbedPositions * kLayoutEmbedValues * h));
    for (int64_t p = 0; p < kLayoutEmbedPositions; ++p)
        for (int64_t v = 0; v < kLayoutEmbedValues; ++v) {
            float* up = u.data() + (p * kLayoutEmbedValues + v) * h;
            for (int64_t c = 0; c < h; ++c) {
                float s = 0.0f;
                for (int64_t j = 0; j < d; ++j) s += w.at(c, p * d + j) * e.at(v, j);
                up[c] = s;
            }
        }
    for (int64_t r = 0; r < rows; ++r) {
        float* o = out.row(r);
        for (int64_t p = 0; p < kLayoutEmbedPositions; ++p) {
            const float* up =
                u.data() + (p * kLayoutEmbedValues + idx[r * kLayoutEmbedPositions + p]) * h;
            for (int64_t c = 0; c < h; ++c) o[c] += up[c];
        }
    }
    linear_forward(out, ConstMatrixView(sizes.data(), rows, kLayoutEmbedSizes, kLayoutEmbedSizes),
                   store.value(size_weight), nullptr, true);
}

void LayoutEmbedding::backward(ParamStore& store, std::span<const int8_t> idx,
                               std::span<const float> sizes, ConstMatrixView dout) const {
    const int64_t rows = dout.rows, h = hidden, d = width;
    SEGRANK_CHECK(dout.cols == h &&
                      static_cast<int64_t>(idx.size()) == rows * kLayoutEmbedPositions &&
                      static_cast<int64_t>(sizes.size()) == rows * kLayoutEmbedSizes,
                  "LayoutEmbedding::backward: shapes");
    if (rows == 0) return;
    // dU[p][v] = sum of dout over the rows with idx[r, p] = v; then dW_p += dU_p E, dE += dU_p^T
    // W_p.
    std::vector<double> du(static_cast<size_t>(kLayoutEmbedPositions * kLayoutEmbedValues * h),
                           0.0);
    for (int64_t r = 0; r < rows; ++r) {
        const float* g = dout.row(r);
        for (int64_t p = 0; p < kLayoutEmbedPositions; ++p) {
            double* dup =
                du.data() + (p * kLayoutEmbedValues + idx[r * kLayoutEmbedPositions + p]) * h;
            for (int64_t c = 0; c < h; ++c) dup[c] += g[c];
        }
    }
    ConstMatrixView e = store.value(table), w = store.value(weight);
    MatrixView de = store.grad(table), dw = store.grad(weight);
    for (int64_t p = 0; p < kLayoutEmbedPositions; ++p)
        for (int64_t v = 0; v < kLayoutEmbedValues; ++v) {
            const double* dup = du.data() + (p * kLayoutEmbedValues + v) * h;
            for (int64_t j = 0; j < d; ++j) {
                double se = 0.0;
                for (int64_t c = 0; c < h; ++c) {
                    dw.at(c, p * d + j) += static_cast<float>(dup[c] * e.at(v, j));
                    se += dup[c] * w.at(c, p * d + j);
                }
                de.at(v, j) += static_cast<float>(se);
            }
        }
    MatmulArgs a;
    a.trans_a = true;
    a.accumulate = true;
    matmul(store.grad(size_weight), dout,
           ConstMatrixView(sizes.data(), rows, kLayoutEmbedSizes, kLayoutEmbedSizes), a);
}

}  // namespace segrank
